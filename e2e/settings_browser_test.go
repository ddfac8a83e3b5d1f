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

	"github.com/killrchat/chatql/server"
)

// TestSettingsInBrowser: the web app's settings page and single sign-on in
// Chromium, at a desktop's size and a phone's: email (set, unverified, the
// link again), passkeys (added with the virtual authenticator, removed),
// two-factor sign-in (the key, a code, recovery codes shown once and made
// again, turned off with one), devices (another session ended) and linked
// identities (linked through the test provider's sign-in form, then
// unlinked); then the signed-out page's "Sign in with" button runs the
// whole authorization code + PKCE flow through the provider's form, ending
// signed in to a new account, which adds a passkey, unlinks the identity,
// is refused the removal of that last passkey, and sets its first
// password in Settings.
// Every screen is checked by axe-core. clients/browser/settings.mjs drives
// the browser; this checks the server's side afterwards.
func TestSettingsInBrowser(t *testing.T) { forEachStore(t, testSettingsInBrowser) }

func testSettingsInBrowser(t *testing.T, cfg server.Config) {
	browser, node := browserTools(t)
	artifacts := browserArtifacts(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// No public URL: a browser on localhost is its own relying party for
	// passkeys, and the provider sends it back there.
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	app := "http://localhost:" + port
	prov := newOIDCProvider(t)
	prov.interactive = true
	cfg.OIDC.Issuer, cfg.OIDC.ClientID, cfg.OIDC.ClientSecret = prov.URL, oidcClientID, oidcClientSecret
	cfg.OIDC.RedirectURL = app + "/?oidc"
	srv, err := server.New(context.Background(), cfg, testLogger())
	if err != nil {
		ln.Close()
		t.Fatalf("server.New: %v", err)
	}
	ts := serveOn(t, srv, ln)
	arg, _ := json.Marshal(map[string]any{"url": app, "chromium": browser, "screenshots": artifacts, "provider": strings.TrimPrefix(prov.URL, "http://")})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(repoRoot, browserDir, "settings.mjs"), string(arg))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	t.Logf("settings.mjs: %s", out)
	if err != nil {
		t.Fatalf("settings.mjs: %v (screenshots in %s)", err, artifacts)
	}
	var got struct {
		Checked, Audited []string
	}
	if err := json.Unmarshal(out, &got); err != nil || len(got.Checked) != 4 || len(got.Audited) < 12 {
		t.Fatalf("settings.mjs printed %s (%v), want 4 users and every screen audited", out, err)
	}
	for _, size := range []string{"desktop", "phone"} {
		// What the page did, as the server sees it.
		a := ts.Client.WithToken(login(t, ts, "alice-"+size, "wonderland").Token)
		if tf := twoFactorOf(t, a); tf.Enabled {
			t.Errorf("alice-%s: two-factor sign-in still on", size)
		}
		var state struct {
			Me         struct{ Email string }
			Passkeys   []struct{ ID string }
			Identities []struct{ Subject string }
			Sessions   []struct{ Device string }
		}
		mustDo(t, a, `{ me { email } passkeys { id } identities { subject } sessions { device } }`, nil, &state)
		if state.Me.Email != "alice-"+size+"@example.com" || len(state.Passkeys) != 0 || len(state.Identities) != 0 {
			t.Errorf("alice-%s after the page: %+v, want her email, no passkey, no identity", size, state)
		}
		for _, s := range state.Sessions {
			if s.Device == "Old phone" {
				t.Errorf("alice-%s: the session the page ended stands", size)
			}
		}
		c := ts.Client.WithToken(login(t, ts, "carol-"+size, "carol-"+size+"-password").Token)
		var carol struct {
			Passkeys   []struct{ Name string }
			Identities []struct{ Subject string }
		}
		mustDo(t, c, `{ passkeys { name } identities { subject } }`, nil, &carol)
		if len(carol.Passkeys) != 1 || len(carol.Identities) != 0 {
			t.Errorf("carol-%s after the page: %+v, want her passkey kept (the last way in) and no identity", size, carol)
		}
		oidc := 0
		for _, s := range listSessions(t, c) {
			if s.SignInMethod == "OIDC" {
				oidc++
			}
		}
		if oidc != 1 {
			t.Errorf("carol-%s has %d single sign-on sessions, want the page's", size, oidc)
		}
	}
	t.Logf("screenshots in %s", artifacts)
}
