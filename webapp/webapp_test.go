package webapp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// The page loads its scripts and styles from the server itself, each
// served with its type, under a policy that allows nothing else.
func TestPageLoadsOnlyItsOwnFiles(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()

	page, header := get(t, srv.URL+"/", "text/html")
	if !strings.Contains(page, "<title>chatql</title>") {
		t.Fatalf("not the app's page:\n%s", page)
	}
	if csp := header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("Content-Security-Policy %q does not keep the page to its own server", csp)
	}
	if regexp.MustCompile(`(src|href)="(https?:)?//`).MatchString(page) {
		t.Fatalf("the page loads something from elsewhere:\n%s", page)
	}
	refs := regexp.MustCompile(`<(?:script|link rel="stylesheet")[^>]* (?:src|href)="([^"]+)"`).FindAllStringSubmatch(page, -1)
	if len(refs) != 3 {
		t.Fatalf("found %d scripts and styles, want 3 (graphql-ws, app.js, style.css)", len(refs))
	}
	types := map[string]string{".js": "text/javascript", ".css": "text/css"}
	for _, ref := range refs {
		name := ref[1]
		get(t, srv.URL+"/"+name, types[name[strings.LastIndex(name, "."):]])
	}
	// app.js imports api.js and search.js.
	get(t, srv.URL+"/api.js", "text/javascript")
	get(t, srv.URL+"/search.js", "text/javascript")
	// The service worker is at the root (its scope is the whole app), a
	// script, and the policy lets the page register it: worker-src falls
	// back to default-src 'self' when neither it nor script-src is set.
	_, header = get(t, srv.URL+"/sw.js", "text/javascript")
	csp := header.Get("Content-Security-Policy")
	if strings.Contains(csp, "worker-src") || strings.Contains(csp, "script-src") {
		if !regexp.MustCompile(`(worker-src|script-src)[^;]*'self'`).MatchString(csp) {
			t.Errorf("Content-Security-Policy %q does not allow the app's service worker", csp)
		}
	}
}

func get(t *testing.T, url, wantType string) (string, http.Header) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), wantType) {
		t.Fatalf("GET %s: %s %q, want 200 %s", url, resp.Status, resp.Header.Get("Content-Type"), wantType)
	}
	return string(body), resp.Header
}
