package broker

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/killrchat/chatql/internal/testenv"
)

// redisMode is a way the broker meets Redis: one server or a Redis
// Cluster, broadcast or sharded pub/sub.
type redisMode struct {
	name    string
	url     string
	cluster bool
	sharded bool
}

func (m redisMode) options() []RedisOption {
	if m.cluster {
		return []RedisOption{WithCluster()}
	}
	return []RedisOption{WithSharded(m.sharded)}
}

// forEachRedisMode runs test in every mode: on the Redis of CHAT_REDIS_URL,
// and on the Redis Cluster of CHAT_REDIS_CLUSTER_URL when it is set.
func forEachRedisMode(t *testing.T, test func(t *testing.T, m redisMode)) {
	url := redisURL(t)
	modes := []redisMode{
		{"server/broadcast", url, false, false},
		{"server/sharded", url, false, true},
		{"cluster", "", true, true},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			if m.cluster {
				m.url = testenv.RedisCluster(t)
			}
			test(t, m)
		})
	}
}

// admin is a client of the mode's Redis, for looking at it.
func (m redisMode) admin(t *testing.T) redis.UniversalClient {
	t.Helper()
	c, err := NewRedisClient(m.url, m.cluster, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// channels lists the channels under prefix that Redis has subscribers of:
// on every node of a cluster (a broadcast channel is subscribed where its
// connection went; a shard channel on its slot's master).
func (m redisMode) channels(t *testing.T, admin redis.UniversalClient, prefix string) []string {
	t.Helper()
	ctx := context.Background()
	pattern := prefix + "*" // the test prefixes have no glob characters
	list := func(c *redis.Client) ([]string, error) {
		if m.sharded {
			return c.PubSubShardChannels(ctx, pattern).Result()
		}
		return c.PubSubChannels(ctx, pattern).Result()
	}
	var mu sync.Mutex
	var all []string
	var err error
	if cc, ok := admin.(*redis.ClusterClient); ok {
		err = cc.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error {
			chans, err := list(c)
			mu.Lock()
			all = append(all, chans...)
			mu.Unlock()
			return err
		})
	} else {
		all, err = list(admin.(*redis.Client))
	}
	if err != nil {
		t.Fatal(err)
	}
	// Leave out the pins of sharded links, which carry no topic.
	return slices.DeleteFunc(all, func(ch string) bool { return strings.Contains(ch, pinMark) })
}

func TestRedisModesDeliverAcrossInstances(t *testing.T) {
	forEachRedisMode(t, func(t *testing.T, m redisMode) {
		prefix := testPrefix(t)
		a := newTestRedis(t, m.url, prefix, m.options()...)
		b := newTestRedis(t, m.url, prefix, m.options()...)
		admin := m.admin(t)
		// Enough topics to use every shard group.
		const topics = 4 * ShardGroups
		var subs []*Subscription
		for i := range topics {
			subs = append(subs, subscribe(t, b, RoomTopic("room-"+strconv.Itoa(i))))
		}
		if got := len(m.channels(t, admin, prefix)); got != topics {
			t.Fatalf("Redis has %d channels of %d topics subscribed", got, topics)
		}
		for i, sub := range subs {
			publish(t, a, RoomTopic("room-"+strconv.Itoa(i)), testEvent("a", i))
			if _, seq := seqOf(t, recv(t, sub, 5*time.Second)); seq != i {
				t.Fatalf("topic %d got event %d", i, seq)
			}
			sub.Close()
		}
		eventually(t, 10*time.Second, func() string {
			return fmt.Sprintf("%d channels left on Redis, %d upstream states", len(m.channels(t, admin, prefix)), upstreamStates(b))
		}, func() bool { return len(m.channels(t, admin, prefix)) == 0 && upstreamStates(b) == 0 })
	})
}

func TestKeySlot(t *testing.T) {
	// As the Redis Cluster specification gives them.
	for key, want := range map[string]int{
		"123456789":            0x31C3,
		"foo":                  12182,
		"{user1000}.following": keySlot("user1000"),
		"foo{{bar}}zap":        keySlot("{bar"),
	} {
		if got := keySlot(key); got != want {
			t.Errorf("keySlot(%q) = %d, want %d", key, got, want)
		}
	}
	// An empty tag: the whole key is hashed, not the next tag.
	if keySlot("foo{}{bar}") == keySlot("bar") || keySlot("foo{}{bar}") == keySlot("") {
		t.Error("an empty hash tag must not make the next one count")
	}
	for i, tag := range shardTags {
		if slot := keySlot(tag); slot/(hashSlots/ShardGroups) != i {
			t.Errorf("group %d's tag %q is in slot %d, outside its sixteenth", i, tag, slot)
		}
	}
}

// shardGroup is FNV-1a, so instances of any version agree on a topic's
// group; and it costs no allocation on the publish path.
func TestShardGroupIsFNV1a(t *testing.T) {
	groups := map[int]bool{}
	for i := range 200 {
		topic := RoomTopic("room-" + strconv.Itoa(i))
		h := fnv.New32a()
		_, _ = h.Write([]byte(topic))
		if got, want := shardGroup(topic), int(h.Sum32()%ShardGroups); got != want {
			t.Fatalf("shardGroup(%q) = %d, want %d", topic, got, want)
		}
		groups[shardGroup(topic)] = true
	}
	if len(groups) != ShardGroups {
		t.Errorf("200 topics fell in %d of %d groups", len(groups), ShardGroups)
	}
	if n := testing.AllocsPerRun(100, func() { shardGroup("room:general") }); n != 0 {
		t.Errorf("shardGroup allocates %v times", n)
	}
}

// On a Redis Cluster, each group's channels are subscribed on the master
// that serves the group's slot, and the groups use every master.
func TestRedisClusterShardChannelsStayOnTheirMaster(t *testing.T) {
	url := testenv.RedisCluster(t)
	m := redisMode{url: url, cluster: true, sharded: true}
	prefix := testPrefix(t)
	r := newTestRedis(t, url, prefix, m.options()...)
	admin := m.admin(t).(*redis.ClusterClient)
	ctx := context.Background()
	for i := range 4 * ShardGroups {
		subscribe(t, r, RoomTopic("room-"+strconv.Itoa(i)))
	}
	var mu sync.Mutex
	perMaster := map[string]int{}
	err := admin.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		chans, err := c.PubSubShardChannels(ctx, prefix+"*").Result()
		if err != nil {
			return err
		}
		chans = slices.DeleteFunc(chans, func(ch string) bool { return strings.Contains(ch, pinMark) }) // pins
		for _, ch := range chans {
			slot, err := c.ClusterKeySlot(ctx, ch).Result()
			if err != nil {
				return err
			}
			if int(slot) != keySlot(ch) {
				return fmt.Errorf("Redis puts %s in slot %d, the broker in %d", ch, slot, keySlot(ch))
			}
			owner, err := slotMaster(ctx, c, int(slot))
			if err != nil {
				return err
			}
			if owner != c.Options().Addr {
				return fmt.Errorf("%s is subscribed on %s, but slot %d is served by %s", ch, c.Options().Addr, slot, owner)
			}
		}
		mu.Lock()
		perMaster[c.Options().Addr] = len(chans)
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for addr, n := range perMaster {
		if n == 0 {
			t.Errorf("no channel on master %s: %v", addr, perMaster)
		}
		total += n
	}
	if total != 4*ShardGroups {
		t.Errorf("%d channels subscribed over the masters, want %d: %v", total, 4*ShardGroups, perMaster)
	}
}

// clusterScript runs scripts/redis-cluster.sh.
func clusterScript(t *testing.T, args ...string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "scripts", "redis-cluster.sh")
	out, err := exec.Command(script, args...).Output()
	if err != nil {
		t.Fatalf("redis-cluster.sh %s: %v %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// A master of the cluster fails over twice while events flow, once on
// command (its replica takes over, and the old master tells its shard
// subscribers their slots moved) and once killed with SIGKILL (its replica
// takes over once the cluster declares it failed), then comes back as a
// replica. Every subscriber of every topic gets each event in order, at
// most once, and for each event it missed a Resync after the event was
// published, so that it catches up from the store's log, where the event
// was before it was published. (The Resync may come before events
// published earlier than the missed one: they waited in the publisher's
// outbox while it was dropping the later ones.)
func TestRedisClusterFailover(t *testing.T) {
	m := redisMode{url: testenv.RedisCluster(t), cluster: true, sharded: true}
	const topics = 2 * ShardGroups
	prefix := testPrefix(t)
	publisher := newTestRedis(t, m.url, prefix, m.options()...)
	receivers := []*Redis{newTestRedis(t, m.url, prefix, m.options()...), newTestRedis(t, m.url, prefix, m.options()...)}
	type stream struct {
		receiver *Redis
		topic    string
		sub      *Subscription
		mu       sync.Mutex
		events   []Event
		at       []time.Time // when each event arrived
		cuts     int         // times it was cut off as a slow subscriber
		ended    error       // why the subscription ended
	}
	var streams []*stream
	for _, r := range receivers {
		for i := range topics {
			topic := RoomTopic("room-" + strconv.Itoa(i))
			streams = append(streams, &stream{receiver: r, topic: topic, sub: subscribe(t, r, topic)})
		}
	}
	start := time.Now()
	var readers sync.WaitGroup
	for _, s := range streams {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				ev, ok := s.sub.Next(context.Background())
				if ok {
					s.mu.Lock()
					s.events = append(s.events, *ev)
					s.at = append(s.at, time.Now())
					s.mu.Unlock()
					continue
				}
				err := s.sub.Err()
				s.mu.Lock()
				s.ended = err
				s.mu.Unlock()
				if !errors.Is(err, ErrSlowSubscriber) {
					return
				}
				// Cut off behind a burst (the catch-up after an outage,
				// on a loaded machine): as a client would, subscribe again
				// and catch up from the store, which counts as a Resync.
				sub, err := s.receiver.Subscribe(context.Background(), s.topic)
				if err != nil {
					t.Errorf("subscribing again after a cut-off: %v", err)
					return
				}
				s.mu.Lock()
				s.sub, s.ended = sub, nil
				s.cuts++
				s.events = append(s.events, resyncEvent(s.topic))
				s.at = append(s.at, time.Now())
				s.mu.Unlock()
			}
		}()
	}

	// The publisher: an event per topic every 10 ms, numbered per topic.
	stop := make(chan struct{})
	published := make([]int, topics)
	publishedAt := make([][]time.Time, topics)
	var publishing sync.WaitGroup
	publishing.Add(1)
	go func() {
		defer publishing.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			for i := range topics {
				publishedAt[i] = append(publishedAt[i], time.Now())
				if err := publisher.Publish(context.Background(), RoomTopic("room-"+strconv.Itoa(i)), testEvent("p", published[i])); err != nil {
					t.Error(err)
					return
				}
				published[i]++
			}
		}
	}()
	pause := func() { time.Sleep(time.Second) }

	pause()
	masters := strings.Fields(clusterScript(t, "masters"))
	if len(masters) < 2 {
		t.Fatalf("masters: %v", masters)
	}
	replica := clusterScript(t, "replica-of", masters[0])
	t.Logf("CLUSTER FAILOVER on %s, the replica of %s", replica, masters[0])
	if err := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + replica}).Do(context.Background(), "cluster", "failover").Err(); err != nil {
		t.Fatalf("cluster failover: %v", err)
	}
	clusterScript(t, "wait-ok")
	pause()
	t.Logf("SIGKILL to master %s", masters[1])
	clusterScript(t, "kill-master", masters[1])
	// The cluster declares it failed after its node timeout (2 s), and its
	// replica takes over.
	eventually(t, 30*time.Second, func() string { return "no replica took over from " + masters[1] }, func() bool {
		return !slices.Contains(strings.Fields(clusterScript(t, "masters")), masters[1]) &&
			len(strings.Fields(clusterScript(t, "masters"))) == 3
	})
	clusterScript(t, "wait-ok")
	pause()
	clusterScript(t, "restart", masters[1])
	clusterScript(t, "wait-ok")
	pause()
	close(stop)
	publishing.Wait()

	// Until every stream has the last event of its topic, or a Resync
	// that came after it was published.
	last := func(s *stream, topic int) bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		final := published[topic] - 1
		for j := len(s.events) - 1; j >= 0; j-- {
			ev := s.events[j]
			if ev.Kind == Resync {
				if s.at[j].After(publishedAt[topic][final]) {
					return true
				}
				continue
			}
			if _, seq := seqOf(t, ev); seq == final {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(20 * time.Second)
	for i, s := range streams {
		for !last(s, i%topics) {
			if time.Now().After(deadline) {
				s.mu.Lock()
				tail, ended := s.events[max(0, len(s.events)-3):], s.ended
				s.mu.Unlock()
				t.Fatalf("stream %d (topic %d): the last events did not arrive: %d published, %d received, the last %v, ended: %v; its link: %s",
					i, i%topics, published[i%topics], len(s.events), tail, ended, s.receiver.linkState(s.topic))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	for _, r := range receivers {
		_ = r.Close() // ends the readers
	}
	readers.Wait()
	cuts := 0
	for _, s := range streams {
		cuts += s.cuts
	}

	missed, resyncs := 0, 0
	for i, s := range streams {
		topic := i % topics
		// Each event after the previous one, and each one missed
		// followed by a Resync: the last Resync came after it was
		// published.
		var lastResync time.Time
		for j, ev := range s.events {
			if ev.Kind == Resync {
				lastResync = s.at[j]
				resyncs++
			}
		}
		covered := func(seq int) {
			t.Helper()
			if !lastResync.After(publishedAt[topic][seq]) {
				var seen []string
				for j, ev := range s.events {
					what := "resync"
					if ev.Kind != Resync {
						_, n := seqOf(t, ev)
						if n < seq-3 || n > seq+3 {
							continue
						}
						what = strconv.Itoa(n)
					}
					seen = append(seen, fmt.Sprintf("%s@%s", what, s.at[j].Sub(start).Round(time.Millisecond)))
				}
				t.Fatalf("stream %d (topic %d): event %d (published at %s) was missed without a Resync after it; around it: %v",
					i, topic, seq, publishedAt[topic][seq].Sub(start).Round(time.Millisecond), seen)
			}
			missed++
		}
		next := 0
		for _, ev := range s.events {
			if ev.Kind == Resync {
				continue
			}
			_, seq := seqOf(t, ev)
			if seq < next {
				continue // a repeat, which the stream recognises by id
			}
			for ; next < seq; next++ {
				covered(next)
			}
			next = seq + 1
		}
		for ; next < published[topic]; next++ {
			covered(next)
		}
	}
	t.Logf("%d events per topic, %d streams; %d events missed and covered by %d Resyncs (%d of them cut-offs as slow subscribers); links found deaf by their probes: %d and %d",
		published[0], len(streams), missed, resyncs, cuts, receivers[0].Stats().ProbesLost, receivers[1].Stats().ProbesLost)
	if resyncs == 0 {
		t.Error("no Resync at all: the failovers did not reach the broker")
	}

	if stats := receivers[0].Stats(); stats.Renewals == 0 {
		t.Errorf("no sharded connection was renewed: %+v", stats)
	}
}

// linkState describes the link that carries topic, and the topic's
// channel on it, for a failing test to show.
func (r *Redis) linkState(topic string) string {
	ch, l := r.channel(topic), r.linkOf(topic)
	l.mu.Lock()
	defer l.mu.Unlock()
	node := "none"
	if l.node != nil {
		node = l.node.Options().Addr
	}
	state := "absent"
	if u := l.channels[ch]; u != nil {
		state = fmt.Sprintf("%+v (since %s ago)", *u, time.Since(u.since).Round(time.Millisecond))
	}
	serving := "?"
	if cc, ok := r.client.(*redis.ClusterClient); ok {
		serving, _ = slotMaster(context.Background(), cc, keySlot(ch))
	}
	return fmt.Sprintf("slot served by %s; node %s settled=%v down=%v lastErr=%v renewals=%d; channel %s: %s",
		serving, node, l.settled, l.down.Load(), l.lastErr, r.renewals.Load(), ch, state)
}
