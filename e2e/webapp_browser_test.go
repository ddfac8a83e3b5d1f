package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/chatql/internal/testenv"
	"github.com/killrchat/chatql/server"
	"github.com/killrchat/chatql/store"
)

// browserDir holds the browser tests' scenarios (clients/browser): Node
// drives Debian's chromium with playwright-core; `npm ci --prefix
// clients/browser` installs it.
const browserDir = "clients/browser"

// artifactsVar names the directory the browser tests write their
// screenshots to (a temporary one when unset; a relative path is from the
// repository's root); .ci/run keeps them.
const artifactsVar = "CHAT_BROWSER_ARTIFACTS"

// scenariosVar, when set, names the scenarios to run (comma-separated, as
// scenarios.mjs names them), for a focused run; all run when it is unset.
const scenariosVar = "CHAT_BROWSER_SCENARIOS"

// browserTools returns the paths of chromium and node for a browser test,
// which is skipped (failed under CHAT_REQUIRE_BACKENDS) when either, or
// clients/browser's playwright-core, is missing.
func browserTools(t *testing.T) (chromium, node string) {
	t.Helper()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		testenv.Missing(t, "chromium is not installed (scripts/chromium.sh installs it)", "the browser tests")
	}
	node, err = exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "node is not installed", "the browser tests")
	}
	if _, err := os.Stat(filepath.Join(repoRoot, browserDir, "node_modules", "playwright-core")); err != nil {
		testenv.Missing(t, browserDir+"/node_modules is missing (npm ci --prefix "+browserDir+")", "the browser tests")
	}
	return chromium, node
}

// browserArtifacts is the absolute path of the directory the browser
// tests keep their screenshots in (artifactsVar).
func browserArtifacts(t *testing.T) string {
	t.Helper()
	artifacts := os.Getenv(artifactsVar)
	if artifacts == "" {
		return t.TempDir()
	}
	if !filepath.IsAbs(artifacts) {
		artifacts = filepath.Join(repoRoot, artifacts)
	}
	abs, err := filepath.Abs(artifacts)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// The web app and the playground in a real browser: two users chat live in
// two browser contexts, the history pages on scroll, the inbox pages on
// "More conversations" (a post brings a conversation not shown yet to the
// top, each shows once, in activity order), a browser that goes
// offline and back resumes from its last cursor losing nothing and showing
// nothing twice, a room's creator moderates, blocks, mutes and edits her
// profile from the app, the app refreshes its token (and its websocket)
// before the short access tokens expire, two tabs of one session refresh
// in turn without revoking it, a public room's unread count follows its
// posts live, and the playground runs a query
// and a subscription. Files: a picked PNG shows inline for the other user
// from a thumbnail that loads, a text file as a download link, a lying
// .png is refused in words with nothing posted, and a link's preview card
// arrives live. Avatars: a PNG picked in the profile panel becomes the
// user's picture, seen loaded beside their messages by another user, and
// removed gives their initials back; a room's icon shows in the list and
// header; the app's page of messages stays within the cost limit.
// Notifications: turned on from the profile panel, the service worker is
// registered and the subscription fails in words with nothing registered
// (chromium has no push service here), the previews checkbox sets
// pushPreviews, the worker shows a push (one notification per
// conversation) and a notification opens its conversation. A thread opens
// from a reply count and gets a reply live; at 390 px the list and a
// conversation take the screen in turn. One sync subscription follows 55
// rooms and resumes from its kept cursor (offline and back, a reload), or
// afresh from one the server refuses; messages are pinned and unpinned
// live, the pinned list jumps to a message far back; a group's invite
// link is made, copied, revoked, joins a signed-out user after they log
// in, and says why it lets nobody in (used up, revoked, expired, banned). Every screen is checked by
// axe-core (no serious or critical violation), at 1100 and 390 px. The
// scenarios are clients/browser/scenarios.mjs.
func TestWebAppInBrowser(t *testing.T) {
	stepTimeout := 15 * time.Second
	if raceDetector {
		stepTimeout *= 3
	}
	browser, node := browserTools(t)
	artifacts := browserArtifacts(t)
	cfg := testConfig(t)
	// Short-lived access tokens: the app must refresh them, and reconnect
	// its websocket (closed with 4401 when the old token expires), while
	// the scenarios run.
	cfg.TokenTTL = 20 * time.Second
	// A page for a message to link to, on loopback: its card (Open Graph
	// tags) shows under the message.
	// A small file quota (4 MiB a user): a larger file is refused.
	cfg.FileLimits.QuotaBytes = 4 << 20
	cfg.LinkPreviews = true
	cfg.LinkPreviewsAllowLoopback = true
	var srv *server.Server
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/expired-invite" {
			expiredInvite(t, srv, w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><html><head><title>glass</title>
<meta property="og:title" content="The Looking-Glass House">
<meta property="og:description" content="Through the glass, and what Alice found there.">
<meta property="og:site_name" content="Wonderland Gazette">
</head><body>A page.</body></html>`))
	}))
	t.Cleanup(page.Close)
	// The signed URLs of files start with the server's public URL. Unset,
	// they start with the host each request names, but those of live
	// events (encoded once for every subscriber, with no request) start
	// with http://localhost, which a browser at 127.0.0.1:port cannot load:
	// so the server is told its address, as a deployment is.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.PublicURL = "http://" + ln.Addr().String()
	srv, err = server.New(context.Background(), cfg, testLogger())
	if err != nil {
		ln.Close()
		t.Fatalf("server.New: %v", err)
	}
	ts := serveOn(t, srv, ln)
	args := map[string]any{
		"url":         strings.TrimSuffix(ts.URL, "/query"),
		"chromium":    browser,
		"screenshots": artifacts,
		"tokenTTL":    cfg.TokenTTL.Seconds(),
		"pageURL":     page.URL + "/looking-glass",
		// Where a scenario gets an invite link that has expired: an invite
		// lasts a minute at least, so the test writes one whose time is up
		// to the store, as it would be a minute after it was made.
		"expiredInviteURL": page.URL + "/expired-invite",
		// How long a scenario waits for what the app should show (a
		// message, a count, a mark): 15 s, three times that under the race
		// detector, which slows the server several times (a picture's
		// thumbnails take seconds on a loaded runner).
		"stepTimeout": stepTimeout.Milliseconds(),
	}
	if only := os.Getenv(scenariosVar); only != "" {
		args["only"] = strings.Split(only, ",")
	}
	arg, _ := json.Marshal(args)
	// Each step of a scenario has its own timeout (15 s), which is what
	// fails a scenario; the run as a whole only has to end before the
	// test's deadline, however slow the machine (a loaded CI runner, the
	// race detector), with a minute left to report what passed.
	deadline := time.Now().Add(15 * time.Minute)
	if d, ok := t.Deadline(); ok {
		deadline = d.Add(-time.Minute)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(repoRoot, browserDir, "scenarios.mjs"), string(arg))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	t.Logf("browser scenarios:\n%s", out)
	if err != nil {
		t.Fatalf("browser scenarios: %v (screenshots in %s)", err, artifacts)
	}
	if os.Getenv(scenariosVar) == "" {
		for _, name := range []string{"webapp-live", "webapp-history", "webapp-offline", "webapp-moderation", "webapp-files", "webapp-files-error", "webapp-avatar-set", "webapp-avatars", "webapp-notifications", "webapp-thread", "webapp-phone", "webapp-pins", "webapp-pins-phone", "webapp-invites", "webapp-invite-join-phone", "webapp-invite-expired", "webapp-invite-banned-phone", "webapp-sync", "screen-pins-phone", "screen-invites-phone", "screen-room-desktop", "screen-thread-phone", "playground-subscription"} {
			if _, err := os.Stat(filepath.Join(artifacts, name+".png")); err != nil {
				t.Errorf("no screenshot %s: %v", name, err)
			}
		}
	}
	t.Logf("screenshots in %s", artifacts)
}

// expiredInvite writes to the store an invite link of the group ?room=,
// made by its creator ?by=, whose time is up (made and expired now, after
// the group was created), and answers its token.
func expiredInvite(t *testing.T, srv *server.Server, w http.ResponseWriter, r *http.Request) {
	secret := make([]byte, 32)
	rand.Read(secret) // never fails (crypto/rand)
	token := "chatinv_" + base64.RawURLEncoding.EncodeToString(secret)
	now := time.Now().UTC().Truncate(time.Millisecond)
	inv := store.Invite{Room: r.URL.Query().Get("room"), Hash: store.InviteHash(token), CreatedBy: store.UserRef{Login: r.URL.Query().Get("by")},
		CreatedAt: now, ExpiresAt: now, MaxUses: 5}
	if err := srv.Store().CreateInvite(r.Context(), inv); err != nil {
		t.Errorf("writing an expired invite: %v", err)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	_, _ = w.Write([]byte(token))
}
