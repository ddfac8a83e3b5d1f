package e2e

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/server"
)

// TestPasskeysInBrowser: in Chromium, with its virtual authenticator
// (the DevTools protocol's WebAuthn domain), a signed-in user registers a
// passkey, then signs in with it with no login or password; the session
// shows as a passkey sign-in; a deleted passkey signs in no more. The
// ceremonies are real: the server verifies the authenticator's attestation
// and assertions. clients/browser/passkeys.mjs drives the browser.
func TestPasskeysInBrowser(t *testing.T) { forEachStore(t, testPasskeysInBrowser) }

func testPasskeysInBrowser(t *testing.T, cfg server.Config) {
	browser, node := browserTools(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(context.Background(), cfg, testLogger())
	if err != nil {
		ln.Close()
		t.Fatalf("server.New: %v", err)
	}
	ts := serveOn(t, srv, ln)
	ts.user(t, "alice")
	p := login(t, ts, "alice", "password-alice")

	// No public URL is configured: a browser on localhost is its own
	// relying party.
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	arg, _ := json.Marshal(map[string]any{"url": "http://localhost:" + port, "chromium": browser, "token": p.Token})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(repoRoot, browserDir, "passkeys.mjs"), string(arg))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("passkeys.mjs: %v\n%s", err, out)
	}
	type answer struct {
		Data   json.RawMessage
		Errors chatclient.Errors
	}
	var got struct {
		Registered, RegisteredAgain, SignedIn, SignedInAgain, Passkeys, Deleted, AfterDelete answer
		AuthenticatorCredentials                                                             []struct {
			IsResidentCredential bool
			SignCount            int
		}
		Error string
	}
	if err := json.Unmarshal(out, &got); err != nil || got.Error != "" {
		t.Fatalf("passkeys.mjs printed %s (%v)", out, err)
	}
	t.Logf("passkeys.mjs: %s", out)
	if len(got.Registered.Errors) > 0 || !strings.Contains(string(got.Registered.Data), `"name":"Test key"`) {
		t.Fatalf("finishPasskeyRegistration = %s %v, want the passkey", got.Registered.Data, got.Registered.Errors)
	}
	if got.RegisteredAgain.Errors.Code() != "CONFLICT" {
		t.Errorf("the same registration again = %s %v, want CONFLICT", got.RegisteredAgain.Data, got.RegisteredAgain.Errors)
	}
	for _, a := range []answer{got.SignedIn, got.SignedInAgain} {
		var signedIn struct {
			FinishPasskeySignIn struct {
				Token string
				User  struct{ Login string }
			}
		}
		if len(a.Errors) > 0 || json.Unmarshal(a.Data, &signedIn) != nil || signedIn.FinishPasskeySignIn.User.Login != "alice" {
			t.Fatalf("finishPasskeySignIn = %s %v, want alice signed in", a.Data, a.Errors)
		}
		wantMe(t, ts, signedIn.FinishPasskeySignIn.Token, true)
	}
	if !strings.Contains(string(got.Passkeys.Data), `"lastUsedAt":"`) {
		t.Errorf("passkeys = %s, want the passkey, used", got.Passkeys.Data)
	}
	if len(got.Deleted.Errors) > 0 || got.AfterDelete.Errors.Code() != "UNAUTHENTICATED" {
		t.Errorf("a sign-in with a deleted passkey = %s %v, want UNAUTHENTICATED", got.AfterDelete.Data, got.AfterDelete.Errors)
	}
	if len(got.AuthenticatorCredentials) != 1 || !got.AuthenticatorCredentials[0].IsResidentCredential || got.AuthenticatorCredentials[0].SignCount < 2 {
		t.Errorf("the authenticator holds %+v, want one discoverable credential used twice", got.AuthenticatorCredentials)
	}
	passkeySessions := 0
	for _, s := range listSessions(t, ts.Client.WithToken(p.Token)) {
		if s.SignInMethod == "PASSKEY" {
			passkeySessions++
			if !s.TwoFactor || s.Device != "Browser with a passkey" {
				t.Errorf("passkey session %+v: want two factors, named by the client", s)
			}
		}
	}
	if passkeySessions != 2 {
		t.Errorf("%d passkey sessions, want 2", passkeySessions)
	}
}
