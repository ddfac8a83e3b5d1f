package store

import "context"

// EventKind says what changed in a room, a conversation or an inbox.
type EventKind string

// The kinds of room events: the changes to a room (a public room, a private
// group or a direct conversation), each stored in the room's event log by
// the store operation that makes the change.
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
	// MessageHidden: User hid Message (as it is now: hidden).
	MessageHidden EventKind = "MESSAGE_HIDDEN"
	// RoomDeleted: User, the creator, deleted the room. It is the last
	// event of the room; a room created later under the same name starts
	// a new log after it.
	RoomDeleted EventKind = "ROOM_DELETED"
)

// The kinds of inbox events: the changes to one user's inbox, each stored in
// that user's inbox log. Room is then the conversation's id.
const (
	// DirectMessage: Message was sent to or by the inbox's owner; the
	// event's id is the message's.
	DirectMessage EventKind = "DIRECT_MESSAGE"
	// UnreadChanged: the owner's unread count of the conversation changed:
	// a group message arrived (Message; the event's id is its id) or the
	// owner marked messages read (no Message).
	UnreadChanged EventKind = "UNREAD_CHANGED"
	// AddedToGroup: User added the owner to the private group Room.
	AddedToGroup EventKind = "ADDED_TO_GROUP"
)

// Event is one durable change, as its log stores it. Its id is a timeuuid,
// unique within its log and ordered by time: the cursor a subscriber resumes
// after. An event about a message's arrival shares the message's id, so a
// message's id is also a cursor into its room's log.
type Event struct {
	ID   MessageID `json:"id,omitzero"`
	Kind EventKind `json:"kind"`
	// Room is the room or conversation the event happened in.
	Room string `json:"room"`
	// User is who the event is about: who posted, joined or was added,
	// left, hid, deleted the room, or (AddedToGroup) added the owner.
	User UserRef `json:"user"`
	// Message is the message the event is about, as of the event; nil when
	// there is none (RoomDeleted, a mark-read's UnreadChanged).
	Message *Message `json:"message,omitempty"`
}

// EventLog reads the logs of durable changes. Logs are written by the
// operations that make the changes (posting writes MessagePosted, joining
// ParticipantJoined, ...), in day buckets as messages are, so reading
// after a cursor touches one partition per day since the cursor.
type EventLog interface {
	// RoomEvents returns up to limit events of the room's log, oldest
	// first, strictly after the cursor (the zero id reads from the start).
	RoomEvents(ctx context.Context, room string, after MessageID, limit int) ([]Event, error)

	// InboxEvents returns up to limit events of login's inbox log, oldest
	// first, strictly after the cursor.
	InboxEvents(ctx context.Context, login string, after MessageID, limit int) ([]Event, error)
}
