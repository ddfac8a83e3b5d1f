package store

import (
	"context"
	"fmt"
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

// NoticesOf returns the notices a write of the message id in room takes,
// checked and completed: a notice's zero ID becomes id (AddGroupMember's
// callers cannot know the id of the system message it makes, so they
// leave it zero), and its empty Room becomes room. A notice needs a
// recipient and a kind; one with another message's id is ErrInvalid, as
// it could not be stored once by a retried write.
func NoticesOf(id MessageID, room string, notices []Notice) ([]Notice, error) {
	if len(notices) == 0 {
		return nil, nil
	}
	out := make([]Notice, len(notices))
	for i, n := range notices {
		switch {
		case n.Recipient == "":
			return nil, Invalidf("notice %d of message %v has no recipient", i, id)
		case n.Kind == "":
			return nil, Invalidf("notice of message %v to %q has no kind", id, n.Recipient)
		case !n.ID.IsZero() && n.ID != id:
			return nil, Invalidf("notice to %q has id %v, not its message's %v", n.Recipient, n.ID, id)
		}
		n.ID = id
		if n.Room == "" {
			n.Room = room
		}
		out[i] = n
	}
	return out, nil
}

// CompareNotices orders notices as an outbox shard reads them: by id, then
// recipient.
func CompareNotices(a, b Notice) int {
	if c := a.ID.Compare(b.ID); c != 0 {
		return c
	}
	switch {
	case a.Recipient < b.Recipient:
		return -1
	case a.Recipient > b.Recipient:
		return 1
	}
	return 0
}

// String names the notice, for errors and logs.
func (n Notice) String() string {
	return fmt.Sprintf("%s notice %v to %q", n.Kind, n.ID, n.Recipient)
}

// NoticeShards is how many partitions the outbox has. A notice's shard is
// its recipient's (NoticeShard), so one recipient's notices keep their
// order; each shard is read by one instance at a time, the holder of its
// lease.
const NoticeShards = 16

// NoticeRetention is how long a backend keeps a notice at least, done or
// not: the longest an outage of the notifier may last without losing
// what it owed.
const NoticeRetention = 7 * 24 * time.Hour

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
	// after, not marked done, oldest first (by id, then recipient). It
	// does not read the shard's cursor: the reader passes it as after, so
	// a notice written with an id at or before the cursor (its write
	// landed after the reader moved on) is never returned. A page ends
	// inside the notices of one id as anywhere else; the reader reads on
	// from the cursor again once it has marked the page done, not from the
	// last id it got, which would skip the other recipients of that id.
	// A backend keeps notices for some days at least (Cassandra: a TTL of
	// NoticeRetention); the zero after reads what it keeps.
	PendingNotices(ctx context.Context, shard int, after MessageID, limit int) ([]Notice, error)
	// MarkNoticesDone marks notices of shard done: PendingNotices skips
	// them from then on. Marking a notice twice, or one no longer kept,
	// does nothing. In the same write it forgets the push send recorded
	// (RecordPushSends) for each recipient and conversation (Room) of the
	// notices: a send is recorded only while its notices are pending.
	MarkNoticesDone(ctx context.Context, shard int, notices []Notice) error
	// RecordPushSends records, in one write, the notifications of shard
	// about to be pushed, each replacing the one recorded for its
	// recipient and conversation: after a crash, the next reader of the
	// shard pushes the very same notification again rather than its
	// notices in another (see PushSend).
	RecordPushSends(ctx context.Context, shard int, sends []PushSend) error
	// PushSends returns the sends of shard recorded for recipients (and
	// not forgotten by MarkNoticesDone), in one read.
	PushSends(ctx context.Context, shard int, recipients []string) ([]PushSend, error)
	// NoticeCursor is shard's cursor (the zero id when it has none).
	NoticeCursor(ctx context.Context, shard int) (MessageID, error)
	// SetNoticeCursor moves shard's cursor to upTo, never back: of racing
	// moves the furthest wins (Cassandra: a lightweight transaction, UPDATE
	// ... IF cursor < upTo). A backend may forget the notices up to it.
	SetNoticeCursor(ctx context.Context, shard int, upTo MessageID) error
	// LeaseNoticeShard takes shard's lease for holder until ttl from now,
	// or renews it if holder has it; it reports false, changing nothing,
	// while another holder's lease runs. Several instances thus share the
	// shards, each read by one at a time. Of racing takers exactly one
	// wins. A lease lasts at least ttl, by the store's clock, not the
	// holder's (a holder should stop reading some time before ttl runs
	// out); on Cassandra, whose TTLs are whole seconds counted from the
	// current one, up to a second more.
	LeaseNoticeShard(ctx context.Context, shard int, holder string, ttl time.Duration) (bool, error)
}

// PushSend is a notification the notifier is about to push to the
// subscriptions of Recipient, recorded in the outbox before it is pushed
// and forgotten when its notices are marked done. A reader that finds one
// (the previous holder of the shard died between the two, or a push
// service asked for a retry) pushes the same Payload again, with the same
// Topic, before anything else of the conversation: a push service still
// holding the first replaces it (RFC 8030 section 5.4), and a browser that
// had it gets the same notification again, not one of its notices in
// another.
type PushSend struct {
	Recipient string
	// Room is the conversation.
	Room string
	// Notices are the ids of Recipient's notices it stands for.
	Notices []MessageID
	// Payload is the notification as pushed (before its encryption,
	// which differs for each subscription and push).
	Payload []byte
}

// MaxPushPayload bounds a PushSend's Payload: a push service need not
// accept a message longer than 4096 bytes (RFC 8030 section 7.2), its
// encryption included.
const MaxPushPayload = 4096

// CheckPushSends rejects a shard out of range and sends that are not
// whole: each needs a recipient of the shard, a conversation, notices and
// a payload of at most MaxPushPayload bytes.
func CheckPushSends(shard int, sends []PushSend) error {
	if shard < 0 || shard >= NoticeShards {
		return Invalidf("outbox shard %d is not in [0, %d)", shard, NoticeShards)
	}
	for _, s := range sends {
		switch {
		case s.Recipient == "" || s.Room == "" || len(s.Notices) == 0:
			return Invalidf("a push send needs a recipient, a conversation and notices: %q in %q with %d", s.Recipient, s.Room, len(s.Notices))
		case NoticeShard(s.Recipient) != shard:
			return Invalidf("the push send to %q is not of shard %d", s.Recipient, shard)
		case len(s.Payload) == 0 || len(s.Payload) > MaxPushPayload:
			return Invalidf("the push send to %q has %d bytes, not 1 to %d", s.Recipient, len(s.Payload), MaxPushPayload)
		}
	}
	return nil
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
	// Session is the id of the session that registered it: when that
	// session ends (logout, a password change or reset, expiry), the
	// subscription goes too. Empty for one registered with a bot's API
	// key, which has no session.
	Session string
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
	// The cap is a check before the write, not a compare-and-set: on
	// Cassandra, n racing adds of new endpoints may each see room for
	// one, and leave login up to n-1 over it.
	AddPushSubscription(ctx context.Context, login string, s PushSubscription) error
	// RemovePushSubscription drops login's subscription of endpoint;
	// dropping a missing one does nothing.
	RemovePushSubscription(ctx context.Context, login, endpoint string) error
	// PushSubscriptions lists login's subscriptions, oldest first.
	PushSubscriptions(ctx context.Context, login string) ([]PushSubscription, error)
	// SetPushPreviews sets whether login's notifications show the
	// message's text (true) or only who wrote where (false, the default).
	SetPushPreviews(ctx context.Context, login string, previews bool) error
	// PushPreviews reads that choice. DeleteAccount erases it with the
	// subscriptions.
	PushPreviews(ctx context.Context, login string) (bool, error)
}
