package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/internal/testenv"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/server"
	"github.com/killrchat/chatql/store"
)

// redisCluster runs scripts/redis-cluster.sh.
func redisCluster(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(repoRoot, "scripts/redis-cluster.sh"), args...).Output()
	if err != nil {
		t.Fatalf("redis-cluster.sh %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

// Two instances on a Redis Cluster in sharded mode, with rooms over every
// master, while one master fails over on command and another is killed
// with SIGKILL and comes back: every subscriber, on either instance, gets
// every acknowledged post of its room exactly once and in order, the lost
// broadcasts made good from the store's log; rate limits and presence
// keep working on the cluster.
func TestRedisClusterFailoverEndToEnd(t *testing.T) {
	url := testenv.RedisCluster(t)
	cl := startClusterWith(t, 2, url, func(_ int, c *server.Config) {
		c.RedisCluster, c.RedisPubSub = true, "sharded"
		c.RateLimits[ratelimit.DirectMessage] = ratelimit.Limit{Rate: 3, Period: time.Hour, Burst: 3}
	})
	const rooms = 12
	poster := cl.instances[0].user(t, "poster")
	readers := []*chatclient.Client{cl.instances[0].user(t, "reader0"), cl.on(1, cl.instances[0].user(t, "reader1"))}
	type stream struct {
		room string
		sub  *chatclient.Subscription
		mu   sync.Mutex
		got  []string
		err  error
	}
	var streams []*stream
	for i := range rooms {
		room := fmt.Sprintf("shard-%02d", i)
		mustDo(t, poster, createRoom, map[string]any{"n": room}, nil)
		for k, r := range readers {
			mustDo(t, r, joinRoom, map[string]any{"r": room}, nil)
			streams = append(streams, &stream{room: room, sub: cl.instances[k].subscribe(t, r, chatclient.GraphQLTransportWS, room, nil)})
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var reading sync.WaitGroup
	for _, s := range streams {
		reading.Go(func() {
			for {
				resp, err := s.sub.Next(ctx)
				if err == nil && len(resp.Errors) > 0 {
					err = fmt.Errorf("%v", resp.Errors)
				}
				var out struct{ RoomEvents roomEvent }
				if err == nil {
					err = json.Unmarshal(resp.Data, &out)
				}
				s.mu.Lock()
				if err != nil {
					if ctx.Err() == nil {
						s.err = err
					}
					s.mu.Unlock()
					return
				}
				if out.RoomEvents.Kind == "MESSAGE_POSTED" {
					s.got = append(s.got, out.RoomEvents.Message.Content)
				}
				s.mu.Unlock()
			}
		})
	}

	// The poster posts to each room in turn through either instance, one
	// post at a time, until stopped.
	acked := map[string][]string{}
	stop := make(chan struct{})
	var posting sync.WaitGroup
	posting.Go(func() {
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			room := fmt.Sprintf("shard-%02d", n%rooms)
			content := fmt.Sprintf("m%05d", n)
			if err := cl.on(n%2, poster).Do(ctx, postMessage, map[string]any{"r": room, "c": content}, nil); err != nil {
				t.Errorf("post %d: %v", n, err)
				return
			}
			acked[room] = append(acked[room], content)
			time.Sleep(5 * time.Millisecond)
		}
	})
	pause := func() { time.Sleep(time.Second) }

	pause()
	masters := strings.Fields(redisCluster(t, "masters"))
	if len(masters) != 3 {
		t.Fatalf("masters: %v", masters)
	}
	replica := redisCluster(t, "replica-of", masters[0])
	t.Logf("CLUSTER FAILOVER on %s, the replica of %s", replica, masters[0])
	if err := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + replica}).Do(ctx, "cluster", "failover").Err(); err != nil {
		t.Fatalf("cluster failover: %v", err)
	}
	redisCluster(t, "wait-ok")
	pause()
	t.Logf("SIGKILL to master %s", masters[1])
	redisCluster(t, "kill-master", masters[1])
	eventually(t, 30*time.Second, "a replica takes over from "+masters[1], func() (bool, any) {
		now := strings.Fields(redisCluster(t, "masters"))
		return len(now) == 3 && !slices.Contains(now, masters[1]), now
	})
	redisCluster(t, "wait-ok")
	pause()
	redisCluster(t, "restart", masters[1])
	redisCluster(t, "wait-ok")
	pause()
	close(stop)
	posting.Wait()

	total := 0
	for _, posts := range acked {
		total += len(posts)
	}
	// Until every stream has as many posts as its room got.
	caughtUp := func() (bool, any) {
		for _, s := range streams {
			s.mu.Lock()
			n, err := len(s.got), s.err
			s.mu.Unlock()
			if err != nil {
				t.Fatalf("room %s: %v", s.room, err)
			}
			if n < len(acked[s.room]) {
				return false, fmt.Sprintf("room %s: %d of %d", s.room, n, len(acked[s.room]))
			}
		}
		return true, nil
	}
	eventually(t, 30*time.Second, "every stream has every post of its room", caughtUp)
	// Anything late would be a duplicate: the next post shows it.
	mustDo(t, poster, postMessage, map[string]any{"r": "shard-00", "c": "last"}, nil)
	acked["shard-00"] = append(acked["shard-00"], "last")
	eventually(t, 10*time.Second, "the last post arrives", caughtUp)
	cancel()
	reading.Wait()
	for _, s := range streams {
		if !slices.Equal(s.got, acked[s.room]) {
			t.Errorf("room %s: got %d posts %v\nwant %d %v", s.room, len(s.got), s.got, len(acked[s.room]), acked[s.room])
		}
	}
	t.Logf("%d posts over %d rooms, each delivered once and in order to %d streams on two instances", total, rooms, len(streams))
	for i, inst := range cl.instances {
		if n := scrape(t, inst).value("chatql_broker_pubsub_renewals_total"); n == 0 {
			t.Errorf("instance %d: chatql_broker_pubsub_renewals_total is 0 after two failovers", i)
		}
	}

	// Presence: reader1, connected to instance 1, is online as instance 0
	// sees it, through the cluster.
	var seen struct{ Presence []struct{ Online bool } }
	mustDo(t, readers[0], `query($l: [String!]!) { presence(logins: $l) { online } }`, map[string]any{"l": []string{"reader1"}}, &seen)
	if len(seen.Presence) != 1 || !seen.Presence[0].Online {
		t.Errorf("reader1 is not online as instance 0 sees it: %+v", seen)
	}
	// Rate limits: three direct messages an hour, counted on the cluster
	// whichever instance takes them.
	dm := `mutation($c: String!) { sendDirectMessage(to: "reader0", content: $c) { id } }`
	for i := range 3 {
		mustDo(t, cl.on(i%2, poster), dm, map[string]any{"c": fmt.Sprint(i)}, nil)
	}
	wantRateLimited(t, cl.on(1, poster), dm, map[string]any{"c": "over"})
}

// Three instances with skewed clocks on a Redis Cluster, as in
// TestResumeIsExactAcrossInstances, while the room's hash slot moves from
// its master to another and on to the third under load (resharding: the
// room's sequence moves with its slot, and the subscriptions follow): every
// reader still gets every post exactly once, in one order.
func TestRedisClusterResumeWhileSlotMigrates(t *testing.T) {
	url := testenv.RedisCluster(t)
	cl := startClusterWith(t, len(skewedClocks), url, func(i int, c *server.Config) {
		c.RedisCluster, c.RedisPubSub = true, "sharded"
		c.IDClock = store.NewIDClock(skewedClocks[i])
	})
	opts, err := redis.ParseClusterURL(url)
	if err != nil {
		t.Fatal(err)
	}
	admin := redis.NewClusterClient(opts)
	t.Cleanup(func() { _ = admin.Close() })
	const room = "resharded"
	resumeAcrossInstances(t, cl, room, func() {
		key, slot := roomSlot(t, admin, cl.prefix, room)
		for _, after := range []int{60, 150} { // of the 240 posts
			waitFor(t, func() bool {
				n, err := admin.Get(testContext(t), key).Int()
				return err == nil && n >= after
			})
			migrateSlot(t, admin, slot)
		}
	})
}

// roomSlot waits for the room's sequence to be in Redis (its first event)
// and returns its key and hash slot, which its channel shares.
func roomSlot(t *testing.T, admin *redis.ClusterClient, prefix, room string) (string, int) {
	t.Helper()
	ctx := testContext(t)
	var key string
	waitFor(t, func() bool {
		_ = admin.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			it := c.Scan(ctx, 0, prefix+"*seq:room:"+room, 1000).Iterator()
			for it.Next(ctx) {
				key = it.Val()
			}
			return nil
		})
		return key != ""
	})
	slot, err := admin.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	return key, int(slot)
}

// migrateSlot moves slot from its master to another, as redis-cli
// --cluster reshard does: the target imports, the source migrates, its keys
// move, then every master learns the slot's new owner.
func migrateSlot(t *testing.T, admin *redis.ClusterClient, slot int) {
	t.Helper()
	ctx := testContext(t)
	slots, err := admin.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	var source redis.ClusterNode
	var masters []redis.ClusterNode
	for _, s := range slots {
		if !slices.ContainsFunc(masters, func(n redis.ClusterNode) bool { return n.ID == s.Nodes[0].ID }) {
			masters = append(masters, s.Nodes[0])
		}
		if s.Start <= slot && slot <= s.End {
			source = s.Nodes[0]
		}
	}
	// The next master by address: moved again, the slot goes to a third.
	slices.SortFunc(masters, func(a, b redis.ClusterNode) int { return strings.Compare(a.Addr, b.Addr) })
	i := slices.IndexFunc(masters, func(n redis.ClusterNode) bool { return n.ID == source.ID })
	target := masters[(i+1)%len(masters)]
	node := func(n redis.ClusterNode) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: n.Addr})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	src, dst := node(source), node(target)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("moving slot %d from %s to %s: %v", slot, source.Addr, target.Addr, err)
		}
	}
	must(dst.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", source.ID).Err())
	must(src.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", target.ID).Err())
	host, port, _ := strings.Cut(target.Addr, ":")
	for {
		keys, err := src.ClusterGetKeysInSlot(ctx, slot, 100).Result()
		must(err)
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		must(src.Do(ctx, args...).Err())
	}
	must(dst.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", target.ID).Err())
	must(src.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", target.ID).Err())
	for _, m := range masters {
		if m.ID != source.ID && m.ID != target.ID {
			must(node(m).Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", target.ID).Err())
		}
	}
	t.Logf("slot %d moved from %s to %s", slot, source.Addr, target.Addr)
}
