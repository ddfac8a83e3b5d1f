package store

import "context"

// EventKind says what changed in a room, a conversation or an inbox.
type EventKind string

// The kinds of room events: the changes to a room (a public room or a
// private group), each logged in the room's event log by the store
// operation that makes the change.
const (
	// MessagePosted: Message was posted; the event's id is the message's.
	MessagePosted EventKind = "MESSAGE_POSTED"
	// ParticipantJoined: User joined (or was added to a private group).
	// The event's id is that of Message, the system message that records
	// it.
	ParticipantJoined EventKind = "PARTICIPANT_JOINED"
	// ParticipantLeft: User left; the event's id is that of Message, the
	// system message that records it.
	ParticipantLeft EventKind = "PARTICIPANT_LEFT"
	// MessageHidden: User hid Message.
	MessageHidden EventKind = "MESSAGE_HIDDEN"
	// MessageEdited: User, its author, edited Message. Also an inbox event
	// of both users of a direct conversation.
	MessageEdited EventKind = "MESSAGE_EDITED"
	// MessageDeleted: User deleted Message, now a tombstone. Also an inbox
	// event of both users of a direct conversation.
	MessageDeleted EventKind = "MESSAGE_DELETED"
	// MessagePreviewed: the server fetched the preview of the first link
	// in Message (User, its author), now in its Preview. Also an inbox
	// event of both users of a direct conversation.
	MessagePreviewed EventKind = "MESSAGE_PREVIEWED"
	// RoomDeleted: User, the creator, deleted the room. It is the last
	// event of the room. It is never read from a log: deleting a room
	// deletes its log, content and all. Subscribers learn of it live, or
	// by finding the room gone when they catch up.
	RoomDeleted EventKind = "ROOM_DELETED"
)

// The kinds of inbox events: the changes to one user's inbox, each logged
// in that user's inbox log. Room is then the conversation's id.
const (
	// DirectMessage: Message was sent to or by the inbox's owner; the
	// event's id is the message's.
	DirectMessage EventKind = "DIRECT_MESSAGE"
	// UnreadChanged: the owner's unread count of the conversation changed:
	// a group message arrived (Message; the event's id is its id) or the
	// owner marked messages read (no Message).
	UnreadChanged EventKind = "UNREAD_CHANGED"
	// AddedToGroup: User added the owner to the private group Room;
	// Message is the system message that records it, whose id the event
	// shares.
	AddedToGroup EventKind = "ADDED_TO_GROUP"
)

// The kinds of ephemeral events: told live to a room's or a direct
// conversation's subscribers, never logged, never replayed; their id is
// zero. Room is the room, or the direct conversation's id.
const (
	// TypingStarted: User is typing; it lapses unless renewed (see
	// presence.Typing).
	TypingStarted EventKind = "TYPING_STARTED"
	// TypingStopped: User stopped typing, or let it lapse.
	TypingStopped EventKind = "TYPING_STOPPED"
	// PresenceChanged: User came online (Online) or went offline, told to
	// each room and group they take part in and to the other user of each
	// of their direct conversations (see presence.Tracker).
	PresenceChanged EventKind = "PRESENCE_CHANGED"
	// RoomEntered: User, the topic's owner, joined the public room Room
	// (Message is the system message that records it) or created the room
	// or group Room (no Message). Told on the user's own topic only, for
	// their sync to follow the room (see chat.Sync); inbox subscribers
	// never see it.
	RoomEntered EventKind = "ROOM_ENTERED"
)

// The kinds of the announcements server instances make to each other on the
// broker's announcements topic, so that each forgets what it cached of a
// user or a room: never logged, never shown to a subscriber. User.Login is
// the user.
const (
	// ProfileChanged: the user changed their names or bio.
	ProfileChanged EventKind = "PROFILE_CHANGED"
	// AccountDeleted: the user deleted their account; their sessions are
	// gone too.
	AccountDeleted EventKind = "ACCOUNT_DELETED"
	// MembershipEnded: the user's membership of Room may have ended (they
	// left, were removed or banned); every membership of Room if User.Login
	// is empty (the room was deleted).
	MembershipEnded EventKind = "MEMBERSHIP_ENDED"
	// BotKeyRevoked: the API key of the bot User.Login was replaced or
	// deleted; Room holds the key's SHA-256 in hex.
	BotKeyRevoked EventKind = "BOT_KEY_REVOKED"
)

// Event is one durable change, as its log keeps it. Its id is a timeuuid,
// unique within its log and ordered by time: the cursor a subscriber resumes
// after. An event about a message's arrival shares the message's id, so a
// message's id is also a cursor into its room's log.
//
// A log row records what happened (kind, who, which message), not the
// message's content: content lives in the message tables only, so hiding,
// editing or deleting a message, or deleting its room, never rewrites a
// log. Reading a log joins each event with its message as it is now (a
// replayed MessagePosted of a since-hidden message shows it hidden); an
// event whose message is gone (its room was deleted) is left out.
type Event struct {
	ID   MessageID
	Kind EventKind
	// Room is the room or conversation the event happened in.
	Room string
	// User is who the event is about: who posted, joined or was added,
	// left, hid, deleted the room, marked read, or (AddedToGroup) added the
	// owner.
	User UserRef
	// Message is the message the event is about; nil when there is none
	// (RoomDeleted, a mark-read's UnreadChanged).
	Message *Message
	// Online is, for PresenceChanged, whether User is online now.
	Online bool
	// Seq is a room event's place in the room's sequence, when the broker
	// that carried it keeps one (see Cursor); zero otherwise, and in the
	// store's log.
	Seq uint64
}

// PostedEvent is the MessagePosted event of m.
func PostedEvent(m Message) Event {
	return Event{ID: m.ID, Kind: MessagePosted, Room: m.Room, User: m.Author, Message: &m}
}

// EventLog reads the logs of durable changes. Logs are written by the
// operations that make the changes (posting logs MessagePosted, joining
// ParticipantJoined, ...), in day buckets as messages are, and the days of a
// log are listed, so reading after a cursor reads one partition per day
// with events since the cursor.
type EventLog interface {
	// RoomEvents returns up to limit events of the room's log, oldest
	// first, strictly after the cursor (the zero id reads from the start).
	// Events left out (their message is gone) do not shorten a page: a page
	// shorter than limit is the end of the log.
	RoomEvents(ctx context.Context, room string, after MessageID, limit int) ([]Event, error)

	// InboxEvents returns up to limit events of login's inbox log, oldest
	// first, strictly after the cursor.
	InboxEvents(ctx context.Context, login string, after MessageID, limit int) ([]Event, error)
}
