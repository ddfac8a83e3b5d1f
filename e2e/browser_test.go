package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/chatql/internal/testenv"
	"github.com/killrchat/chatql/playground"
)

// The playground renders in a real browser (headless chromium) with no
// internet: GraphiQL's editors replace the page's "Loading…".
func TestPlaygroundRendersInBrowser(t *testing.T) {
	browser, err := exec.LookPath("chromium")
	if err != nil {
		testenv.Missing(t, "chromium is not installed (scripts/chromium.sh installs it)", "the browser tests")
	}
	ts := startServer(t, testConfig(t))
	page := strings.TrimSuffix(ts.URL, "/query") + playground.Path
	ctx, cancel := context.WithTimeout(testContext(t), 2*time.Minute)
	defer cancel()
	// --virtual-time-budget lets the page's scripts run to quiet before
	// the DOM is dumped; --no-sandbox because CI runs as root.
	out, err := exec.CommandContext(ctx, browser, "--headless=new", "--no-sandbox", "--disable-gpu",
		"--user-data-dir="+t.TempDir(), "--virtual-time-budget=10000", "--dump-dom", page).Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	dom := string(out)
	if !strings.Contains(dom, "graphiql-session") || strings.Contains(dom, "Loading…") {
		t.Fatalf("the playground did not render GraphiQL:\n%.2000s", dom)
	}
}
