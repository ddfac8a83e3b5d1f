package e2e

import (
	"testing"
	"time"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/server"
)

const (
	loginDeviceQ = `mutation($l: String!, $p: String!, $d: String) { login(login: $l, password: $p, device: $d) { token refreshToken user { login } } }`
	sessionsQ    = `{ sessions { id device address signInMethod twoFactor createdAt lastSeenAt expiresAt current } }`
	endSessionQ  = `mutation($id: ID!) { endSession(id: $id) }`
)

type sessionView struct {
	ID, Device, Address, SignInMethod string
	TwoFactor, Current                bool
	CreatedAt, LastSeenAt, ExpiresAt  time.Time
}

func loginDevice(t *testing.T, ts *testServer, login, password, device string) authPayload {
	t.Helper()
	var out struct{ Login authPayload }
	mustDo(t, ts.Client, loginDeviceQ, map[string]any{"l": login, "p": password, "d": device}, &out)
	return out.Login
}

func listSessions(t *testing.T, c *chatclient.Client) []sessionView {
	t.Helper()
	var out struct{ Sessions []sessionView }
	mustDo(t, c, sessionsQ, nil, &out)
	return out.Sessions
}

// TestDevices: a user lists their sessions (named, with the address, the
// way they signed in and when each was last seen: its refresh), and ends
// one of them, whose websocket closes at once, as logout's does; another
// user's session, or an ended one, is NOT_FOUND.
func TestDevices(t *testing.T) { forEachStore(t, testDevices) }

func testDevices(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	mustDo(t, ts.user(t, "alice"), createRoom, map[string]any{"n": "devices"}, nil)
	ts.user(t, "bob")

	laptop := loginDevice(t, ts, "alice", "password-alice", "Alice's laptop")
	phone := loginDevice(t, ts, "alice", "password-alice", "")
	me := ts.Client.WithToken(laptop.Token)

	got := listSessions(t, me)
	if len(got) != 3 { // and the session ts.user started
		t.Fatalf("sessions = %+v, want the phone's, the laptop's and the first", got)
	}
	// The phone signed in last: it comes first.
	if got[0].Device != "Go-http-client/1.1" || got[0].Current || got[1].Device != "Alice's laptop" || !got[1].Current {
		t.Errorf("sessions = %+v, want the phone's (named after its User-Agent) then the laptop's (current)", got)
	}
	for _, s := range got {
		if s.Address != "127.0.0.1" || s.SignInMethod != "PASSWORD" || s.TwoFactor ||
			s.LastSeenAt.Before(s.CreatedAt) || !s.ExpiresAt.After(s.LastSeenAt) {
			t.Errorf("session %+v: want a password sign-in from 127.0.0.1, seen since it began", s)
		}
	}
	laptopID := got[1].ID

	// A refresh is the laptop's "last seen": it moves to the front.
	laptop = refresh(t, ts, laptop.RefreshToken)
	me = ts.Client.WithToken(laptop.Token)
	got = listSessions(t, me)
	if got[0].ID != laptopID || !got[0].LastSeenAt.After(got[0].CreatedAt) {
		t.Errorf("sessions after the laptop's refresh = %+v, want the laptop's first, seen after it began", got)
	}
	phoneID := got[1].ID

	// Ending the phone's session from the laptop closes the phone's
	// websocket, and its tokens stop working.
	sub := ts.subscribe(t, ts.Client.WithToken(phone.Token), chatclient.GraphQLTransportWS, "devices", nil)
	mustDo(t, me, endSessionQ, map[string]any{"id": phoneID}, nil)
	wantClosed4401(t, sub)
	wantMe(t, ts, phone.Token, false)
	wantCode(t, ts.Client, "UNAUTHENTICATED", refreshQ, map[string]any{"t": phone.RefreshToken})
	if got := listSessions(t, me); len(got) != 2 || got[0].ID != laptopID {
		t.Errorf("sessions after ending the phone's = %+v, want the laptop's and the first", got)
	}
	wantCode(t, me, "NOT_FOUND", endSessionQ, map[string]any{"id": phoneID})

	// Bob cannot see or end Alice's sessions.
	bob := login(t, ts, "bob", "password-bob")
	bc := ts.Client.WithToken(bob.Token)
	if got := listSessions(t, bc); len(got) != 2 || got[0].ID == laptopID || got[1].ID == laptopID {
		t.Errorf("bob's sessions = %+v, want his own", got)
	}
	wantCode(t, bc, "NOT_FOUND", endSessionQ, map[string]any{"id": laptopID})
	wantMe(t, ts, laptop.Token, true)

	long := make([]rune, 65)
	for i := range long {
		long[i] = 'x'
	}
	wantCode(t, ts.Client, "BAD_USER_INPUT", loginDeviceQ, map[string]any{"l": "alice", "p": "password-alice", "d": string(long)})
	wantCode(t, ts.Client, "UNAUTHENTICATED", sessionsQ, nil)

	// Ending one's own session is logging out.
	mustDo(t, me, endSessionQ, map[string]any{"id": laptopID}, nil)
	wantMe(t, ts, laptop.Token, false)
}
