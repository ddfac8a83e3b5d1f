package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultRedisPrefix is prepended to a topic to name its Redis channel, so
// the chat's channels do not collide with anything else on the server.
const DefaultRedisPrefix = "chat:"

// DefaultSubscribeTimeout bounds how long Subscribe waits for Redis to
// confirm a new channel subscription when the caller's context does not
// bound it sooner.
const DefaultSubscribeTimeout = 10 * time.Second

// Housekeeping of the upstream subscriptions: the receive loop looks at them
// at least every sweepInterval, and sends again a SUBSCRIBE or UNSUBSCRIBE
// whose reply has not come within stuckAfter. Replies are lost only when
// the connection is replaced in a way the loop does not see as an error; the
// sweep makes sure that never leaves a subscription stuck.
const (
	sweepInterval = time.Second
	stuckAfter    = 3 * time.Second
)

// RedisOption configures NewRedis.
type RedisOption func(*redisConfig)

type redisConfig struct {
	prefix           string
	bufferSize       int
	outbox           int
	subscribeTimeout time.Duration
	log              *slog.Logger
	sweepInterval    time.Duration // for tests
	stuckAfter       time.Duration // for tests
}

// WithChannelPrefix sets the prefix of the Redis channel names
// (DefaultRedisPrefix by default). Instances that should see each other's
// events must use the same prefix.
func WithChannelPrefix(prefix string) RedisOption {
	return func(c *redisConfig) { c.prefix = prefix }
}

// WithBufferSize sets the per-subscriber buffer (DefaultBufferSize if not
// positive).
func WithBufferSize(n int) RedisOption {
	return func(c *redisConfig) { c.bufferSize = n }
}

// DefaultOutbox is how many events Publish may hand over before they have
// reached Redis: past it, an event is dropped and its topic resynced.
const DefaultOutbox = 8192

// WithOutbox sets how many published events may wait for Redis
// (DefaultOutbox if not positive).
func WithOutbox(n int) RedisOption {
	return func(c *redisConfig) { c.outbox = n }
}

// WithSubscribeTimeout bounds how long Subscribe waits for Redis to confirm
// a new channel subscription (DefaultSubscribeTimeout if not positive).
func WithSubscribeTimeout(d time.Duration) RedisOption {
	return func(c *redisConfig) { c.subscribeTimeout = d }
}

// WithLogger makes the broker report losing and regaining its Redis
// connection. Without it the broker logs nothing.
func WithLogger(l *slog.Logger) RedisOption {
	return func(c *redisConfig) { c.log = l }
}

// Redis is the broker of a fleet of server instances that share one Redis
// server: Publish sends an event to the topic's Redis channel, and every
// instance delivers what arrives on its channels to its local subscribers.
//
// An instance holds a single Redis pub/sub connection and subscribes it to a
// topic's channel only while the topic has local subscribers, however many:
// the local fan-out is the Hub's. When the connection drops, go-redis
// reconnects and resubscribes on its own; since whatever was published in
// between is lost, the broker then sends every affected subscriber a Resync
// event so it catches up from the store.
type Redis struct {
	client           *redis.Client
	ps               *redis.PubSub
	hub              *Hub
	prefix           string
	subscribeTimeout time.Duration
	log              *slog.Logger
	sweepInterval    time.Duration
	stuckAfter       time.Duration

	closing   atomic.Bool
	done      chan struct{} // closed by Close
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error

	// mu guards the upstream state below, and is held while (un)subscribe
	// commands are written, so that commands reach the connection in the
	// order in which they were decided here. The receive loop takes it to
	// process replies; nothing that holds mu calls into the hub in a way
	// that can call back (onIdle) into the broker.
	mu       sync.Mutex
	channels map[string]*upstream // by Redis channel name
	lastErr  error                // the last error of the pub/sub connection, for diagnostics

	// outbox holds the events Publish handed over, in order, for the
	// sender to write to Redis.
	outbox chan outgoing
	// unannounced holds the topics of which an event was lost (dropped, or
	// its publish failed). Their subscribers on other instances missed it
	// without knowing, so the sender sends each a Resync as soon as Redis
	// takes writes again, before any later event of the topic. It holds at
	// most one entry per topic. failing is set while publishing fails, so
	// an outage is logged once.
	pubMu       sync.Mutex
	unannounced map[string]struct{}
	failing     bool

	// Counts for Stats.
	published, droppedFull, droppedFailed               atomic.Uint64
	resyncsPublished, resyncsReceived, resyncsReconnect atomic.Uint64
	resyncsUndecodable                                  atomic.Uint64
	pubsubDown                                          atomic.Bool
}

// Stats returns the broker's counts now.
func (r *Redis) Stats() Stats {
	topics, subscribers := r.hub.Counts()
	r.mu.Lock()
	channels := len(r.channels)
	r.mu.Unlock()
	r.pubMu.Lock()
	failing := r.failing
	r.pubMu.Unlock()
	return Stats{
		Published:            r.published.Load(),
		SlowSubscribers:      r.hub.Slow(),
		Topics:               topics,
		Subscribers:          subscribers,
		Redis:                true,
		DroppedOutboxFull:    r.droppedFull.Load(),
		DroppedPublishFailed: r.droppedFailed.Load(),
		ResyncsPublished:     r.resyncsPublished.Load(),
		ResyncsReceived:      r.resyncsReceived.Load(),
		ResyncsReconnect:     r.resyncsReconnect.Load(),
		ResyncsUndecodable:   r.resyncsUndecodable.Load(),
		PubSubUp:             !r.pubsubDown.Load(),
		PublishUp:            !failing,
		Channels:             channels,
		Outbox:               len(r.outbox),
	}
}

// outgoing is an event on its way to Redis, encoded.
type outgoing struct {
	topic   string
	payload []byte
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

var _ Broker = (*Redis)(nil)

// NewRedis connects to the Redis server at url (redis://[user:password@]
// host:port/db or rediss:// for TLS, as go-redis's ParseURL reads it) and
// starts receiving. It pings the server first, so that a wrong URL or an
// unreachable server fails here, with a clear error, rather than at the
// first subscription.
func NewRedis(ctx context.Context, url string, opts ...RedisOption) (*Redis, error) {
	cfg := redisConfig{
		prefix:           DefaultRedisPrefix,
		subscribeTimeout: DefaultSubscribeTimeout,
		sweepInterval:    sweepInterval,
		stuckAfter:       stuckAfter,
	}
	for _, opt := range opts {
		opt(&cfg)
	}
	if cfg.subscribeTimeout <= 0 {
		cfg.subscribeTimeout = DefaultSubscribeTimeout
	}
	if cfg.outbox <= 0 {
		cfg.outbox = DefaultOutbox
	}
	o, err := RedisOptions(url)
	if err != nil {
		return nil, fmt.Errorf("redis broker: %w", err)
	}
	client := redis.NewClient(o)
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("redis broker: cannot reach Redis at %s (db %d): %w", o.Addr, o.DB, err)
	}
	r := &Redis{
		client:           client,
		prefix:           cfg.prefix,
		subscribeTimeout: cfg.subscribeTimeout,
		log:              cfg.log,
		sweepInterval:    cfg.sweepInterval,
		stuckAfter:       cfg.stuckAfter,
		done:             make(chan struct{}),
		channels:         make(map[string]*upstream),
		unannounced:      make(map[string]struct{}),
		outbox:           make(chan outgoing, cfg.outbox),
	}
	r.hub = NewHub(cfg.bufferSize, r.idle)
	// No channels yet: the connection is made on first use and subscribed
	// channel by channel as local interest comes and goes.
	r.ps = client.Subscribe(context.Background())
	r.wg.Add(2)
	go r.receive()
	go r.send()
	return r, nil
}

// RedisOptions reads a Redis URL (redis://[user:password@]host:port/db,
// rediss:// for TLS) as go-redis's ParseURL does, for any client of the
// server's Redis. Its error leaves out the URL, which may carry a password.
func RedisOptions(url string) (*redis.Options, error) {
	o, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("invalid Redis URL (CHAT_REDIS_URL): %w", withoutURL(err))
	}
	return o, nil
}

// withoutURL strips the URL from a url.Parse error, because the URL may
// carry a password and errors end up in logs.
func withoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// Publish encodes ev once and hands it to the sender, which publishes it
// to topic's Redis channel; the subscribers on every instance, this one
// included, receive it through their Redis subscriptions. It does not wait
// for Redis: a post's latency never depends on it. Events of one instance
// reach Redis in the order they were published.
//
// An event that cannot reach Redis (the outbox is full, or Redis fails) is
// dropped, and its topic's subscribers on every instance are sent a Resync
// once Redis takes writes again, so they catch up from the store's log,
// where the event is. Publish fails only once the broker is closed.
func (r *Redis) Publish(ctx context.Context, topic string, ev Event) error {
	if r.closing.Load() {
		return ErrClosed
	}
	payload, err := encodeEvent(ev)
	if err != nil {
		return fmt.Errorf("redis broker: %w", err)
	}
	r.published.Add(1)
	select {
	case r.outbox <- outgoing{topic: topic, payload: payload}:
	default:
		r.droppedFull.Add(1)
		r.dropped(topic, errors.New("the outbox is full: Redis takes events slower than they are published"))
	}
	return nil
}

// Flow of the sender: it takes what the outbox holds (up to sendBatch
// events) and writes it in one pipeline, each event after the Resync its
// topic owes; while topics owe one and nothing is published, it retries
// them every retryInterval.
const (
	sendBatch     = 256
	sendTimeout   = 2 * time.Second
	retryInterval = 500 * time.Millisecond
)

// send is the sender: it writes the outbox to Redis until the broker
// closes.
func (r *Redis) send() {
	defer r.wg.Done()
	retry := time.NewTicker(retryInterval)
	defer retry.Stop()
	batch := make([]outgoing, 0, sendBatch)
	for {
		batch = batch[:0]
		select {
		case <-r.done:
			return
		case o := <-r.outbox:
			batch = append(batch, o)
		drain:
			for len(batch) < sendBatch {
				select {
				case o := <-r.outbox:
					batch = append(batch, o)
				default:
					break drain
				}
			}
		case <-retry.C:
		}
		r.write(batch)
	}
}

// write publishes batch in one pipeline, each event after the Resync its
// topic owes, and the Resyncs owed by topics with nothing in the batch.
func (r *Redis) write(batch []outgoing) {
	owed := r.takeUnannounced()
	if len(batch) == 0 && len(owed) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
	defer cancel()
	pipe := r.client.Pipeline()
	resyncs := uint64(len(owed))
	for _, o := range batch {
		if _, ok := owed[o.topic]; ok {
			delete(owed, o.topic)
			r.queueResync(ctx, pipe, o.topic)
		}
		pipe.Publish(ctx, r.prefix+o.topic, o.payload)
	}
	for topic := range owed {
		r.queueResync(ctx, pipe, topic)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		r.droppedFailed.Add(uint64(len(batch)))
		for _, o := range batch {
			r.dropped(o.topic, err)
		}
		for topic := range owed {
			r.dropped(topic, err)
		}
		return
	}
	r.resyncsPublished.Add(resyncs)
	r.recovered()
}

func (r *Redis) queueResync(ctx context.Context, pipe redis.Pipeliner, topic string) {
	resync, _ := encodeEvent(resyncEvent(topic)) // cannot fail: plain strings
	pipe.Publish(ctx, r.prefix+topic, resync)
}

// dropped records that an event of topic did not reach Redis, and logs
// the first loss of an outage.
func (r *Redis) dropped(topic string, why error) {
	r.pubMu.Lock()
	r.unannounced[topic] = struct{}{}
	first := !r.failing
	r.failing = true
	r.pubMu.Unlock()
	if first && r.log != nil {
		r.log.Warn("redis broker: events are not reaching Redis; their subscribers will catch up from the store once it is back", "err", why)
	}
}

// recovered records a successful write, and logs the end of an outage.
func (r *Redis) recovered() {
	r.pubMu.Lock()
	was := r.failing
	r.failing = false
	r.pubMu.Unlock()
	if was && r.log != nil {
		r.log.Info("redis broker: events reach Redis again; subscribers of the topics that lost events were told to resync")
	}
}

// takeUnannounced returns and forgets the topics that owe a Resync.
func (r *Redis) takeUnannounced() map[string]struct{} {
	r.pubMu.Lock()
	defer r.pubMu.Unlock()
	if len(r.unannounced) == 0 {
		return nil
	}
	owed := r.unannounced
	r.unannounced = make(map[string]struct{})
	return owed
}

// Subscribe returns a subscription to topic once this instance's Redis
// subscription to the topic's channel is confirmed, so that any event
// published after Subscribe returns reaches it. The wait is bounded by ctx
// and by the subscribe timeout. Subscribers of a topic this instance already
// receives share the existing subscription and do not wait.
func (r *Redis) Subscribe(ctx context.Context, topic string) (*Subscription, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sub, _, err := r.hub.Add(topic)
	if err != nil {
		return nil, err
	}
	ch := r.prefix + topic

	r.mu.Lock()
	if r.closing.Load() {
		r.mu.Unlock()
		sub.Close()
		return nil, ErrClosed
	}
	u := r.channels[ch]
	if u == nil {
		u = &upstream{topic: topic}
		r.channels[ch] = u
	}
	r.reconcileLocked(ch, u)
	if u.live {
		r.mu.Unlock()
		return sub, nil
	}
	if u.ready == nil {
		u.ready = make(chan struct{})
	}
	ready := u.ready
	r.mu.Unlock()

	timer := time.NewTimer(r.subscribeTimeout)
	defer timer.Stop()
	select {
	case <-ready:
		return sub, nil
	case <-ctx.Done():
		sub.Close()
		return nil, fmt.Errorf("redis broker: subscribe to %s: %w", topic, ctx.Err())
	case <-timer.C:
		sub.Close()
		err := fmt.Errorf("redis broker: Redis did not confirm the subscription to %s within %v", topic, r.subscribeTimeout)
		if last := r.lastError(); last != nil {
			err = fmt.Errorf("%w (last connection error: %v)", err, last)
		}
		return nil, err
	case <-r.done:
		sub.Close()
		return nil, ErrClosed
	}
}

// Close stops receiving, closes the Redis connections and ends every
// subscription with ErrClosed. It waits for the receive loop to exit.
func (r *Redis) Close() error {
	r.closeOnce.Do(func() {
		r.closing.Store(true)
		close(r.done)
		// Closing the pub/sub connection makes the receive loop's blocked
		// read return, and any later one fail at once.
		psErr := r.ps.Close()
		r.wg.Wait()
		r.hub.Close()
		r.closeErr = errors.Join(psErr, r.client.Close())
	})
	return r.closeErr
}

func (r *Redis) lastError() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastErr
}

// idle is the hub's onIdle: the last local subscriber of topic left, though
// a new one may have arrived since; reconciling decides.
func (r *Redis) idle(topic string) {
	ch := r.prefix + topic
	r.mu.Lock()
	defer r.mu.Unlock()
	if u := r.channels[ch]; u != nil {
		r.reconcileLocked(ch, u)
	}
}

// reconcileLocked brings the channel's Redis subscription in line with the
// hub: subscribed iff the topic has local subscribers. While a command's
// reply is awaited it does nothing; the reply's arrival reconciles again.
// Every change of the hub's state (Subscribe's Add, onIdle) and every reply
// reconciles, so the final state always matches the hub.
func (r *Redis) reconcileLocked(ch string, u *upstream) {
	for !u.busy && !r.closing.Load() {
		want := r.hub.Active(u.topic)
		switch {
		case want && !u.subscribed:
			u.subscribed, u.busy, u.live, u.since = true, true, false, time.Now()
			// On error the reply comes after go-redis reconnects and
			// resubscribes its channel set, which now includes ch; until
			// then the subscription stays busy.
			_ = r.sendLocked(true, ch)
		case !want && u.subscribed:
			u.subscribed, u.busy, u.live, u.since = false, true, false, time.Now()
			if err := r.sendLocked(false, ch); err != nil {
				// The write failed, so the connection is being replaced
				// and the new one is built from go-redis's channel set,
				// from which Unsubscribe already removed ch: done.
				u.busy = false
			}
		default:
			if !want && !u.subscribed {
				delete(r.channels, ch)
			}
			return
		}
	}
}

// sendLocked writes SUBSCRIBE or UNSUBSCRIBE for channels on the pub/sub
// connection. The caller holds mu.
func (r *Redis) sendLocked(subscribe bool, channels ...string) error {
	ctx := context.Background() // bounded by the client's dial and write timeouts
	if !subscribe {
		err := r.ps.Unsubscribe(ctx, channels...)
		if err != nil {
			r.lastErr = err
		}
		return err
	}
	err := r.ps.Subscribe(ctx, channels...)
	if err != nil {
		r.lastErr = err
		// go-redis adds the channels to its set only after the write: if
		// the write failed and it reconnected during this call, the new
		// connection was subscribed without them. Once more, now that they
		// are in the set: either the write reaches the live connection or
		// every later reconnect includes them.
		err = r.ps.Subscribe(ctx, channels...)
	}
	return err
}

// receive is the broker's only goroutine: it reads the pub/sub connection,
// decodes each message once and hands it to the hub, drives the
// subscription state machine with Redis's (un)subscribe replies, and sweeps
// for stuck commands. It reads with a timeout only so that the sweep runs
// when the connection is quiet; a timeout is not an error.
func (r *Redis) receive() {
	defer r.wg.Done()
	ctx := context.Background()
	failures := 0
	lastSweep := time.Now()
	for {
		msg, err := r.ps.ReceiveTimeout(ctx, r.sweepInterval)
		if r.closing.Load() {
			return
		}
		if err != nil && !isIdleTimeout(err) {
			failures++
			r.pubsubDown.Store(true)
			if failures == 1 && r.log != nil {
				r.log.Warn("redis broker: pub/sub connection lost; reconnecting", "err", err)
			}
			r.lost(err)
			// go-redis has already tried to reconnect once; back off
			// before the next attempt so that an outage is not a busy loop.
			if failures > 1 && !r.sleep(backoff(failures-1)) {
				return
			}
			continue
		}
		// A message or a quiet connection: either way it is up.
		if failures > 0 {
			r.pubsubDown.Store(false)
			if r.log != nil {
				r.log.Info("redis broker: pub/sub connection restored", "failures", failures)
			}
			failures = 0
		}
		switch m := msg.(type) {
		case *redis.Message:
			r.message(m)
		case *redis.Subscription:
			r.reply(m)
		}
		if time.Since(lastSweep) >= r.sweepInterval {
			r.sweep()
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

// sleep waits for d and reports false if the broker closed meanwhile.
func (r *Redis) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.done:
		return false
	}
}

// message delivers a published event to the local subscribers.
func (r *Redis) message(m *redis.Message) {
	topic, ok := strings.CutPrefix(m.Channel, r.prefix)
	if !ok {
		return
	}
	ev, err := decodeEvent([]byte(m.Payload))
	if err != nil {
		// An event was published that this instance cannot read; rather
		// than silently lose it, make the subscribers catch up from the
		// store.
		if r.log != nil {
			r.log.Error("redis broker: undecodable event; resyncing subscribers", "channel", m.Channel, "err", err)
		}
		ev = resyncEvent(topic)
		r.resyncsUndecodable.Add(1)
	} else if ev.Kind == Resync {
		r.resyncsReceived.Add(1)
	}
	r.hub.Deliver(topic, ev)
}

// reply processes Redis's reply to a SUBSCRIBE or UNSUBSCRIBE.
func (r *Redis) reply(m *redis.Subscription) {
	var resync string
	r.mu.Lock()
	u := r.channels[m.Channel]
	switch m.Kind {
	case "subscribe":
		switch {
		case u == nil:
			// Nothing here wants this channel; record that Redis has it so
			// that reconciling unsubscribes it.
			if topic, ok := strings.CutPrefix(m.Channel, r.prefix); ok {
				u = &upstream{topic: topic, subscribed: true}
				r.channels[m.Channel] = u
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
	case "unsubscribe":
		if u != nil && !u.subscribed {
			u.busy = false
		}
		// Otherwise it answers an UNSUBSCRIBE that a SUBSCRIBE has
		// followed, whose reply is still to come.
	}
	if u != nil {
		r.reconcileLocked(m.Channel, u)
	}
	r.mu.Unlock()
	// Outside mu: delivering may cut off a slow subscriber, whose onIdle
	// takes mu.
	if resync != "" {
		r.resyncsReconnect.Add(1)
		r.hub.Deliver(resync, resyncEvent(resync))
	}
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
// If the connection survived after all, the sweep sends the awaited
// commands again, and the state machine is back on its feet.
func (r *Redis) lost(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastErr = err
	if r.closing.Load() {
		return
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		return // go-redis keeps the connection on Redis's own error replies
	}
	now := time.Now()
	var unsubscribed []string
	for ch, u := range r.channels {
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
		if u := r.channels[ch]; u != nil {
			r.reconcileLocked(ch, u)
		}
	}
}

// sweep sends again the commands whose replies are overdue. Sending again
// is harmless whatever became of the first one: Redis answers a repeated
// SUBSCRIBE or UNSUBSCRIBE again, and replies that answer a superseded
// command are recognised and ignored. A repeated confirmation of a live
// subscription costs its subscribers a spare Resync, which is the safe side.
func (r *Redis) sweep() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closing.Load() {
		return
	}
	now := time.Now()
	var subs, unsubs []string
	for ch, u := range r.channels {
		if !u.busy || now.Sub(u.since) < r.stuckAfter {
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
		if r.log != nil {
			r.log.Warn("redis broker: no confirmation from Redis; subscribing again", "channels", len(subs))
		}
		_ = r.sendLocked(true, subs...)
	}
	if len(unsubs) > 0 {
		if err := r.sendLocked(false, unsubs...); err != nil {
			// As in reconcileLocked: the next connection will not have
			// them.
			for _, ch := range unsubs {
				if u := r.channels[ch]; u != nil {
					u.busy = false
					r.reconcileLocked(ch, u)
				}
			}
		}
	}
}

// resyncEvent tells a topic's subscribers that they may have missed events.
func resyncEvent(topic string) Event {
	room, _ := strings.CutPrefix(topic, "room:")
	return Event{Kind: Resync, Room: room}
}
