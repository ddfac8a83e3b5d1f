package e2e

import (
	"bytes"
	"encoding/base64"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/server"
)

const (
	twoFactorQ        = `{ twoFactor { enabled recoveryCodesLeft } }`
	beginTwoFactorQ   = `mutation($p: String!) { beginTwoFactor(password: $p) { secret uri qrCode } }`
	confirmTwoFactorQ = `mutation($c: String!) { confirmTwoFactor(code: $c) }`
	disableTwoFactorQ = `mutation($c: String!) { disableTwoFactor(code: $c) }`
	verifyTwoFactorQ  = `mutation($ch: String!, $c: String!) { verifyTwoFactor(challenge: $ch, code: $c) { token refreshToken user { login } } }`
)

type twoFactorStatus struct {
	Enabled           bool
	RecoveryCodesLeft int
}

func twoFactorOf(t *testing.T, c *chatclient.Client) twoFactorStatus {
	t.Helper()
	var out struct{ TwoFactor twoFactorStatus }
	mustDo(t, c, twoFactorQ, nil, &out)
	return out.TwoFactor
}

// totpAt is secret's code at now plus steps periods of 30 s.
func totpAt(t *testing.T, secret string, steps int) string {
	t.Helper()
	code, err := auth.TOTPCode(secret, time.Now().Add(time.Duration(steps)*30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// challengeOf runs query, which must answer TWO_FACTOR_REQUIRED, and
// returns its challenge.
func challengeOf(t *testing.T, c *chatclient.Client, query string, vars map[string]any) string {
	t.Helper()
	e := wantCode(t, c, "TWO_FACTOR_REQUIRED", query, vars)
	ch, _ := e.Extensions["challenge"].(string)
	exp, _ := e.Extensions["challengeExpiresAt"].(string)
	if ch == "" || exp == "" {
		t.Fatalf("%s: TWO_FACTOR_REQUIRED without a challenge: %+v", query, e)
	}
	return ch
}

func verify(t *testing.T, ts *testServer, challenge, code string) authPayload {
	t.Helper()
	var out struct{ VerifyTwoFactor authPayload }
	mustDo(t, ts.Client, verifyTwoFactorQ, map[string]any{"ch": challenge, "c": code}, &out)
	return out.VerifyTwoFactor
}

// TestTwoFactor: a user turns TOTP two-factor sign-in on (confirmed by a
// code); login then needs a code, given with the challenge it answers; a
// session that began before must give one at its next refresh, the one
// that turned it on need not; each code and recovery code works once; a
// code is needed to turn it off.
func TestTwoFactor(t *testing.T) { forEachStore(t, testTwoFactor) }

func testTwoFactor(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	ts.user(t, "alice")
	before := login(t, ts, "alice", "password-alice") // a session that began without a code
	mine := login(t, ts, "alice", "password-alice")
	me := ts.Client.WithToken(mine.Token)

	if got := twoFactorOf(t, me); got.Enabled {
		t.Fatalf("twoFactor of a new user = %+v, want off", got)
	}
	wantCode(t, me, "UNAUTHENTICATED", beginTwoFactorQ, map[string]any{"p": "wrong-password"})
	wantCode(t, me, "NOT_FOUND", confirmTwoFactorQ, map[string]any{"c": "123456"})
	var begun struct {
		BeginTwoFactor struct{ Secret, URI, QRCode string }
	}
	mustDo(t, me, beginTwoFactorQ, map[string]any{"p": "password-alice"}, &begun)
	secret := begun.BeginTwoFactor.Secret
	if secret == "" || begun.BeginTwoFactor.URI == "" {
		t.Fatalf("beginTwoFactor = %+v, want a key", begun)
	}
	qr, ok := strings.CutPrefix(begun.BeginTwoFactor.QRCode, "data:image/png;base64,")
	if raw, err := base64.StdEncoding.DecodeString(qr); !ok || err != nil {
		t.Errorf("the key's qrCode %.40q is not a data: URL of a PNG", begun.BeginTwoFactor.QRCode)
	} else if img, err := png.Decode(bytes.NewReader(raw)); err != nil || img.Bounds().Dx() != 256 {
		t.Errorf("the key's QR code: %v, %v; want a PNG 256 pixels wide", err, img)
	}
	// Not on until confirmed: login needs no code yet.
	login(t, ts, "alice", "password-alice")
	wantCode(t, me, "UNAUTHENTICATED", confirmTwoFactorQ, map[string]any{"c": "000000"})
	var confirmed struct{ ConfirmTwoFactor []string }
	confirmCode := totpAt(t, secret, -1)
	mustDo(t, me, confirmTwoFactorQ, map[string]any{"c": confirmCode}, &confirmed)
	recovery := confirmed.ConfirmTwoFactor
	if len(recovery) != 10 {
		t.Fatalf("confirmTwoFactor = %v, want 10 recovery codes", recovery)
	}
	if got := twoFactorOf(t, me); !got.Enabled || got.RecoveryCodesLeft != 10 {
		t.Errorf("twoFactor = %+v, want on with 10 recovery codes", got)
	}
	wantCode(t, me, "CONFLICT", beginTwoFactorQ, map[string]any{"p": "password-alice"})

	// The session that turned it on refreshes without a code.
	mine = refresh(t, ts, mine.RefreshToken)
	me = ts.Client.WithToken(mine.Token)

	// A password alone no longer signs in: the challenge needs a code.
	challenge := challengeOf(t, ts.Client, loginQ, map[string]any{"l": "alice", "p": "password-alice"})
	wantCode(t, ts.Client, "UNAUTHENTICATED", verifyTwoFactorQ, map[string]any{"ch": challenge, "c": "000000"})
	wantCode(t, ts.Client, "UNAUTHENTICATED", verifyTwoFactorQ, map[string]any{"ch": challenge + "x", "c": totpAt(t, secret, 0)})
	// The code confirmTwoFactor used is spent. (The same code: computed
	// again, a step later, it would be the next step's, never used.)
	wantCode(t, ts.Client, "UNAUTHENTICATED", verifyTwoFactorQ, map[string]any{"ch": challenge, "c": confirmCode})
	code := totpAt(t, secret, 0)
	signedIn := verify(t, ts, challenge, code)
	wantMe(t, ts, signedIn.Token, true)
	refresh(t, ts, signedIn.RefreshToken) // it proved a code: no challenge

	// The session from before must give a code to refresh; the code just
	// used does not work twice.
	rch := challengeOf(t, ts.Client, refreshQ, map[string]any{"t": before.RefreshToken})
	wantCode(t, ts.Client, "UNAUTHENTICATED", verifyTwoFactorQ, map[string]any{"ch": rch, "c": code})
	resumed := verify(t, ts, rch, totpAt(t, secret, 1))
	wantMe(t, ts, resumed.Token, true)
	refresh(t, ts, resumed.RefreshToken)
	// The refresh token the challenge held back is used up.
	wantCode(t, ts.Client, "UNAUTHENTICATED", refreshQ, map[string]any{"t": before.RefreshToken})

	// A recovery code signs in once.
	challenge = challengeOf(t, ts.Client, loginQ, map[string]any{"l": "alice", "p": "password-alice"})
	verify(t, ts, challenge, recovery[0])
	wantCode(t, ts.Client, "UNAUTHENTICATED", verifyTwoFactorQ, map[string]any{"ch": challenge, "c": recovery[0]})
	if got := twoFactorOf(t, me); got.RecoveryCodesLeft != 9 {
		t.Errorf("twoFactor after a recovery code = %+v, want 9 left", got)
	}

	// Sessions show which proved a code: the one that turned it on and the
	// two sign-ins that gave one; not the two that began before and never
	// did (the one that gave a code at its refresh was revoked since, its
	// old refresh token having been used again).
	proved := 0
	for _, s := range listSessions(t, me) {
		if s.TwoFactor {
			proved++
		}
		if s.Current && !s.TwoFactor {
			t.Errorf("the session that turned two-factor sign-in on shows %+v, want twoFactor", s)
		}
	}
	if proved != 3 {
		t.Errorf("%d sessions show twoFactor, want 3", proved)
	}

	// Turning it off needs a code.
	wantCode(t, me, "UNAUTHENTICATED", disableTwoFactorQ, map[string]any{"c": "000000"})
	mustDo(t, me, disableTwoFactorQ, map[string]any{"c": recovery[1]}, nil)
	if got := twoFactorOf(t, me); got.Enabled {
		t.Errorf("twoFactor after disableTwoFactor = %+v, want off", got)
	}
	wantCode(t, me, "NOT_FOUND", disableTwoFactorQ, map[string]any{"c": recovery[2]})
	login(t, ts, "alice", "password-alice")
	// A challenge of before is void once two-factor sign-in is off.
	wantCode(t, ts.Client, "UNAUTHENTICATED", verifyTwoFactorQ, map[string]any{"ch": challenge, "c": recovery[3]})
}

// TestTwoFactorCodesRateLimited: codes tried for one login are counted,
// right or wrong, so that six digits cannot be guessed.
func TestTwoFactorCodesRateLimited(t *testing.T) {
	cfg := testConfig(t)
	cfg.RateLimits[ratelimit.SecondFactor] = ratelimit.Limit{Rate: 3, Period: time.Hour, Burst: 3}
	ts := startServer(t, cfg)
	ts.user(t, "bob")
	p := login(t, ts, "bob", "password-bob")
	me := ts.Client.WithToken(p.Token)
	var begun struct{ BeginTwoFactor struct{ Secret string } }
	mustDo(t, me, beginTwoFactorQ, map[string]any{"p": "password-bob"}, &begun)
	mustDo(t, me, confirmTwoFactorQ, map[string]any{"c": totpAt(t, begun.BeginTwoFactor.Secret, 0)}, nil)
	challenge := challengeOf(t, ts.Client, loginQ, map[string]any{"l": "bob", "p": "password-bob"})
	wantCode(t, ts.Client, "UNAUTHENTICATED", verifyTwoFactorQ, map[string]any{"ch": challenge, "c": "000000"})
	wantCode(t, ts.Client, "UNAUTHENTICATED", verifyTwoFactorQ, map[string]any{"ch": challenge, "c": "111111"})
	e := wantCode(t, ts.Client, "RATE_LIMITED", verifyTwoFactorQ, map[string]any{"ch": challenge, "c": totpAt(t, begun.BeginTwoFactor.Secret, 1)})
	if e.Extensions["retryAfter"] == nil {
		t.Errorf("RATE_LIMITED without retryAfter: %+v", e)
	}
}
