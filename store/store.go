// Package store holds the chat domain: users, rooms and messages, the Store
// interface every backend implements, and the errors it returns.
//
// The interface is query-shaped: each method is one of the access paths of
// KillrChat's Cassandra data model (users, chat_rooms, chat_room_messages,
// messages_bucket), so a backend maps each call onto a small, known number of
// partition reads and writes. Backends live in subpackages (embedded,
// cassandra) and are proven by the conformance suite in storetest.
package store

import (
	"context"
	"time"
)

// UserRef is the denormalized slice of a user that rooms and messages carry:
// the Cassandra user-defined type `user (login, firstname, lastname)`.
// The copies hold the names as they were when written (a user may change
// them with UpdateProfile, and a deleted account has none): the login is
// what identifies the user, and the API shows the current names, read
// with Profiles.Names, not the copy's.
type UserRef struct {
	Login     string
	Firstname string
	Lastname  string
}

// User is a chat user's profile, as the users table stores it.
type User struct {
	UserRef
	Email string
	Bio   string
	// ChatRooms are the names of the rooms the user participates in, sorted.
	ChatRooms []string
	// Avatar is the image the user chose to show with their name
	// (SetAvatar); nil for none.
	Avatar *Picture
	// Bot marks a bot account (CreateBot), which authenticates with an
	// API key, never a password.
	Bot bool
	// Owner is the login of the user who owns the bot; empty for a user.
	Owner string
	// NoReadReceipts: the user sends no read receipts in direct
	// conversations and groups, and sees none (ProfileUpdate).
	NoReadReceipts bool
	// EmailVerified reports that the user proved they read Email
	// (VerifyEmail); changing the address clears it.
	EmailVerified bool
	// DigestsOff reports that the user turned their email digests off.
	DigestsOff bool
	// DigestSentAt is when their last email digest was sent; zero if
	// never.
	DigestSentAt time.Time
}

// Account is a User with the password hash used at login.
type Account struct {
	User
	PassHash []byte
}

// Room is a chat room with its creator and participants denormalized into
// one row, so one read shows the whole room.
type Room struct {
	Name      string
	Kind      RoomKind
	Creator   UserRef
	CreatedAt time.Time
	Banner    string
	// Participants are sorted by login.
	Participants []UserRef
	// Moderators are the participants the creator appointed to moderate
	// (see Moderation), sorted by login.
	Moderators []UserRef
	// Icon is the image shown with the room's name (SetRoomIcon); nil for
	// none.
	Icon *Picture
	// Title is the name a private group shows instead of its name
	// (SetRoomSettings); empty for none.
	Title string
	// SlowMode is the least time between two posts of a member who does
	// not moderate the room (SetRoomSettings); zero for none.
	SlowMode time.Duration
}

// HasParticipant reports whether login is among the room's participants.
func (r Room) HasParticipant(login string) bool {
	for _, p := range r.Participants {
		if p.Login == login {
			return true
		}
	}
	return false
}

// RoomMembership is what a participant check needs of a room, without its
// participant set: the room's kind and creator, and whether one user is
// among its participants. A backend answers it from one small read of the
// room's partition, as of one instant, so it agrees with a Room read made at
// that instant whatever joins, leaves and deletes run meanwhile.
type RoomMembership struct {
	Room    string
	Kind    RoomKind
	Creator UserRef
	// Login is the user asked about.
	Login string
	// Participant reports whether Login is a current participant (a member,
	// for a private group).
	Participant bool
	// Moderator reports whether Login is one of the room's moderators.
	Moderator bool
	// Banned reports whether Login is banned from the room.
	Banned bool
	// SlowMode is the room's slow mode (Room.SlowMode).
	SlowMode time.Duration
}

// Moderates reports whether Login may remove, ban and unban in the room,
// and delete and hide others' messages: its creator and its moderators.
func (m RoomMembership) Moderates() bool {
	return m.Moderator || m.Creator.Login == m.Login
}

// Message is one message of a room. System messages record joins and leaves.
type Message struct {
	Room    string
	ID      MessageID
	Author  UserRef
	Content string
	System  bool
	// Hidden messages were hidden by their author or the room's creator
	// (the seed's visible flag, inverted so the zero value is visible).
	Hidden bool
	// EditedAt is when the author last edited the content, to the
	// millisecond; zero if never.
	EditedAt time.Time
	// Deleted messages are tombstones: their content is erased from every
	// copy (Content is empty); the id, author and time remain.
	Deleted bool
	// ReplyTo is the root of the thread the message replies in, a message
	// of the same room; zero for a message that is no reply.
	ReplyTo MessageID
	// Attachments are the files it carries, in the order sent (at most
	// MaxAttachments); none for a deleted message.
	Attachments []Attachment
	// Preview is what the server found at the first link of the content
	// (SetPreview), shown under the message; nil until then, and after an
	// edit or a delete.
	Preview *LinkPreview
}

// LinkPreview is a summary of a web page a message links to, read from the
// page's Open Graph tags (or its title): the card under the message.
type LinkPreview struct {
	URL         string
	Title       string
	Description string
	SiteName    string
	// ImageURL is the page's image, as it gives it (absolute); clients
	// load it themselves.
	ImageURL string
}

// PostedAt is the time encoded in the message's timeuuid.
func (m Message) PostedAt() time.Time { return m.ID.Time() }

// Store is the persistence contract of the chat. Every method takes a context
// that bounds its I/O. Errors wrap the sentinels of this package (test them
// with errors.Is); anything else is an internal failure.
type Store interface {
	Conversations
	InboxOrder
	MessageIndex
	Sessions
	EventLog
	ClientMessages
	Reactions
	Threads
	RoomReads
	Mentioner
	Blocks
	Mutes
	Moderation
	Profiles
	Files
	Outbox
	PushSubscriptions
	Webhooks
	Bots
	RoomSettings
	Email
	MessageSearch
	Directory
	RoomDirectory
	TwoFactors
	Passkeys
	Identities

	// CreateUser stores a new account. Logins are unique: the write is a
	// compare-and-set (INSERT ... IF NOT EXISTS), so of many concurrent signups
	// of one login exactly one succeeds. Returns ErrConflict if the login is
	// taken; the existing account is left untouched.
	CreateUser(ctx context.Context, a Account) error

	// Account returns the account of login, password hash included.
	// Returns ErrNotFound if there is none.
	Account(ctx context.Context, login string) (Account, error)

	// User returns the profile of login, with the rooms it participates in.
	// Returns ErrNotFound if there is none.
	User(ctx context.Context, login string) (User, error)

	// CreateRoom stores a new room (INSERT ... IF NOT EXISTS) whose first
	// participant is its creator, and adds it to the creator's rooms.
	// Returns ErrConflict if a room of that name exists.
	CreateRoom(ctx context.Context, r Room) error

	// Room returns the room called name with its creator and participants,
	// read from one partition. Returns ErrNotFound if there is none.
	Room(ctx context.Context, name string) (Room, error)

	// Membership returns the room's kind and creator and whether login is
	// one of its participants, without reading the participant set: the
	// check every post, message page and subscription makes first. It reads
	// one instant of the room, as Room does. Returns ErrNotFound if the room
	// does not exist.
	Membership(ctx context.Context, room, login string) (RoomMembership, error)

	// Rooms returns up to limit rooms that come after the room named after
	// in the backend's own stable order (the empty string starts at the
	// beginning). Paging on with the last name returned visits every room
	// exactly once.
	Rooms(ctx context.Context, after string, limit int) ([]Room, error)

	// JoinRoom adds u to the room's participants and the room to u's rooms,
	// and returns the room as it is after the join. The update is conditional
	// on the room existing (UPDATE ... IF EXISTS), so a join never
	// resurrects a deleted room. A join that adds u also stores the system
	// message "<login> joined the room" and logs ParticipantJoined (event id
	// = the system message's id), and returns that event; joining again is
	// harmless and returns the zero Event (nothing logged).
	// Returns ErrNotFound if the room does not exist.
	JoinRoom(ctx context.Context, name string, u UserRef) (Room, Event, error)

	// LeaveRoom removes u from the room's participants and the room from u's
	// rooms, stores the system message "<login> left the room" and logs
	// ParticipantLeft (event id = the system message's id), which it
	// returns. Removal commutes with deletion, so it needs no condition.
	// Returns ErrNotFound if the room does not exist or u is not in it.
	LeaveRoom(ctx context.Context, name string, u UserRef) (Event, error)

	// DeleteRoom deletes the room if by created it, removes it from every
	// participant's rooms (and, for a private group, every inbox entry of it,
	// former members' included) and deletes its messages, their copies by id
	// and by author, its day listing and its event log. The delete is
	// conditional on the creator and on the participant set read just before
	// (DELETE ... IF creator_login = ? AND participants = ?); when only the
	// participants changed it retries with the fresh set, so a participant
	// joining during the delete is cleaned up too. It returns the room as it
	// was when deleted and the RoomDeleted event (a fresh id), which is not
	// logged: the log went with the room. Returns ErrNotFound if the room
	// does not exist and ErrForbidden if by is not its creator.
	DeleteRoom(ctx context.Context, name string, by UserRef) (Room, Event, error)

	// PostMessage stores m in the time bucket of its id and logs
	// PostedEvent(m) in the room's log, and writes notices to the outbox
	// in the same operation (see Outbox and NoticesOf). The caller assigns
	// the id (NewMessageID) and checks that the author may post.
	PostMessage(ctx context.Context, m Message, notices ...Notice) error

	// Messages returns up to limit messages of the room, newest first, that
	// are strictly older than before (the zero MessageID means "from the
	// newest"). Pages cross time buckets with no gap and no duplicate, and
	// skip empty buckets. The caller must not change the slice's messages:
	// a store may share it with other callers (the embedded store's newest
	// pages).
	Messages(ctx context.Context, room string, before MessageID, limit int) ([]Message, error)

	// MessagesAfter returns up to limit messages of the room, oldest first,
	// that are strictly newer than after (the zero MessageID means "from the
	// oldest"): the way back up a history read with Messages, to open a
	// conversation at a message and read what followed it. It crosses
	// buckets as Messages does.
	MessagesAfter(ctx context.Context, room string, after MessageID, limit int) ([]Message, error)

	// Close releases the backend's resources, flushing buffered writes.
	Close() error
}
