package e2e

// The shared helpers of the end-to-end tests: a test server and its users,
// the stores the tests run on, requests and the common queries,
// subscriptions, and waiting. The fixtures of several instances are in
// fixtures_test.go, the server binary's in process_test.go.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"golang.org/x/crypto/bcrypt"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/internal/testenv"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/server"
)

// repoRoot is the repository's root, seen from this package's directory,
// where go test runs its tests: the files the tests read (the README, the
// dashboard, the npm clients, the scripts) are named from there.
const repoRoot = ".."

// Servers.

// testServer is a real server instance on a loopback port.
type testServer struct {
	*server.Server
	URL    string // the GraphQL endpoint
	Client *chatclient.Client
}

// testConfig is the embedded default with fast password hashing, no rate
// limits and no cap on connections per client: tests post in bursts from
// one address; the tests of those limits turn them on.
func testConfig(t testing.TB) server.Config {
	t.Helper()
	cfg, err := server.ParseConfig(nil, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg.DataDir = t.TempDir()
	cfg.BcryptCost = bcrypt.MinCost
	cfg.KeepAlive = time.Second
	cfg.RateLimits = ratelimit.Limits{}
	cfg.MaxConnsPerClient = 0
	return cfg
}

// startServer serves cfg until the test ends.
func startServer(t testing.TB, cfg server.Config) *testServer {
	t.Helper()
	srv, err := server.New(context.Background(), cfg, testLogger())
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	return serve(t, srv)
}

// testLogger shows warnings when the tests run verbosely.
func testLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// serve runs srv on a loopback port until the test ends.
func serve(t testing.TB, srv *server.Server) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveOn(t, srv, ln)
}

// serveOn runs srv on ln until the test ends.
func serveOn(t testing.TB, srv *server.Server, ln net.Listener) *testServer {
	t.Helper()
	go srv.Serve(ln)
	t.Cleanup(func() {
		_ = srv.Close(context.Background())
		// Streams end asynchronously, and hold the store until they do.
		waitFor(t, func() bool { return srv.Streams().Open() == 0 })
	})
	url := "http://" + ln.Addr().String() + "/query"
	return &testServer{Server: srv, URL: url, Client: chatclient.New(url)}
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Stores: the embedded store, and Cassandra when CHAT_CASSANDRA_HOSTS names
// a node.

// forEachStore runs an end-to-end test on the embedded store and, when
// CHAT_CASSANDRA_HOSTS names a node, on Cassandra.
func forEachStore(t *testing.T, test func(t *testing.T, cfg server.Config)) {
	t.Run("embedded", func(t *testing.T) { test(t, testConfig(t)) })
	t.Run("cassandra", func(t *testing.T) { test(t, cassandraConfig(t)) })
}

// cassandraConfig is a server configuration on a fresh keyspace of the node
// CHAT_CASSANDRA_HOSTS names. Without it the test skips, unless
// CHAT_REQUIRE_BACKENDS=1 (CI) makes that a failure.
func cassandraConfig(t *testing.T) server.Config {
	t.Helper()
	hosts := testenv.Service(t, "CHAT_CASSANDRA_HOSTS", "the end-to-end tests on Cassandra")
	cfg := testConfig(t)
	cfg.Store = "cassandra"
	cfg.JWTSecret = strings.Repeat("k", 32)
	cfg.BcryptCost = bcrypt.MinCost
	cfg.Cassandra.Hosts = splitList(hosts)
	cfg.Cassandra.Keyspace = testKeyspace(t.Name())
	dropKeyspace(t, cfg.Cassandra.Hosts, cfg.Cassandra.Keyspace)
	t.Cleanup(func() { dropKeyspace(t, cfg.Cassandra.Hosts, cfg.Cassandra.Keyspace) })
	return cfg
}

var notKeyspaceChar = regexp.MustCompile(`[^a-z0-9_]+`)

// testKeyspace derives a valid keyspace name (at most 48 characters) from a
// test name, after CHAT_TEST_KEYSPACE_TAG (see store/cassandra's tests).
func testKeyspace(testName string) string {
	name := "e2e" + os.Getenv("CHAT_TEST_KEYSPACE_TAG") + "_" + notKeyspaceChar.ReplaceAllString(strings.ToLower(testName), "_")
	return name[:min(len(name), 48)]
}

func dropKeyspace(t *testing.T, hosts []string, keyspace string) {
	t.Helper()
	cluster := gocql.NewCluster(hosts...)
	cluster.Timeout = 30 * time.Second
	session, err := cluster.CreateSession()
	if err != nil {
		t.Fatalf("connect to cassandra at %v: %v", hosts, err)
	}
	defer session.Close()
	// A loaded node may answer a schema change past the client's timeout
	// and apply it all the same: as the store does (cassandra.execDDL), the
	// drop, which changes nothing a second time, is sent again until it is
	// answered, and then every node agrees on it: within the bound of a
	// test's setup.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for {
		err := session.Query("DROP KEYSPACE IF EXISTS " + keyspace).WithContext(ctx).Exec()
		if err == nil {
			err = session.AwaitSchemaAgreement(ctx)
		}
		var writeTimeout *gocql.RequestErrWriteTimeout
		timedOut := errors.Is(err, gocql.ErrTimeoutNoResponse) || errors.As(err, &writeTimeout)
		switch {
		case err == nil:
			return
		case !timedOut || ctx.Err() != nil:
			t.Fatalf("drop keyspace %s: %v", keyspace, err)
		}
		t.Logf("drop keyspace %s: %v; sending it again", keyspace, err)
	}
}

// splitList splits a comma-separated list of hosts as the server's
// configuration does: spaces trimmed, empty parts dropped.
func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// Users and requests.

// user signs a user up, logs in, and returns a client acting as them.
func (ts *testServer) user(t testing.TB, login string) *chatclient.Client {
	t.Helper()
	ctx := testContext(t)
	mustDo(t, ts.Client, `mutation($in: SignupInput!) { signup(input: $in) { login } }`,
		map[string]any{"in": map[string]any{"login": login, "password": "password-" + login, "firstname": strings.ToUpper(login[:1]) + login[1:], "lastname": "Tester"}}, nil)
	var out struct{ Login struct{ Token string } }
	if err := ts.Client.Do(ctx, `mutation($l: String!, $p: String!) { login(login: $l, password: $p) { token } }`,
		map[string]any{"l": login, "p": "password-" + login}, &out); err != nil {
		t.Fatalf("login %s: %v", login, err)
	}
	return ts.Client.WithToken(out.Login.Token)
}

func mustDo(t testing.TB, c *chatclient.Client, query string, vars map[string]any, out any) {
	t.Helper()
	if err := c.Do(testContext(t), query, vars, out); err != nil {
		t.Fatalf("%s: %v", firstLine(query), err)
	}
}

// wantCode runs an operation that must fail with the given error code.
func wantCode(t *testing.T, c *chatclient.Client, code, query string, vars map[string]any) chatclient.Error {
	t.Helper()
	err := c.Do(testContext(t), query, vars, nil)
	var errs chatclient.Errors
	if !errors.As(err, &errs) {
		t.Fatalf("%s: got error %v, want GraphQL error %s", firstLine(query), err, code)
	}
	if got := errs.Code(); got != code {
		t.Fatalf("%s: got code %s (%v), want %s", firstLine(query), got, errs, code)
	}
	if errs[0].Message == "" {
		t.Fatalf("%s: error has no message", firstLine(query))
	}
	return errs[0]
}

func isCode(err error, code string) bool {
	var errs chatclient.Errors
	return errors.As(err, &errs) && errs.Code() == code
}

func firstLine(s string) string { return strings.SplitN(strings.TrimSpace(s), "\n", 2)[0] }

// The common queries.

const (
	createRoom  = `mutation($n: String!) { createRoom(input: {name: $n, banner: "welcome"}) { name banner creator { login } participants { login } } }`
	joinRoom    = `mutation($r: String!) { joinRoom(room: $r) { name participants { login } } }`
	leaveRoom   = `mutation($r: String!) { leaveRoom(room: $r) { name participants { login } } }`
	deleteRoom  = `mutation($r: String!) { deleteRoom(room: $r) { name participants { login } } }`
	postMessage = `mutation($r: String!, $c: String!) { postMessage(room: $r, content: $c) { id content system postedAt author { login firstname } } }`
	myRooms     = `{ me { login rooms } }`
	roomEvents  = `subscription($r: String!, $after: String) { roomEvents(room: $r, after: $after) { kind room cursor user { login } message { id content system } } }`
	messagesQ   = `query($r: String!, $n: Int, $after: String) { messages(room: $r, first: $n, after: $after) { edges { cursor node { id content system author { login } } } pageInfo { hasNextPage endCursor } } }`
	sendDirect  = `mutation($to: String!, $c: String!) { sendDirectMessage(to: $to, content: $c) { id room content } }`
	createKind  = `mutation($n: String!, $k: RoomKind) { createRoom(input: {name: $n, kind: $k}) { name kind participants { login } } }`
	addMember   = `mutation($g: String!, $l: String!) { addGroupMember(group: $g, login: $l) { name participants { login } } }`
)

type messagePage struct {
	Messages struct {
		Edges []struct {
			Cursor string
			Node   struct {
				ID      string
				Content string
				System  bool
				Author  struct{ Login string }
			}
		}
		PageInfo struct {
			HasNextPage bool
			EndCursor   *string
		}
	}
}

// Subscriptions.

// subscribe opens a roomEvents subscription and fails the test on error.
// The server confirms nothing when a subscription starts (clients that must
// not miss anything resume with a cursor), so tests that post right after
// subscribing wait until the server holds the stream.
func (ts *testServer) subscribe(t *testing.T, c *chatclient.Client, protocol, room string, after any) *chatclient.Subscription {
	t.Helper()
	started := ts.Streams().Started()
	sub := subscribeNoWait(t, c, protocol, room, after)
	waitFor(t, func() bool { return ts.Streams().Started() > started })
	return sub
}

// subscribeNoWait opens a subscription that may fail on the server side.
func subscribeNoWait(t *testing.T, c *chatclient.Client, protocol, room string, after any) *chatclient.Subscription {
	t.Helper()
	sub, err := c.Subscribe(testContext(t), protocol, roomEvents, map[string]any{"r": room, "after": after})
	if err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	t.Cleanup(func() { sub.Close() })
	return sub
}

type roomEvent struct {
	Kind, Room string
	Cursor     *string
	User       struct{ Login string }
	Message    *struct {
		ID, Content string
		System      bool
	}
}

func nextEvent(t *testing.T, sub *chatclient.Subscription) roomEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := sub.Next(ctx)
	if err != nil {
		t.Fatalf("next event: %v", err)
	}
	if len(resp.Errors) > 0 {
		t.Fatalf("next event: %v", resp.Errors)
	}
	var out struct{ RoomEvents roomEvent }
	if err := json.Unmarshal(resp.Data, &out); err != nil {
		t.Fatal(err)
	}
	return out.RoomEvents
}

// live opens a subscription of c over graphql-transport-ws, waits until
// the server streams it, and closes it when the test ends.
func (ts *testServer) live(t *testing.T, c *chatclient.Client, query string, vars map[string]any) *chatclient.Subscription {
	t.Helper()
	started := ts.Streams().Started()
	sub, err := c.Subscribe(testContext(t), chatclient.GraphQLTransportWS, query, vars)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Close() })
	waitFor(t, func() bool { return ts.Streams().Started() > started })
	return sub
}

// nextData decodes the next event of sub into out.
func nextData(t *testing.T, sub *chatclient.Subscription, out any) {
	t.Helper()
	resp, err := sub.Next(testContext(t))
	if err != nil {
		t.Fatalf("next event: %v", err)
	}
	if len(resp.Errors) > 0 {
		t.Fatalf("next event: %v", resp.Errors)
	}
	if err := json.Unmarshal(resp.Data, out); err != nil {
		t.Fatal(err)
	}
}

// nextOf decodes the next event of a roomEvents or inboxEvents
// subscription as T.
func nextOf[T any](t *testing.T, sub *chatclient.Subscription) T {
	t.Helper()
	var out struct{ RoomEvents, InboxEvents *T }
	nextData(t, sub, &out)
	switch {
	case out.RoomEvents != nil:
		return *out.RoomEvents
	case out.InboxEvents == nil:
		t.Fatal("an event of neither roomEvents nor inboxEvents")
	}
	return *out.InboxEvents
}

// nextAfterJoins reads sub's next event that is not a PARTICIPANT_JOINED:
// the join of a user made just before they subscribed may still be on its
// way to their instance when they subscribe, and reach them live.
func nextAfterJoins(t *testing.T, sub *chatclient.Subscription) roomEvent {
	t.Helper()
	for {
		if ev := nextEvent(t, sub); ev.Kind != "PARTICIPANT_JOINED" {
			return ev
		}
	}
}

// wantEnded fails unless the server completes sub next.
func wantEnded(t *testing.T, sub *chatclient.Subscription) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := sub.Next(ctx)
	if !errors.Is(err, chatclient.ErrComplete) {
		t.Fatalf("the stream went on: %+v, %v; want it complete", resp, err)
	}
}

// openSSE starts a roomEvents subscription over server-sent events and
// waits until the stream runs: gqlgen's SSE transport sends its headers
// before it runs the resolver, so the stream is live only once it is
// counted. The response body is closed when the test ends.
func (ts *testServer) openSSE(t *testing.T, token, query string) *http.Response {
	t.Helper()
	var unquoted string
	if err := json.Unmarshal([]byte(`"`+query+`"`), &unquoted); err != nil {
		t.Fatal(err)
	}
	return ts.openSSEWith(t, token, unquoted, nil)
}

// openSSEWith is openSSE of a query (not JSON-escaped) with variables.
func (ts *testServer) openSSEWith(t *testing.T, token, query string, vars map[string]any) *http.Response {
	t.Helper()
	payload, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(testContext(t), http.MethodPost, ts.URL, bytes.NewReader(payload))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	started := ts.Streams().Started()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("content type %q", ct)
	}
	waitFor(t, func() bool { return ts.Streams().Started() > started })
	return resp
}

// Waiting.

// waitFor polls cond until it holds, or fails the test after 10 seconds.
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	waitGoroutines(t, func(int) bool { return cond() })
}

// waitGoroutines polls until ok holds for the goroutine count, or fails.
func waitGoroutines(t testing.TB, ok func(n int) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if ok(n) {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines did not settle: %d\n%s", n, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// eventually polls cond, which reports whether it holds and what it saw,
// until it holds or within fails.
func eventually(t *testing.T, within time.Duration, what string, cond func() (bool, any)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, saw := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v; last saw %+v", what, within, saw)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
