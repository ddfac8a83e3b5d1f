package presence

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/internal/testenv"
	"github.com/killrchat/chatql/store"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// changes collects what a Tracker tells.
type changes struct {
	mu   sync.Mutex
	list []string // "+alice", "-alice"
	more chan struct{}
}

func newChanges() *changes { return &changes{more: make(chan struct{}, 1000)} }

func (c *changes) tell(_ context.Context, u store.UserRef, online bool) {
	sign := "-"
	if online {
		sign = "+"
	}
	c.mu.Lock()
	c.list = append(c.list, sign+u.Login)
	c.mu.Unlock()
	c.more <- struct{}{}
}

func (c *changes) told() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.list)
}

// wait waits until n changes were told and returns them.
func (c *changes) wait(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		if got := c.told(); len(got) >= n {
			return got
		}
		select {
		case <-c.more:
		case <-deadline:
			t.Fatalf("told %v, waited for %d changes", c.told(), n)
		}
	}
}

func online(t *testing.T, r Registry, logins ...string) []bool {
	t.Helper()
	flags, err := r.Online(context.Background(), logins)
	if err != nil {
		t.Fatal(err)
	}
	return flags
}

// A user is online from their first connection to their last, plus the
// grace; coming back within the grace tells nothing.
func TestTrackerComesAndGoes(t *testing.T) {
	c := newChanges()
	reg := &Local{}
	tr := &Tracker{Registry: reg, Tell: c.tell, Grace: 20 * time.Millisecond, Log: quiet}
	alice := store.UserRef{Login: "alice"}

	tab1, close1 := context.WithCancel(context.Background())
	tab2, close2 := context.WithCancel(context.Background())
	connectUntil(tr, tab1, alice)
	connectUntil(tr, tab2, alice)
	if got := c.wait(t, 1); !slices.Equal(got, []string{"+alice"}) {
		t.Fatalf("told %v, want alice online once", got)
	}
	close1()
	// Back within the grace (tab2 never left): still one change.
	close2()
	tab3, close3 := context.WithCancel(context.Background())
	connectUntil(tr, tab3, alice)
	if !online(t, reg, "alice")[0] {
		t.Fatal("alice offline while connected")
	}
	close3()
	left := time.Now()
	if got := c.wait(t, 2); !slices.Equal(got, []string{"+alice", "-alice"}) {
		t.Fatalf("told %v, want alice online, then offline", got)
	}
	if gone := time.Since(left); gone < 20*time.Millisecond {
		t.Fatalf("told offline %v after the last connection closed, before the grace", gone)
	}
	if online(t, reg, "alice")[0] || len(tr.Local()) != 0 {
		t.Fatal("alice still online after she left")
	}
}

// Users connecting and leaving at once, racing their graces and settles:
// each ends offline, told as many times online as offline, alternately.
func TestTrackerConcurrent(t *testing.T) {
	c := newChanges()
	c.more = make(chan struct{}, 100000)
	reg := &Local{}
	tr := &Tracker{Registry: reg, Tell: c.tell, Grace: time.Millisecond, Log: quiet}
	var wg sync.WaitGroup
	for i := range 10 {
		u := store.UserRef{Login: "user" + string(rune('a'+i))}
		for range 4 {
			wg.Go(func() {
				for range 50 {
					ctx, cancel := context.WithCancel(context.Background())
					connectUntil(tr, ctx, u)
					cancel()
				}
			})
		}
	}
	wg.Wait()
	// Every settle ends by forgetting its user, and every teller by leaving:
	// wait for that.
	deadline := time.Now().Add(20 * time.Second)
	for tracked(tr) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("still tracked after every connection closed: %v", tr.Local())
		}
		time.Sleep(time.Millisecond) // polls the tracker
	}
	state := map[string]int{}
	for _, ch := range c.told() {
		if ch[0] == '+' {
			state[ch[1:]]++
		} else {
			state[ch[1:]]--
		}
		if n := state[ch[1:]]; n < 0 || n > 1 {
			t.Fatalf("%s told %s out of turn: %v", ch[1:], ch, c.told())
		}
	}
	for login, n := range state {
		if n != 0 {
			t.Errorf("%s told online and not offline again", login)
		}
	}
	if flags := online(t, reg, "usera", "userb", "userj"); slices.Contains(flags, true) {
		t.Fatalf("online in the registry after every connection closed: %v", flags)
	}
}

// tracked is how many users t keeps: those online through it, those whose
// departure is still being recorded, and the tellers still telling.
func tracked(t *Tracker) int {
	t.mu.Lock()
	users := len(t.users)
	t.mu.Unlock()
	t.queue.mu.Lock()
	defer t.queue.mu.Unlock()
	return users + t.queue.running
}

// redisTarget is a Redis the registry tests run on: CHAT_REDIS_URL's, and
// the Redis Cluster of CHAT_REDIS_CLUSTER_URL when it is set (every key of
// the registry lies in one hash slot).
type redisTarget struct {
	url     string
	cluster bool
}

// onEachRedis runs test on each Redis target.
func onEachRedis(t *testing.T, test func(t *testing.T, on redisTarget)) {
	t.Run("server", func(t *testing.T) {
		test(t, redisTarget{url: testenv.Service(t, "CHAT_REDIS_URL", "the Redis presence tests")})
	})
	t.Run("cluster", func(t *testing.T) {
		test(t, redisTarget{url: testenv.RedisCluster(t), cluster: true})
	})
}

// registry is a registry on the target, under prefix, with its own client
// as the server makes it.
func (on redisTarget) registry(t *testing.T, prefix string, ttl time.Duration) *Redis {
	t.Helper()
	rdb, err := broker.NewRedisClient(on.url, on.cluster, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	return NewRedis(rdb, prefix, ttl, slog.New(slog.NewTextHandler(os.Stderr, nil)))
}

func testPrefix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "presencetest:" + hex.EncodeToString(b[:]) + ":"
}

// Two instances on one Redis: a user is online while either has them;
// each change is reported once, by the instance that made it.
func TestRedisRegistrySharedByInstances(t *testing.T) {
	onEachRedis(t, testRedisRegistrySharedByInstances)
}

func testRedisRegistrySharedByInstances(t *testing.T, on redisTarget) {
	prefix := testPrefix()
	a, b := on.registry(t, prefix, time.Minute), on.registry(t, prefix, time.Minute)
	ctx := context.Background()
	step := func(what string, got bool, err error, want bool) {
		t.Helper()
		if err != nil || got != want {
			t.Fatalf("%s = %v, %v; want %v", what, got, err, want)
		}
	}
	got, err := a.Arrive(ctx, "alice")
	step("A.Arrive(alice)", got, err, true)
	got, err = b.Arrive(ctx, "alice")
	step("B.Arrive(alice), online through A", got, err, false)
	if flags := online(t, b, "alice", "bob"); !flags[0] || flags[1] {
		t.Fatalf("Online(alice, bob) = %v, want [true false]", flags)
	}
	got, err = a.Depart(ctx, "alice")
	step("A.Depart(alice), online through B", got, err, false)
	got, err = b.Depart(ctx, "alice")
	step("B.Depart(alice)", got, err, true)
	if online(t, a, "alice")[0] {
		t.Fatal("alice online after both instances let her go")
	}
}

// An instance that dies without a word (kill -9) stops heartbeating; its
// users go offline everywhere no sooner than the TTL after its last
// heartbeat and no later than the TTL plus a heartbeat of a live instance
// (and a scheduling margin), told once, by one instance.
func TestRedisRegistrySweepsDeadInstance(t *testing.T) {
	onEachRedis(t, testRedisRegistrySweepsDeadInstance)
}

func testRedisRegistrySweepsDeadInstance(t *testing.T, on redisTarget) {
	const ttl = time.Second
	prefix := testPrefix()
	dead := on.registry(t, prefix, ttl)
	ctx := context.Background()
	if _, err := dead.Arrive(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := dead.Arrive(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	lastBeat := time.Now() // Arrive beats; the dead instance never beats again
	// Bob is also online through a live instance: he stays.
	live1, live2 := on.registry(t, prefix, ttl), on.registry(t, prefix, ttl)
	if _, err := live1.Arrive(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	run, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	c := newChanges()
	for _, r := range []*Redis{live1, live2} {
		wg.Go(func() {
			r.Run(run, func() []string { return nil }, func(login string) { c.tell(ctx, store.UserRef{Login: login}, false) })
		})
	}
	got := c.wait(t, 1)
	took := time.Since(lastBeat)
	if !slices.Equal(got, []string{"-alice"}) {
		t.Fatalf("told %v, want alice offline", got)
	}
	if took < ttl {
		t.Fatalf("alice told offline %v after the dead instance's last heartbeat, before the TTL %v", took, ttl)
	}
	if bound := ttl + ttl/3 + 2*time.Second; took > bound {
		t.Errorf("alice told offline %v after the dead instance's last heartbeat, later than the bound %v", took, bound)
	}
	if flags := online(t, live1, "alice", "bob"); flags[0] || !flags[1] {
		t.Fatalf("Online(alice, bob) = %v, want [false true]", flags)
	}
	stop()
	wg.Wait()
	if got := c.told(); len(got) != 1 {
		t.Fatalf("told %v, want alice's departure once", got)
	}
}

// Redis loses the records (restarted without persistence): the next
// heartbeat writes this instance's users again.
func TestRedisRegistryRewritesLostRecords(t *testing.T) {
	onEachRedis(t, testRedisRegistryRewritesLostRecords)
}

func testRedisRegistryRewritesLostRecords(t *testing.T, on redisTarget) {
	prefix := testPrefix()
	r := on.registry(t, prefix, 300*time.Millisecond)
	ctx := context.Background()
	if _, err := r.Arrive(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if err := r.rdb.Del(ctx, r.instancesKey(), r.userKey("alice"), r.instanceKey(r.id)).Err(); err != nil {
		t.Fatal(err)
	}
	if online(t, r, "alice")[0] {
		t.Fatal("alice online with her records gone")
	}
	run, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(run, func() []string { return []string{"alice"} }, func(string) {})
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !online(t, r, "alice")[0] {
		if time.Now().After(deadline) {
			t.Fatal("the heartbeat did not write alice's record again")
		}
		time.Sleep(10 * time.Millisecond) // polls Redis, which has no change notice
	}
	stop()
	<-done
	if online(t, r, "alice")[0] {
		t.Fatal("alice online after her only instance left")
	}
}

// Changes queued while the tellers are busy are told in order, the latest
// per user, and only if it differs from what was told last: a user who
// came and went while queued is not told again.
func TestTellingCoalesces(t *testing.T) {
	c := newChanges()
	release := make(chan struct{})
	tr := &Tracker{Registry: &Local{}, Tellers: 1, Log: quiet, Tell: func(ctx context.Context, u store.UserRef, online bool) {
		if u.Login == "alice" && online {
			<-release // the one teller is busy telling alice's arrival
		}
		c.tell(ctx, u, online)
	}}
	alice, bob, carol := store.UserRef{Login: "alice"}, store.UserRef{Login: "bob"}, store.UserRef{Login: "carol"}
	tr.queueTell(change{user: alice, online: true})
	tr.queueTell(change{user: bob, online: true})
	tr.queueTell(change{user: alice})
	tr.queueTell(change{user: alice, online: true}) // alice is back before her departure was told
	tr.queueTell(change{user: carol, online: true})
	tr.queueTell(change{user: carol}) // carol came and went while queued
	close(release)
	deadline := time.Now().Add(20 * time.Second)
	for tracked(tr) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the tellers did not finish")
		}
		time.Sleep(time.Millisecond) // polls the tellers
	}
	if got := c.told(); !slices.Equal(got, []string{"+alice", "+bob"}) {
		t.Fatalf("told %v, want alice and bob online, in that order, once each", got)
	}
}

// A dead instance's user, swept by this one, is told offline though this
// instance never told them online (the dead one did).
func TestTrackerTellsSweptUsers(t *testing.T) {
	c := newChanges()
	tr := &Tracker{Registry: sweeping{"dave"}, Tell: c.tell, Log: quiet}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go tr.Run(ctx, func(_ context.Context, login string) store.UserRef { return store.UserRef{Login: login} })
	if got := c.wait(t, 1); !slices.Equal(got, []string{"-dave"}) {
		t.Fatalf("told %v, want dave offline", got)
	}
}

// sweeping is a registry whose Run finds its users' instance dead.
type sweeping []string

func (sweeping) Arrive(context.Context, string) (bool, error)     { return true, nil }
func (sweeping) Depart(context.Context, string) (bool, error)     { return true, nil }
func (sweeping) Online(context.Context, []string) ([]bool, error) { return nil, nil }
func (s sweeping) Run(ctx context.Context, _ func() []string, gone func(string)) {
	for _, login := range s {
		gone(login)
	}
	<-ctx.Done()
}

// Close lets every user go at once, without the grace, and returns once
// their departures are recorded and told; later connections are ignored.
func TestTrackerClose(t *testing.T) {
	c := newChanges()
	reg := &Local{}
	tr := &Tracker{Registry: reg, Tell: c.tell, Grace: time.Hour, Log: quiet}
	ctx := context.Background()
	connectUntil(tr, ctx, store.UserRef{Login: "alice"})
	connectUntil(tr, ctx, store.UserRef{Login: "bob"})
	c.wait(t, 2)
	closing, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := tr.Close(closing); err != nil {
		t.Fatal(err)
	}
	got := c.told()
	slices.Sort(got)
	if !slices.Equal(got, []string{"+alice", "+bob", "-alice", "-bob"}) {
		t.Fatalf("told %v, want both online, then both offline at Close", got)
	}
	if flags := online(t, reg, "alice", "bob"); flags[0] || flags[1] {
		t.Fatalf("online after Close: %v", flags)
	}
	connectUntil(tr, ctx, store.UserRef{Login: "carol"})
	if len(tr.Local()) != 0 {
		t.Fatal("a connection after Close was counted")
	}
}

// A dead instance with more users than one drain takes is swept whole, each
// user told once, and nothing of it is left in Redis.
func TestRedisRegistrySweepsBigDeadInstance(t *testing.T) {
	onEachRedis(t, testRedisRegistrySweepsBigDeadInstance)
}

func testRedisRegistrySweepsBigDeadInstance(t *testing.T, on redisTarget) {
	const ttl = time.Second
	prefix := testPrefix()
	dead := on.registry(t, prefix, ttl)
	ctx := context.Background()
	users := 2*drainBatch + 7
	for i := range users {
		if _, err := dead.Arrive(ctx, fmt.Sprintf("user%04d", i)); err != nil {
			t.Fatal(err)
		}
	}
	live := on.registry(t, prefix, ttl)
	told := map[string]int{}
	deadline := time.Now().Add(20 * time.Second)
	for len(told) < users {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d users told offline", len(told), users)
		}
		if err := live.sweep(ctx, func(login string) { told[login]++ }); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond) // polls until the TTL has passed
	}
	for login, n := range told {
		if n != 1 {
			t.Fatalf("%s told %d times", login, n)
		}
	}
	left, err := live.rdb.Exists(ctx, dead.instanceKey(dead.id), live.tag+":draining").Result()
	if err != nil || left != 0 {
		t.Fatalf("the dead instance's records are still there: %d keys, %v", left, err)
	}
	if flags := online(t, live, "user0000", fmt.Sprintf("user%04d", users-1)); flags[0] || flags[1] {
		t.Fatalf("swept users online: %v", flags)
	}
}

// A connection that joined counts until it leaves: its user goes offline
// once the last of their connections has left (here without a grace).
func TestTrackerJoinLeave(t *testing.T) {
	c := newChanges()
	reg := &Local{}
	tr := &Tracker{Registry: reg, Tell: c.tell, Grace: time.Nanosecond, Log: quiet}
	defer func() { _ = tr.Close(context.Background()) }()
	first := tr.Join(store.UserRef{Login: "alice"})
	second := tr.Join(store.UserRef{Login: "alice"})
	c.wait(t, 1)
	first()
	if !slices.Equal(tr.Local(), []string{"alice"}) {
		t.Fatalf("online here after one of two connections left: %v, want alice", tr.Local())
	}
	second()
	c.wait(t, 2)
	if got := c.told(); !slices.Equal(got, []string{"+alice", "-alice"}) {
		t.Fatalf("told %v, want alice online, then offline", got)
	}
	if len(tr.Local()) != 0 {
		t.Fatalf("online here after both left: %v", tr.Local())
	}
}

// connectUntil records a connection of u until ctx ends, as the server
// does for an event stream.
func connectUntil(tr *Tracker, ctx context.Context, u store.UserRef) {
	if leave := tr.Join(u); leave != nil {
		context.AfterFunc(ctx, leave)
	}
}
