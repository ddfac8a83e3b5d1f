package store

import "context"

// MaxLatestRepliers is how many of a thread's latest repliers its summary
// names.
const MaxLatestRepliers = 3

// A Thread sums up the replies to a message: how many, and who replied
// last (distinct, newest first, at most MaxLatestRepliers).
type Thread struct {
	Replies        int
	LatestRepliers []UserRef
}

// Threads reads the replies to messages. A reply is a message of the room
// like any other, posted (PostMessage, PostGroupMessage, SendDirect) with
// ReplyTo set to its thread's root, and the post records it in the
// thread, in the partition of the root's room and day: a page of roots
// reads its threads with one read per day, as it reads its reactions.
type Threads interface {
	// ThreadSummaries returns the thread of each of roots that has
	// replies, by the root's id. Deleted replies count: they keep their
	// place, as in the history.
	ThreadSummaries(ctx context.Context, roots []Message) (map[MessageID]Thread, error)

	// ThreadReplies returns up to limit replies to root, newest first,
	// strictly older than before (zero: from the newest).
	ThreadReplies(ctx context.Context, root Message, before MessageID, limit int) ([]Message, error)

	// ThreadRepliesAfter returns up to limit replies to root, oldest first,
	// strictly newer than after (zero: from the oldest).
	ThreadRepliesAfter(ctx context.Context, root Message, after MessageID, limit int) ([]Message, error)
}
