package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/server"
)

const signupQ = `mutation($in: SignupInput!) { signup(input: $in) { login } }`

func signupVars(login string) map[string]any {
	return map[string]any{"in": map[string]any{"login": login, "password": "password-" + login, "firstname": "F", "lastname": "L"}}
}

func loginVars(login, password string) map[string]any {
	return map[string]any{"l": login, "p": password}
}

// withRateClock makes cfg's in-process rate limits read a clock that moves
// only when the returned function advances it.
func withRateClock(cfg *server.Config) (advance func(time.Duration)) {
	start := time.Now()
	var offset atomic.Int64
	cfg.RateClock = func() time.Time { return start.Add(time.Duration(offset.Load())) }
	return func(d time.Duration) { offset.Add(int64(d)) }
}

// wantRateLimited runs an operation that must be refused by a rate limit,
// and returns its retryAfter, which must be a whole number of seconds.
func wantRateLimited(t *testing.T, c *chatclient.Client, query string, vars map[string]any) int {
	t.Helper()
	e := wantCode(t, c, "RATE_LIMITED", query, vars)
	return retryAfterOf(t, e)
}

func retryAfterOf(t *testing.T, e chatclient.Error) int {
	t.Helper()
	v, ok := e.Extensions["retryAfter"].(float64)
	if !ok || v != float64(int(v)) || v < 1 {
		t.Fatalf("extensions.retryAfter %v (%T), want whole seconds >= 1", e.Extensions["retryAfter"], e.Extensions["retryAfter"])
	}
	return int(v)
}

func TestPostRateLimit(t *testing.T) { forEachStore(t, testPostRateLimit) }

func testPostRateLimit(t *testing.T, cfg server.Config) {
	cfg.RateLimits[ratelimit.Post] = ratelimit.Limit{Rate: 1, Period: time.Minute, Burst: 3}
	advance := withRateClock(&cfg)
	ts := startServer(t, cfg)
	alice := ts.user(t, "alice")
	bob := ts.user(t, "bob")
	mustDo(t, alice, createRoom, map[string]any{"n": "burst"}, nil)
	mustDo(t, bob, joinRoom, map[string]any{"r": "burst"}, nil)

	for i := range 3 {
		mustDo(t, alice, postMessage, map[string]any{"r": "burst", "c": fmt.Sprintf("in the burst %d", i)}, nil)
	}
	resp, e := postRaw(t, ts.URL, alice.Token, postMessage, map[string]any{"r": "burst", "c": "over the limit"})
	if e.Code() != "RATE_LIMITED" {
		t.Fatalf("4th post of a burst of 3: got %+v, want RATE_LIMITED", e)
	}
	retry := retryAfterOf(t, e)
	if retry != 60 {
		t.Fatalf("retryAfter %d, want 60 (1 post a minute)", retry)
	}
	if got := resp.Header.Get("Retry-After"); got != "60" {
		t.Fatalf("Retry-After header %q, want 60", got)
	}
	// The limit is per user: bob posts.
	mustDo(t, bob, postMessage, map[string]any{"r": "burst", "c": "bob's turn"}, nil)

	advance(time.Duration(retry-1) * time.Second)
	wantRateLimited(t, alice, postMessage, map[string]any{"r": "burst", "c": "a second too early"})
	advance(time.Second)
	mustDo(t, alice, postMessage, map[string]any{"r": "burst", "c": "after retryAfter"}, nil)

	var page messagePage
	mustDo(t, alice, messagesQ, map[string]any{"r": "burst", "n": 20}, &page)
	var got []string
	for _, e := range page.Messages.Edges {
		if !e.Node.System {
			got = append(got, e.Node.Content)
		}
	}
	want := []string{"after retryAfter", "bob's turn", "in the burst 2", "in the burst 1", "in the burst 0"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("stored messages %q, want %q: a refused post must store nothing", got, want)
	}
}

// postRaw runs an operation that fails, over plain HTTP, and returns the
// response (for its headers) and its first error.
func postRaw(t *testing.T, url, token, query string, vars map[string]any) (*http.Response, chatclient.Error) {
	t.Helper()
	body, _ := json.Marshal(chatclient.Request{Query: query, Variables: vars})
	req, err := http.NewRequestWithContext(testContext(t), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out chatclient.Response
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if len(out.Errors) == 0 {
		t.Fatalf("%s: no error", firstLine(query))
	}
	return resp, out.Errors[0]
}

// Typing notices are limited per user: past the burst, RATE_LIMITED, for
// renewals too (they tell nobody, but each still costs the server).
func TestTypingRateLimit(t *testing.T) {
	cfg := testConfig(t)
	cfg.RateLimits[ratelimit.Typing] = ratelimit.Limit{Rate: 1, Period: time.Hour, Burst: 3}
	ts := startServer(t, cfg)
	alice := ts.user(t, "alice")
	bob := ts.user(t, "bob")
	mustDo(t, alice, createRoom, map[string]any{"n": "chatter"}, nil)
	for i := range 3 {
		mustDo(t, alice, typingQ, map[string]any{"c": "chatter", "on": i%2 == 0}, nil)
	}
	wantRateLimited(t, alice, typingQ, map[string]any{"c": "chatter"})
	// Per user: bob's notices are his own to spend.
	mustDo(t, bob, joinRoom, map[string]any{"r": "chatter"}, nil)
	mustDo(t, bob, typingQ, map[string]any{"c": "chatter"}, nil)
}

func TestRoomChangesAndDirectMessagesRateLimits(t *testing.T) {
	cfg := testConfig(t)
	cfg.RateLimits[ratelimit.RoomChange] = ratelimit.Limit{Rate: 1, Period: time.Hour, Burst: 2}
	cfg.RateLimits[ratelimit.DirectMessage] = ratelimit.Limit{Rate: 1, Period: time.Hour, Burst: 2}
	ts := startServer(t, cfg)
	alice := ts.user(t, "alice")
	ts.user(t, "bob")
	mustDo(t, alice, createRoom, map[string]any{"n": "one"}, nil)
	mustDo(t, alice, createRoom, map[string]any{"n": "two"}, nil)
	wantRateLimited(t, alice, createRoom, map[string]any{"n": "three"})
	wantNull(t, alice, `{ v: room(name: "three") { name } }`, nil)

	dm := `mutation($c: String!) { sendDirectMessage(to: "bob", content: $c) { id } }`
	mustDo(t, alice, dm, map[string]any{"c": "one"}, nil)
	mustDo(t, alice, dm, map[string]any{"c": "two"}, nil)
	wantRateLimited(t, alice, dm, map[string]any{"c": "three"})
	var out struct {
		DirectMessages struct {
			Edges []struct{ Node struct{ Content string } }
		}
	}
	mustDo(t, alice, `{ directMessages(with: "bob", first: 10) { edges { node { content } } } }`, nil, &out)
	if n := len(out.DirectMessages.Edges); n != 2 {
		t.Fatalf("%d direct messages stored, want 2", n)
	}
}

// fromAddress is a client whose requests say, through a trusted proxy,
// that they come from addr.
func fromAddress(c *chatclient.Client, addr string) *chatclient.Client {
	cp := *c
	cp.HTTP = &http.Client{Transport: forwardedFor{addr}}
	return &cp
}

type forwardedFor struct{ addr string }

func (f forwardedFor) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Forwarded-For", f.addr)
	return http.DefaultTransport.RoundTrip(r)
}

// serverLimiting starts a server that limits action alone, to limit, and
// believes X-Forwarded-For from loopback, so that tests can come from
// several client addresses (fromAddress). alice has signed up.
func serverLimiting(t *testing.T, action ratelimit.Action, limit ratelimit.Limit) *testServer {
	t.Helper()
	cfg := testConfig(t)
	cfg.RateLimits[action] = limit
	cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	ts := startServer(t, cfg)
	if action != ratelimit.Signup {
		mustDo(t, ts.Client, signupQ, signupVars("alice"), nil)
	}
	return ts
}

func TestSignupRateLimitPerAddress(t *testing.T) {
	ts := serverLimiting(t, ratelimit.Signup, ratelimit.Limit{Rate: 2, Period: time.Hour, Burst: 2})
	a := fromAddress(ts.Client, "203.0.113.1")
	mustDo(t, a, signupQ, signupVars("alice"), nil)
	mustDo(t, a, signupQ, signupVars("bob"), nil)
	e := wantCode(t, a, "RATE_LIMITED", signupQ, signupVars("carol"))
	if retry := retryAfterOf(t, e); retry < 1799 || retry > 1800 {
		t.Fatalf("retryAfter %d, want 1800 (2 an hour)", retry)
	}
	// No account was made: carol cannot log in.
	wantCode(t, ts.Client, "UNAUTHENTICATED", loginQ, loginVars("carol", "password-carol"))
	// Another address signs up.
	mustDo(t, fromAddress(ts.Client, "203.0.113.2"), signupQ, signupVars("carol"), nil)
}

func TestLoginRateLimits(t *testing.T) {
	t.Run("PerLogin", func(t *testing.T) {
		ts := serverLimiting(t, ratelimit.Login, ratelimit.Limit{Rate: 3, Period: time.Hour, Burst: 3})
		mustDo(t, ts.Client, signupQ, signupVars("bob"), nil)
		// A guesser spreads attempts over addresses: the login's limit
		// holds them all.
		for i := range 3 {
			wantCode(t, fromAddress(ts.Client, fmt.Sprintf("203.0.113.%d", i)), "UNAUTHENTICATED", loginQ, loginVars("alice", fmt.Sprintf("guess-%d", i)))
		}
		e := wantCode(t, fromAddress(ts.Client, "203.0.113.9"), "RATE_LIMITED", loginQ, loginVars("alice", "password-alice"))
		retryAfterOf(t, e)
		// Every attempt counts, so the right password waits too, and bob
		// is not affected.
		mustDo(t, ts.Client, loginQ, loginVars("bob", "password-bob"), nil)
	})
	t.Run("PerAddress", func(t *testing.T) {
		ts := serverLimiting(t, ratelimit.LoginAddress, ratelimit.Limit{Rate: 3, Period: time.Hour, Burst: 3})
		// One address tries many logins, real or not.
		a := fromAddress(ts.Client, "2001:db8:1:2::7")
		for _, login := range []string{"alice", "bob", "not a login!"} {
			wantCode(t, a, "UNAUTHENTICATED", loginQ, loginVars(login, "guess"))
		}
		// Another host of the same IPv6 /64 is the same client.
		wantRateLimited(t, fromAddress(ts.Client, "2001:db8:1:2::8"), loginQ, loginVars("alice", "password-alice"))
		mustDo(t, fromAddress(ts.Client, "203.0.113.1"), loginQ, loginVars("alice", "password-alice"), nil)
	})
}

func TestClusterSharesRateLimits(t *testing.T) {
	cl := startClusterWith(t, 2, redisURL(t), func(_ int, cfg *server.Config) {
		cfg.RateLimits[ratelimit.Post] = ratelimit.Limit{Rate: 3, Period: time.Hour, Burst: 3}
	})
	alice := cl.instances[0].user(t, "alice")
	mustDo(t, alice, createRoom, map[string]any{"n": "shared"}, nil)
	for i := range 3 {
		mustDo(t, cl.on(i%2, alice), postMessage, map[string]any{"r": "shared", "c": fmt.Sprintf("post %d", i)}, nil)
	}
	for i := range 2 {
		// 3 an hour: the next post is allowed 20 minutes after the first.
		if retry := wantRateLimited(t, cl.on(i, alice), postMessage, map[string]any{"r": "shared", "c": "one too many"}); retry < 1190 || retry > 1200 {
			t.Fatalf("instance %d: retryAfter %d, want about 1200", i, retry)
		}
	}
	var page messagePage
	mustDo(t, alice, messagesQ, map[string]any{"r": "shared", "n": 20}, &page)
	if n := len(page.Messages.Edges); n != 3 {
		t.Fatalf("%d messages stored, want the 3 allowed", n)
	}
}

func TestRateLimitSettings(t *testing.T) {
	env := map[string]string{
		"CHAT_RATE_POSTS":               "5/m:7",
		"CHAT_RATE_DIRECT_MESSAGES":     "0",
		"CHAT_RATE_LOGINS_PER_ADDRESS":  "100/h",
		"CHAT_TRUSTED_PROXIES":          "10.0.0.0/8, 192.0.2.1",
		"CHAT_RATE_SIGNUPS_PER_ADDRESS": "1/s",
	}
	cfg, err := server.ParseConfig([]string{"-rate-signups-per-address", "2/m"}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	want := ratelimit.DefaultLimits
	want[ratelimit.Post] = ratelimit.Limit{Rate: 5, Period: time.Minute, Burst: 7}
	want[ratelimit.DirectMessage] = ratelimit.Limit{}
	want[ratelimit.LoginAddress] = ratelimit.Limit{Rate: 100, Period: time.Hour, Burst: 100}
	want[ratelimit.Signup] = ratelimit.Limit{Rate: 2, Period: time.Minute, Burst: 2} // the flag wins
	if cfg.RateLimits != want {
		t.Fatalf("limits %v, want %v", cfg.RateLimits, want)
	}
	if fmt.Sprint(cfg.TrustedProxies) != "[10.0.0.0/8 192.0.2.1/32]" {
		t.Fatalf("trusted proxies %v", cfg.TrustedProxies)
	}
	for k, v := range map[string]string{"CHAT_RATE_POSTS": "10/fortnight", "CHAT_TRUSTED_PROXIES": "proxy.example"} {
		if _, err := server.ParseConfig(nil, func(key string) string { return map[string]string{k: v}[key] }); err == nil {
			t.Errorf("%s=%s accepted", k, v)
		}
	}
}
