package store

import (
	"context"
	"fmt"
	"slices"
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
	// RoomConversation is a public room its owner takes part in. Public
	// rooms keep no inbox rows per post (that would be a write per
	// participant): their entries are made when the inbox is read
	// (RoomReads.RoomConversations).
	RoomConversation ConversationKind = "room"
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

// DirectParties returns the logins of the two users of the direct
// conversation with this id, in id order.
func DirectParties(id string) (a, b string) {
	a, b, _ = strings.Cut(id, ":")
	return a, b
}

// IsDirectConversation reports whether id names a direct conversation.
func IsDirectConversation(id string) bool { return strings.Contains(id, ":") }

// Window is an interval of group membership: [From, To). A zero To means
// the user is still a member.
type Window struct {
	From time.Time
	To   time.Time
}

// Holds reports whether t falls in the window.
func (w Window) Holds(t time.Time) bool {
	return !t.Before(w.From) && (w.To.IsZero() || t.Before(w.To))
}

// InWindows reports whether t falls in one of the windows.
func InWindows(windows []Window, t time.Time) bool {
	for _, w := range windows {
		if w.Holds(t) {
			return true
		}
	}
	return false
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
	// ReadUpTo is the newest message the owner has read up to, inclusive:
	// the furthest MarkRead, or the owner's own newest message (posting
	// reads the conversation up to the post). Zero: nothing read.
	ReadUpTo MessageID
	// Unread counts the messages of others after ReadUpTo (in the owner's
	// windows, for a group), but system messages, at most UnreadCap.
	Unread int
	// Mentions counts those of the Unread that mention the owner (Mentions).
	Mentions int
	// Windows are the owner's membership intervals of a group, oldest first.
	Windows []Window
	// Muted reports that the owner muted the conversation (Mutes): the
	// chat shows its entry with no unread messages and no mentions. Not
	// part of the entry's row: the chat core sets it as it reads the entry.
	Muted bool
}

// UnreadCap bounds an unread count: a conversation with more unread
// messages reports UnreadCap, which an app shows as "99+". The count is
// made when the inbox is read, from the conversation's stream, and stops
// there, so an inbox holds one row per conversation and reading it costs at
// most UnreadCap messages per unread conversation, whatever a sender's
// burst (seed 001's spam flaw).
const UnreadCap = 100

// BlockReader answers whether a user blocked another (Blocks.Blocks).
type BlockReader interface {
	Blocks(ctx context.Context, login, other string) (bool, error)
}

// CountUnread counts owner's unread messages of c: the messages of others
// after c.ReadUpTo, within c's windows for a group, up to UnreadCap; and
// those of them that mention owner, but for the mentions of authors owner
// blocked (asked of blocks once per such author, so an inbox without
// unread mentions reads no block).
// System messages (joins, leaves, additions) are not counted, nor deleted
// ones (tombstones: nothing is left to read). A hidden message still
// counts: it keeps its place, shown as hidden. It reads
// nothing when the last message is read, and otherwise pages of the stream
// newest first from the last message back to the mark. A mark at most
// unlistedDays before the last message skips the stream's listing: the days
// between are read whether or not they hold messages.
func CountUnread(ctx context.Context, owner string, c Conversation, stream Stream, blocks BlockReader) (unread, mentions int, err error) {
	if c.LastMessage.ID.Compare(c.ReadUpTo) <= 0 {
		return 0, 0, nil
	}
	windows := unreadWindows(c)
	if len(windows) == 0 {
		return 0, 0, nil
	}
	listed := daysBetween(c.ReadUpTo.Time(), c.LastMessage.ID.Time())
	if c.ReadUpTo.IsZero() || len(listed) > unlistedDays {
		if listed, err = stream.Listed(ctx); err != nil {
			return 0, 0, err
		}
	}
	var blocked map[string]bool // the authors of mentions asked about, by login; made at the first answer
	mentionsOwner := func(m Message) (bool, error) {
		if !slices.Contains(Mentions(m.Content), owner) {
			return false, nil
		}
		if b, asked := blocked[m.Author.Login]; asked {
			return !b, nil
		}
		b, err := blocks.Blocks(ctx, owner, m.Author.Login)
		if err != nil {
			return false, fmt.Errorf("reading whether %q blocked %q: %w", owner, m.Author.Login, err)
		}
		if blocked == nil {
			blocked = make(map[string]bool)
		}
		blocked[m.Author.Login] = b
		return !b, nil
	}
	var before MessageID
	for {
		page, err := ScanSegments(ctx, PlanSegments(listed, windows, before), UnreadCap, stream.Read)
		if err != nil {
			return 0, 0, err
		}
		for _, m := range page {
			if m.ID.Compare(c.ReadUpTo) <= 0 {
				return unread, mentions, nil // newest first: the rest are read
			}
			if !m.System && !m.Deleted && m.Author.Login != owner {
				switch counts, err := mentionsOwner(m); {
				case err != nil:
					return 0, 0, err
				case counts:
					mentions++
				}
				if unread++; unread == UnreadCap {
					return unread, mentions, nil
				}
			}
		}
		if len(page) < UnreadCap {
			return unread, mentions, nil
		}
		before = page[len(page)-1].ID
	}
}

// unlistedDays is how many days CountUnread reads without the stream's
// listing: a read of an empty day costs about what the listing does.
const unlistedDays = 3

// daysBetween returns the buckets from the one of from to the one of to,
// newest first; none if to is before from.
func daysBetween(from, to time.Time) []Bucket {
	var days []Bucket
	for d := to.UTC().Truncate(24 * time.Hour); !d.Before(from.UTC().Truncate(24 * time.Hour)); d = d.Add(-24 * time.Hour) {
		if days = append(days, BucketOf(d)); len(days) > unlistedDays {
			break
		}
	}
	return days
}

// unreadWindows are the windows in which c can hold unread messages: from
// the read mark's time on (the messages at that time but at or before the
// mark are read, which CountUnread checks by id), within the membership
// windows for a group. A zero mark's time is the UUID epoch, before every
// message.
func unreadWindows(c Conversation) []Window {
	from := c.ReadUpTo.Time()
	if c.Kind != GroupConversation {
		return []Window{{From: from}}
	}
	var ws []Window
	for _, w := range c.Windows {
		if !w.To.IsZero() && !w.To.After(from) {
			continue
		}
		if w.From.Before(from) {
			w.From = from
		}
		ws = append(ws, w)
	}
	return ws
}

// Conversations is the persistence contract of direct messages, inboxes and
// private groups. An inbox holds one summary per conversation; unread
// counts are made from the streams when it is read (CountUnread). The
// read mark only moves forward, so sends racing mark-reads never lose an
// update.
type Conversations interface {
	// SendDirect stores m, whose Room is DirectConversationID(author, to),
	// in the conversation's time bucket, records it as the newest message
	// of both users' inbox entries and as read by its author, and logs a
	// DirectMessage event (id m.ID, User the author) in both users' inbox
	// logs. It writes notices to the outbox in the same operation (see
	// Outbox and NoticesOf).
	SendDirect(ctx context.Context, m Message, to UserRef, notices ...Notice) error

	// Inbox returns all the conversations of login, direct and group, newest
	// message first, with unread counts: one partition read, and a count
	// (CountUnread) of each conversation with messages after its mark.
	Inbox(ctx context.Context, login string) ([]Conversation, error)

	// InboxEntries returns the conversations of login as Inbox does but
	// without their unread counts (Unread and Mentions are 0), in no
	// particular order: the one partition read, for who only needs to know
	// the conversations (their peers, their members' presence).
	InboxEntries(ctx context.Context, login string) ([]Conversation, error)

	// Conversation returns one inbox entry of login.
	// Returns ErrNotFound if login has no such conversation.
	Conversation(ctx context.Context, login, id string) (Conversation, error)

	// MarkRead moves login's read mark of the conversation to upTo, unless
	// it is further already, and logs UnreadChanged (a fresh id, no
	// Message, User the owner) in login's inbox log; it returns that event.
	// The messages up to and including upTo are read.
	MarkRead(ctx context.Context, login, id string, upTo MessageID) (Event, error)

	// PostGroupMessage stores m in the group's stream and records it in the
	// inbox entry of every member: as newest message for all, and as read
	// by its author. It logs PostedEvent(m) in the group's log and
	// UnreadChanged (id m.ID, Message m, User the author) in the inbox log
	// of every member but the author. It writes notices to the outbox in
	// the same operation (see Outbox and NoticesOf).
	PostGroupMessage(ctx context.Context, m Message, members []UserRef, notices ...Notice) error

	// AddGroupMember adds u to the private group (UPDATE ... IF EXISTS, as a
	// join) and opens a membership window at `at` in u's inbox entry. When
	// it adds u (u was no member), it stores the system message "<by> added
	// <u> to the group" with an id of time `at` (MessageIDAt), so that it is
	// the first message of u's window, logs ParticipantJoined (User u, id the
	// message's) in the group's log and AddedToGroup (User by, same id) in
	// u's inbox log, and returns the ParticipantJoined event; adding a member
	// again changes nothing and returns the zero Event. When it adds u, it
	// writes notices to the outbox in the same operation, with the system
	// message's id, which the caller cannot know beforehand (see
	// NoticesOf: their ID is left zero); adding a member again writes
	// none.
	// Returns ErrNotFound if the group does not exist, ErrForbidden if by is
	// not a member, ErrInvalid if the room is not a private group.
	AddGroupMember(ctx context.Context, group string, by UserRef, u UserRef, at time.Time, notices ...Notice) (Room, Event, error)

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

	// GroupMessagesAfter returns up to limit messages of the group, oldest
	// first, newer than after (zero: from the oldest), that fall in one of
	// the windows (see PlanSegmentsAfter).
	GroupMessagesAfter(ctx context.Context, group string, windows []Window, after MessageID, limit int) ([]Message, error)
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

	// EditMessage replaces m's content with content, edited at at (kept to
	// the millisecond), in every copy of it, the inbox entries' last
	// message included, and logs MessageEdited (a fresh id, User by): in
	// the room's log, or in both users' inbox logs for a direct message.
	// Of racing edits the latest at wins in every copy. An edit clears the
	// message's Preview (the chat sets the new content's). Returns ErrNotFound
	// if there is no such message or it is deleted (an edit racing a
	// delete never brings the content back). The caller checks who may.
	EditMessage(ctx context.Context, m Message, by UserRef, content string, at time.Time) (Event, error)

	// DeleteMessage erases m's content from every copy of it, the inbox
	// entries' last message included, leaving a tombstone (Deleted, no
	// content), and logs MessageDeleted as EditMessage logs its event.
	// Deleting a deleted message changes nothing and logs nothing (the
	// zero Event). Returns ErrNotFound if there is no such message.
	DeleteMessage(ctx context.Context, m Message, by UserRef) (Event, error)

	// SetPreview stores p as the preview of m (as it was read: its
	// EditedAt says which version of the content p is of) in every copy
	// of it, the inbox entries' last message included, and logs
	// MessagePreviewed as EditMessage logs its event (User, m's author).
	// It changes nothing and logs nothing (the zero Event) when m was
	// edited since, or deleted: the preview is of content it no longer
	// has. Returns ErrNotFound if there is no such message.
	SetPreview(ctx context.Context, m Message, p LinkPreview) (Event, error)
}

// ByNewestMessage is the inbox's order: by last message, newest first;
// then the entries without one by their newest window, newest first; then
// by id.
func ByNewestMessage(a, b Conversation) int {
	aNone, bNone := a.LastMessage.ID.IsZero(), b.LastMessage.ID.IsZero()
	switch {
	case aNone != bNone:
		if aNone {
			return 1
		}
		return -1
	case !aNone:
		if c := b.LastMessage.ID.Compare(a.LastMessage.ID); c != 0 {
			return c
		}
	default:
		if c := newestFrom(b).Compare(newestFrom(a)); c != 0 {
			return c
		}
	}
	return strings.Compare(a.ID, b.ID)
}

// newestFrom is the start of the entry's newest window.
func newestFrom(c Conversation) (t time.Time) {
	if n := len(c.Windows); n > 0 {
		t = c.Windows[n-1].From
	}
	return t
}
