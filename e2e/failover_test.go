package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/server"
	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/store/cassandra"
)

// The failure tests of issue 15: two chatql instances on a real three-node
// Cassandra cluster (scripts/cassandra-cluster.sh), keyspace at
// NetworkTopologyStrategy RF 3, LOCAL_QUORUM and LOCAL_SERIAL, under load
// while a node is killed or paused for real. `make test-cluster` runs them;
// they skip unless CHAT_CASSANDRA_CLUSTER names the cluster's nodes.

// clusterHosts returns the nodes of CHAT_CASSANDRA_CLUSTER, or skips.
func clusterHosts(t *testing.T) []string {
	t.Helper()
	hosts := os.Getenv("CHAT_CASSANDRA_CLUSTER")
	if hosts == "" {
		t.Skip("CHAT_CASSANDRA_CLUSTER is not set: `make test-cluster` runs the failure tests on a three-node cluster")
	}
	return splitList(hosts)
}

// clusterScript runs scripts/cassandra-cluster.sh with args on the nodes.
func clusterScript(t *testing.T, hosts []string, args ...string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(repoRoot, "scripts/cassandra-cluster.sh"), args...)
	cmd.Env = append(os.Environ(), "CLUSTER_ADDRESSES="+strings.Join(hosts, " "))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cassandra-cluster.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("cassandra-cluster.sh %s: ok", strings.Join(args, " "))
}

// replicatedServers starts n instances, each with its own session to the
// cluster, on a fresh keyspace replicated three times, and on Redis when
// CHAT_REDIS_URL is set.
func replicatedServers(t *testing.T, hosts []string, n int) (server.Config, []*testServer) {
	t.Helper()
	cfg := testConfig(t)
	cfg.Store = "cassandra"
	cfg.JWTSecret = strings.Repeat("f", 32)
	cfg.Cassandra.Hosts = hosts
	cfg.Cassandra.Keyspace = testKeyspace(t.Name())
	cfg.Cassandra.Replication = "NetworkTopologyStrategy:datacenter1=3"
	if url := os.Getenv("CHAT_REDIS_URL"); url != "" {
		cfg.RedisURL = url
		cfg.RedisChannelPrefix = "failover-" + randomHex(4) + ":"
	}
	dropKeyspace(t, hosts, cfg.Cassandra.Keyspace)
	var servers []*testServer
	// Creating the schema waits for the three nodes to agree on each
	// statement: minutes on a loaded two-core machine.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for range n {
		db, err := cassandra.Open(ctx, cfg.Cassandra)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		srv, err := server.NewOnStore(context.Background(), cfg, testLogger(), db)
		if err != nil {
			t.Fatalf("start instance: %v", err)
		}
		servers = append(servers, serve(t, srv))
	}
	return cfg, servers
}

// tally counts what the load's clients saw, per operation: successes,
// refusals that are the answer of a race (CONFLICT: another signup won;
// NOT_FOUND: the room was deleted first), and errors.
type tally struct {
	mu      sync.Mutex
	ok      map[string]int
	refused map[string]int
	errors  map[string]map[string]int // operation -> error -> count
}

func newTally() *tally {
	return &tally{ok: map[string]int{}, refused: map[string]int{}, errors: map[string]map[string]int{}}
}

func (tl *tally) record(op string, err error) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	switch {
	case err == nil:
		tl.ok[op]++
		return
	case isCode(err, "CONFLICT") || isCode(err, "NOT_FOUND"):
		tl.refused[op]++
		return
	}
	if tl.errors[op] == nil {
		tl.errors[op] = map[string]int{}
	}
	tl.errors[op][firstLine(err.Error())]++
}

// report logs every operation's successes and errors, and returns how
// many errors there were in all.
func (tl *tally) report(t *testing.T) int {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var ops []string
	for op := range tl.ok {
		ops = append(ops, op)
	}
	for op := range tl.refused {
		ops = append(ops, op)
	}
	for op := range tl.errors {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	ops = slices.Compact(ops)
	total := 0
	for _, op := range ops {
		n := 0
		for _, c := range tl.errors[op] {
			n += c
		}
		total += n
		t.Logf("%-12s %6d ok %4d refused by a race %4d errors", op, tl.ok[op], tl.refused[op], n)
		for msg, c := range tl.errors[op] {
			t.Logf("    %4d x %s", c, msg)
		}
	}
	return total
}

const postWithID = `mutation($r: String!, $c: String!, $cid: String) { postMessage(room: $r, content: $c, clientMessageId: $cid) { id content } }`

// chatLoad is the load of the failure tests, on two instances: posters
// (each post retried under its clientMessageId until acknowledged), history
// readers, a subscriber, and signups with room creates, joins and deletes.
type chatLoad struct {
	t       *testing.T
	servers []*testServer
	tally   *tally
	stop    chan struct{}
	wg      sync.WaitGroup

	mu    sync.Mutex
	acked map[string]string // message id -> content
}

func startLoad(t *testing.T, servers []*testServer, posters []*chatclient.Client, readers []*chatclient.Client) *chatLoad {
	l := &chatLoad{t: t, servers: servers, tally: newTally(), stop: make(chan struct{}), acked: map[string]string{}}
	for i, c := range posters {
		l.wg.Go(func() { l.post(i, c) })
	}
	for _, c := range readers {
		l.wg.Go(func() { l.read(c) })
	}
	l.wg.Go(l.churnRooms)
	return l
}

func (l *chatLoad) stopped() bool {
	select {
	case <-l.stop:
		return true
	default:
		return false
	}
}

// attempt runs one operation with a short deadline and tallies it.
func (l *chatLoad) attempt(op string, c *chatclient.Client, query string, vars map[string]any, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := c.Do(ctx, query, vars, out)
	l.tally.record(op, err)
	return err
}

func (l *chatLoad) post(i int, c *chatclient.Client) {
	for n := 0; !l.stopped(); n++ {
		content := fmt.Sprintf("post %d.%d", i, n)
		vars := map[string]any{"r": "failover", "c": content, "cid": fmt.Sprintf("poster%d-%d", i, n)}
		for {
			var out struct{ PostMessage struct{ ID, Content string } }
			if err := l.attempt("post", c, postWithID, vars, &out); err == nil {
				l.mu.Lock()
				l.acked[out.PostMessage.ID] = out.PostMessage.Content
				l.mu.Unlock()
				break
			}
			time.Sleep(100 * time.Millisecond) // then retry: the client id makes it safe
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (l *chatLoad) read(c *chatclient.Client) {
	for !l.stopped() {
		_ = l.attempt("history", c, messagesQ, map[string]any{"r": "failover", "n": 50}, nil)
		time.Sleep(20 * time.Millisecond)
	}
}

// churnRooms signs a user up, who creates a room that another joins and
// then the creator deletes, again and again, alternating instances.
func (l *chatLoad) churnRooms() {
	for n := 0; !l.stopped(); n++ {
		ts := l.servers[n%len(l.servers)]
		login := fmt.Sprintf("churn%d", n)
		signup := map[string]any{"in": map[string]any{"login": login, "password": "password-" + login, "firstname": "C", "lastname": "Hurn"}}
		if l.attempt("signup", ts.Client, `mutation($in: SignupInput!) { signup(input: $in) { login } }`, signup, nil) != nil {
			continue
		}
		var tok struct{ Login struct{ Token string } }
		if l.attempt("login", ts.Client, `mutation($l: String!, $p: String!) { login(login: $l, password: $p) { token } }`,
			map[string]any{"l": login, "p": "password-" + login}, &tok) != nil {
			continue
		}
		c := ts.Client.WithToken(tok.Login.Token)
		room := fmt.Sprintf("churn-%d", n)
		if l.attempt("createRoom", c, createRoom, map[string]any{"n": room}, nil) != nil {
			continue
		}
		_ = l.attempt("joinRoom", l.servers[(n+1)%len(l.servers)].Client.WithToken(tok.Login.Token), joinRoom, map[string]any{"r": "failover"}, nil)
		_ = l.attempt("deleteRoom", c, deleteRoom, map[string]any{"r": room}, nil)
	}
}

// finish stops the load and returns the acknowledged posts.
func (l *chatLoad) finish() map[string]string {
	close(l.stop)
	l.wg.Wait()
	return l.acked
}

// TestFailoverNodeKilled kills one of three Cassandra nodes with SIGKILL
// under load, then starts it again: posts, history reads, signups, room
// creates, joins and deletes go on at QUORUM; every acknowledged post is
// stored once, delivered once to a subscriber on the other instance, and,
// once the node is back and repaired, on every replica (read at ALL).
func TestFailoverNodeKilled(t *testing.T) {
	hosts := clusterHosts(t)
	cfg, servers := replicatedServers(t, hosts, 2)
	a, b := servers[0], servers[1]
	alice := a.user(t, "alice")
	mustDo(t, alice, createRoom, map[string]any{"n": "failover"}, nil)
	var posters, readers []*chatclient.Client
	for i := range 4 {
		c := servers[i%2].user(t, fmt.Sprintf("poster%d", i))
		mustDo(t, c, joinRoom, map[string]any{"r": "failover"}, nil)
		posters = append(posters, c)
	}
	for i := range 2 {
		c := servers[i%2].user(t, fmt.Sprintf("reader%d", i))
		mustDo(t, c, joinRoom, map[string]any{"r": "failover"}, nil)
		readers = append(readers, c)
	}
	watcher := b.user(t, "watcher")
	mustDo(t, watcher, joinRoom, map[string]any{"r": "failover"}, nil)
	// The watcher follows the room on the other instance, as an app does:
	// cut off (a slow consumer, an instance in trouble), it subscribes again
	// after the last cursor it saw.
	const follow = `subscription($after: String) { roomEvents(room: "failover", after: $after) { kind cursor message { id } } }`
	var (
		deliveredMu sync.Mutex
		delivered   []string
		resumes     int
	)
	quit := make(chan struct{})
	subDone := make(chan struct{})
	defer func() { close(quit); <-subDone }()
	go func() {
		defer close(subDone)
		var after any
		for {
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				select {
				case <-quit:
				case <-ctx.Done():
				}
				cancel()
			}()
			sub, err := watcher.Subscribe(ctx, chatclient.GraphQLTransportWS, follow, map[string]any{"after": after})
			for err == nil {
				var resp chatclient.Response
				if resp, err = sub.Next(ctx); err != nil {
					break
				}
				var ev struct {
					RoomEvents struct {
						Kind    string
						Cursor  *string
						Message *struct{ ID string }
					}
				}
				if json.Unmarshal(resp.Data, &ev) != nil {
					continue
				}
				if ev.RoomEvents.Cursor != nil {
					after = *ev.RoomEvents.Cursor
				}
				if ev.RoomEvents.Kind == "MESSAGE_POSTED" {
					deliveredMu.Lock()
					delivered = append(delivered, ev.RoomEvents.Message.ID)
					deliveredMu.Unlock()
				}
			}
			if sub != nil {
				sub.Close()
			}
			cancel()
			select {
			case <-quit:
				return
			case <-time.After(200 * time.Millisecond):
			}
			deliveredMu.Lock()
			resumes++
			deliveredMu.Unlock()
		}
	}()
	waitFor(t, func() bool { return b.Streams().Started() > 0 })

	load := startLoad(t, servers, posters, readers)
	time.Sleep(3 * time.Second)
	clusterScript(t, hosts, "kill", "3")
	time.Sleep(10 * time.Second)
	clusterScript(t, hosts, "start-node", "3")
	time.Sleep(3 * time.Second)
	acked := load.finish()
	errs := load.tally.report(t)
	t.Logf("%d client errors in all during the failover", errs)
	if len(acked) == 0 {
		t.Fatal("no post was acknowledged")
	}

	// Every acknowledged post once in the history, with no duplicate
	// content (the retries under a client id stored nothing twice).
	history, contents := roomHistory(t, alice, "failover")
	seen := map[string]int{}
	for _, id := range history {
		seen[id]++
	}
	for id, content := range acked {
		if seen[id] != 1 || contents[content] != 1 {
			t.Errorf("acknowledged post %s (%q) is %d times in the history, its content %d times; want once", id, content, seen[id], contents[content])
		}
	}
	// Delivered live once each, on the other instance.
	waitFor(t, func() bool {
		deliveredMu.Lock()
		defer deliveredMu.Unlock()
		return len(delivered) >= len(acked)
	})
	deliveredMu.Lock()
	got := map[string]int{}
	for _, id := range delivered {
		got[id]++
	}
	t.Logf("the watcher resumed %d times", resumes)
	deliveredMu.Unlock()
	for id := range acked {
		if got[id] != 1 {
			t.Errorf("acknowledged post %s was delivered %d times, want once", id, got[id])
		}
	}

	// On every replica once the node is back: repair, then read at ALL.
	clusterScript(t, hosts, "nodetool", "1", "repair", "-full", cfg.Cassandra.Keyspace)
	atAll := readAtAll(t, hosts, cfg.Cassandra.Keyspace, "failover", acked)
	for id := range acked {
		if !atAll[id] {
			t.Errorf("acknowledged post %s is missing from a replica (read at ALL)", id)
		}
	}
	t.Logf("%d posts acknowledged, all in the history, delivered once, and on all three replicas", len(acked))
}

// readAtAll reads the room's messages of the days of the acknowledged
// posts at consistency ALL, which every replica must answer.
func readAtAll(t *testing.T, hosts []string, keyspace, room string, acked map[string]string) map[string]bool {
	t.Helper()
	c := gocql.NewCluster(hosts...)
	c.Keyspace = keyspace
	c.Timeout = 30 * time.Second
	session, err := c.CreateSession()
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	var buckets []store.Bucket
	for id := range acked {
		mid, err := store.ParseMessageID(id)
		if err != nil {
			t.Fatal(err)
		}
		if b := store.BucketOf(mid.Time()); !slices.Contains(buckets, b) {
			buckets = append(buckets, b)
		}
	}
	found := map[string]bool{}
	for _, b := range buckets {
		iter := session.Query(`SELECT message_id FROM chat_room_messages WHERE room_name = ? AND time_bucket = ?`, room, int(b)).
			Consistency(gocql.All).Iter()
		var id gocql.UUID
		for iter.Scan(&id) {
			found[store.MessageID(id).String()] = true
		}
		if err := iter.Close(); err != nil {
			t.Fatalf("read at ALL: %v", err)
		}
	}
	return found
}

// roomHistory pages through the whole history of the room and returns
// its messages' ids, newest first, and how many times each content is in
// it.
func roomHistory(t *testing.T, c *chatclient.Client, room string) (ids []string, contents map[string]int) {
	t.Helper()
	contents = map[string]int{}
	var after any
	for {
		var out struct {
			Messages struct {
				Edges    []struct{ Node struct{ ID, Content string } }
				PageInfo struct {
					HasNextPage bool
					EndCursor   *string
				}
			}
		}
		mustDo(t, c, messagesQ, map[string]any{"r": room, "n": 100, "after": after}, &out)
		for _, e := range out.Messages.Edges {
			ids = append(ids, e.Node.ID)
			contents[e.Node.Content]++
		}
		if !out.Messages.PageInfo.HasNextPage {
			return ids, contents
		}
		after = *out.Messages.PageInfo.EndCursor
	}
}

// TestFailoverNodePaused stops one of three nodes with SIGSTOP under a load
// of lightweight transactions, long enough for requests to it to time out
// for real, then resumes it: the unknown-outcome path (a read back at
// SERIAL, never a blind retry) settles them, and the invariants hold: one
// signup of a login wins, a deleted room stays deleted with nobody's rooms
// listing it, and no post retried under its client id is stored twice.
func TestFailoverNodePaused(t *testing.T) {
	hosts := clusterHosts(t)
	_, servers := replicatedServers(t, hosts, 2)
	a := servers[0]
	alice := a.user(t, "alice")
	mustDo(t, alice, createRoom, map[string]any{"n": "failover"}, nil)
	var posters []*chatclient.Client
	for i := range 2 {
		c := servers[i%2].user(t, fmt.Sprintf("poster%d", i))
		mustDo(t, c, joinRoom, map[string]any{"r": "failover"}, nil)
		posters = append(posters, c)
	}
	joiners := make([]*chatclient.Client, 3)
	for i := range joiners {
		joiners[i] = servers[i%2].user(t, fmt.Sprintf("joiner%d", i))
	}
	load := startLoad(t, servers, posters, nil)

	signups := map[string][]int{} // login -> the racers whose signup succeeded
	var signupsMu sync.Mutex
	var deleted []string // rooms whose delete was acknowledged
	var races sync.WaitGroup
	races.Go(func() {
		for k := 0; !load.stopped(); k++ {
			login := fmt.Sprintf("race%d", k)
			var wg sync.WaitGroup
			for r := range 4 {
				wg.Go(func() {
					in := map[string]any{"login": login, "password": fmt.Sprintf("password-%d", r), "firstname": "R", "lastname": "Acer"}
					err := load.attempt("signupRace", servers[r%2].Client, `mutation($in: SignupInput!) { signup(input: $in) { login } }`, map[string]any{"in": in}, nil)
					if err == nil {
						signupsMu.Lock()
						signups[login] = append(signups[login], r)
						signupsMu.Unlock()
					}
				})
			}
			wg.Wait()
		}
	})
	races.Go(func() {
		for k := 0; !load.stopped(); k++ {
			room := fmt.Sprintf("doomed-%d", k)
			if load.attempt("createRoom", alice, createRoom, map[string]any{"n": room}, nil) != nil {
				continue
			}
			var wg sync.WaitGroup
			for _, j := range joiners {
				wg.Go(func() { _ = load.attempt("joinRace", j, joinRoom, map[string]any{"r": room}, nil) })
			}
			wg.Go(func() {
				// Staggered, so that in some rounds joins come first.
				time.Sleep(time.Duration(k%4) * 15 * time.Millisecond)
				if load.attempt("deleteRace", alice, deleteRoom, map[string]any{"r": room}, nil) == nil {
					signupsMu.Lock()
					deleted = append(deleted, room)
					signupsMu.Unlock()
				}
			})
			wg.Wait()
		}
	})

	time.Sleep(3 * time.Second)
	clusterScript(t, hosts, "pause", "2")
	time.Sleep(15 * time.Second)
	clusterScript(t, hosts, "resume", "2")
	time.Sleep(5 * time.Second)
	acked := load.finish()
	races.Wait()
	t.Logf("%d client errors in all while the node was paused", load.tally.report(t))

	// One signup of each login won, and its password is the account's.
	for login, won := range signups {
		if len(won) > 1 {
			t.Errorf("signup of %q succeeded for racers %v, want one", login, won)
			continue
		}
		var out struct{ Login struct{ Token string } }
		err := a.Client.Do(testContext(t), `mutation($l: String!, $p: String!) { login(login: $l, password: $p) { token } }`,
			map[string]any{"l": login, "p": fmt.Sprintf("password-%d", won[0])}, &out)
		if err != nil {
			t.Errorf("login of %q with the winning racer's password: %v", login, err)
		}
	}
	// A deleted room stays deleted: no zombie row, no joiner listing it.
	for _, room := range deleted {
		wantNull(t, alice, `query($r: String!) { room(name: $r) { name } }`, map[string]any{"r": room})
	}
	// A join whose outcome a timeout left unknown is settled in the
	// background once the cluster answers: its listing of a deleted room
	// goes within seconds.
	for i, j := range joiners {
		eventually(t, 30*time.Second, fmt.Sprintf("joiner%d lists no deleted room", i), func() (bool, any) {
			var me struct{ Me struct{ Rooms []string } }
			mustDo(t, j, `{ me { rooms(first: 100) } }`, nil, &me)
			zombies := slices.DeleteFunc(me.Me.Rooms, func(room string) bool { return !slices.Contains(deleted, room) })
			return len(zombies) == 0, zombies
		})
	}
	// No post stored twice, though retried under its client id.
	history, contents := roomHistory(t, alice, "failover")
	seen := map[string]bool{}
	for _, id := range history {
		seen[id] = true
	}
	for id, content := range acked {
		if !seen[id] || contents[content] != 1 {
			t.Errorf("acknowledged post %s (%q): in the history %v, its content %d times; want once", id, content, seen[id], contents[content])
		}
	}
	t.Logf("%d signups raced, %d rooms deleted while joined, %d posts acknowledged", len(signups), len(deleted), len(acked))
}
