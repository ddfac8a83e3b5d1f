package broker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/killrchat/chatql/internal/testenv"
	"github.com/killrchat/chatql/store"
)

// redisURL returns the test server's URL from CHAT_REDIS_URL.
func redisURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("CHAT_REDIS_URL")
	if u == "" {
		testenv.Missing(t, "CHAT_REDIS_URL is not set", "Redis broker tests")
	}
	return u
}

// testPrefix is a channel prefix of its own for each test, so that tests
// and parallel runs on one Redis server do not see each other's channels.
func testPrefix(t *testing.T) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("chattest:%s:%s:", hex.EncodeToString(b[:]), t.Name())
}

func newTestRedis(t *testing.T, url, prefix string, opts ...RedisOption) *Redis {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := NewRedis(ctx, url, append([]RedisOption{WithChannelPrefix(prefix)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// adminClient is a plain client for inspecting the server (PUBSUB).
func adminClient(t *testing.T, url string) *redis.Client {
	t.Helper()
	o, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func numSub(t *testing.T, c *redis.Client, channel string) int64 {
	t.Helper()
	m, err := c.PubSubNumSub(context.Background(), channel).Result()
	if err != nil {
		t.Fatal(err)
	}
	return m[channel]
}

func channelCount(t *testing.T, c *redis.Client, prefix string) int {
	t.Helper()
	chans, err := c.PubSubChannels(context.Background(), prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return len(chans)
}

func subscribe(t *testing.T, b Broker, topic string) *Subscription {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub, err := b.Subscribe(ctx, topic)
	if err != nil {
		t.Fatalf("Subscribe(%s): %v", topic, err)
	}
	return sub
}

func publish(t *testing.T, b Broker, topic string, ev Event) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Publish(ctx, topic, ev); err != nil {
		t.Fatalf("Publish(%s): %v", topic, err)
	}
}

// upstreamStates is how many channels the broker still tracks; it must drop
// to zero when nothing is subscribed, or the state machine leaks.
func upstreamStates(r *Redis) int {
	n := 0
	for _, l := range r.links {
		l.mu.Lock()
		n += len(l.channels)
		l.mu.Unlock()
	}
	return n
}

func TestNewRedisFailsFast(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := NewRedis(ctx, "http://secret@example.com"); err == nil || !strings.Contains(err.Error(), "invalid Redis URL") {
		t.Fatalf("NewRedis with a non-Redis URL: %v", err)
	}
	if _, err := NewRedis(ctx, "redis://user:hunter2@[::1"); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("NewRedis with a malformed URL: %v (must fail without echoing the password)", err)
	}
	if _, err := NewRedis(ctx, "redis://127.0.0.1:1", WithCluster(), WithSharded(false)); err == nil || !strings.Contains(err.Error(), "needs sharded pub/sub") {
		t.Fatalf("NewRedis on a cluster in broadcast mode: %v", err)
	}
	if _, err := NewRedis(ctx, "redis://127.0.0.1:1", WithSharded(true), WithChannelPrefix("chat{1}:")); err == nil || !strings.Contains(err.Error(), "braces") {
		t.Fatalf("NewRedis in sharded mode with braces in the prefix: %v", err)
	}
	addr := freeAddr(t) // nothing listens there
	_, err := NewRedis(ctx, "redis://"+addr+"/0?max_retries=-1")
	if err == nil || !strings.Contains(err.Error(), "cannot reach Redis at "+addr) {
		t.Fatalf("NewRedis with no server: %v", err)
	}
}

// Subscribe returns only once Redis has confirmed the subscription, so an
// event published by another instance right after it returns arrives.
func TestRedisEventCrossesInstances(t *testing.T) {
	url := redisURL(t)
	prefix := testPrefix(t)
	a := newTestRedis(t, url, prefix)
	b := newTestRedis(t, url, prefix)
	for i := range 50 {
		topic := RoomTopic("room-" + strconv.Itoa(i))
		sub := subscribe(t, b, topic)
		publish(t, a, topic, testEvent("a", i))
		ev := recv(t, sub, 5*time.Second)
		if _, seq := seqOf(t, ev); seq != i || ev.Message.ID.IsZero() {
			t.Fatalf("got event %d (%+v), want %d", seq, ev.Message, i)
		}
		sub.Close()
	}
}

func TestRedisFanOutInOrder(t *testing.T) {
	const n, perBroker = 200, 10
	url := redisURL(t)
	prefix := testPrefix(t)
	brokers := []*Redis{newTestRedis(t, url, prefix), newTestRedis(t, url, prefix)}
	topic := RoomTopic("lobby")
	var subs []*Subscription
	for _, b := range brokers {
		for range perBroker {
			subs = append(subs, subscribe(t, b, topic))
		}
	}
	want := make([]Event, n)
	for i := range want {
		want[i] = testEvent("publisher", i)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(subs))
	for k, sub := range subs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for i := range n {
				ev, ok := sub.Next(ctx)
				switch {
				case !ok && ctx.Err() != nil:
					errs <- fmt.Errorf("subscriber %d: event %d did not arrive", k, i)
					return
				case !ok:
					errs <- fmt.Errorf("subscriber %d ended after %d events: %v", k, i, sub.Err())
					return
				case ev.Message == nil || ev.Message.ID != want[i].Message.ID || ev.Message.Content != want[i].Message.Content:
					errs <- fmt.Errorf("subscriber %d: event %d is %+v, want %+v", k, i, ev.Message, want[i].Message)
					return
				}
			}
		}()
	}
	for _, ev := range want {
		publish(t, brokers[0], topic, ev)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestRedisSharesOneSubscriptionPerTopic(t *testing.T) {
	url := redisURL(t)
	prefix := testPrefix(t)
	r := newTestRedis(t, url, prefix)
	admin := adminClient(t, url)
	topic := RoomTopic("lobby")
	channel := prefix + topic

	subs := make([]*Subscription, 50)
	var wg sync.WaitGroup
	errs := make(chan error, len(subs))
	for i := range subs {
		wg.Add(1)
		go func() { // concurrently: they must all wait for the one SUBSCRIBE
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var err error
			if subs[i], err = r.Subscribe(ctx, topic); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := numSub(t, admin, channel); got != 1 {
		t.Fatalf("PUBSUB NUMSUB %s = %d with 50 local subscribers, want 1", channel, got)
	}
	publish(t, r, topic, testEvent("p", 0))
	for _, sub := range subs {
		recv(t, sub, 5*time.Second)
	}
	for _, sub := range subs[1:] {
		sub.Close()
	}
	if got := numSub(t, admin, channel); got != 1 {
		t.Fatalf("PUBSUB NUMSUB %s = %d with one local subscriber left, want 1", channel, got)
	}
	subs[0].Close()
	eventually(t, 5*time.Second,
		func() string { return fmt.Sprintf("PUBSUB NUMSUB %s = %d", channel, numSub(t, admin, channel)) },
		func() bool { return numSub(t, admin, channel) == 0 })
	eventually(t, 5*time.Second,
		func() string { return fmt.Sprintf("%d upstream states left", upstreamStates(r)) },
		func() bool { return upstreamStates(r) == 0 })
}

func TestRedisSubscribeCyclesLeaveNothingBehind(t *testing.T) {
	const workers, cyclesPerWorker, topics = 8, 125, 10
	url := redisURL(t)
	prefix := testPrefix(t)
	admin := adminClient(t, url)
	r := newTestRedis(t, url, prefix)

	// Warm up, so that connections and whatever go-redis starts lazily are
	// part of the baseline.
	warm := subscribe(t, r, RoomTopic("warm-up"))
	publish(t, r, RoomTopic("warm-up"), testEvent("p", 0))
	recv(t, warm, 5*time.Second)
	warm.Close()
	eventually(t, 5*time.Second, func() string { return "warm-up channel still subscribed" },
		func() bool { return channelCount(t, admin, prefix) == 0 })
	settled := goroutineBaseline(t)
	channelsBefore := channelCount(t, admin, prefix)

	// Workers share topics, so subscribes race with the UNSUBSCRIBE of a
	// topic another worker just left.
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range cyclesPerWorker {
				topic := RoomTopic(strconv.Itoa((w*cyclesPerWorker + i) % topics))
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				sub, err := r.Subscribe(ctx, topic)
				cancel()
				if err != nil {
					errs <- fmt.Errorf("worker %d cycle %d: %w", w, i, err)
					return
				}
				if i%25 == 0 {
					// Now and then prove the subscription is live.
					ev := testEvent(fmt.Sprintf("w%d", w), i)
					if err := r.Publish(context.Background(), topic, ev); err != nil {
						errs <- err
						return
					}
					if !receivedWithin(sub, ev, 5*time.Second) {
						errs <- fmt.Errorf("worker %d cycle %d: own event did not arrive on %s (err %v)", w, i, topic, sub.Err())
						return
					}
				}
				sub.Close()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	eventually(t, 10*time.Second,
		func() string {
			return fmt.Sprintf("%d channels %s* on Redis (%d before), %d upstream states",
				channelCount(t, admin, prefix), prefix, channelsBefore, upstreamStates(r))
		},
		func() bool { return channelCount(t, admin, prefix) == channelsBefore && upstreamStates(r) == 0 })
	settled()

	// And the broker still works.
	sub := subscribe(t, r, RoomTopic("after"))
	publish(t, r, RoomTopic("after"), testEvent("p", 1))
	recv(t, sub, 5*time.Second)
}

// receivedWithin reports whether sub gets ev (by message id) in time, other
// workers' events on the same topic notwithstanding.
func receivedWithin(sub *Subscription, ev Event, within time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for {
		got, ok := sub.Next(ctx)
		if !ok {
			return false
		}
		if got.Message != nil && got.Message.ID == ev.Message.ID {
			return true
		}
	}
}

func TestRedisCloseEndsSubscriptions(t *testing.T) {
	url := redisURL(t)
	settled := goroutineBaseline(t)
	r, err := NewRedis(context.Background(), url, WithChannelPrefix(testPrefix(t)))
	if err != nil {
		t.Fatal(err)
	}
	subs := []*Subscription{subscribe(t, r, "a"), subscribe(t, r, "a"), subscribe(t, r, "b")}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	for _, sub := range subs {
		drain(t, sub, time.Second)
		if !errors.Is(sub.Err(), ErrClosed) {
			t.Fatalf("Err() = %v, want ErrClosed", sub.Err())
		}
	}
	if _, err := r.Subscribe(context.Background(), "c"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Subscribe after Close: %v", err)
	}
	if err := r.Publish(context.Background(), "a", Event{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Publish after Close: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	settled()
}

func TestRedisCutsOffSlowSubscriber(t *testing.T) {
	const bufferSize = 4
	url := redisURL(t)
	prefix := testPrefix(t)
	r := newTestRedis(t, url, prefix, WithBufferSize(bufferSize))
	admin := adminClient(t, url)
	topic := RoomTopic("lobby")
	slow := subscribe(t, r, topic)
	fast := subscribe(t, r, topic)
	for i := range 4 * bufferSize {
		publish(t, r, topic, testEvent("p", i))
		if _, seq := seqOf(t, recv(t, fast, 5*time.Second)); seq != i {
			t.Fatalf("fast subscriber: event %d arrived as %d", seq, i)
		}
	}
	if got := drain(t, slow, time.Second); len(got) != bufferSize || !errors.Is(slow.Err(), ErrSlowSubscriber) {
		t.Fatalf("slow subscriber read %d events and ended with %v; want %d and ErrSlowSubscriber", len(got), slow.Err(), bufferSize)
	}
	// The fast one still holds the shared Redis subscription.
	if got := numSub(t, admin, prefix+topic); got != 1 {
		t.Fatalf("PUBSUB NUMSUB = %d, want 1", got)
	}
	st := r.Stats()
	if st.Published != 4*bufferSize || st.SlowSubscribers != 1 || !st.Redis || !st.PubSubUp || !st.PublishUp || st.Channels != 1 || st.Subscribers != 1 {
		t.Fatalf("Stats() = %+v, want %d published, 1 slow subscriber, Redis up, 1 channel with 1 subscriber", st, 4*bufferSize)
	}
}

// freeAddr returns a loopback address nothing listens on (at the moment).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// privateRedis is a redis-server process that a test owns, so that it can
// kill and restart it.
type privateRedis struct {
	t    *testing.T
	bin  string
	port string
	dir  string
	cmd  *exec.Cmd
}

func startPrivateRedis(t *testing.T) *privateRedis {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		testenv.Missing(t, "redis-server is not installed (scripts/redis.sh install installs it)", "the tests that restart Redis")
	}
	_, port, _ := net.SplitHostPort(freeAddr(t))
	p := &privateRedis{t: t, bin: bin, port: port, dir: t.TempDir()}
	p.start()
	t.Cleanup(p.kill)
	return p
}

func (p *privateRedis) url() string { return "redis://127.0.0.1:" + p.port + "/0" }

func (p *privateRedis) start() {
	p.t.Helper()
	p.cmd = exec.Command(p.bin, "--port", p.port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", p.dir, "--logfile", filepath.Join(p.dir, "redis.log"))
	if err := p.cmd.Start(); err != nil {
		p.t.Fatalf("starting redis-server: %v", err)
	}
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + p.port, MaxRetries: -1})
	defer c.Close()
	eventually(p.t, 10*time.Second,
		func() string {
			log, _ := os.ReadFile(filepath.Join(p.dir, "redis.log"))
			return "redis-server on port " + p.port + " does not answer PING; its log:\n" + string(log)
		},
		func() bool { return c.Ping(context.Background()).Err() == nil })
}

func (p *privateRedis) kill() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	p.cmd = nil
}

// After a Redis restart the broker resubscribes on its own, tells its
// subscribers to resync (events published during the outage are lost), and
// delivers what is published afterwards.
func TestRedisRestartResyncsAndResubscribes(t *testing.T) {
	redisURL(t) // runs with the other Redis tests, though it owns its server
	srv := startPrivateRedis(t)
	prefix := testPrefix(t)
	r := newTestRedis(t, srv.url(), prefix)
	publisher := newTestRedis(t, srv.url(), prefix)
	topic := RoomTopic("lobby")
	sub := subscribe(t, r, topic)
	publish(t, publisher, topic, testEvent("p", 0))
	if _, seq := seqOf(t, recv(t, sub, 5*time.Second)); seq != 0 {
		t.Fatalf("got event %d before the restart, want 0", seq)
	}

	srv.kill()
	// While Redis is down, publishing does not wait for it (the event is
	// lost, and its topic owes a Resync), and a new topic's subscription is
	// not reported ready, since Redis cannot confirm it.
	if err := publisher.Publish(context.Background(), topic, testEvent("p", 1)); err != nil {
		t.Fatalf("Publish with Redis down = %v, want it handed over", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err := r.Subscribe(ctx, RoomTopic("during-outage"))
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Subscribe with Redis down: %v, want a deadline error", err)
	}

	srv.start()
	ev := recv(t, sub, 15*time.Second)
	if ev.Kind != Resync || ev.Room != "lobby" {
		t.Fatalf("first event after the restart is %+v, want a Resync of room lobby", ev)
	}
	if sub.Err() != nil {
		t.Fatalf("subscription ended: %v", sub.Err())
	}
	// The counts of /metrics: the subscriber's instance resynced on its
	// reconnect (or on a Resync the publisher sent, had it lost the event).
	if st := r.Stats(); st.ResyncsReconnect+st.ResyncsReceived == 0 || !st.PubSubUp {
		t.Errorf("subscriber's Stats() = %+v, want a resync counted and the pub/sub connection up", st)
	}
	// The Resync comes once the channel is resubscribed, so what is
	// published now arrives.
	publish(t, publisher, topic, testEvent("p", 2))
	_, seq := seqOf(t, recvPast(t, sub, Resync))
	if seq == 1 {
		// The event published in the outage may still arrive: the sender
		// was waiting on Redis with it when Redis came back.
		_, seq = seqOf(t, recvPast(t, sub, Resync))
	}
	if seq != 2 {
		t.Fatalf("got event %d after the restart, want 2", seq)
	}

	// Only the live topic is subscribed on the new server: the one whose
	// Subscribe gave up during the outage was dropped once Redis was back.
	admin := adminClient(t, srv.url())
	eventually(t, 10*time.Second,
		func() string {
			chans, _ := admin.PubSubChannels(context.Background(), prefix+"*").Result()
			return fmt.Sprintf("channels %v, %d upstream states", chans, upstreamStates(r))
		},
		func() bool {
			return numSub(t, admin, prefix+topic) == 1 && channelCount(t, admin, prefix) == 1 && upstreamStates(r) == 1
		})

	// A new subscriber, on either instance, works as before.
	other := subscribe(t, publisher, topic)
	publish(t, r, topic, testEvent("p", 3))
	for _, s := range []*Subscription{sub, other} {
		if _, seq := seqOf(t, recvPast(t, s, Resync)); seq != 3 {
			t.Fatalf("got event %d, want 3", seq)
		}
	}
}

// withSweep shortens the housekeeping intervals, so that tests of the sweep
// do not wait for the production ones.
func withSweep(interval, stuck time.Duration) RedisOption {
	return func(c *redisConfig) { c.sweepInterval, c.stuckAfter = interval, stuck }
}

// logRecorder is a slog handler that keeps what is logged.
type logRecorder struct {
	mu      sync.Mutex
	records []string
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, rec.Level.String()+" "+rec.Message)
	return nil
}
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }
func (l *logRecorder) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.records...)
}

// The receive loop reads with a timeout to run its sweep; a quiet
// connection must not pass for a lost one (which would resync everybody).
func TestRedisQuietConnectionIsNotAnOutage(t *testing.T) {
	url := redisURL(t)
	logs := &logRecorder{}
	r := newTestRedis(t, url, testPrefix(t), withSweep(10*time.Millisecond, time.Minute), WithLogger(slog.New(logs)))
	sub := subscribe(t, r, RoomTopic("quiet"))
	// Many read timeouts pass.
	time.Sleep(300 * time.Millisecond)
	if ev, _ := sub.Poll(); ev != nil {
		t.Fatalf("a quiet connection produced %+v", ev)
	}
	if got := logs.all(); len(got) != 0 {
		t.Fatalf("a quiet connection logged %v", got)
	}
	publish(t, r, RoomTopic("quiet"), testEvent("p", 0))
	recv(t, sub, 5*time.Second)
}

// A reply that never comes (the connection was replaced without the loop
// seeing an error) must not leave a subscription stuck: the sweep sends the
// command again.
// recvPast receives the next event that is not of the given kind. Tests
// use it to allow spare Resyncs (the safe side), never a lost event: under
// load a confirmation can take longer than a test's short stuckAfter, and
// the command sent again confirms a live subscription a second time.
func recvPast(t *testing.T, sub *Subscription, kind store.EventKind) Event {
	t.Helper()
	for {
		if ev := recv(t, sub, 5*time.Second); ev.Kind != kind {
			return ev
		}
	}
}

func TestRedisSweepRecoversLostReplies(t *testing.T) {
	url := redisURL(t)
	prefix := testPrefix(t)
	r := newTestRedis(t, url, prefix, withSweep(10*time.Millisecond, 50*time.Millisecond))
	admin := adminClient(t, url)
	topic := RoomTopic("stuck")
	channel := prefix + topic
	l := r.links[0]
	live := func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		u := l.channels[channel]
		return u != nil && u.live
	}

	// An UNSUBSCRIBE whose reply was lost, while a local subscriber waits:
	// the sweep unsubscribes again, and the reply makes it subscribe.
	sub, _, err := r.hub.Add(topic)
	if err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	l.channels[channel] = &upstream{topic: topic, busy: true, since: time.Now()}
	l.mu.Unlock()
	eventually(t, 5*time.Second, func() string { return "the subscription did not go live" },
		func() bool { return live() && numSub(t, admin, channel) == 1 })
	publish(t, r, topic, testEvent("p", 0))
	if _, seq := seqOf(t, recvPast(t, sub, Resync)); seq != 0 {
		t.Fatalf("got event %d, want 0", seq)
	}

	// A SUBSCRIBE whose confirmation was lost: a new subscriber waits for
	// it, and the sweep gets it.
	l.mu.Lock()
	u := l.channels[channel]
	u.live, u.busy, u.since = false, true, time.Now()
	l.mu.Unlock()
	second := subscribe(t, r, topic)
	if !live() {
		t.Fatal("Subscribe returned before the subscription was live")
	}
	publish(t, r, topic, testEvent("p", 1))
	for _, s := range []*Subscription{sub, second} {
		if _, seq := seqOf(t, recvPast(t, s, Resync)); seq != 1 {
			t.Fatalf("got event %d, want 1", seq)
		}
	}

	sub.Close()
	second.Close()
	eventually(t, 5*time.Second,
		func() string {
			return fmt.Sprintf("NUMSUB %d, %d upstream states", numSub(t, admin, channel), upstreamStates(r))
		},
		func() bool { return numSub(t, admin, channel) == 0 && upstreamStates(r) == 0 })
}

// A dropped connection (Redis itself stays up) is an outage too: the
// subscribers get one Resync once the broker has resubscribed, then the
// events published after it.
func TestRedisDroppedConnectionResyncs(t *testing.T) {
	redisURL(t)                 // runs with the other Redis tests, though it owns its server
	srv := startPrivateRedis(t) // CLIENT KILL on a shared server would hit other tests
	prefix := testPrefix(t)
	logs := &logRecorder{}
	r := newTestRedis(t, srv.url(), prefix, WithLogger(slog.New(logs)))
	admin := adminClient(t, srv.url())
	topics := []string{RoomTopic("a"), RoomTopic("b"), RoomTopic("c")}
	var subs []*Subscription
	for _, topic := range topics {
		subs = append(subs, subscribe(t, r, topic))
	}
	for round := range 3 {
		if err := admin.ClientKillByFilter(context.Background(), "TYPE", "pubsub").Err(); err != nil {
			t.Fatal(err)
		}
		for i, sub := range subs {
			if ev := recv(t, sub, 10*time.Second); ev.Kind != Resync {
				t.Fatalf("round %d: first event after the drop is %+v, want a Resync", round, ev)
			}
			publish(t, r, topics[i], testEvent("p", round))
			// One Resync per outage, not one per confirmation seen.
			ev := recv(t, sub, 5*time.Second)
			if ev.Kind == Resync {
				t.Fatalf("round %d: a second Resync for one outage", round)
			}
			if _, seq := seqOf(t, ev); seq != round {
				t.Fatalf("round %d: got event %d", round, seq)
			}
		}
	}
	if got := logs.all(); len(got) < 2 || !strings.Contains(got[0], "connection lost") {
		t.Fatalf("outages were not logged: %v", got)
	}
}

// An event that never reached Redis is announced to the subscribers
// elsewhere as soon as Redis takes writes, with nothing else published:
// they catch up from the store rather than carry on past it. Once.
func TestRedisLostEventIsAnnounced(t *testing.T) {
	url := redisURL(t)
	prefix := testPrefix(t)
	a := newTestRedis(t, url, prefix)
	b := newTestRedis(t, url, prefix)
	topic := RoomTopic("lobby")
	sub := subscribe(t, b, topic)

	a.dropped(topic, errors.New("lost for the test"))
	if ev := recv(t, sub, 5*time.Second); ev.Kind != Resync || ev.Room != "lobby" {
		t.Fatalf("first event after a lost one is %+v, want a Resync of room lobby", ev)
	}
	publish(t, a, topic, testEvent("p", 1))
	if _, seq := seqOf(t, recv(t, sub, 5*time.Second)); seq != 1 {
		t.Fatalf("got event %d, want 1 (announced once)", seq)
	}
}

// Publish hands events over without waiting, in order: a subscriber
// elsewhere gets them all, in the order published.
func TestRedisPublishKeepsOrder(t *testing.T) {
	url := redisURL(t)
	prefix := testPrefix(t)
	a := newTestRedis(t, url, prefix)
	b := newTestRedis(t, url, prefix)
	topic := RoomTopic("order")
	sub := subscribe(t, b, topic)
	const n = 200 // within the subscriber's queue, read after all are sent
	for i := range n {
		publish(t, a, topic, testEvent("p", i))
	}
	for i := range n {
		if _, seq := seqOf(t, recv(t, sub, 5*time.Second)); seq != i {
			t.Fatalf("event %d arrived as %d", i, seq)
		}
	}
}

// Flush returns once the events published before it are in Redis: while
// Redis pauses its writers it waits out the pause (or its context), and
// the event then reaches a subscriber elsewhere. With nothing published,
// it returns.
func TestRedisFlushWaitsForRedis(t *testing.T) {
	redisURL(t) // runs with the other Redis tests, though it owns its server
	p := startPrivateRedis(t)
	prefix := testPrefix(t)
	a := newTestRedis(t, p.url(), prefix)
	b := newTestRedis(t, p.url(), prefix)
	topic := RoomTopic("flush")
	sub := subscribe(t, b, topic)
	admin := adminClient(t, p.url())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Flush(ctx); err != nil {
		t.Fatalf("Flush with nothing published = %v", err)
	}

	pauseWriters := func(d time.Duration) time.Time {
		t.Helper()
		if err := admin.Do(ctx, "CLIENT", "PAUSE", d.Milliseconds(), "WRITE").Err(); err != nil {
			t.Fatalf("CLIENT PAUSE: %v", err)
		}
		return time.Now()
	}
	const pause = 600 * time.Millisecond
	paused := pauseWriters(pause)
	publish(t, a, topic, testEvent("p", 1))
	if err := a.Flush(ctx); err != nil {
		t.Fatalf("Flush = %v", err)
	}
	if waited := time.Since(paused); waited < pause*3/4 {
		t.Fatalf("Flush returned %v into Redis's %v pause of writes: before Redis took the event", waited, pause)
	}
	if _, seq := seqOf(t, recv(t, sub, 5*time.Second)); seq != 1 {
		t.Fatalf("got event %d, want 1", seq)
	}

	// A Flush whose context ends first says so; the event still goes.
	pauseWriters(2 * time.Second)
	publish(t, a, topic, testEvent("p", 2))
	short, cancelShort := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancelShort()
	if err := a.Flush(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush within Redis's pause, with 100 ms to wait = %v; want the deadline", err)
	}
	if _, seq := seqOf(t, recv(t, sub, 5*time.Second)); seq != 2 {
		t.Fatalf("got event %d, want 2", seq)
	}
}
