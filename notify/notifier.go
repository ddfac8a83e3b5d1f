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
	"net/url"
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
	// MaxBackoff is the longest a failing shard waits, and a push service
	// that fails rests (DefaultMaxBackoff when zero).
	MaxBackoff time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu sync.Mutex
	// sent remembers, per notice, the subscriptions a notification of it
	// reached, so that a retry after a failure reaches only the others;
	// at most maxRemembered notices (past that, a retry may repeat a push
	// to a subscription that had it, which the push's Topic collapses).
	sent map[noticeKey]map[string]bool
	// rests holds the push services (by origin) that were unreachable
	// or asked for a retry, until when none of their subscriptions is
	// tried: a dead push service costs one attempt per backoff, not one
	// per notice.
	rests map[string]rest
	// handled counts the notices done: told, or not to be told.
	handled atomic.Uint64
}

// Handled is how many notices the notifier is done with, told or not.
func (n *Notifier) Handled() uint64 { return n.handled.Load() }

// The notifier's defaults.
const (
	DefaultLag        = time.Minute
	DefaultPoll       = time.Second
	DefaultMaxBackoff = 5 * time.Minute
	leaseTTL          = 15 * time.Second
	pageSize          = 256
	excerptLen        = 200
	// maxRemembered bounds sent; maxResting bounds rests.
	maxRemembered = 1 << 16
	maxResting    = 1 << 12
)

// rest is a push service's backoff: not tried before until; wait is the
// backoff that set it, doubled by the next failure.
type rest struct {
	until time.Time
	wait  time.Duration
}

// scan is what the reader of one shard remembers between its drains. A
// drain reads the shard from its cursor; but while notices it had to
// leave for a retry wait for their push services' backoffs, a drain reads
// on from where the previous one could have missed a notice (one whose
// write landed after it read past the notice's id: Lag before it began,
// or where it stopped), so a backlog behind a dead push service is read
// again once per backoff, not once per Poll.
type scan struct {
	// left is the oldest notice left for a retry (zero: none), retryAt
	// when the drain is to read from the cursor again to retry them.
	left    store.MessageID
	retryAt time.Time
	// from is where the next drain that skips the ones left reads from.
	from store.MessageID
}

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

func (n *Notifier) maxBackoff() time.Duration {
	if n.MaxBackoff <= 0 {
		return DefaultMaxBackoff
	}
	return n.MaxBackoff
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
	var sc scan
	for ctx.Err() == nil {
		wait := leaseTTL / 3
		held, err := n.Outbox.LeaseNoticeShard(ctx, shard, n.Holder, leaseTTL)
		if err == nil && held {
			wait, err = n.hold(ctx, shard, &sc, time.Now().Add(leaseTTL/2))
		} else {
			sc = scan{} // another holder may have moved the cursor
		}
		if err != nil && ctx.Err() == nil {
			n.Log.WarnContext(ctx, "notify: shard failed", "shard", shard, "err", err)
			backoff = min(2*backoff, n.maxBackoff())
			wait = backoff
		} else if err == nil {
			backoff = n.poll()
		}
		sleep(ctx, wait)
	}
}

// hold drains shard every Poll until renew, when its lease is to be
// renewed, and sends its due digests. (Notices left for a retry wait in
// the scan, not the shard: the others are told meanwhile.)
func (n *Notifier) hold(ctx context.Context, shard int, sc *scan, renew time.Time) (time.Duration, error) {
	var digestsRead time.Time
	for {
		if err := n.drain(ctx, shard, sc, renew); err != nil {
			return 0, err
		}
		if n.Digests != nil && time.Since(digestsRead) >= max(n.DigestPoll, n.poll()) {
			digestsRead = time.Now()
			if err := n.Digests.SendDueDigests(ctx, shard); err != nil {
				return 0, err
			}
		}
		wait := n.poll()
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
// the lease is to be renewed. The notices it leaves for a retry (their
// push services failed or rest) are read again when the scan's retryAt
// comes.
func (n *Notifier) drain(ctx context.Context, shard int, sc *scan, until time.Time) error {
	cursor, err := n.Outbox.NoticeCursor(ctx, shard)
	if err != nil {
		return err
	}
	var retry time.Duration
	after, left := cursor, store.MessageID{}
	if !sc.left.IsZero() && time.Now().Before(sc.retryAt) {
		after, left = maxID(cursor, sc.from), sc.left
	}
	from, complete := store.MinMessageID(n.now().Add(-n.lag())), false
	for time.Now().Before(until) {
		page, err := n.Outbox.PendingNotices(ctx, shard, after, pageSize)
		if err != nil {
			return err
		}
		full := len(page) == pageSize
		if full {
			page = wholeIDs(page)
		}
		for _, group := range byConversation(page) {
			if n.Digests != nil {
				if err := n.Digests.KeepForDigest(ctx, group); err != nil {
					return err
				}
			}
			wait, err := n.tell(ctx, group)
			if err != nil {
				return err
			}
			if wait > 0 {
				if left.IsZero() || group[0].ID.Compare(left) < 0 {
					left = group[0].ID
				}
				retry = max(retry, wait)
				continue
			}
			if err := n.Outbox.MarkNoticesDone(ctx, shard, group); err != nil {
				return err
			}
			n.forget(group)
			n.handled.Add(uint64(len(group)))
		}
		if !full {
			complete = true
			break
		}
		after = page[len(page)-1].ID
	}
	sc.from = from
	if !complete && after.Compare(from) < 0 {
		sc.from = after // stopped here
	}
	if retry > 0 || left.IsZero() {
		sc.retryAt = time.Now().Add(max(retry, n.poll()))
	}
	sc.left = left
	return n.advance(ctx, shard, cursor, left)
}

// wholeIDs drops from a full page the notices of its last id, which may
// go on in the next page, unless they are all it has (an id has at most a
// message's mentions and its reply's author, far fewer than a page): the
// next page is read after the last id handled.
func wholeIDs(page []store.Notice) []store.Notice {
	last := page[len(page)-1].ID
	i := len(page)
	for i > 0 && page[i-1].ID == last {
		i--
	}
	if i == 0 {
		return page
	}
	return page[:i]
}

func maxID(a, b store.MessageID) store.MessageID {
	if a.Compare(b) >= 0 {
		return a
	}
	return b
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
// each of their subscriptions that has not had it and whose push service
// is not resting. A subscription the push service says is gone is
// dropped. It returns how long to wait before a retry when a push service
// asked for one or rests (0: done).
func (n *Notifier) tell(ctx context.Context, group []store.Notice) (retry time.Duration, err error) {
	if n.Push == nil {
		return 0, nil
	}
	recipient := group[0].Recipient
	subs, err := n.Subscriptions.PushSubscriptions(ctx, recipient)
	if err != nil {
		return 0, err
	}
	last := group[len(group)-1]
	due := subs[:0]
	for _, sub := range subs {
		if n.reached(last, sub.Endpoint) {
			continue
		}
		if wait := n.resting(sub.Endpoint); wait > 0 {
			retry = max(retry, wait)
			continue
		}
		due = append(due, sub)
	}
	if len(due) == 0 {
		return retry, nil
	}
	note, ok, err := n.Compose(ctx, group)
	if err != nil || !ok {
		return 0, err
	}
	payload, err := json.Marshal(note)
	if err != nil {
		return 0, err
	}
	for _, sub := range due {
		res, err := n.Push.Send(ctx, webpush.Subscription{Endpoint: sub.Endpoint, P256dh: sub.P256dh, Auth: sub.Auth}, payload,
			webpush.Options{TTL: 24 * time.Hour, Urgency: webpush.UrgencyNormal, Topic: topic(note.Conversation)})
		if errors.Is(err, context.Canceled) {
			return retry, err
		}
		switch res.Outcome {
		case webpush.Delivered:
			n.reach(last, sub.Endpoint)
		case webpush.Gone:
			if err := n.Subscriptions.RemovePushSubscription(ctx, recipient, sub.Endpoint); err != nil {
				return 0, err
			}
		case webpush.RetryLater:
			retry = max(retry, n.rest(sub.Endpoint, res.RetryAfter))
			continue
		default:
			n.Log.WarnContext(ctx, "notify: a push was refused", "recipient", recipient, "status", res.StatusCode, "detail", res.Detail, "err", err)
		}
		n.awake(sub.Endpoint)
	}
	return retry, nil
}

// origin is the push service of an endpoint: its scheme and host.
func origin(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return endpoint
	}
	return u.Scheme + "://" + u.Host
}

// resting is how long endpoint's push service still rests (0: it does
// not). When a rest has ended, the first to ask may try the service again
// and, until it knows whether the service is back, the others still see
// it resting: the shards' readers do not all try it at once.
func (n *Notifier) resting(endpoint string) time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	key := origin(endpoint)
	r, ok := n.rests[key]
	if !ok {
		return 0
	}
	if wait := time.Until(r.until); wait > 0 {
		return wait
	}
	n.rests[key] = rest{until: time.Now().Add(r.wait), wait: r.wait}
	return 0
}

// rest makes endpoint's push service rest for retryAfter if it asked for
// it, else for twice its last rest (Poll at first, maxBackoff at most),
// and returns the rest.
func (n *Notifier) rest(endpoint string, retryAfter time.Duration) time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.rests == nil {
		n.rests = map[string]rest{}
	}
	key := origin(endpoint)
	r, ok := n.rests[key]
	if !ok && len(n.rests) >= maxResting {
		n.pruneResting()
	}
	wait := retryAfter
	if wait <= 0 {
		wait = min(max(2*r.wait, n.poll()), n.maxBackoff())
	}
	n.rests[key] = rest{until: time.Now().Add(wait), wait: wait}
	return wait
}

// pruneResting drops the rests that ended; if none has, the map is full of
// dead push services and the oldest ending one goes.
func (n *Notifier) pruneResting() {
	now, first := time.Now(), ""
	for k, r := range n.rests {
		if r.until.Before(now) {
			delete(n.rests, k)
		} else if first == "" || r.until.Before(n.rests[first].until) {
			first = k
		}
	}
	if len(n.rests) >= maxResting {
		delete(n.rests, first)
	}
}

// awake ends the rest of endpoint's push service, which answered.
func (n *Notifier) awake(endpoint string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.rests, origin(endpoint))
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
		if len(n.sent) >= maxRemembered {
			return
		}
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
