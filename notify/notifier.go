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
	"fmt"
	"log/slog"
	"net/url"
	"slices"
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
	// Notices are the ids of the notices it stands for, newest last: the
	// newest 50 of them.
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
	// sent remembers, per recorded push send (by its newest notice), the
	// subscriptions it reached, so that a retry after a failure reaches
	// only the others; at most maxRemembered sends (past that, and after
	// a restart, a retry pushes the same send again to a subscription
	// that had it, which the push's Topic collapses).
	sent map[noticeKey]map[string]bool
	// rests holds the push services (by origin) that were unreachable
	// or asked for a retry, until when none of their subscriptions is
	// tried: a dead push service costs one attempt per backoff, not one
	// per notice.
	rests map[string]rest
	// handled counts the notices done: told, or not to be told.
	handled atomic.Uint64
	// drained, if set, is told of each drain of a shard as it begins
	// (for tests).
	drained func(shard int)
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
	// maxIdle is how many notices a read of a drain may leave for a
	// retry before it stops: the bound on what a backlog behind a dead
	// push service costs a poll.
	maxIdle = 4 * pageSize
)

// rest is a push service's backoff: not tried before until; wait is the
// backoff that set it, doubled by the next failure.
type rest struct {
	until time.Time
	wait  time.Duration
}

// scan is what the reader of one shard remembers between its drains. A
// drain reads the notices after from (those not read yet: Lag before the
// previous drain began, or where it stopped) to tell them. Notices whose
// push services failed or rest are left in the outbox, a backlog whose
// oldest is left, and read again by a pass from the cursor, one per
// backoff; a pass, like a read of new notices, leaves at most maxIdle
// notices a drain, so that a backlog behind a dead push service costs a
// poll a bounded read, whatever its size. A pass goes on at the next poll
// if it told something, else once the push services it met may be tried
// again.
type scan struct {
	// left is the oldest notice left for a retry (zero: none); retryAt is
	// when a pass is to read them again.
	left    store.MessageID
	retryAt time.Time
	// from is where the next drain reads new notices from.
	from store.MessageID
	// passing reports a pass under way: pass is where it stopped, passEnd
	// where it ends (the from of when it began), passLeft the oldest
	// notice left since it began and passRetry the longest wait it met.
	passing                 bool
	pass, passEnd, passLeft store.MessageID
	passRetry               time.Duration
	// passAt is when the pass under way goes on: at the next poll after
	// a read that told something, else when the push services it left
	// notices for may be tried again.
	passAt time.Time
	// cursor is the shard's cursor as this holder last read or moved it,
	// read again once a hold of the lease (cursorRead): on Cassandra the
	// read is a serial one, and at every poll it was 16 a second on an
	// idle server. While the lease is held no one else moves it, and a
	// cursor behind the shard's only costs reading done notices again.
	cursor     store.MessageID
	cursorRead bool
}

// A read is what a drain did with the notices of one stretch of a shard.
type read struct {
	// left is the oldest notice left for a retry (zero: none), idle how
	// many were left, and retry the longest wait they asked for.
	left  store.MessageID
	idle  int
	retry time.Duration
	// handled counts the notices done.
	handled int
	// last is the last id read; complete reports whether the stretch was
	// read to its end.
	last     store.MessageID
	complete bool
}

func (r *read) leave(group []store.Notice, wait time.Duration) {
	if r.left.IsZero() || group[0].ID.Compare(r.left) < 0 {
		r.left = group[0].ID
	}
	r.idle += len(group)
	r.retry = max(r.retry, wait)
}

func minID(a, b store.MessageID) store.MessageID {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Compare(b) <= 0:
		return a
	}
	return b
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
	sc.cursorRead = false
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

// drain reads shard's new notices and, when a pass over the notices left
// for a retry is due or under way, goes on with it; each read stops after
// leaving maxIdle notices, or at until, when the lease is to be renewed.
// Then it moves the cursor as far as it safely may.
func (n *Notifier) drain(ctx context.Context, shard int, sc *scan, until time.Time) error {
	if n.drained != nil {
		n.drained(shard)
	}
	if !sc.cursorRead {
		cursor, err := n.Outbox.NoticeCursor(ctx, shard)
		if err != nil {
			return err
		}
		sc.cursor, sc.cursorRead = cursor, true
	}
	cursor := sc.cursor
	lagAgo := store.MinMessageID(n.now().Add(-n.lag()))
	start := maxID(cursor, sc.from)
	fresh, err := n.read(ctx, shard, start, store.MessageID{}, maxIdle, until)
	if err != nil {
		return err
	}
	sc.from = lagAgo
	stopped := !fresh.complete && fresh.last.Compare(lagAgo) < 0
	switch {
	case stopped && fresh.handled == 0 && fresh.idle >= maxIdle:
		// The new notices are a backlog whose push services take
		// nothing: the rest of it, up to Lag ago, joins the pass, which
		// waits for them, and the next drain reads on from Lag ago.
		if !sc.passing {
			sc.passing, sc.pass, sc.passLeft, sc.passRetry = true, cursor, store.MessageID{}, 0
			sc.passAt = time.Now().Add(max(fresh.retry, n.poll()))
		}
		sc.passEnd = maxID(sc.passEnd, lagAgo)
	case stopped:
		sc.from = fresh.last // stopped here
	}
	switch {
	case sc.passing:
		sc.passLeft = minID(sc.passLeft, fresh.left)
		sc.passRetry = max(sc.passRetry, fresh.retry)
	case !sc.left.IsZero() && !time.Now().Before(sc.retryAt):
		// A pass begins: it reads the notices up to where this drain
		// began; those this drain left are past it.
		sc.passing, sc.pass, sc.passEnd, sc.passLeft, sc.passRetry, sc.passAt = true, cursor, start, fresh.left, fresh.retry, time.Time{}
	default:
		if sc.left.IsZero() && !fresh.left.IsZero() {
			sc.retryAt = time.Now().Add(max(fresh.retry, n.poll()))
		}
		sc.left = minID(sc.left, fresh.left)
	}
	if sc.passing && !time.Now().Before(sc.passAt) {
		// A pass that waited reads a page to see whether the push
		// services take anything now before it reads more.
		budget := maxIdle
		if !sc.passAt.IsZero() {
			budget = pageSize
		}
		p, err := n.read(ctx, shard, maxID(cursor, sc.pass), sc.passEnd, budget, until)
		if err != nil {
			return err
		}
		sc.passLeft = minID(sc.passLeft, p.left)
		sc.passRetry = max(sc.passRetry, p.retry)
		switch {
		case p.complete:
			sc.left, sc.passing = sc.passLeft, false
			sc.retryAt = time.Now().Add(max(sc.passRetry, n.poll()))
		case p.handled == 0 && p.idle > 0:
			// Nothing told: the push services still fail or rest, and
			// the pass waits for them rather than read on every poll.
			sc.pass, sc.passAt = maxID(sc.pass, p.last), time.Now().Add(max(p.retry, n.poll()))
		default:
			sc.pass, sc.passAt = maxID(sc.pass, p.last), time.Time{}
		}
	}
	// The cursor stays before every notice left, and before what is not
	// read yet: the rest of the pass under way, and the new notices from
	// where a read stopped.
	bound := minID(sc.left, sc.from)
	if sc.passing {
		if sc.pass.IsZero() {
			return nil // the pass has read nothing yet from the shard's start
		}
		bound = minID(minID(sc.passLeft, sc.pass), sc.from)
	}
	moved, err := n.advance(ctx, shard, cursor, bound)
	if err == nil {
		sc.cursor = moved
	}
	return err
}

// read handles the pending notices of shard after after, up to end (the
// end of the shard when zero), a page at a time, until it has left budget
// notices or until comes.
func (n *Notifier) read(ctx context.Context, shard int, after, end store.MessageID, budget int, until time.Time) (read, error) {
	r := read{last: after}
	for time.Now().Before(until) && r.idle < budget {
		page, err := n.Outbox.PendingNotices(ctx, shard, after, pageSize)
		if err != nil {
			return r, err
		}
		full := len(page) == pageSize
		if full {
			page = wholeIDs(page)
		}
		if !end.IsZero() {
			inside := len(page)
			for inside > 0 && page[inside-1].ID.Compare(end) > 0 {
				inside--
			}
			if inside < len(page) {
				page, full = page[:inside], false
			}
		}
		if err := n.handle(ctx, shard, page, &r); err != nil {
			return r, err
		}
		if !full {
			r.complete = true
			break
		}
		after = page[len(page)-1].ID
		r.last = after
	}
	return r, nil
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
// not past oldestLeft, a notice left for a retry or where the reading
// stopped; and only once it may move a quarter of Lag. A cursor behind
// where it may be costs a read the done notices in between; a move costs
// a durable write (on Cassandra a lightweight transaction), which at each
// poll of each shard would be 16 a second on an idle server.
// It returns the cursor, moved or not.
func (n *Notifier) advance(ctx context.Context, shard int, cursor, oldestLeft store.MessageID) (store.MessageID, error) {
	upTo := store.MinMessageID(n.now().Add(-n.lag()))
	if !oldestLeft.IsZero() && oldestLeft.Compare(upTo) <= 0 {
		upTo = store.MinMessageID(oldestLeft.Time())
	}
	if upTo.Compare(cursor) <= 0 || (!cursor.IsZero() && upTo.Time().Sub(cursor.Time()) < n.lag()/4) {
		return cursor, nil
	}
	if err := n.Outbox.SetNoticeCursor(ctx, shard, upTo); err != nil {
		return cursor, err
	}
	return upTo, nil
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

// conversation names one recipient's conversation, the key of a push
// send.
type conversation struct{ recipient, room string }

// handle tells a page's notices, grouped by recipient and conversation.
// A conversation with a push send recorded has that send pushed again
// first (to the subscriptions that have not had it), and its notices
// marked done; the others are composed, their sends recorded in one write,
// then pushed. A group whose push services failed or rest is left in the
// outbox, in r; the others are marked done, which forgets their sends.
func (n *Notifier) handle(ctx context.Context, shard int, page []store.Notice, r *read) error {
	groups := byConversation(page)
	recorded := map[conversation]store.PushSend{}
	if n.Push != nil && len(groups) > 0 {
		var recipients []string
		for _, g := range groups {
			recipients = append(recipients, g[0].Recipient)
		}
		sends, err := n.Outbox.PushSends(ctx, shard, recipients)
		if err != nil {
			return err
		}
		for _, ps := range sends {
			recorded[conversation{ps.Recipient, ps.Room}] = ps
		}
	}
	type push struct {
		group []store.Notice
		send  store.PushSend
		subs  []store.PushSubscription
	}
	var pushes []push
	var sends []store.PushSend
	for _, group := range groups {
		if n.Digests != nil {
			if err := n.Digests.KeepForDigest(ctx, group); err != nil {
				return err
			}
		}
		if n.Push == nil {
			if err := n.done(ctx, shard, group, r); err != nil {
				return err
			}
			continue
		}
		recipient := group[0].Recipient
		subs, err := n.Subscriptions.PushSubscriptions(ctx, recipient)
		if err != nil {
			return err
		}
		if ps, ok := recorded[conversation{recipient, group[0].Room}]; ok {
			wait, err := n.push(ctx, ps, subs)
			if err != nil {
				return err
			}
			if wait > 0 {
				r.leave(group, wait)
				continue
			}
			if err := n.done(ctx, shard, sendNotices(ps), r); err != nil {
				return err
			}
			n.forget(ps)
			if group = slices.DeleteFunc(group, func(nt store.Notice) bool { return slices.Contains(ps.Notices, nt.ID) }); len(group) == 0 {
				continue
			}
		}
		var wait time.Duration
		due := 0
		for _, sub := range subs {
			if w := n.resting(sub.Endpoint, false); w > 0 {
				wait = max(wait, w)
			} else {
				due++
			}
		}
		if due == 0 {
			if wait > 0 {
				r.leave(group, wait)
				continue
			}
			if err := n.done(ctx, shard, group, r); err != nil { // nobody to push to
				return err
			}
			continue
		}
		note, ok, err := n.Compose(ctx, group)
		if err != nil {
			return err
		}
		payload, err := json.Marshal(note)
		if err == nil && len(payload) > webpush.MaxPayload {
			err = fmt.Errorf("the notification of %d notices has %d bytes, more than a push carries", len(group), len(payload))
		}
		if !ok || err != nil {
			if err != nil {
				n.Log.WarnContext(ctx, "notify: a notification not sent", "recipient", recipient, "err", err)
			}
			if err := n.done(ctx, shard, group, r); err != nil {
				return err
			}
			continue
		}
		ps := store.PushSend{Recipient: recipient, Room: group[0].Room, Payload: payload}
		for _, nt := range group {
			ps.Notices = append(ps.Notices, nt.ID)
		}
		pushes, sends = append(pushes, push{group, ps, subs}), append(sends, ps)
	}
	if err := n.Outbox.RecordPushSends(ctx, shard, sends); err != nil {
		return err
	}
	for _, p := range pushes {
		wait, err := n.push(ctx, p.send, p.subs)
		if err != nil {
			return err
		}
		if wait > 0 {
			r.leave(p.group, wait)
			continue
		}
		if err := n.done(ctx, shard, p.group, r); err != nil {
			return err
		}
		n.forget(p.send)
	}
	return nil
}

// done marks a group's notices done.
func (n *Notifier) done(ctx context.Context, shard int, group []store.Notice, r *read) error {
	if err := n.Outbox.MarkNoticesDone(ctx, shard, group); err != nil {
		return err
	}
	n.handled.Add(uint64(len(group)))
	r.handled += len(group)
	return nil
}

// sendNotices are the notices a push send stands for, to mark done.
func sendNotices(ps store.PushSend) []store.Notice {
	out := make([]store.Notice, len(ps.Notices))
	for i, id := range ps.Notices {
		out[i] = store.Notice{ID: id, Recipient: ps.Recipient, Room: ps.Room}
	}
	return out
}

// push sends a recorded notification to each of its recipient's
// subscriptions that has not had it and whose push service is not
// resting, with the conversation as its Topic. A subscription the push
// service says is gone is dropped. It returns how long to wait before a
// retry when a push service asked for one or rests (0: done).
func (n *Notifier) push(ctx context.Context, ps store.PushSend, subs []store.PushSubscription) (retry time.Duration, err error) {
	for _, sub := range subs {
		if n.reached(ps, sub.Endpoint) {
			continue
		}
		if wait := n.resting(sub.Endpoint, true); wait > 0 {
			retry = max(retry, wait)
			continue
		}
		res, err := n.Push.Send(ctx, webpush.Subscription{Endpoint: sub.Endpoint, P256dh: sub.P256dh, Auth: sub.Auth}, ps.Payload,
			webpush.Options{TTL: 24 * time.Hour, Urgency: webpush.UrgencyNormal, Topic: topic(ps.Room)})
		if errors.Is(err, context.Canceled) {
			return retry, err
		}
		switch res.Outcome {
		case webpush.Delivered:
			n.reach(ps, sub.Endpoint)
		case webpush.Gone:
			if err := n.Subscriptions.RemovePushSubscription(ctx, ps.Recipient, sub.Endpoint); err != nil {
				return 0, err
			}
		case webpush.RetryLater:
			retry = max(retry, n.rest(sub.Endpoint, res.RetryAfter))
			continue
		default:
			n.Log.WarnContext(ctx, "notify: a push was refused", "recipient", ps.Recipient, "status", res.StatusCode, "detail", res.Detail, "err", err)
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
// not). When a rest has ended, the first to ask to try it (try) may try the
// service again and, until it knows whether the service is back, the
// others still see it resting: the shards' readers do not all try it at
// once.
func (n *Notifier) resting(endpoint string, try bool) time.Duration {
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
	if try {
		n.rests[key] = rest{until: time.Now().Add(r.wait), wait: r.wait}
	}
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

// sentKey names a push send in sent: its recipient and newest notice.
func sentKey(ps store.PushSend) noticeKey {
	return noticeKey{ps.Notices[len(ps.Notices)-1], ps.Recipient}
}

func (n *Notifier) reached(ps store.PushSend, endpoint string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.sent[sentKey(ps)][endpoint]
}

func (n *Notifier) reach(ps store.PushSend, endpoint string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.sent == nil {
		n.sent = map[noticeKey]map[string]bool{}
	}
	k := sentKey(ps)
	if n.sent[k] == nil {
		if len(n.sent) >= maxRemembered {
			return
		}
		n.sent[k] = map[string]bool{}
	}
	n.sent[k][endpoint] = true
}

// forget drops what was remembered of a push send, now done.
func (n *Notifier) forget(ps store.PushSend) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.sent, sentKey(ps))
}

// topic is a conversation's Topic header: a later notification of the
// conversation replaces one the push service has not delivered yet.
func topic(conversation string) string {
	sum := sha256.Sum256([]byte(conversation))
	return base64.RawURLEncoding.EncodeToString(sum[:])[:32]
}
