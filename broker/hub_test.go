package broker

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// testEvent is the i-th event of a stream; seqOf reads i back.
func testEvent(stream string, i int) Event {
	return Event{
		Kind: store.MessagePosted,
		Room: "lobby",
		Message: &store.Message{
			Room:    "lobby",
			ID:      store.NewMessageID(),
			Author:  store.UserRef{Login: stream},
			Content: strconv.Itoa(i),
		},
		User: store.UserRef{Login: stream},
	}
}

func seqOf(t testing.TB, ev Event) (stream string, i int) {
	t.Helper()
	if ev.Message == nil {
		t.Fatalf("event %+v has no message", ev)
	}
	i, err := strconv.Atoi(ev.Message.Content)
	if err != nil {
		t.Fatalf("event content %q is not a sequence number", ev.Message.Content)
	}
	return ev.Message.Author.Login, i
}

// recv returns the next event of sub, failing the test if none arrives in
// time or the subscription ends.
func recv(t testing.TB, sub *Subscription, within time.Duration) Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	ev, ok := sub.Next(ctx)
	switch {
	case ok:
		return *ev
	case ctx.Err() != nil:
		t.Fatalf("no event within %v", within)
	default:
		t.Fatalf("subscription ended (err: %v) while an event was expected", sub.Err())
	}
	return Event{}
}

// drain reads sub until it ends and returns what it read.
func drain(t testing.TB, sub *Subscription, within time.Duration) []Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var out []Event
	for {
		ev, ok := sub.Next(ctx)
		if !ok {
			if ctx.Err() != nil {
				t.Fatalf("subscription still open after %v (%d events read)", within, len(out))
			}
			return out
		}
		out = append(out, *ev)
	}
}

// queued is how many events wait in sub's queue.
func queued(sub *Subscription) int {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	return len(sub.queue) - sub.head
}

// eventually polls cond until it holds or the deadline passes: settling
// (goroutines exiting, Redis processing an UNSUBSCRIBE) takes a moment, but
// a fixed sleep would make the test either slow or flaky.
func eventually(t testing.TB, within time.Duration, what func() string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not settled after %v: %s", within, what())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// goroutineBaseline returns a function that asserts the goroutines running
// this package's code have come back to what they are now. It counts those
// only: other tests' leftovers (HTTP pools, go-redis internals) do not
// blur it.
func goroutineBaseline(t testing.TB) func() {
	t.Helper()
	before := brokerGoroutines()
	return func() {
		t.Helper()
		eventually(t, 5*time.Second,
			func() string {
				buf := make([]byte, 1<<16)
				buf = buf[:runtime.Stack(buf, true)]
				return fmt.Sprintf("%d goroutines in the broker, %d before:\n%s", brokerGoroutines(), before, buf)
			},
			func() bool { return brokerGoroutines() <= before })
	}
}

// brokerGoroutines counts the goroutines with this package's code on their
// stack, the test's own excepted.
func brokerGoroutines() int {
	buf := make([]byte, 1<<20)
	n := 0
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "chatql/broker.(*") && !strings.Contains(g, "chatql/broker.Test") {
			n++
		}
	}
	return n
}

// publishNoBlock publishes ev and fails the test if Publish does not return
// promptly: the broker must never wait for a subscriber.
func publishNoBlock(t testing.TB, b Broker, topic string, ev Event) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- b.Publish(context.Background(), topic, ev) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Publish: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Publish blocked")
	}
}

func TestLocalDeliversInPublishOrder(t *testing.T) {
	const n = 1000
	b := NewLocal(n)
	defer b.Close()
	topic := RoomTopic("lobby")
	subs := make([]*Subscription, 3)
	for i := range subs {
		var err error
		if subs[i], err = b.Subscribe(context.Background(), topic); err != nil {
			t.Fatal(err)
		}
	}
	other, err := b.Subscribe(context.Background(), RoomTopic("elsewhere"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		publishNoBlock(t, b, topic, testEvent("p", i))
	}
	for _, sub := range subs {
		for i := range n {
			if _, got := seqOf(t, recv(t, sub, time.Second)); got != i {
				t.Fatalf("event %d arrived as number %d", got, i)
			}
		}
	}
	if n := queued(other); n != 0 {
		t.Fatalf("a subscriber of another topic got %d events", n)
	}
}

func TestLocalCutsOffSlowSubscriberOnly(t *testing.T) {
	const bufferSize = 8
	const n = 5 * bufferSize
	b := NewLocal(bufferSize)
	defer b.Close()
	topic := RoomTopic("lobby")
	slow, err := b.Subscribe(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	fast, err := b.Subscribe(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		publishNoBlock(t, b, topic, testEvent("p", i))
		// The fast subscriber keeps up: it reads each event as it comes.
		if _, got := seqOf(t, recv(t, fast, time.Second)); got != i {
			t.Fatalf("fast subscriber: event %d arrived as number %d", got, i)
		}
		// The slow one never reads: its buffer holds bufferSize events,
		// and the next one cuts it off.
		switch err := slow.Err(); {
		case i < bufferSize && err != nil:
			t.Fatalf("slow subscriber cut off after %d events with a buffer of %d: %v", i+1, bufferSize, err)
		case i >= bufferSize && !errors.Is(err, ErrSlowSubscriber):
			t.Fatalf("slow subscriber after %d events: Err() = %v, want ErrSlowSubscriber", i+1, err)
		}
	}
	got := drain(t, slow, time.Second)
	if len(got) != bufferSize {
		t.Fatalf("slow subscriber kept %d events, want its buffer's %d", len(got), bufferSize)
	}
	for i, ev := range got {
		if _, seq := seqOf(t, ev); seq != i {
			t.Fatalf("slow subscriber: event %d arrived as number %d", seq, i)
		}
	}
	if fast.Err() != nil {
		t.Fatalf("fast subscriber ended: %v", fast.Err())
	}
	// The counts of /metrics: every publish, one cut-off, one subscriber left.
	if st := b.Stats(); st.Published != n || st.SlowSubscribers != 1 || st.Topics != 1 || st.Subscribers != 1 {
		t.Fatalf("Stats() = %+v, want %d published, 1 slow subscriber, 1 topic with 1 subscriber", st, n)
	}
}

// TestHubCutOffAmongMany: slow subscribers cut off in the middle of a
// delivery leave every other subscriber of the topic its event, once, and
// later deliveries reach exactly those left, whatever order they came and
// went in.
func TestHubCutOffAmongMany(t *testing.T) {
	h := NewHub(1, nil)
	defer h.Close()
	topic := RoomTopic("lobby")
	var subs []*Subscription
	for range 20 {
		sub, _, err := h.Add(topic)
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, sub)
	}
	// Every third reads nothing: the second delivery cuts it off. Every
	// fifth leaves before it.
	left := 0
	for i, sub := range subs {
		if i%5 == 4 {
			sub.Close()
		} else {
			left++
		}
	}
	h.Deliver(topic, testEvent("p", 0))
	for i, sub := range subs {
		if i%5 != 4 && i%3 != 0 {
			if _, seq := seqOf(t, recv(t, sub, time.Second)); seq != 0 {
				t.Fatalf("subscriber %d got event %d, want 0", i, seq)
			}
		}
	}
	h.Deliver(topic, testEvent("p", 1))
	for i, sub := range subs {
		switch {
		case i%5 == 4:
			if ev, ended := sub.Poll(); ev != nil || !ended || sub.Err() != nil {
				t.Errorf("subscriber %d, who left, got %v (ended %v, err %v)", i, ev, ended, sub.Err())
			}
		case i%3 == 0:
			if !errors.Is(sub.Err(), ErrSlowSubscriber) {
				t.Errorf("subscriber %d, who read nothing, ended with %v, want ErrSlowSubscriber", i, sub.Err())
			}
			left--
		default:
			if _, seq := seqOf(t, recv(t, sub, time.Second)); seq != 1 {
				t.Fatalf("subscriber %d got event %d, want 1", i, seq)
			}
			if ev, _ := sub.Poll(); ev != nil {
				t.Fatalf("subscriber %d got an event twice", i)
			}
		}
	}
	if topics, n := h.Counts(); topics != 1 || n != left {
		t.Fatalf("Counts() = %d topics, %d subscribers; want 1, %d", topics, n, left)
	}
	for _, sub := range subs {
		sub.Close()
	}
	if topics, n := h.Counts(); topics != 0 || n != 0 || h.Active(topic) {
		t.Fatalf("after every subscriber left: %d topics, %d subscribers, active %v", topics, n, h.Active(topic))
	}
}

// A subscriber that is cut off must have received a gap-free prefix of the
// events, or resuming from the last one it read would skip the one it
// missed; and with concurrent publishers, all subscribers must see the
// events in the same order. A subscriber that keeps up records the
// reference order.
func TestHubCutOffLeavesNoGap(t *testing.T) {
	const publishers, perPublisher = 8, 250
	const total = publishers * perPublisher
	h := NewHub(2, nil)
	defer h.Close()
	topic := RoomTopic("lobby")
	// The recorder's buffer holds everything, so it is never cut off.
	recorder, _, err := newSizedSub(h, topic, total)
	if err != nil {
		t.Fatal(err)
	}
	// Bystanders that keep up make each delivery take a while, which
	// widens the window in which a hub that cuts off lazily would let a
	// concurrent delivery through to the slow subscriber.
	for range 50 {
		if _, _, err := newSizedSub(h, topic, total); err != nil {
			t.Fatal(err)
		}
	}
	slow, _, err := h.Add(topic)
	if err != nil {
		t.Fatal(err)
	}
	var got []Event
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			ev, ok := slow.Next(context.Background())
			if !ok {
				return
			}
			got = append(got, *ev)
		}
	}()
	var wg sync.WaitGroup
	for p := range publishers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perPublisher {
				h.Deliver(topic, testEvent(strconv.Itoa(p), i))
			}
		}()
	}
	wg.Wait()
	slow.Close() // in case it kept up with everything
	<-readerDone
	want := drainN(t, recorder, total)
	if len(got) > len(want) {
		t.Fatalf("slow subscriber got %d events, more than the %d delivered", len(got), len(want))
	}
	for i := range got {
		ws, wi := seqOf(t, want[i])
		gs, gi := seqOf(t, got[i])
		if ws != gs || wi != gi {
			t.Fatalf("slow subscriber's event %d is %s/%d, want %s/%d: it saw a gap", i, gs, gi, ws, wi)
		}
	}
	t.Logf("slow subscriber read %d of %d events before it was cut off (err: %v)", len(got), total, slow.Err())
}

// newSizedSub adds a subscriber with its own buffer size, for tests that
// need one subscriber to hold everything.
func newSizedSub(h *Hub, topic string, size int) (*Subscription, bool, error) {
	saved := h.bufferSize
	h.bufferSize = size
	defer func() { h.bufferSize = saved }()
	return h.Add(topic)
}

func drainN(t testing.TB, sub *Subscription, n int) []Event {
	t.Helper()
	out := make([]Event, 0, n)
	for range n {
		out = append(out, recv(t, sub, time.Second))
	}
	return out
}

func TestSubscriptionCloseEndsCleanly(t *testing.T) {
	b := NewLocal(4)
	defer b.Close()
	topic := RoomTopic("lobby")
	sub, err := b.Subscribe(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	publishNoBlock(t, b, topic, testEvent("p", 0))
	sub.Close()
	sub.Close() // idempotent
	if got := drain(t, sub, time.Second); len(got) != 1 {
		t.Fatalf("read %d buffered events after Close, want 1", len(got))
	}
	if err := sub.Err(); err != nil {
		t.Fatalf("Err() after Close = %v, want nil", err)
	}
	if b.hub.Active(topic) {
		t.Fatal("topic still active after its only subscriber closed")
	}
	publishNoBlock(t, b, topic, testEvent("p", 1)) // nobody listens: no panic, no block
}

func TestLocalCloseEndsSubscriptions(t *testing.T) {
	b := NewLocal(4)
	subs := make([]*Subscription, 10)
	for i := range subs {
		var err error
		if subs[i], err = b.Subscribe(context.Background(), RoomTopic(strconv.Itoa(i%3))); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	for i, sub := range subs {
		drain(t, sub, time.Second)
		if !errors.Is(sub.Err(), ErrClosed) {
			t.Fatalf("subscription %d: Err() = %v, want ErrClosed", i, sub.Err())
		}
		sub.Close() // closing after the broker did is harmless, and keeps the reason
		if !errors.Is(sub.Err(), ErrClosed) {
			t.Fatalf("subscription %d: Err() after Close = %v, want ErrClosed", i, sub.Err())
		}
	}
	if _, err := b.Subscribe(context.Background(), RoomTopic("late")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Subscribe after Close: %v, want ErrClosed", err)
	}
	if len(b.hub.Topics()) != 0 {
		t.Fatalf("topics left after Close: %v", b.hub.Topics())
	}
}

func TestHubOnIdle(t *testing.T) {
	var mu sync.Mutex
	var idle []string
	h := NewHub(4, func(topic string) {
		mu.Lock()
		defer mu.Unlock()
		idle = append(idle, topic)
	})
	a, first, _ := h.Add("t")
	if !first {
		t.Fatal("first subscriber not reported first")
	}
	b, first, _ := h.Add("t")
	if first {
		t.Fatal("second subscriber reported first")
	}
	a.Close()
	if len(idle) != 0 {
		t.Fatalf("onIdle called with a subscriber left: %v", idle)
	}
	// The last subscriber leaving, for whatever reason, reports the topic
	// idle exactly once.
	for range 5 {
		h.Deliver("t", testEvent("p", 0))
	}
	b.Close()
	if len(idle) != 1 || idle[0] != "t" {
		t.Fatalf("onIdle calls = %v, want [t]", idle)
	}
	if !errors.Is(b.Err(), ErrSlowSubscriber) {
		t.Fatalf("Err() = %v, want ErrSlowSubscriber", b.Err())
	}
	c, _, _ := h.Add("u")
	h.End("u", ErrClosed)
	if !errors.Is(c.Err(), ErrClosed) || len(idle) != 2 || idle[1] != "u" {
		t.Fatalf("after End: Err() = %v, onIdle calls = %v", c.Err(), idle)
	}
}

func TestLocalBufferIsBounded(t *testing.T) {
	const bufferSize = 32
	b := NewLocal(bufferSize)
	defer b.Close()
	topic := RoomTopic("lobby")
	sub, err := b.Subscribe(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	if sub.queue != nil {
		t.Fatalf("a new subscription holds a queue of %d", cap(sub.queue))
	}
	for i := range 10 * bufferSize {
		publishNoBlock(t, b, topic, testEvent("p", i))
		if n := queued(sub); n > bufferSize {
			t.Fatalf("%d events queued with a buffer of %d", n, bufferSize)
		}
	}
	if !errors.Is(sub.Err(), ErrSlowSubscriber) || len(drain(t, sub, time.Second)) != bufferSize {
		t.Fatalf("after overflowing: Err() = %v, want the %d queued events and ErrSlowSubscriber", sub.Err(), bufferSize)
	}
	if def := NewLocal(0); def.hub.BufferSize() != DefaultBufferSize {
		t.Fatalf("default buffer size %d, want %d", def.hub.BufferSize(), DefaultBufferSize)
	}
}

func TestLocalLeavesNoGoroutines(t *testing.T) {
	settled := goroutineBaseline(t)
	b := NewLocal(4)
	topic := RoomTopic("lobby")
	for i := range 1000 {
		sub, err := b.Subscribe(context.Background(), RoomTopic(strconv.Itoa(i%10)))
		if err != nil {
			t.Fatal(err)
		}
		publishNoBlock(t, b, topic, testEvent("p", i))
		sub.Close()
	}
	// Some left open for Close to end.
	for i := range 10 {
		if _, err := b.Subscribe(context.Background(), RoomTopic(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	settled()
}

func TestLocalRespectsContext(t *testing.T) {
	b := NewLocal(4)
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Subscribe(ctx, "t"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Subscribe with a cancelled context: %v", err)
	}
	if err := b.Publish(ctx, "t", Event{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Publish with a cancelled context: %v", err)
	}
}

// A subscription read through Notify: the callback fires when an event
// lands in an empty queue and when the subscription ends, never for events
// that join a queue not yet read; Poll then empties it.
func TestSubscriptionNotify(t *testing.T) {
	h := NewHub(64, nil)
	defer h.Close()
	topic := RoomTopic("lobby")
	sub, _, err := h.Add(topic)
	if err != nil {
		t.Fatal(err)
	}
	h.Deliver(topic, testEvent("p", 0))
	var calls int
	sub.Notify(func() { calls++ }) // an event is queued already: called at once
	if calls != 1 {
		t.Fatalf("Notify with an event queued: %d calls, want 1", calls)
	}
	for i := 1; i < 40; i++ {
		h.Deliver(topic, testEvent("p", i))
	}
	if calls != 1 {
		t.Fatalf("events joining an unread queue: %d calls, want still 1", calls)
	}
	for i := range 40 {
		ev, ended := sub.Poll()
		if ev == nil || ended {
			t.Fatalf("poll %d: %v, ended %v", i, ev, ended)
		}
		if _, seq := seqOf(t, *ev); seq != i {
			t.Fatalf("poll %d returned event %d", i, seq)
		}
	}
	if ev, ended := sub.Poll(); ev != nil || ended {
		t.Fatalf("empty queue: poll returned %v, ended %v", ev, ended)
	}
	if sub.queue != nil {
		t.Fatalf("a drained queue still holds %d slots after a burst", cap(sub.queue))
	}
	h.Deliver(topic, testEvent("p", 40))
	if calls != 2 {
		t.Fatalf("an event into the drained queue: %d calls, want 2", calls)
	}
	sub.Close()
	if calls != 3 {
		t.Fatalf("the end: %d calls, want 3", calls)
	}
	// The event queued before the end is still read, then the end.
	if ev, ended := sub.Poll(); ev == nil || ended {
		t.Fatalf("after Close: poll returned %v, ended %v; want the queued event", ev, ended)
	}
	if ev, ended := sub.Poll(); ev != nil || !ended {
		t.Fatalf("after Close and the last event: poll returned %v, ended %v", ev, ended)
	}
	sub.Close()
	if calls != 3 {
		t.Fatalf("a second Close notified again: %d calls", calls)
	}
}
