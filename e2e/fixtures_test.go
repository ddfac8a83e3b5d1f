package e2e

// The fixtures of the end-to-end tests: one server with alice, bob and
// carol (teaParty), and several instances on one store and one Redis, as
// behind a load balancer (startCluster), among them the multi-instance
// tests' own: two instances with alice on the first and bob on the second,
// both in alice's room (acrossCluster).

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/internal/testenv"
	"github.com/killrchat/chatql/server"
	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/store/cassandra"
	"github.com/killrchat/chatql/store/embedded"
)

// teaParty serves cfg to alice, bob and carol, alice's room tea-party
// having bob in it.
func teaParty(t *testing.T, cfg server.Config) (ts *testServer, alice, bob, carol *chatclient.Client) {
	t.Helper()
	ts = startServer(t, cfg)
	alice, bob, carol = ts.user(t, "alice"), ts.user(t, "bob"), ts.user(t, "carol")
	mustDo(t, alice, createRoom, map[string]any{"n": "tea-party"}, nil)
	mustDo(t, bob, joinRoom, map[string]any{"r": "tea-party"}, nil)
	return ts, alice, bob, carol
}

// redisURL is the Redis that CHAT_REDIS_URL names. Without it the test
// skips, unless CHAT_REQUIRE_BACKENDS=1 (CI) makes that a failure.
func redisURL(t testing.TB) string {
	t.Helper()
	return testenv.Service(t, "CHAT_REDIS_URL", "the multi-instance tests")
}

// cluster is several server instances on one store and one Redis, as
// behind a load balancer.
type cluster struct {
	instances []*testServer
	prefix    string // this cluster's Redis channel prefix
}

// startCluster starts n instances on Redis at url. They share Cassandra
// when CHAT_CASSANDRA_HOSTS names a node, else one embedded store.
func startCluster(t *testing.T, n int, url string) *cluster {
	t.Helper()
	return startClusterWith(t, n, url, nil)
}

// startClusterWith is startCluster with configure (when not nil) applied
// to the instances' configuration.
func startClusterWith(t *testing.T, n int, url string, configure func(i int, c *server.Config)) *cluster {
	t.Helper()
	cfg := testConfig(t)
	cfg.RedisURL = url
	cfg.RedisChannelPrefix = "test-" + randomHex(4) + ":"
	cfg.JWTSecret = strings.Repeat("s", 32) // instances verify each other's tokens
	var st store.Store
	if os.Getenv("CHAT_CASSANDRA_HOSTS") != "" {
		cc := cassandraConfig(t).Cassandra
		// Setup, as startServer's: not bounded by a request's deadline
		// (testContext), which a fresh keyspace's schema takes longer than
		// on a loaded node.
		db, err := cassandra.Open(t.Context(), cc)
		if err != nil {
			t.Fatal(err)
		}
		st = db
	} else {
		db, err := embedded.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		st = db
	}
	t.Cleanup(func() { st.Close() }) // after the instances' own cleanups
	c := &cluster{prefix: cfg.RedisChannelPrefix}
	for i := range n {
		cfg := cfg
		if configure != nil {
			configure(i, &cfg)
		}
		srv, err := server.NewOnStore(context.Background(), cfg, testLogger(), st)
		if err != nil {
			t.Fatalf("start instance: %v", err)
		}
		c.instances = append(c.instances, serve(t, srv))
	}
	return c
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// on returns client c talking to instance i instead.
func (c *cluster) on(i int, client *chatclient.Client) *chatclient.Client {
	cp := *client
	cp.URL = c.instances[i].URL
	return &cp
}

// across sets up acrossCluster; its zero value is the usual fixture.
type across struct {
	// redisURL is the instances' Redis: the tests' (CHAT_REDIS_URL) when
	// empty, or one the test may stop (startPrivateRedis).
	redisURL string
	// room is alice's room: "across" when empty.
	room string
	// configure, when not nil, changes the instances' configuration.
	configure func(*server.Config)
}

// acrossCluster is the fixture of the multi-instance tests: two instances
// on one Redis (and one store, see startCluster), alice on the first and
// bob on the second, both in alice's room (both users sign up through the
// first instance).
func acrossCluster(t *testing.T, o across) (cl *cluster, alice, bob *chatclient.Client) {
	t.Helper()
	url, room := o.redisURL, o.room
	if url == "" {
		url = redisURL(t)
	}
	if room == "" {
		room = "across"
	}
	cl = startClusterWith(t, 2, url, func(_ int, c *server.Config) {
		if o.configure != nil {
			o.configure(c)
		}
	})
	alice = cl.instances[0].user(t, "alice")
	bob = cl.on(1, cl.instances[0].user(t, "bob"))
	mustDo(t, alice, createRoom, map[string]any{"n": room}, nil)
	mustDo(t, bob, joinRoom, map[string]any{"r": room}, nil)
	return cl, alice, bob
}

// privateRedis is a redis-server process of the test's own, so the test may
// stop and restart it.
type privateRedis struct {
	port string
	cmd  *exec.Cmd
}

func startPrivateRedis(t testing.TB) *privateRedis {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server is not installed (scripts/redis.sh installs it): %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	rs := &privateRedis{port: port}
	rs.start(t)
	t.Cleanup(func() { rs.stop(t) })
	return rs
}

func (rs *privateRedis) url() string { return "redis://127.0.0.1:" + rs.port + "/0" }

func (rs *privateRedis) start(t testing.TB) {
	t.Helper()
	rs.cmd = exec.Command("redis-server", "--port", rs.port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := rs.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		conn, err := net.Dial("tcp", "127.0.0.1:"+rs.port)
		if err != nil {
			return false
		}
		conn.Close()
		return true
	})
}

func (rs *privateRedis) stop(t testing.TB) {
	if rs.cmd == nil {
		return
	}
	_ = rs.cmd.Process.Kill()
	_ = rs.cmd.Wait()
	rs.cmd = nil
}
