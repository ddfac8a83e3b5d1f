package store

import (
	"context"
	"hash/fnv"
	"time"
)

// NoticeKind is why someone is told of a message while they may be away.
type NoticeKind string

// The kinds of notices.
const (
	// NoticeDirectMessage: From sent Recipient a direct message.
	NoticeDirectMessage NoticeKind = "DIRECT_MESSAGE"
	// NoticeMention: From mentioned Recipient (@login) in a room or group.
	NoticeMention NoticeKind = "MENTION"
	// NoticeReply: From replied in the thread of one of Recipient's
	// messages.
	NoticeReply NoticeKind = "REPLY"
	// NoticeAddedToGroup: From added Recipient to the private group Room.
	NoticeAddedToGroup NoticeKind = "ADDED_TO_GROUP"
)

// Notice is a notification owed to someone about a message (or, for
// NoticeAddedToGroup, the system message recording their addition). It is
// written to the outbox with the write that causes it, in the same store
// operation, so an acknowledged write never loses its notices; the
// notifier (package notify) reads it from there, decides whether and how
// to tell the recipient (they may be online, or have muted the
// conversation), and marks it done.
type Notice struct {
	// ID is the message's id: with Recipient, it names the notice, so a
	// retried write stores it once.
	ID        MessageID
	Recipient string
	Kind      NoticeKind
	// Room is the conversation: a room, a group, or a direct conversation.
	Room string
	From UserRef
}

// NoticeShards is how many partitions the outbox has. A notice's shard is
// its recipient's (NoticeShard), so one recipient's notices keep their
// order; each shard is read by one instance at a time, the holder of its
// lease.
const NoticeShards = 16

// NoticeShard is the outbox partition of recipient's notices.
func NoticeShard(recipient string) int {
	h := fnv.New32a()
	h.Write([]byte(recipient))
	return int(h.Sum32() % NoticeShards)
}

// Outbox is the durable queue of notices, in NoticeShards partitions.
// Notices are added by the writes that cause them (PostMessage,
// SendDirect, PostGroupMessage and AddGroupMember take them), and read in
// the order of their ids.
//
// A shard's reader keeps a cursor: the notices up to it are done and never
// read again, so neither a backlog nor the notices done cost a read of the
// whole queue. Ids are made by the writing instances' clocks and a write
// lands some time after its id was made, so the reader moves the cursor
// only to a time it is sure every write before has landed (a minute ago,
// say: see package notify), and marks the notices it handled after it one
// by one (MarkNoticesDone) so that it does not handle them twice.
type Outbox interface {
	// PendingNotices returns up to limit notices of shard with ids after
	// after, not marked done, oldest first (by id, then recipient).
	PendingNotices(ctx context.Context, shard int, after MessageID, limit int) ([]Notice, error)
	// MarkNoticesDone marks notices of shard done: PendingNotices skips
	// them from then on. Marking a notice twice, or one no longer kept,
	// does nothing.
	MarkNoticesDone(ctx context.Context, shard int, notices []Notice) error
	// NoticeCursor is shard's cursor (the zero id when it has none).
	NoticeCursor(ctx context.Context, shard int) (MessageID, error)
	// SetNoticeCursor moves shard's cursor to upTo, never back. A backend
	// may forget the notices up to it.
	SetNoticeCursor(ctx context.Context, shard int, upTo MessageID) error
	// LeaseNoticeShard takes shard's lease for holder until ttl from now,
	// or renews it if holder has it; it reports false, changing nothing,
	// while another holder's lease runs. Several instances thus share the
	// shards, each read by one at a time.
	LeaseNoticeShard(ctx context.Context, shard int, holder string, ttl time.Duration) (bool, error)
}

// PushSubscription is a browser's Web Push subscription (the PushSubscription
// of the Push API), registered by a user for one of their devices.
type PushSubscription struct {
	// Endpoint is the push service's URL for the subscription: it names
	// the subscription.
	Endpoint string
	// P256dh and Auth are the browser's keys (base64url), which encrypt
	// what is pushed.
	P256dh, Auth string
	// Device is the user's name for the device, such as "laptop".
	Device string
	// CreatedAt is when it was registered.
	CreatedAt time.Time
}

// MaxPushSubscriptions caps the subscriptions of one user.
const MaxPushSubscriptions = 20

// PushSubscriptions keeps the users' push subscriptions and their choice of
// what a notification shows.
type PushSubscriptions interface {
	// AddPushSubscription registers s for login, replacing the one of the
	// same endpoint; ErrInvalid when login has MaxPushSubscriptions others.
	AddPushSubscription(ctx context.Context, login string, s PushSubscription) error
	// RemovePushSubscription drops login's subscription of endpoint;
	// dropping a missing one does nothing.
	RemovePushSubscription(ctx context.Context, login, endpoint string) error
	// PushSubscriptions lists login's subscriptions, oldest first.
	PushSubscriptions(ctx context.Context, login string) ([]PushSubscription, error)
	// SetPushPreviews sets whether login's notifications show the
	// message's text (true) or only who wrote where (false, the default).
	SetPushPreviews(ctx context.Context, login string, previews bool) error
	// PushPreviews reads that choice.
	PushPreviews(ctx context.Context, login string) (bool, error)
}
