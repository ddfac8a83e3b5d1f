package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// link is one Redis pub/sub connection of the broker and the state of the
// channel subscriptions it carries. A broker on one Redis server, or in
// broadcast mode, has one link; in sharded mode it has one per shard group,
// each of whose channels lie in one hash slot, so that the connection goes
// to the master that serves that slot.
type link struct {
	r *Redis
	// pin, in sharded mode, is a channel of the link's slot that stays
	// subscribed while the broker runs and carries nothing: go-redis routes
	// a sharded connection, and every reconnection of it, by the slot of
	// its first channel, so the link never has none; and Redis unsubscribing
	// it tells that the slot has moved (a failover or a resharding), and the
	// link must connect to the slot's new master. Empty in broadcast mode.
	pin string

	// mu guards the state below, and is held while (un)subscribe commands
	// are written, so that commands reach the connection in the order in
	// which they were decided here. The receive loop takes it to process
	// replies; nothing that holds mu calls into the hub in a way that can
	// call back (onIdle) into the broker.
	mu sync.Mutex
	ps *redis.PubSub // replaced when the slot moves
	// On a cluster, node is the client of the node the link connected to
	// (ps is its), and settled reports that the node said it is a master.
	// A replica of the slot's master takes shard subscriptions too, but a
	// message its master acknowledged and died before replicating, or
	// published while the replica resynchronised in full, never reaches
	// it, and nothing would tell its subscribers. So until settled nothing
	// is subscribed, and each sweep looks for the master again.
	node     *redis.Client
	settled  bool
	channels map[string]*upstream // by Redis channel name
	lastErr  error                // the last error of the connection, for diagnostics
	down     atomic.Bool          // the last read failed
	// A sharded link proves now and then that its connection still hears
	// its slot: it publishes a probe to its pin, which only this instance
	// subscribes, and expects it back (see checkProbe). probe is the one in
	// flight ("" if none), probeAt when it was sent or, if none is in
	// flight, when the last came back or the link was renewed.
	probe   string
	probeAt time.Time
	probes  uint64 // numbers the probes
}

// upstream is the state of one Redis channel subscription. One SUBSCRIBE or
// UNSUBSCRIBE of a channel at a time awaits its reply (busy): the next
// command is decided only when the reply comes, by reconciling with the hub
// (subscribed iff the topic has local subscribers). Since Redis answers
// commands in order, a reply that answers a superseded command (after a
// reconnect or a sweep sent one again) is recognised by the last command
// sent, and a subscription counts as live only once its own confirmation
// has come.
type upstream struct {
	topic string
	// subscribed: the last command sent was SUBSCRIBE. It mirrors whether
	// the channel is in go-redis's own set of channels, which is what a
	// reconnect resubscribes.
	subscribed bool
	// busy: the reply to the last command has not arrived yet.
	busy bool
	// since is when the reply started being awaited, to tell a stuck
	// command from a slow one.
	since time.Time
	// live: Redis confirmed the subscription and nothing was sent since, so
	// a message published now reaches this instance.
	live bool
	// ready is closed when the subscription goes live; nil when nobody waits.
	ready chan struct{}
	// resync: the subscription was live when the connection dropped, so its
	// subscribers may have missed events and get a Resync once it is live
	// again.
	resync bool
}

// newLink opens a link; pin is its pinned channel in sharded mode.
func (r *Redis) newLink(pin string) *link {
	l := &link{r: r, pin: pin, channels: make(map[string]*upstream), probeAt: time.Now()}
	l.openLocked()
	return l
}

// openLocked sets up a new pub/sub connection of the link. In broadcast
// mode it has no channels, and connects on first use; in sharded mode it
// subscribes the pin at once: on one server through the broker's client,
// on a cluster on the master that serves the link's slot, which it looks
// up first (see node). An error is the connection's, and the receive loop
// reconnects: the pin is in go-redis's set of channels whatever happened.
// The caller holds mu, or has the link to itself.
func (l *link) openLocked() {
	ctx := context.Background()
	switch cc, cluster := l.r.client.(*redis.ClusterClient); {
	case l.pin == "":
		l.ps = l.r.client.Subscribe(ctx)
	case !cluster:
		l.ps = l.r.client.SSubscribe(ctx, l.pin)
	default:
		if l.node != nil {
			_ = l.node.Close()
		}
		l.node, l.settled = findMaster(cc, keySlot(l.pin))
		if l.settled {
			l.ps = l.node.SSubscribe(ctx, l.pin)
		} else {
			// Nothing is subscribed until the master is found: the next
			// sweep looks again.
			l.ps = l.node.SSubscribe(ctx)
		}
	}
}

// findMaster returns a client of the master that serves slot, and true; or
// after sendTimeout of looking, of the node where it looked last, and
// false. It asks the cluster which node serves the slot, and asks that
// node whether it is a master: just after a failover, a node may still
// name the old master, now a replica, whose ROLE names the new one.
func findMaster(cc *redis.ClusterClient, slot int) (*redis.Client, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
	defer cancel()
	o := cc.Options()
	client := func(addr string) *redis.Client {
		return redis.NewClient(&redis.Options{
			Addr: addr, Username: o.Username, Password: o.Password, TLSConfig: o.TLSConfig,
			Protocol: o.Protocol, DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
			PoolSize: 2,
		})
	}
	addr := o.Addrs[0]
	for {
		if a, err := slotMaster(ctx, cc, slot); err == nil {
			addr = a
			for range 2 { // the node, and the master it names if a replica
				node := client(addr)
				role, err := node.Do(ctx, "role").Slice()
				if err == nil && len(role) > 0 && role[0] == "master" {
					return node, true
				}
				_ = node.Close()
				if err != nil || len(role) < 3 || role[0] != "slave" {
					break
				}
				addr = net.JoinHostPort(fmt.Sprint(role[1]), fmt.Sprint(role[2]))
			}
		}
		select {
		case <-ctx.Done():
			return client(addr), false
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// slotMaster asks the cluster (a node of it, or the client of all) which
// node serves slot.
func slotMaster(ctx context.Context, c interface {
	ClusterSlots(context.Context) *redis.ClusterSlotsCmd
}, slot int) (string, error) {
	ranges, err := c.ClusterSlots(ctx).Result()
	if err != nil {
		return "", err
	}
	for _, r := range ranges {
		if slot >= int(r.Start) && slot <= int(r.End) && len(r.Nodes) > 0 {
			return r.Nodes[0].Addr, nil
		}
	}
	return "", fmt.Errorf("no node serves slot %d", slot)
}

func (l *link) lastError() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastErr
}

// reconcileLocked brings the channel's Redis subscription in line with the
// hub: subscribed iff the topic has local subscribers. While a command's
// reply is awaited it does nothing; the reply's arrival reconciles again.
// Every change of the hub's state (Subscribe's Add, onIdle) and every reply
// reconciles, so the final state always matches the hub.
func (l *link) reconcileLocked(ch string, u *upstream) {
	for !u.busy && !l.r.closing.Load() {
		want := l.r.hub.Active(u.topic)
		switch {
		case want && !u.subscribed:
			u.subscribed, u.busy, u.live, u.since = true, true, false, time.Now()
			// On error the reply comes after go-redis reconnects and
			// resubscribes its channel set, which now includes ch; until
			// then the subscription stays busy.
			_ = l.sendLocked(true, ch)
		case !want && u.subscribed:
			u.subscribed, u.busy, u.live, u.since = false, true, false, time.Now()
			if err := l.sendLocked(false, ch); err != nil {
				// The write failed, so the connection is being replaced
				// and the new one is built from go-redis's channel set,
				// from which Unsubscribe already removed ch: done.
				u.busy = false
			}
		default:
			if !want && !u.subscribed {
				delete(l.channels, ch)
			}
			return
		}
	}
}

// sendLocked writes SUBSCRIBE or UNSUBSCRIBE (SSUBSCRIBE or SUNSUBSCRIBE in
// sharded mode) for channels on the pub/sub connection. The caller holds mu.
func (l *link) sendLocked(subscribe bool, channels ...string) error {
	if l.onCluster() && !l.settled {
		// Not on the slot's master: the renewal that finds it sends
		// every subscription.
		return nil
	}
	ctx := context.Background() // bounded by the client's dial and write timeouts
	sharded := l.pin != ""
	if !subscribe {
		var err error
		if sharded {
			err = l.ps.SUnsubscribe(ctx, channels...)
		} else {
			err = l.ps.Unsubscribe(ctx, channels...)
		}
		if err != nil {
			l.lastErr = err
		}
		return err
	}
	sub := l.ps.Subscribe
	if sharded {
		sub = l.ps.SSubscribe
	}
	err := sub(ctx, channels...)
	if err != nil {
		l.lastErr = err
		// go-redis adds the channels to its set only after the write: if
		// the write failed and it reconnected during this call, the new
		// connection was subscribed without them. Once more, now that they
		// are in the set: either the write reaches the live connection or
		// every later reconnect includes them.
		err = sub(ctx, channels...)
	}
	return err
}

// receive is the link's goroutine: it reads the pub/sub connection, decodes
// each message once and hands it to the hub, drives the subscription state
// machine with Redis's (un)subscribe replies, and sweeps for stuck
// commands. It reads with a timeout only so that the sweep runs when the
// connection is quiet; a timeout is not an error.
func (l *link) receive() {
	r := l.r
	defer r.wg.Done()
	ctx := context.Background()
	failures := 0
	lastSweep := time.Now()
	for {
		l.mu.Lock()
		ps := l.ps
		l.mu.Unlock()
		msg, err := ps.ReceiveTimeout(ctx, r.sweepInterval)
		if r.closing.Load() {
			return
		}
		if err != nil && !isIdleTimeout(err) {
			l.mu.Lock()
			renewed := l.ps != ps
			l.mu.Unlock()
			if renewed {
				continue // the error of the connection renew closed
			}
			failures++
			l.down.Store(true)
			if failures == 1 && r.log != nil {
				r.log.Warn("redis broker: pub/sub connection lost; reconnecting", "err", err)
			}
			if l.onCluster() && !isRedisError(err) {
				// The node may be gone for good: look for the slot's
				// master again rather than dial the same address.
				l.renew("the connection failed: " + err.Error())
			} else {
				l.lost(err)
			}
			// go-redis has already tried to reconnect once; back off
			// before the next attempt so that an outage is not a busy loop.
			if failures > 1 && !r.sleep(backoff(failures-1)) {
				return
			}
			continue
		}
		// A message or a quiet connection: either way it is up.
		if failures > 0 {
			l.down.Store(false)
			if r.log != nil {
				r.log.Info("redis broker: pub/sub connection restored", "failures", failures)
			}
			failures = 0
		}
		switch m := msg.(type) {
		case *redis.Message:
			if m.Channel == l.pin && l.pin != "" {
				l.probeReturned(m.Payload)
			} else {
				r.message(m)
			}
		case *redis.Subscription:
			l.reply(m)
		}
		if time.Since(lastSweep) >= r.sweepInterval {
			l.sweep()
			l.checkProbe()
			lastSweep = time.Now()
		}
	}
}

// isIdleTimeout reports whether err is the read deadline of ReceiveTimeout
// passing on a quiet connection, as opposed to a failure, including a dial
// timeout while reconnecting.
func isIdleTimeout(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "read" && oe.Timeout()
}

// backoff is the wait before the n-th retry: 50 ms doubling to 1 s.
func backoff(n int) time.Duration {
	d := 50 * time.Millisecond
	for i := 1; i < n && d < time.Second; i++ {
		d *= 2
	}
	return min(d, time.Second)
}

// reply processes Redis's reply to a SUBSCRIBE or UNSUBSCRIBE (SSUBSCRIBE,
// SUNSUBSCRIBE).
func (l *link) reply(m *redis.Subscription) {
	if m.Channel == l.pin && l.pin != "" {
		if m.Kind == "sunsubscribe" {
			// Only Redis unsubscribes the pin: its slot moved to another
			// master, and so did every channel of the link.
			l.renew("the link's hash slot moved to another node")
		}
		return
	}
	var resync string
	l.mu.Lock()
	u := l.channels[m.Channel]
	switch m.Kind {
	case "subscribe", "ssubscribe":
		switch {
		case u == nil:
			// Nothing here wants this channel; record that Redis has it so
			// that reconciling unsubscribes it.
			if topic, ok := l.r.topicOf(m.Channel); ok {
				u = &upstream{topic: topic, subscribed: true}
				l.channels[m.Channel] = u
			}
		case u.subscribed:
			// A confirmation of a subscription that was already live is
			// not ours: go-redis re-established the connection and
			// resubscribed, and events may have been lost in between.
			if u.live || u.resync {
				resync = u.topic
			}
			u.busy, u.live, u.resync = false, true, false
			if u.ready != nil {
				close(u.ready)
				u.ready = nil
			}
		default:
			// The reply to a SUBSCRIBE that an UNSUBSCRIBE has followed;
			// that one's reply is still to come.
		}
	case "unsubscribe", "sunsubscribe":
		if u != nil && !u.subscribed {
			u.busy = false
		}
		// Otherwise it answers an UNSUBSCRIBE that a SUBSCRIBE has
		// followed, whose reply is still to come; or, in sharded mode,
		// Redis dropped the channel because its slot moved, which the
		// pin's own unsubscription tells the link.
	}
	if u != nil {
		l.reconcileLocked(m.Channel, u)
	}
	l.mu.Unlock()
	// Outside mu: delivering may cut off a slow subscriber, whose onIdle
	// takes mu.
	if resync != "" {
		l.r.resyncsReconnect.Add(1)
		l.r.hub.Deliver(resync, resyncEvent(resync))
	}
}

// onCluster reports whether the link is a sharded one on a Redis Cluster.
func (l *link) onCluster() bool { return l.r.cluster && l.pin != "" }

func isRedisError(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr)
}

// lost handles an error of the pub/sub connection. Unless it is an error
// reply from Redis, go-redis has replaced the connection, or will on the
// next read, and the new one is subscribed to the channels in go-redis's
// set, that is, to those whose last command here was SUBSCRIBE. Whatever was
// published meanwhile is lost, and replies awaited on the old connection
// will never come. So every subscription waits for its confirmation on the
// new connection (those that were live owe their subscribers a Resync), and
// every UNSUBSCRIBE counts as done, since the new connection does not have
// the channel.
//
// An error reply that redirects (MOVED: the connection's node no longer
// serves the link's slot) makes the link connect to the slot's master.
//
// If the connection survived after all, the sweep sends the awaited
// commands again, and the state machine is back on its feet.
func (l *link) lost(err error) {
	var rerr redis.Error
	if errors.As(err, &rerr) {
		// go-redis keeps the connection on Redis's own error replies.
		if msg := rerr.Error(); l.pin != "" && (strings.HasPrefix(msg, "MOVED ") || strings.HasPrefix(msg, "ASK ")) {
			l.renew(msg)
			return
		}
		l.mu.Lock()
		l.lastErr = err
		l.mu.Unlock()
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lastErr = err
	if l.r.closing.Load() {
		return
	}
	l.awaitAllLocked()
}

// awaitAllLocked makes every subscription wait for its confirmation on a
// new connection, and counts every UNSUBSCRIBE as done. The caller holds mu.
func (l *link) awaitAllLocked() {
	now := time.Now()
	var unsubscribed []string
	for ch, u := range l.channels {
		switch {
		case u.subscribed:
			if u.live {
				u.resync = true
			}
			u.live, u.busy, u.since = false, true, now
		case u.busy:
			u.busy = false
			unsubscribed = append(unsubscribed, ch)
		}
	}
	for _, ch := range unsubscribed {
		if u := l.channels[ch]; u != nil {
			l.reconcileLocked(ch, u)
		}
	}
}

// renew replaces the link's connection with one to the current master of
// its slot (sharded mode): its node stopped serving the slot, in a failover
// or a resharding, and said so (the pin unsubscribed, or a MOVED reply), or
// on a cluster the connection failed, or the node it went to was not the
// master. Every subscription is sent again on the new connection, and
// those that were live owe their subscribers a Resync.
func (l *link) renew(why string) {
	if l.r.closing.Load() {
		return
	}
	if l.r.log != nil {
		l.r.log.Warn("redis broker: reconnecting a sharded pub/sub connection", "why", why)
	}
	l.r.renewals.Add(1)
	if c, ok := l.r.client.(*redis.ClusterClient); ok {
		c.ReloadState(context.Background()) // for the publisher's sake
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.r.closing.Load() {
		return
	}
	old, oldNode := l.ps, l.node
	l.openLocked()
	_ = old.Close() // the receive loop sees the swap and ignores its error
	if oldNode != nil {
		_ = oldNode.Close()
	}
	l.probe, l.probeAt = "", time.Now() // a probe in flight went with the old connection
	l.awaitAllLocked()
	var subs []string
	for ch, u := range l.channels {
		if u.subscribed {
			subs = append(subs, ch)
		}
	}
	if len(subs) > 0 {
		_ = l.sendLocked(true, subs...)
	}
}

// sweep sends again the commands whose replies are overdue. Sending again
// is harmless whatever became of the first one: Redis answers a repeated
// SUBSCRIBE or UNSUBSCRIBE again, and replies that answer a superseded
// command are recognised and ignored. A repeated confirmation of a live
// subscription costs its subscribers a spare Resync, which is the safe side.
func (l *link) sweep() {
	l.mu.Lock()
	if l.onCluster() && !l.settled {
		l.mu.Unlock()
		l.renew("the node it went to was not the master of its slot")
		return
	}
	defer l.mu.Unlock()
	if l.r.closing.Load() {
		return
	}
	now := time.Now()
	var subs, unsubs []string
	for ch, u := range l.channels {
		if !u.busy || now.Sub(u.since) < l.r.stuckAfter {
			continue
		}
		u.since = now
		if u.subscribed {
			subs = append(subs, ch)
		} else {
			unsubs = append(unsubs, ch)
		}
	}
	if len(subs) > 0 {
		if l.r.log != nil {
			l.r.log.Warn("redis broker: no confirmation from Redis; subscribing again", "channels", len(subs))
		}
		_ = l.sendLocked(true, subs...)
	}
	if len(unsubs) > 0 {
		if err := l.sendLocked(false, unsubs...); err != nil {
			// As in reconcileLocked: the next connection will not have
			// them.
			for _, ch := range unsubs {
				if u := l.channels[ch]; u != nil {
					u.busy = false
					l.reconcileLocked(ch, u)
				}
			}
		}
	}
}

// checkProbe, on a sharded link whose connection works, renews the link if
// the probe in flight has not come back within probeEvery, and otherwise
// publishes the next probe probeEvery after the last came back. A
// connection can go deaf without an error: half-open after a network
// fault, or left on a node that stopped serving the slot without saying so
// (its unsubscription lost, or never sent). Nothing else would notice, and
// its subscribers would miss every event. A probe that cannot be published
// proves nothing: the next sweep tries again.
func (l *link) checkProbe() {
	if l.pin == "" || l.down.Load() || l.r.closing.Load() {
		return
	}
	l.mu.Lock()
	if l.onCluster() && !l.settled || time.Since(l.probeAt) < l.r.probeEvery {
		l.mu.Unlock()
		return
	}
	if l.probe != "" {
		l.mu.Unlock()
		l.r.probesLost.Add(1)
		l.renew("a probe published to it did not come back")
		return
	}
	l.probes++
	probe := strconv.FormatUint(l.probes, 10)
	l.mu.Unlock()
	// Bounded by the sweep interval: the receive loop waits meanwhile.
	ctx, cancel := context.WithTimeout(context.Background(), l.r.sweepInterval)
	defer cancel()
	err := l.r.publishTo(ctx, l.r.client, l.pin, probe).Err()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.probeAt = time.Now()
	if err == nil {
		l.probe = probe
	}
}

// probeReturned records that a probe came back.
func (l *link) probeReturned(probe string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if probe == l.probe {
		l.probe, l.probeAt = "", time.Now()
	}
}
