package playground

import (
	"crypto/sha256"
	"encoding/base64"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// The page loads every script and style from the server itself, each with
// the digest of what the server serves there: nothing from the internet.
func TestPageLoadsOnlyEmbeddedAssets(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle(Path, Page("chatql", "/query"))
	mux.Handle(Prefix, Assets())
	srv := httptest.NewServer(mux)
	defer srv.Close()

	page := get(t, srv.URL+Path, "text/html")
	if regexp.MustCompile(`(src|href)="https?://`).MatchString(page) {
		t.Fatalf("the page loads something from elsewhere:\n%s", page)
	}
	refs := regexp.MustCompile(`(?s)(?:src|href)="([^"]+)"\s+integrity="([^"]+)"`).FindAllStringSubmatch(page, -1)
	if len(refs) != 4 {
		t.Fatalf("found %d scripts and styles with a digest, want 4 (GraphiQL's script and style, React, ReactDOM)", len(refs))
	}
	types := map[string]string{".js": "text/javascript", ".css": "text/css"}
	for _, ref := range refs {
		url, digest := html.UnescapeString(ref[1]), html.UnescapeString(ref[2])
		if !strings.HasPrefix(url, Prefix) {
			t.Errorf("%s is not under %s", url, Prefix)
			continue
		}
		body := get(t, srv.URL+url, types[url[strings.LastIndex(url, "."):]])
		sum := sha256.Sum256([]byte(body))
		if got := "sha256-" + base64.StdEncoding.EncodeToString(sum[:]); got != digest {
			t.Errorf("%s: served %s, the page expects %s", url, got, digest)
		}
	}
	if !strings.Contains(page, `location.host + "/query"`) {
		t.Errorf("the page does not talk to /query:\n%s", page)
	}
}

func get(t *testing.T, url, wantType string) string {
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
	return string(body)
}

// The assets' directory is no listing: it sends the browser to the page.
func TestPrefixRedirectsToPage(t *testing.T) {
	srv := httptest.NewServer(Assets())
	defer srv.Close()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(srv.URL + Prefix)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != Path {
		t.Fatalf("GET %s: %s to %q, want 301 to %s", Prefix, resp.Status, resp.Header.Get("Location"), Path)
	}
}
