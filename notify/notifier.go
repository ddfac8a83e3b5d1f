// Package notify tells people who are away what they missed: it reads the
// store's outbox of notices (written with the messages that cause them) and
// sends them as Web Push notifications (notify/webpush) to the browsers the
// recipients registered. Outgoing webhooks (notify/webhook) and email
// digests (notify/mail) are its other senders.
package notify

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/killrchat/chatql/notify/webpush"
	"github.com/killrchat/chatql/store"
)

// Notification is what a push tells a browser, as JSON: the web app's
// service worker shows it. Several notices of one conversation make one
// notification (Count), which replaces the conversation's earlier one
// (Topic at the push service, the notification's tag in the browser).
type Notification struct {
	Kind         store.NoticeKind `json:"kind"`
	Conversation string           `json:"conversation"`
	// Title and Body are what the notification shows; Body has the text of
	// the newest message only for users who chose previews.
	Title string `json:"title"`
	Body  string `json:"body"`
	// Count is how many notices it stands for.
	Count int `json:"count"`
	// Message is the newest message's id, which the app opens.
	Message string `json:"message"`
	// Notices are the ids of the notices it stands for, newest last.
	Notices []string `json:"notices"`
}

// Composer applies the chat's rules to the notices of one recipient in one
// conversation (their online presence, mutes, blocks, what they may read)
// and words what is to be shown: ok is false when nothing is to be sent.
type Composer func(ctx context.Context, notices []store.Notice) (n Notification, ok bool, err error)

// Digests keeps notices for email digests and sends the due ones (the
// chat's rules: chat.Service).
type Digests interface {
	// KeepForDigest keeps one recipient's notices of one conversation for
	// their next digest, if they are to have one.
	KeepForDigest(ctx context.Context, notices []store.Notice) error
	// SendDueDigests sends the due digests of a shard whose lease the
	// caller holds.
	SendDueDigests(ctx context.Context, shard int) error
}

// Notifier reads the outbox's shards it holds the lease of and pushes their
// notices, and keeps them for email digests, which it sends when due. Each
// shard is read by one instance at a time.
type Notifier struct {
	Outbox store.Outbox
	// Subscriptions are the recipients' push subscriptions.
	Subscriptions interface {
		PushSubscriptions(ctx context.Context, login string) ([]store.PushSubscription, error)
		RemovePushSubscription(ctx context.Context, login, endpoint string) error
	}
	// Push sends Web Push notifications, worded by Compose; nil sends
	// none.
	Push    *webpush.Sender
	Compose Composer
	// Digests, if set, keeps each group of notices for email digests
	// before it is marked done, and sends a shard's due digests after
	// each round of it, but at most every DigestPoll (Poll when zero).
	Digests    Digests
	DigestPoll time.Duration
	// Holder names this instance in the shards' leases.
	Holder string
	Log    *slog.Logger
	// Lag is how long after a notice's id was made its write has surely
	// landed: the cursor stays that far behind the clock (DefaultLag when
	// zero).
	Lag time.Duration
	// Poll is how often a held shard is read when it had nothing
	// (DefaultPoll when zero).
	Poll time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	// sent remembers, per notice, the subscriptions a notification of it
	// reached, so that a retry after a failure reaches only the others.
	mu   sync.Mutex
	sent map[noticeKey]map[string]bool
	// handled counts the notices done: told, or not to be told.
	handled atomic.Uint64
}

// Handled is how many notices the notifier is done with, told or not.
func (n *Notifier) Handled() uint64 { return n.handled.Load() }

// The notifier's defaults.
const (
	DefaultLag  = time.Minute
	DefaultPoll = time.Second
	leaseTTL    = 15 * time.Second
	pageSize    = 256
	maxBackoff  = 5 * time.Minute
	excerptLen  = 200
)

type noticeKey struct {
	id        store.MessageID
	recipient string
}

func (n *Notifier) now() time.Time {
	if n.Now == nil {
		return time.Now()
	}
	return n.Now()
}

func (n *Notifier) lag() time.Duration {
	if n.Lag <= 0 {
		return DefaultLag
	}
	return n.Lag
}

func (n *Notifier) poll() time.Duration {
	if n.Poll <= 0 {
		return DefaultPoll
	}
	return n.Poll
}

// Run reads the shards until ctx ends, one goroutine each.
func (n *Notifier) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for shard := range store.NoticeShards {
		wg.Go(func() { n.runShard(ctx, shard) })
	}
	wg.Wait()
}

// runShard holds shard's lease whenever it can and, while it does, drains
// the shard every Poll, renewing the lease every half of its term; after a
// failure it waits longer each time, up to maxBackoff. Another instance's
// lease is tried again every third of its term.
func (n *Notifier) runShard(ctx context.Context, shard int) {
	backoff := n.poll()
	for ctx.Err() == nil {
		wait := leaseTTL / 3
		held, err := n.Outbox.LeaseNoticeShard(ctx, shard, n.Holder, leaseTTL)
		if err == nil && held {
			wait, err = n.hold(ctx, shard, time.Now().Add(leaseTTL/2))
		}
		if err != nil && ctx.Err() == nil {
			n.Log.WarnContext(ctx, "notify: shard failed", "shard", shard, "err", err)
			backoff = min(2*backoff, maxBackoff)
			wait = backoff
		} else if err == nil {
			backoff = n.poll()
		}
		sleep(ctx, wait)
	}
}

// hold drains shard every Poll (or later, when a push service asked for a
// retry) until renew, when its lease is to be renewed.
func (n *Notifier) hold(ctx context.Context, shard int, renew time.Time) (time.Duration, error) {
	var digestsRead time.Time
	for {
		retry, err := n.drain(ctx, shard, renew)
		if err != nil {
			return 0, err
		}
		if n.Digests != nil && time.Since(digestsRead) >= max(n.DigestPoll, n.poll()) {
			digestsRead = time.Now()
			if err := n.Digests.SendDueDigests(ctx, shard); err != nil {
				return 0, err
			}
		}
		wait := max(n.poll(), retry)
		if time.Now().Add(wait).After(renew) {
			return max(time.Until(renew), 0), nil
		}
		if !sleep(ctx, wait) {
			return 0, ctx.Err()
		}
	}
}

// sleep waits d or until ctx ends; it reports whether ctx is still on.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// drain handles shard's pending notices until none is left or until, when
// the lease is to be renewed. It returns how long to wait before trying
// again the notices some push service asked to be retried (0: none).
func (n *Notifier) drain(ctx context.Context, shard int, until time.Time) (retry time.Duration, err error) {
	cursor, err := n.Outbox.NoticeCursor(ctx, shard)
	if err != nil {
		return 0, err
	}
	after := cursor
	var oldestLeft store.MessageID // the oldest notice left pending for a retry
	for time.Now().Before(until) {
		page, err := n.Outbox.PendingNotices(ctx, shard, after, pageSize)
		if err != nil {
			return retry, err
		}
		for _, group := range byConversation(page) {
			if n.Digests != nil {
				if err := n.Digests.KeepForDigest(ctx, group); err != nil {
					return retry, err
				}
			}
			wait, err := n.tell(ctx, group)
			if err != nil {
				return retry, err
			}
			if wait > 0 {
				if oldestLeft.IsZero() || group[0].ID.Compare(oldestLeft) < 0 {
					oldestLeft = group[0].ID
				}
				retry = max(retry, wait)
				continue
			}
			if err := n.Outbox.MarkNoticesDone(ctx, shard, group); err != nil {
				return retry, err
			}
			n.forget(group)
			n.handled.Add(uint64(len(group)))
		}
		if len(page) < pageSize {
			break
		}
		after = page[len(page)-1].ID
	}
	return retry, n.advance(ctx, shard, cursor, oldestLeft)
}

// advance moves shard's cursor as far as it safely may: to Lag ago, but
// not past a notice left for a retry.
func (n *Notifier) advance(ctx context.Context, shard int, cursor, oldestLeft store.MessageID) error {
	upTo := store.MinMessageID(n.now().Add(-n.lag()))
	if !oldestLeft.IsZero() && oldestLeft.Compare(upTo) <= 0 {
		upTo = store.MinMessageID(oldestLeft.Time())
	}
	if upTo.Compare(cursor) <= 0 {
		return nil
	}
	return n.Outbox.SetNoticeCursor(ctx, shard, upTo)
}

// byConversation groups a page's notices by recipient and conversation,
// in the order of each group's first notice.
func byConversation(page []store.Notice) [][]store.Notice {
	type key struct{ recipient, room string }
	index := map[key]int{}
	var groups [][]store.Notice
	for _, nt := range page {
		k := key{nt.Recipient, nt.Room}
		i, ok := index[k]
		if !ok {
			i = len(groups)
			index[k] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], nt)
	}
	return groups
}

// tell sends one recipient's notification of a conversation's notices to
// each of their subscriptions that has not had it. A subscription the push
// service says is gone is dropped. It returns how long to wait before a
// retry when a push service asked for one (0: done).
func (n *Notifier) tell(ctx context.Context, group []store.Notice) (retry time.Duration, err error) {
	if n.Push == nil {
		return 0, nil
	}
	note, ok, err := n.Compose(ctx, group)
	if err != nil || !ok {
		return 0, err
	}
	recipient := group[0].Recipient
	subs, err := n.Subscriptions.PushSubscriptions(ctx, recipient)
	if err != nil {
		return 0, err
	}
	payload, err := json.Marshal(note)
	if err != nil {
		return 0, err
	}
	last := group[len(group)-1]
	for _, sub := range subs {
		if n.reached(last, sub.Endpoint) {
			continue
		}
		res, err := n.Push.Send(ctx, webpush.Subscription{Endpoint: sub.Endpoint, P256dh: sub.P256dh, Auth: sub.Auth}, payload,
			webpush.Options{TTL: 24 * time.Hour, Urgency: webpush.UrgencyNormal, Topic: topic(note.Conversation)})
		switch res.Outcome {
		case webpush.Delivered:
			n.reach(last, sub.Endpoint)
		case webpush.Gone:
			if err := n.Subscriptions.RemovePushSubscription(ctx, recipient, sub.Endpoint); err != nil {
				return 0, err
			}
		case webpush.RetryLater:
			retry = max(retry, res.RetryAfter, n.poll())
		default:
			n.Log.WarnContext(ctx, "notify: a push was refused", "recipient", recipient, "status", res.StatusCode, "detail", res.Detail, "err", err)
		}
		if errors.Is(err, context.Canceled) {
			return retry, err
		}
	}
	return retry, nil
}

func (n *Notifier) reached(nt store.Notice, endpoint string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.sent[noticeKey{nt.ID, nt.Recipient}][endpoint]
}

func (n *Notifier) reach(nt store.Notice, endpoint string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.sent == nil {
		n.sent = map[noticeKey]map[string]bool{}
	}
	k := noticeKey{nt.ID, nt.Recipient}
	if n.sent[k] == nil {
		n.sent[k] = map[string]bool{}
	}
	n.sent[k][endpoint] = true
}

// forget drops what was remembered of a group's notices, now done.
func (n *Notifier) forget(group []store.Notice) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, nt := range group {
		delete(n.sent, noticeKey{nt.ID, nt.Recipient})
	}
}

// topic is a conversation's Topic header: a later notification of the
// conversation replaces one the push service has not delivered yet.
func topic(conversation string) string {
	sum := sha256.Sum256([]byte(conversation))
	return base64.RawURLEncoding.EncodeToString(sum[:])[:32]
}
