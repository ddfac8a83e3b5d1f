package store

import (
	"context"
	"strings"
	"time"
)

// RoomKind says who may see and join a room.
type RoomKind string

// The kinds of rooms.
const (
	// PublicRoom: anyone may join; participants read the whole history
	// (KillrChat's rule). The zero value reads as public.
	PublicRoom RoomKind = ""
	// PrivateGroup: members are added by members, and each member reads only
	// the messages of the intervals in which they were a member.
	PrivateGroup RoomKind = "private"
)

// ConversationKind says what an inbox entry is about.
type ConversationKind string

// The kinds of conversations in an inbox.
const (
	DirectConversation ConversationKind = "direct"
	GroupConversation  ConversationKind = "group"
)

// DirectConversationID is the id of the one conversation between two users:
// their logins in order, joined by ':'. Room names cannot contain ':', so
// direct conversations and rooms never share a message stream.
func DirectConversationID(a, b string) string {
	if b < a {
		a, b = b, a
	}
	return a + ":" + b
}

// IsDirectConversation reports whether id names a direct conversation.
func IsDirectConversation(id string) bool { return strings.Contains(id, ":") }

// Window is an interval of group membership: [From, To). A zero To means
// the user is still a member.
type Window struct {
	From time.Time
	To   time.Time
}

// Conversation is one entry of a user's inbox, the seed's conversations_by_user
// row: who or what it is with, its newest message, and the owner's unread count.
type Conversation struct {
	// ID is the room name of a group, or DirectConversationID of a pair.
	ID   string
	Kind ConversationKind
	// Peer is the other user of a direct conversation.
	Peer UserRef
	// LastMessage is the newest message; its zero ID means none yet.
	LastMessage Message
	// Unread counts the messages of others the owner has not marked read.
	Unread int
	// Windows are the owner's membership intervals of a group, oldest first.
	Windows []Window
}

// Conversations is the persistence contract of direct messages, inboxes and
// private groups. Every write to an inbox commutes with every other (rows
// are added, or removed by range; nothing is read, modified and written
// back), so sends racing mark-reads never lose an update.
type Conversations interface {
	// SendDirect stores m, whose Room is DirectConversationID(author, to),
	// in the conversation's time bucket, records it as the newest message
	// of both users' inbox entries and as unread for to, and logs a
	// DirectMessage event (id m.ID, User the author) in both users' inbox
	// logs.
	SendDirect(ctx context.Context, m Message, to UserRef) error

	// Inbox returns all the conversations of login, direct and group, newest
	// message first, with unread counts, from one partition read.
	Inbox(ctx context.Context, login string) ([]Conversation, error)

	// Conversation returns one inbox entry of login.
	// Returns ErrNotFound if login has no such conversation.
	Conversation(ctx context.Context, login, id string) (Conversation, error)

	// MarkRead marks as read every message of the conversation up to and
	// including upTo, in login's inbox, and logs UnreadChanged (a fresh id,
	// no Message, User the owner) in login's inbox log; it returns that
	// event.
	MarkRead(ctx context.Context, login, id string, upTo MessageID) (Event, error)

	// PostGroupMessage stores m in the group's stream and records it in the
	// inbox entry of every member: as newest message for all, and as unread
	// for all but its author. It logs PostedEvent(m) in the group's log and
	// UnreadChanged (id m.ID, Message m, User the author) in the inbox log
	// of every member but the author.
	PostGroupMessage(ctx context.Context, m Message, members []UserRef) error

	// AddGroupMember adds u to the private group (UPDATE ... IF EXISTS, as a
	// join) and opens a membership window at `at` in u's inbox entry. When
	// it adds u (u was no member), it stores the system message "<by> added
	// <u> to the group" with an id of time `at` (MessageIDAt), so that it is
	// the first message of u's window, logs ParticipantJoined (User u, id the
	// message's) in the group's log and AddedToGroup (User by, same id) in
	// u's inbox log, and returns the ParticipantJoined event; adding a member
	// again changes nothing and returns the zero Event.
	// Returns ErrNotFound if the group does not exist, ErrForbidden if by is
	// not a member, ErrInvalid if the room is not a private group.
	AddGroupMember(ctx context.Context, group string, by UserRef, u UserRef, at time.Time) (Room, Event, error)

	// LeaveGroup removes u from the group's participants and closes their
	// open membership window at `at`; the entry stays, so u still reads the
	// intervals in which they were a member. It stores the system message
	// "<login> left the room" with an id of time `at` (MessageIDAt), where
	// the window it closes ends, logs ParticipantLeft (User u, id the message's)
	// in the group's log, and returns that event. The group remembers u as a
	// former member, so that deleting it removes u's entry too. Returns
	// ErrNotFound if u is not a member.
	LeaveGroup(ctx context.Context, group string, u UserRef, at time.Time) (Event, error)

	// GroupMessages returns up to limit messages of the group, newest first,
	// older than before, that fall in one of the windows. Buckets and
	// windows that cannot hold a match are not read (see PlanSegments).
	GroupMessages(ctx context.Context, group string, windows []Window, before MessageID, limit int) ([]Message, error)
}

// MessageIndex keeps the other ways to reach a message (seed 003): by its
// id, by its author, and its visibility.
type MessageIndex interface {
	// Message returns the message with this id.
	// Returns ErrNotFound if there is none.
	Message(ctx context.Context, id MessageID) (Message, error)

	// MessagesByAuthor returns up to limit messages written by login, newest
	// first, strictly older than before.
	MessagesByAuthor(ctx context.Context, login string, before MessageID, limit int) ([]Message, error)

	// HideMessage marks m hidden in every copy of it and, for a message of
	// a room or group (not of a direct conversation), logs MessageHidden (a
	// fresh id, User by) in the room's log; it returns that event (the zero
	// Event for a direct message). Readers still see the message, as
	// hidden. The caller checks who may hide it.
	HideMessage(ctx context.Context, m Message, by UserRef) (Event, error)
}
