package broker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
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
// sweep makes sure that never leaves a subscription stuck. A sharded link
// also publishes a probe to itself every probeEvery, and is found deaf when
// one has not come back within probeEvery (see link.checkProbe).
const (
	sweepInterval = time.Second
	stuckAfter    = 3 * time.Second
	probeEvery    = 3 * time.Second
)

// pinMark begins the name of a pin after its hash tag (see link.pin): no
// topic begins with it.
const pinMark = "~link:"

// RedisOption configures NewRedis.
type RedisOption func(*redisConfig)

type redisConfig struct {
	prefix           string
	bufferSize       int
	outbox           int
	subscribeTimeout time.Duration
	log              *slog.Logger
	cluster, sharded bool
	sweepInterval    time.Duration // for tests
	stuckAfter       time.Duration // for tests
	probeEvery       time.Duration // for tests
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

// WithCluster makes the broker read its URL as the seed nodes of a Redis
// Cluster (see NewRedisClient), and publish in sharded mode, the only one
// that keeps a topic's events in order on a cluster: a PUBLISH goes to any
// node, which forwards it to every other, so two events of a topic sent
// through different nodes may arrive in either order.
func WithCluster() RedisOption {
	return func(c *redisConfig) { c.cluster, c.sharded = true, true }
}

// WithSharded chooses sharded pub/sub (SPUBLISH and SSUBSCRIBE, Redis 7) on
// a single Redis server: each topic's channel lies in one of ShardGroups
// hash slots, and the instance holds one pub/sub connection per group, as
// on a cluster. Without it, the broker publishes with PUBLISH and holds one
// pub/sub connection. Every instance of a deployment must use the same
// mode. On a cluster, sharded mode is required.
func WithSharded(sharded bool) RedisOption {
	return func(c *redisConfig) { c.sharded = sharded }
}

// WithLogger makes the broker report losing and regaining its Redis
// connection. Without it the broker logs nothing.
func WithLogger(l *slog.Logger) RedisOption {
	return func(c *redisConfig) { c.log = l }
}

// Redis is the broker of a fleet of server instances that share one Redis
// server or Redis Cluster: Publish sends an event to the topic's Redis
// channel, and every instance delivers what arrives on its channels to its
// local subscribers.
//
// An instance holds one Redis pub/sub connection (a link; one per shard
// group in sharded mode) and subscribes it to a topic's channel only while
// the topic has local subscribers, however many: the local fan-out is the
// Hub's. When the connection drops, go-redis reconnects and resubscribes on
// its own; since whatever was published in between is lost, the broker then
// sends every affected subscriber a Resync event so it catches up from the
// store.
type Redis struct {
	client           redis.UniversalClient
	links            []*link // one, or ShardGroups in sharded mode
	cluster, sharded bool
	hub              *Hub
	prefix           string
	subscribeTimeout time.Duration
	log              *slog.Logger
	sweepInterval    time.Duration
	stuckAfter       time.Duration
	probeEvery       time.Duration

	closing   atomic.Bool
	done      chan struct{} // closed by Close
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error

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
	resyncsUndecodable, renewals, probesLost            atomic.Uint64
}

// Stats returns the broker's counts now.
func (r *Redis) Stats() Stats {
	topics, subscribers := r.hub.Counts()
	channels, up := 0, true
	for _, l := range r.links {
		l.mu.Lock()
		channels += len(l.channels)
		l.mu.Unlock()
		up = up && !l.down.Load()
	}
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
		Renewals:             r.renewals.Load(),
		ProbesLost:           r.probesLost.Load(),
		PubSubUp:             up,
		PublishUp:            !failing,
		Channels:             channels,
		Outbox:               len(r.outbox),
	}
}

// outgoing is an event on its way to Redis, encoded, or a Flush's marker.
type outgoing struct {
	topic   string
	payload []byte
	// id is the event's, if it is numbered in its room's sequence.
	id string
	// flushed, set on a Flush's marker instead of an event, is closed once
	// every event ahead of it in the outbox has been written or dropped.
	flushed chan struct{}
}

var _ Broker = (*Redis)(nil)

// NewRedis connects to the Redis server at url (redis://[user:password@]
// host:port/db or rediss:// for TLS, as go-redis's ParseURL reads it), or
// with WithCluster to the Redis Cluster whose seed nodes it names, and
// starts receiving. It pings Redis first, so that a wrong URL or an
// unreachable server fails here, with a clear error, rather than at the
// first subscription.
func NewRedis(ctx context.Context, url string, opts ...RedisOption) (*Redis, error) {
	cfg := redisConfig{
		prefix:           DefaultRedisPrefix,
		subscribeTimeout: DefaultSubscribeTimeout,
		sweepInterval:    sweepInterval,
		stuckAfter:       stuckAfter,
		probeEvery:       probeEvery,
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
	if cfg.cluster && !cfg.sharded {
		return nil, errors.New("redis broker: a Redis Cluster needs sharded pub/sub: a topic's events published through different nodes could arrive out of order")
	}
	if cfg.sharded && strings.ContainsAny(cfg.prefix, "{}") {
		return nil, fmt.Errorf("redis broker: the channel prefix %q has braces, which would name the hash slot of every channel in sharded mode", cfg.prefix)
	}
	client, err := NewRedisClient(url, cfg.cluster, false)
	if err != nil {
		return nil, fmt.Errorf("redis broker: %w", err)
	}
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("redis broker: cannot reach Redis at %s: %w", RedisAddress(client), err)
	}
	r := &Redis{
		client:           client,
		cluster:          cfg.cluster,
		sharded:          cfg.sharded,
		prefix:           cfg.prefix,
		subscribeTimeout: cfg.subscribeTimeout,
		log:              cfg.log,
		sweepInterval:    cfg.sweepInterval,
		stuckAfter:       cfg.stuckAfter,
		probeEvery:       cfg.probeEvery,
		done:             make(chan struct{}),
		unannounced:      make(map[string]struct{}),
		outbox:           make(chan outgoing, cfg.outbox),
	}
	r.hub = NewHub(cfg.bufferSize, r.idle)
	if cfg.sharded {
		// Each instance has pins of its own, so that its probes reach
		// itself alone.
		var id [8]byte
		_, _ = rand.Read(id[:])
		for _, tag := range shardTags {
			r.links = append(r.links, r.newLink(r.prefix+"{"+tag+"}"+pinMark+hex.EncodeToString(id[:])))
		}
	} else {
		// No channels yet: the connection is made on first use and
		// subscribed channel by channel as local interest comes and goes.
		r.links = []*link{r.newLink("")}
	}
	r.wg.Add(1 + len(r.links))
	for _, l := range r.links {
		go l.receive()
	}
	go r.send()
	return r, nil
}

// NewRedisClient returns a client of the Redis at url: one server (url as
// go-redis's ParseURL reads it), or with cluster a Redis Cluster, whose
// seed nodes url names as go-redis's ParseClusterURL reads it
// (redis://host:port?addr=host2:port2&addr=host3:port3; any node will do,
// the client learns the others from it). With failFast, a call ends at its
// context's deadline and neither a dial nor a call is retried more than
// once, so that an outage delays its caller by little. Its error leaves out
// the URL, which may carry a password.
func NewRedisClient(url string, cluster, failFast bool) (redis.UniversalClient, error) {
	if cluster {
		o, err := redis.ParseClusterURL(url)
		if err != nil {
			return nil, fmt.Errorf("invalid Redis Cluster URL (CHAT_REDIS_URL): %w", withoutURL(err))
		}
		if failFast {
			o.ContextTimeoutEnabled, o.DialerRetries, o.MaxRetries = true, 1, 1
		}
		return redis.NewClusterClient(o), nil
	}
	o, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("invalid Redis URL (CHAT_REDIS_URL): %w", withoutURL(err))
	}
	if failFast {
		o.ContextTimeoutEnabled, o.DialerRetries, o.MaxRetries = true, 1, 1
	}
	return redis.NewClient(o), nil
}

// RedisAddress names what client connects to, for messages: the server's
// address and database, or a cluster's seed nodes.
func RedisAddress(client redis.UniversalClient) string {
	switch c := client.(type) {
	case *redis.Client:
		return fmt.Sprintf("%s (db %d)", c.Options().Addr, c.Options().DB)
	case *redis.ClusterClient:
		return "the Redis Cluster of " + strings.Join(c.Options().Addrs, ", ")
	}
	return "?"
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
// for Redis; Flush does, once for all the events a mutation published.
// Events of one instance reach Redis in the order they were published.
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
	o := outgoing{topic: topic, payload: payload}
	if !ev.ID.IsZero() && sequenced(topic) {
		o.id = ev.ID.String()
	}
	select {
	case r.outbox <- o:
	default:
		r.droppedFull.Add(1)
		r.dropped(topic, errors.New("the outbox is full: Redis takes events slower than they are published"))
	}
	return nil
}

// Flush waits until the events published before it have been written to
// Redis, which hands them to every instance's subscription at once, or
// have been dropped (their topics then owe a Resync): the sender closes
// the marker Flush puts in the outbox after writing the batch it is in.
// During an outage it does not wait, since events are being dropped and
// resynced anyway; nor when the outbox is full, for the same reason.
func (r *Redis) Flush(ctx context.Context) error {
	if r.closing.Load() {
		return ErrClosed
	}
	if r.isFailing() {
		return nil
	}
	flushed := make(chan struct{})
	select {
	case r.outbox <- outgoing{flushed: flushed}:
	default:
		return nil
	}
	select {
	case <-flushed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-r.done:
		return ErrClosed
	}
}

// isFailing reports whether publishing fails now (an outage).
func (r *Redis) isFailing() bool {
	r.pubMu.Lock()
	defer r.pubMu.Unlock()
	return r.failing
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
	var flushed []chan struct{} // the markers taken with the batch
	take := func(o outgoing) {
		if o.flushed != nil {
			flushed = append(flushed, o.flushed)
		} else {
			batch = append(batch, o)
		}
	}
	for {
		batch, flushed = batch[:0], flushed[:0]
		select {
		case <-r.done:
			return
		case o := <-r.outbox:
			take(o)
		drain:
			for len(batch) < sendBatch {
				select {
				case o := <-r.outbox:
					take(o)
				default:
					break drain
				}
			}
		case <-retry.C:
		}
		r.write(batch)
		for _, f := range flushed {
			close(f)
		}
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
	// runs are the scripts queued, by their place in the pipeline (nil for
	// a plain publish).
	runs := make([]*scriptRun, 0, len(batch)+len(owed))
	for _, o := range batch {
		if _, ok := owed[o.topic]; ok {
			delete(owed, o.topic)
			runs = append(runs, r.queueResync(ctx, pipe, o.topic))
		}
		if o.id != "" {
			runs = append(runs, r.queueSequenced(ctx, pipe, o.topic, o.id, o.payload))
		} else {
			r.queuePublish(ctx, pipe, o.topic, o.payload)
			runs = append(runs, nil)
		}
	}
	for topic := range owed {
		runs = append(runs, r.queueResync(ctx, pipe, topic))
	}
	cmds, err := pipe.Exec(ctx)
	if err != nil {
		err = r.runUncached(ctx, cmds, runs, err)
	}
	if err != nil {
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

// queueResync publishes a Resync to topic's subscribers, and ends a room's
// sequence, which does not hold the events lost. It returns the script it
// queued, if it did.
func (r *Redis) queueResync(ctx context.Context, pipe redis.Pipeliner, topic string) *scriptRun {
	resync, _ := encodeEvent(resyncEvent(topic)) // cannot fail: plain strings
	if !sequenced(topic) {
		r.queuePublish(ctx, pipe, topic, resync)
		return nil
	}
	return queueScript(ctx, pipe, resetSequenceScript, r.sequenceKeys(topic), resync, r.publishCommand())
}

func (r *Redis) queuePublish(ctx context.Context, pipe redis.Pipeliner, topic string, payload []byte) {
	r.publishTo(ctx, pipe, r.channel(topic), payload)
}

// publishTo publishes payload to the Redis channel ch through c: a client,
// or a pipeline.
func (r *Redis) publishTo(ctx context.Context, c redis.Cmdable, ch string, payload any) redis.Cmder {
	switch {
	case r.cluster:
		// A replica takes an SPUBLISH of its master's slots and hands it
		// to its own subscribers alone: published through a node that a
		// failover has just turned into a replica (the client's map of the
		// cluster is a moment behind), an event would reach nobody, and
		// nothing would say so. A script is a write, which a replica
		// redirects to the master.
		return c.Eval(ctx, spublishScript, []string{ch}, payload)
	case r.sharded:
		return c.SPublish(ctx, ch, payload)
	default:
		return c.Publish(ctx, ch, payload)
	}
}

// spublishScript publishes ARGV[1] to the shard channel KEYS[1].
const spublishScript = "return redis.call('SPUBLISH', KEYS[1], ARGV[1])"

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
	ch, l := r.channel(topic), r.linkOf(topic)

	l.mu.Lock()
	if r.closing.Load() {
		l.mu.Unlock()
		sub.Close()
		return nil, ErrClosed
	}
	u := l.channels[ch]
	if u == nil {
		u = &upstream{topic: topic}
		l.channels[ch] = u
	}
	l.reconcileLocked(ch, u)
	if u.live {
		l.mu.Unlock()
		return sub, nil
	}
	if u.ready == nil {
		u.ready = make(chan struct{})
	}
	ready := u.ready
	l.mu.Unlock()

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
		if last := l.lastError(); last != nil {
			err = fmt.Errorf("%w (last connection error: %v)", err, last)
		}
		return nil, err
	case <-r.done:
		sub.Close()
		return nil, ErrClosed
	}
}

// Close stops receiving, closes the Redis connections and ends every
// subscription with ErrClosed. It waits for the receive loops to exit.
func (r *Redis) Close() error {
	r.closeOnce.Do(func() {
		r.closing.Store(true)
		close(r.done)
		// Closing the pub/sub connections makes the receive loops' blocked
		// reads return, and any later one fail at once.
		var psErr error
		for _, l := range r.links {
			l.mu.Lock()
			psErr = errors.Join(psErr, l.ps.Close())
			l.mu.Unlock()
		}
		r.wg.Wait()
		for _, l := range r.links {
			if l.node != nil {
				psErr = errors.Join(psErr, l.node.Close())
			}
		}
		r.hub.Close()
		r.closeErr = errors.Join(psErr, r.client.Close())
	})
	return r.closeErr
}

// idle is the hub's onIdle: the last local subscriber of topic left, though
// a new one may have arrived since; reconciling decides.
func (r *Redis) idle(topic string) {
	ch, l := r.channel(topic), r.linkOf(topic)
	l.mu.Lock()
	defer l.mu.Unlock()
	if u := l.channels[ch]; u != nil {
		l.reconcileLocked(ch, u)
	}
}

// message delivers a published event to the local subscribers.
func (r *Redis) message(m *redis.Message) {
	topic, ok := r.topicOf(m.Channel)
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

// ShardGroups is how many hash slots sharded mode spreads the topics over:
// a topic's channel is named with the hash tag of its group, so it lies in
// that group's slot, and an instance holds a pub/sub connection per group.
// The groups' slots are spread evenly over the slot space, so however a
// cluster's masters divide it, each serves about its share of the groups.
const ShardGroups = 16

// shardTags are the groups' hash tags: tag i is the first "g<k>" whose
// slot lies in the i-th sixteenth of the slot space.
var shardTags = func() (tags [ShardGroups]string) {
	const span = hashSlots / ShardGroups
	for i := range tags {
		for k := 0; ; k++ {
			tag := "g" + strconv.Itoa(k)
			if keySlot(tag)/span == i {
				tags[i] = tag
				break
			}
		}
	}
	return tags
}()

// channel names topic's Redis channel: the prefix and the topic, with the
// hash tag of the topic's group between them in sharded mode.
func (r *Redis) channel(topic string) string {
	if !r.sharded {
		return r.prefix + topic
	}
	return r.prefix + "{" + shardTags[shardGroup(topic)] + "}" + topic
}

// topicOf is the topic of a Redis channel of this broker.
func (r *Redis) topicOf(channel string) (string, bool) {
	rest, ok := strings.CutPrefix(channel, r.prefix)
	if !ok || !r.sharded {
		return rest, ok
	}
	if !strings.HasPrefix(rest, "{") {
		return "", false
	}
	_, topic, ok := strings.Cut(rest, "}")
	return topic, ok
}

// linkOf is the link that carries topic's channel.
func (r *Redis) linkOf(topic string) *link {
	if !r.sharded {
		return r.links[0]
	}
	return r.links[shardGroup(topic)]
}

// shardGroup is topic's group: 32-bit FNV-1a of the topic, so every
// instance agrees on it. Written out: hash/fnv would allocate per publish.
func shardGroup(topic string) int {
	h := uint32(2166136261)
	for i := 0; i < len(topic); i++ {
		h ^= uint32(topic[i])
		h *= 16777619
	}
	return int(h % ShardGroups)
}

// resyncEvent tells a topic's subscribers that they may have missed events.
func resyncEvent(topic string) Event {
	room, _ := strings.CutPrefix(topic, "room:")
	return Event{Kind: Resync, Room: room}
}
