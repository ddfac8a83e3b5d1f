package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/server"
	"github.com/killrchat/chatql/store"
)

const (
	loginQ          = `mutation($l: String!, $p: String!) { login(login: $l, password: $p) { token expiresAt refreshToken refreshExpiresAt user { login } } }`
	refreshQ        = `mutation($t: String!) { refreshToken(token: $t) { token expiresAt refreshToken refreshExpiresAt user { login } } }`
	refreshRetryQ   = `mutation($t: String!, $id: String) { refreshToken(token: $t, clientRefreshId: $id) { token refreshToken user { login } } }`
	logoutQ         = `mutation { logout }`
	changePasswordQ = `mutation($o: String!, $n: String!) { changePassword(oldPassword: $o, newPassword: $n) }`
)

type authPayload struct {
	Token, RefreshToken         string
	ExpiresAt, RefreshExpiresAt time.Time
	User                        struct{ Login string }
}

// login logs login in with password and returns the session's tokens.
func login(t *testing.T, ts *testServer, login, password string) authPayload {
	t.Helper()
	var out struct{ Login authPayload }
	mustDo(t, ts.Client, loginQ, map[string]any{"l": login, "p": password}, &out)
	return out.Login
}

func refresh(t *testing.T, ts *testServer, token string) authPayload {
	t.Helper()
	var out struct{ RefreshToken authPayload }
	mustDo(t, ts.Client, refreshQ, map[string]any{"t": token}, &out)
	return out.RefreshToken
}

// wantMe checks whether token is accepted by me.
func wantMe(t *testing.T, ts *testServer, token string, accepted bool) {
	t.Helper()
	if accepted {
		mustDo(t, ts.Client.WithToken(token), myRooms, nil, nil)
		return
	}
	wantCode(t, ts.Client.WithToken(token), "UNAUTHENTICATED", myRooms, nil)
}

func TestSessions(t *testing.T) { forEachStore(t, testSessions) }

func testSessions(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	ts.user(t, "alice")

	t.Run("LoginAndRefresh", func(t *testing.T) {
		p0 := login(t, ts, "alice", "password-alice")
		if p0.Token == "" || p0.RefreshToken == "" || p0.User.Login != "alice" ||
			!p0.ExpiresAt.After(time.Now()) || !p0.RefreshExpiresAt.After(p0.ExpiresAt) {
			t.Fatalf("login = %+v, want an access token expiring before its refresh token", p0)
		}
		wantMe(t, ts, p0.Token, true)
		p1 := refresh(t, ts, p0.RefreshToken)
		if p1.RefreshToken == p0.RefreshToken || p1.User.Login != "alice" {
			t.Fatalf("refreshToken = %+v, want a new refresh token of alice", p1)
		}
		wantMe(t, ts, p1.Token, true)
		p2 := refresh(t, ts, p1.RefreshToken)
		wantMe(t, ts, p2.Token, true)
	})

	t.Run("ReuseRevokesFamily", func(t *testing.T) {
		other := login(t, ts, "alice", "password-alice")
		p0 := login(t, ts, "alice", "password-alice")
		p1 := refresh(t, ts, p0.RefreshToken)
		wantCode(t, ts.Client, "UNAUTHENTICATED", refreshQ, map[string]any{"t": p0.RefreshToken})
		wantMe(t, ts, p1.Token, false)
		wantCode(t, ts.Client, "UNAUTHENTICATED", refreshQ, map[string]any{"t": p1.RefreshToken})
		wantMe(t, ts, other.Token, true)
		wantCode(t, ts.Client, "UNAUTHENTICATED", refreshQ, map[string]any{"t": "not-a-refresh-token"})
	})

	t.Run("RetriedRefresh", func(t *testing.T) {
		// The client lost the answer of its refresh and sends it again,
		// with the same clientRefreshId: same pair, same session. Another
		// id, or none, is a reuse.
		const id = "0b9c4f1e-5d2a-4c1e-9f0a-6b7d8e9f0a1b"
		p0 := login(t, ts, "alice", "password-alice")
		var first, again struct{ RefreshToken authPayload }
		mustDo(t, ts.Client, refreshRetryQ, map[string]any{"t": p0.RefreshToken, "id": id}, &first)
		mustDo(t, ts.Client, refreshRetryQ, map[string]any{"t": p0.RefreshToken, "id": id}, &again)
		if again.RefreshToken.RefreshToken != first.RefreshToken.RefreshToken || again.RefreshToken.User.Login != "alice" {
			t.Fatalf("retried refresh = %+v, want the first answer's refresh token %q", again.RefreshToken, first.RefreshToken.RefreshToken)
		}
		wantMe(t, ts, again.RefreshToken.Token, true)
		refresh(t, ts, again.RefreshToken.RefreshToken)

		stolen := login(t, ts, "alice", "password-alice")
		mustDo(t, ts.Client, refreshRetryQ, map[string]any{"t": stolen.RefreshToken, "id": id}, &first)
		wantCode(t, ts.Client, "UNAUTHENTICATED", refreshRetryQ, map[string]any{"t": stolen.RefreshToken, "id": "a-thief-guessing-0000"})
		wantMe(t, ts, first.RefreshToken.Token, false)

		wantCode(t, ts.Client, "BAD_USER_INPUT", refreshRetryQ, map[string]any{"t": p0.RefreshToken, "id": "short"})
	})

	t.Run("Logout", func(t *testing.T) {
		p := login(t, ts, "alice", "password-alice")
		other := login(t, ts, "alice", "password-alice")
		mustDo(t, ts.Client.WithToken(p.Token), logoutQ, nil, nil)
		wantMe(t, ts, p.Token, false)
		wantCode(t, ts.Client, "UNAUTHENTICATED", refreshQ, map[string]any{"t": p.RefreshToken})
		wantMe(t, ts, other.Token, true)
		wantCode(t, ts.Client, "UNAUTHENTICATED", logoutQ, nil)
	})

	t.Run("ChangePassword", func(t *testing.T) {
		ts.user(t, "carol")
		mine := login(t, ts, "carol", "password-carol")
		theirs := login(t, ts, "carol", "password-carol")
		me := ts.Client.WithToken(mine.Token)
		wantCode(t, me, "UNAUTHENTICATED", changePasswordQ, map[string]any{"o": "wrong-password", "n": "new-password"})
		wantCode(t, me, "BAD_USER_INPUT", changePasswordQ, map[string]any{"o": "password-carol", "n": "short"})
		mustDo(t, me, changePasswordQ, map[string]any{"o": "password-carol", "n": "new-password"}, nil)
		wantMe(t, ts, mine.Token, true)
		refresh(t, ts, mine.RefreshToken)
		wantMe(t, ts, theirs.Token, false)
		wantCode(t, ts.Client, "UNAUTHENTICATED", refreshQ, map[string]any{"t": theirs.RefreshToken})
		wantCode(t, ts.Client, "UNAUTHENTICATED", loginQ, map[string]any{"l": "carol", "p": "password-carol"})
		login(t, ts, "carol", "new-password")
	})
}

// TestNonexistentLoginRefused presents well-signed tokens of a login that
// does not exist (as the server's own secret signs them): without a
// session, and with a made-up one. Every entry point refuses them.
func TestNonexistentLoginRefused(t *testing.T) { forEachStore(t, testNonexistentLoginRefused) }

func testNonexistentLoginRefused(t *testing.T, cfg server.Config) {
	cfg.JWTSecret = strings.Repeat("s", 32)
	ts := startServer(t, cfg)
	ts.user(t, "bob")
	alice := ts.user(t, "alice")
	mustDo(t, alice, createRoom, map[string]any{"n": "open"}, nil)
	tokens, err := auth.NewTokens([]byte(cfg.JWTSecret), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ghost := store.UserRef{Login: "ghost", Firstname: "G", Lastname: "Host"}
	noSession, _, err := tokens.Issue(ghost)
	if err != nil {
		t.Fatal(err)
	}
	madeUp, _, err := tokens.IssueFor(ghost, "made-up-session")
	if err != nil {
		t.Fatal(err)
	}
	for name, token := range map[string]string{"NoSession": noSession, "MadeUpSession": madeUp} {
		t.Run(name, func(t *testing.T) {
			c := ts.Client.WithToken(token)
			wantCode(t, c, "UNAUTHENTICATED", myRooms, nil)
			wantCode(t, c, "UNAUTHENTICATED", postMessage, map[string]any{"r": "open", "c": "boo"})
			wantCode(t, c, "UNAUTHENTICATED", `mutation($to: String!, $c: String!) { sendDirectMessage(to: $to, content: $c) { id } }`,
				map[string]any{"to": "bob", "c": "boo"})
			sub, err := c.Subscribe(testContext(t), chatclient.GraphQLTransportWS, roomEvents, map[string]any{"r": "open"})
			if err == nil {
				sub.Close()
				t.Fatal("websocket connection_init with the token was accepted")
			}
			if code := websocket.CloseStatus(err); code != 4401 {
				t.Fatalf("websocket connection_init: %v (close status %d), want close 4401", err, code)
			}
		})
	}
}

// wantClosed4401 reads the subscription until the server closes it, which
// must be with 4401.
func wantClosed4401(t *testing.T, sub *chatclient.Subscription) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for {
		_, err := sub.Next(ctx)
		if err == nil {
			continue
		}
		// Not an UNAUTHENTICATED error of the operation first, even when
		// its stream, which watches the session too, tells first: clients
		// take an operation's error as final, but reconnect after 4401.
		if code := websocket.CloseStatus(err); code != 4401 {
			t.Fatalf("subscription ended with %v (close status %d), want close 4401", err, code)
		}
		return
	}
}

// TestStreamsEndWithSession: an open websocket subscription is closed with
// 4401 when its session is logged out, on the same instance or on another
// one (within CHAT_SESSION_CHECK), and when its access token expires; an
// SSE stream ends with an UNAUTHENTICATED error.
func TestStreamsEndWithSession(t *testing.T) { forEachStore(t, testStreamsEndWithSession) }

func testStreamsEndWithSession(t *testing.T, cfg server.Config) {
	cfg.JWTSecret = strings.Repeat("s", 32)
	cfg.SessionCheck = 100 * time.Millisecond
	ts := startServer(t, cfg)
	alice := ts.user(t, "alice")
	mustDo(t, alice, createRoom, map[string]any{"n": "live"}, nil)

	t.Run("LogoutSameInstance", func(t *testing.T) {
		p := login(t, ts, "alice", "password-alice")
		c := ts.Client.WithToken(p.Token)
		sub := ts.subscribe(t, c, chatclient.GraphQLTransportWS, "live", nil)
		mustDo(t, c, logoutQ, nil, nil)
		wantClosed4401(t, sub)
	})

	t.Run("LogoutOtherInstance", func(t *testing.T) {
		other, err := server.NewOnStore(context.Background(), cfg, testLogger(), ts.Store())
		if err != nil {
			t.Fatal(err)
		}
		ots := serve(t, other)
		p := login(t, ts, "alice", "password-alice")
		sub := ots.subscribe(t, ots.Client.WithToken(p.Token), chatclient.GraphQLWS, "live", nil)
		mustDo(t, ts.Client.WithToken(p.Token), logoutQ, nil, nil)
		wantClosed4401(t, sub)
	})

	t.Run("Expiry", func(t *testing.T) {
		short := cfg
		short.TokenTTL = 2 * time.Second
		short.DataDir = t.TempDir()
		sts, err := server.NewOnStore(context.Background(), short, testLogger(), ts.Store())
		if err != nil {
			t.Fatal(err)
		}
		s := serve(t, sts)
		p := login(t, s, "alice", "password-alice")
		sub := s.subscribe(t, s.Client.WithToken(p.Token), chatclient.GraphQLTransportWS, "live", nil)
		wantClosed4401(t, sub)
	})

	t.Run("SSE", func(t *testing.T) {
		p := login(t, ts, "alice", "password-alice")
		resp := ts.openSSE(t, p.Token, `subscription { roomEvents(room: \"live\") { kind } }`)
		mustDo(t, ts.Client.WithToken(p.Token), logoutQ, nil, nil)
		var buf []byte
		chunk := make([]byte, 1024)
		for !strings.Contains(string(buf), "event: complete") {
			n, err := resp.Body.Read(chunk)
			buf = append(buf, chunk[:n]...)
			if err != nil {
				break
			}
		}
		if !strings.Contains(string(buf), `"UNAUTHENTICATED"`) || !strings.Contains(string(buf), "event: complete") {
			t.Fatalf("SSE stream after logout = %q, want an UNAUTHENTICATED error, then complete", buf)
		}
	})
}

// TestSignupsDoNotStarveHealthz runs many concurrent signups: each succeeds
// or is refused RATE_LIMITED, /healthz keeps answering, and no more
// password hashes than cores ever ran at once.
func TestSignupsDoNotStarveHealthz(t *testing.T) {
	ts := startServer(t, testConfig(t))
	const n = 300
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			errs[i] = ts.Client.Do(testContext(t), `mutation($in: SignupInput!) { signup(input: $in) { login } }`,
				map[string]any{"in": map[string]any{"login": fmt.Sprintf("user%03d", i), "password": "password", "firstname": "F", "lastname": "L"}}, nil)
		})
	}
	healthz := strings.TrimSuffix(ts.URL, "/query") + "/healthz"
	for range 20 {
		resp, err := http.Get(healthz)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("/healthz during signups: %v %v", resp, err)
		}
		resp.Body.Close()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil && !isCode(err, "RATE_LIMITED") {
			t.Errorf("signup %d: %v, want success or RATE_LIMITED", i, err)
		}
	}
	if peak, limit := ts.Passwords().PeakRunning(), runtime.GOMAXPROCS(0); peak > limit {
		t.Errorf("%d password hashes ran at once, want at most %d", peak, limit)
	}
	var errsCoded chatclient.Errors
	for _, err := range errs {
		if errors.As(err, &errsCoded) && errsCoded[0].Extensions["retryAfter"] == nil {
			t.Errorf("RATE_LIMITED without retryAfter: %v", errsCoded)
			break
		}
	}
}
