package store

import (
	"context"
	"time"
)

// InboxPosition is where a conversation stands in its owner's inbox: the
// time of its last activity, as a message id, and the conversation's id.
// Positions order newest activity first, then by conversation id,
// descending (ComparePositions).
type InboxPosition struct {
	Activity     MessageID
	Conversation string
}

// ComparePositions orders positions as the inbox lists them: a before b
// (negative) when a's activity is newer, or equal with a greater
// conversation id.
func ComparePositions(a, b InboxPosition) int {
	if c := b.Activity.Compare(a.Activity); c != 0 {
		return c
	}
	switch {
	case a.Conversation > b.Conversation:
		return -1
	case a.Conversation < b.Conversation:
		return 1
	}
	return 0
}

// InboxOrder keeps each user's conversations, direct, group and the public
// rooms they take part in, ordered by last activity, so that the inbox is
// read a page at a time with one partition read (the entries of the page
// are then read each). An activity is a message that makes a conversation
// the newest: a direct message (both users), a group message (every member),
// a post to a public room of at most InboxFanoutLimit participants (every
// participant: the one write per participant such a post makes), and for
// the user alone, creating a room or group,
// joining a room or being added to a group.
//
// Moving a conversation writes a position at the new activity and records
// the activity as the conversation's newest, without reading: of racing
// activities, the newest is the one recorded whatever the order they land
// in (Cassandra: USING TIMESTAMP of the activity; embedded: the largest
// key). The positions older activities left behind are dropped by the first
// page that reaches them, so a page lists each conversation once, at its
// newest activity. Fewer are left: a post to a public room deletes the
// positions the room's previous post wrote, in the batches that write its
// own, and so, on the embedded store, do a direct and a group message
// (whose entry it reads anyway); what is left is the positions of other
// activities (joins, creations) and of racing posts, and on Cassandra of
// direct and group messages, whose writes read nothing that names the
// previous one. The embedded store moves a public room at most once a
// second and owes the moves of posts in between, which InboxPage makes
// before it reads: a page lists the room at its newest post either way.
// Leaving a conversation leaves its position: the chat
// core passes over (and drops) the positions of conversations the user no
// longer has.
//
// A post to a public room of more than InboxFanoutLimit participants writes
// no position: the room is a large room of each participant's order
// (LargeInboxRooms), marked there by the join that took the room past the
// limit (every participant) and by each join while it is past it (the
// joiner), and the chat core merges its last activity into the pages. A
// mark stays when the room shrinks back (its posts then write positions
// again, and the mark costs the page one read) until the chat core drops
// it, when the user no longer takes part (DropLargeInboxRooms).
type InboxOrder interface {
	// InboxPage returns up to limit of login's positions, newest first,
	// strictly after `after` in that order (the zero position: from the
	// newest), each conversation once at its newest activity; it deletes
	// the positions it passes over.
	InboxPage(ctx context.Context, login string, after InboxPosition, limit int) ([]InboxPosition, error)

	// InboxOrdered reports whether login's order holds every conversation
	// of login: whether OrderInbox ran for login. An inbox made before the
	// order (schema version 25) holds only the activities since, until the
	// chat core fills it in once (OrderInbox).
	InboxOrdered(ctx context.Context, login string) (bool, error)

	// OrderInbox records the positions as activities of login's
	// conversations (an activity older than one recorded changes nothing
	// but leaves a position the next page drops) and marks login's order as
	// holding every conversation (InboxOrdered).
	OrderInbox(ctx context.Context, login string, positions []InboxPosition) error

	// DropInboxPositions deletes these positions of login: those of
	// conversations login no longer has. A newer position of the same
	// conversation stays. A dropped position may stay dropped if recorded
	// again (Cassandra's tombstone wins the tie of their timestamps): an
	// activity is recorded once, but for OrderInbox's, which comes first.
	DropInboxPositions(ctx context.Context, login string, positions []InboxPosition) error

	// LargeInboxRooms returns the rooms marked large in login's order, by
	// name.
	LargeInboxRooms(ctx context.Context, login string) ([]string, error)

	// DropLargeInboxRooms deletes login's marks of these rooms made before
	// `before`: a join after it marks the room again.
	DropLargeInboxRooms(ctx context.Context, login string, rooms []string, before time.Time) error
}

// InboxFanoutLimit is the most participants a public room may have for its
// posts to write a position in each participant's inbox order; a larger
// room's posts write none, whatever its size, and its activity is merged
// when the inbox is read (one read per large room per page). 200: a post
// to a room at the limit writes 400 keys of inbox order on the embedded
// store, a few milliseconds on the 2-core machine (BenchmarkPostToRoomOfSize,
// BENCHMARKS.md), and a user takes part in few rooms larger than that, so
// pages read few. Lower, more users' pages pay a read per room; higher,
// each post pays a write per participant more.
const InboxFanoutLimit = 200
