package e2e

import (
	"testing"
	"time"

	"github.com/killrchat/chatql/chat"
	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/server"
	"github.com/killrchat/chatql/store"
)

const (
	hasPasswordQ        = `{ me { hasPassword } }`
	setPasswordQ        = `mutation($p: String!) { setPassword(password: $p) }`
	unlinkOIDCQ         = `mutation($i: String!, $s: String!) { unlinkOidcIdentity(issuer: $i, subject: $s) }`
	deleteAccountProofQ = `mutation($p: String, $c: String) { deleteAccount(password: $p, code: $c) }`
	regenerateCodesQ    = `mutation($c: String) { regenerateRecoveryCodes(code: $c) }`
)

func hasPassword(t *testing.T, c *chatclient.Client) bool {
	t.Helper()
	var out struct{ Me struct{ HasPassword bool } }
	mustDo(t, c, hasPasswordQ, nil, &out)
	return out.Me.HasPassword
}

// oidcServer is a server signing in at a fresh provider.
func oidcServer(t *testing.T, cfg server.Config) (*testServer, *oidcProvider) {
	prov := newOIDCProvider(t)
	cfg.OIDC.Issuer, cfg.OIDC.ClientID, cfg.OIDC.ClientSecret = prov.URL, oidcClientID, oidcClientSecret
	cfg.OIDC.RedirectURL = "http://localhost:1/?oidc"
	return startServer(t, cfg), prov
}

// TestSignInWays: an account made by single sign-on has no password:
// changePassword and beginTwoFactor say so, its only identity cannot be
// unlinked, and a fresh sign-in lets it set a first password (once), after
// which the identity may go; such an account is deleted on the proof of a
// fresh sign-in, a password account on its password or a code, never on a
// password session alone.
func TestSignInWays(t *testing.T) { forEachStore(t, testSignInWays) }

func testSignInWays(t *testing.T, cfg server.Config) {
	ts, prov := oidcServer(t, cfg)
	ts.user(t, "alice")

	prov.signInAs(map[string]any{"sub": "carol-1", "preferred_username": "carol"}, false)
	carol := signInAtProvider(t, ts)
	cc := ts.Client.WithToken(carol.Token)
	if hasPassword(t, cc) {
		t.Fatal("an account made by single sign-on has a password")
	}
	wantCode(t, cc, "CONFLICT", changePasswordQ, map[string]any{"o": "anything-at-all", "n": "a-new-password"})
	wantCode(t, cc, "CONFLICT", beginTwoFactorQ, map[string]any{"p": "anything-at-all"})
	wantCode(t, cc, "CONFLICT", deleteAccountProofQ, map[string]any{"p": "anything-at-all"})
	wantCode(t, cc, "NOT_FOUND", unlinkOIDCQ, map[string]any{"i": prov.URL, "s": "someone-else"})
	// Her identity is her only way in.
	wantCode(t, cc, "CONFLICT", unlinkOIDCQ, map[string]any{"i": prov.URL, "s": "carol-1"})

	// A fresh sign-in sets her first password, once.
	e := wantCode(t, cc, "BAD_USER_INPUT", setPasswordQ, map[string]any{"p": "short"})
	if e.Extensions["field"] != "password" {
		t.Errorf("setPassword of a short one: %+v, want extensions.field password", e)
	}
	mustDo(t, cc, setPasswordQ, map[string]any{"p": "carols-password"}, nil)
	if !hasPassword(t, cc) {
		t.Error("hasPassword after setPassword = false")
	}
	wantCode(t, cc, "CONFLICT", setPasswordQ, map[string]any{"p": "another-password"})
	wantMe(t, ts, login(t, ts, "carol", "carols-password").Token, true)
	wantMe(t, ts, carol.Token, true) // her session goes on

	// With a password, her identity may go: it signs her in no more.
	mustDo(t, cc, unlinkOIDCQ, map[string]any{"i": prov.URL, "s": "carol-1"}, nil)
	var ids struct{ Identities []struct{ Subject string } }
	mustDo(t, cc, identitiesQ, nil, &ids)
	if len(ids.Identities) != 0 {
		t.Errorf("identities after unlinking = %+v, want none", ids.Identities)
	}
	wantCode(t, cc, "NOT_FOUND", unlinkOIDCQ, map[string]any{"i": prov.URL, "s": "carol-1"})
	if got := signInAtProvider(t, ts); got.User.Login == "carol" {
		t.Error("an unlinked identity still signs carol in")
	}
	// She links another, signed in.
	prov.signInAs(map[string]any{"sub": "carol-2"}, false)
	f, c, s := atProvider(t, ts)
	mustDo(t, cc, linkOIDCQ, map[string]any{"f": f, "c": c, "s": s}, nil)

	// Dave, made by single sign-on, deletes his account on the proof of
	// his fresh sign-in there.
	prov.signInAs(map[string]any{"sub": "dave-1", "preferred_username": "dave"}, false)
	dave := signInAtProvider(t, ts)
	mustDo(t, ts.Client.WithToken(dave.Token), deleteAccountProofQ, nil, nil)
	wantMe(t, ts, dave.Token, false)

	// Alice's password session is no proof: she gives her password.
	a := login(t, ts, "alice", "password-alice")
	ac := ts.Client.WithToken(a.Token)
	wantCode(t, ac, "FRESH_SIGN_IN_REQUIRED", deleteAccountProofQ, nil)
	wantCode(t, ac, "UNAUTHENTICATED", deleteAccountProofQ, map[string]any{"p": "wrong-password"})
	wantCode(t, ac, "NOT_FOUND", deleteAccountProofQ, map[string]any{"c": "123456"}) // no two-factor sign-in
	mustDo(t, ac, deleteAccountProofQ, map[string]any{"p": "password-alice"}, nil)
	wantMe(t, ts, a.Token, false)
}

// TestRecoveryCodesRegenerated: a user with two-factor sign-in regenerates
// their recovery codes, with a code or on the proof of a fresh sign-in
// with two factors: the old codes stop working and the new ones work; a
// session that proved no second factor, a wrong code, or a user without
// two-factor sign-in are refused. A recovery code proves the account to
// deleteAccount.
func TestRecoveryCodesRegenerated(t *testing.T) { forEachStore(t, testRecoveryCodesRegenerated) }

func testRecoveryCodesRegenerated(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	ts.user(t, "alice")
	ts.user(t, "bob")
	b := ts.Client.WithToken(login(t, ts, "bob", "password-bob").Token)
	wantCode(t, b, "NOT_FOUND", regenerateCodesQ, nil)
	wantCode(t, b, "NOT_FOUND", regenerateCodesQ, map[string]any{"c": "123456"})

	before := ts.Client.WithToken(login(t, ts, "alice", "password-alice").Token) // proved no second factor
	me := ts.Client.WithToken(login(t, ts, "alice", "password-alice").Token)
	var key struct{ BeginTwoFactor struct{ Secret string } }
	mustDo(t, me, beginTwoFactorQ, map[string]any{"p": "password-alice"}, &key)
	secret := key.BeginTwoFactor.Secret
	var confirmed struct{ ConfirmTwoFactor []string }
	mustDo(t, me, confirmTwoFactorQ, map[string]any{"c": totpAt(t, secret, 0)}, &confirmed)
	first := confirmed.ConfirmTwoFactor

	wantCode(t, before, "FRESH_SIGN_IN_REQUIRED", regenerateCodesQ, nil)
	wantCode(t, me, "UNAUTHENTICATED", regenerateCodesQ, map[string]any{"c": "000000"})
	// The session that turned it on proved a code moments ago.
	var out struct{ RegenerateRecoveryCodes []string }
	mustDo(t, me, regenerateCodesQ, nil, &out)
	second := out.RegenerateRecoveryCodes
	if len(second) != chat.RecoveryCodes || second[0] == first[0] {
		t.Fatalf("regenerated codes = %v, want %d new ones", second, chat.RecoveryCodes)
	}
	if got := twoFactorOf(t, me); got.RecoveryCodesLeft != chat.RecoveryCodes {
		t.Errorf("twoFactor after regenerating = %+v, want %d codes left", got, chat.RecoveryCodes)
	}
	// With a code of the app, from any session.
	var again struct{ RegenerateRecoveryCodes []string }
	mustDo(t, before, regenerateCodesQ, map[string]any{"c": totpAt(t, secret, 1)}, &again)
	third := again.RegenerateRecoveryCodes
	for _, old := range []string{first[1], second[1]} {
		ch := challengeOf(t, ts.Client, loginQ, map[string]any{"l": "alice", "p": "password-alice"})
		wantCode(t, ts.Client, "UNAUTHENTICATED", verifyTwoFactorQ, map[string]any{"ch": ch, "c": old})
	}
	ch := challengeOf(t, ts.Client, loginQ, map[string]any{"l": "alice", "p": "password-alice"})
	signedIn := verify(t, ts, ch, third[0])
	if got := twoFactorOf(t, me); got.RecoveryCodesLeft != chat.RecoveryCodes-1 {
		t.Errorf("twoFactor after a recovery code = %+v, want %d left", got, chat.RecoveryCodes-1)
	}

	// A recovery code proves the account to deleteAccount, once.
	wantCode(t, me, "UNAUTHENTICATED", deleteAccountProofQ, map[string]any{"c": third[0]})
	mustDo(t, me, deleteAccountProofQ, map[string]any{"c": third[1]}, nil)
	wantMe(t, ts, signedIn.Token, false)
}

// TestFreshSignInRequired: a sign-in more than chat.FreshSignIn ago
// proves nothing: setPassword, deleteAccount and regenerateRecoveryCodes
// with no code answer FRESH_SIGN_IN_REQUIRED. The server's clock runs
// ahead, so that every session looks that old to it.
func TestFreshSignInRequired(t *testing.T) { forEachStore(t, testFreshSignInRequired) }

func testFreshSignInRequired(t *testing.T, cfg server.Config) {
	ahead := chat.FreshSignIn + 30*time.Second // 21 TOTP steps
	cfg.IDClock = store.NewIDClock(ahead)
	ts, prov := oidcServer(t, cfg)
	prov.signInAs(map[string]any{"sub": "erin-1", "preferred_username": "erin"}, false)
	erin := ts.Client.WithToken(signInAtProvider(t, ts).Token)
	wantCode(t, erin, "FRESH_SIGN_IN_REQUIRED", setPasswordQ, map[string]any{"p": "erins-password"})
	wantCode(t, erin, "FRESH_SIGN_IN_REQUIRED", deleteAccountProofQ, nil)
	if hasPassword(t, erin) {
		t.Error("a stale session set a password")
	}

	ts.user(t, "alice")
	me := ts.Client.WithToken(login(t, ts, "alice", "password-alice").Token)
	var key struct{ BeginTwoFactor struct{ Secret string } }
	mustDo(t, me, beginTwoFactorQ, map[string]any{"p": "password-alice"}, &key)
	secret := key.BeginTwoFactor.Secret
	mustDo(t, me, confirmTwoFactorQ, map[string]any{"c": totpAt(t, secret, 21)}, nil)
	wantCode(t, me, "FRESH_SIGN_IN_REQUIRED", regenerateCodesQ, nil)
	mustDo(t, me, regenerateCodesQ, map[string]any{"c": totpAt(t, secret, 22)}, nil)
}
