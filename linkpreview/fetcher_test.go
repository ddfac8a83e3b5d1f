package linkpreview

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/killrchat/chatql/internal/testenv"

	"github.com/killrchat/chatql/store"
)

// countingServer is a test server on a loopback address that counts the
// requests it receives.
type countingServer struct {
	*httptest.Server
	requests atomic.Int64
}

// newServer starts a counting server on 127.0.0.1 serving h.
func newServer(t *testing.T, h http.HandlerFunc) *countingServer {
	t.Helper()
	return newServerOn(t, "127.0.0.1:0", h)
}

// newServerOn starts a counting server listening on addr serving h.
func newServerOn(t *testing.T, addr string, h http.HandlerFunc) *countingServer {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	s := &countingServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		h(w, r)
	}))
	s.Listener.Close()
	s.Listener = ln
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// htmlPage returns a handler serving page as text/html.
func htmlPage(page string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, page)
	}
}

// newFetcher returns a Fetcher with opts that is closed when the test ends.
func newFetcher(t *testing.T, opts Options) *Fetcher {
	t.Helper()
	f := New(opts)
	t.Cleanup(f.Close)
	return f
}

// loopbackFetcher returns a Fetcher that may connect to loopback addresses.
func loopbackFetcher(t *testing.T) *Fetcher {
	t.Helper()
	return newFetcher(t, Options{AllowLoopback: true, Timeout: 2 * time.Second})
}

// onlyAddr returns a policy that allows exactly the address s, standing in
// for "a public host" in tests that must stay on loopback.
func onlyAddr(s string) addrPolicy {
	allowed := netip.MustParseAddr(s)
	return func(a netip.Addr) bool { return a == allowed }
}

const ogPage = `<html><head><title>Plain</title>
<meta property="og:title" content="Hello &amp; welcome">
<meta property="og:description" content="A   page">
<meta property="og:image" content="/static/card.png">
<meta property="og:site_name" content="Test site">
</head><body>body</body></html>`

func TestFetchOpenGraph(t *testing.T) {
	var userAgent atomic.Value
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		userAgent.Store(r.UserAgent())
		htmlPage(ogPage)(w, r)
	})
	got, err := loopbackFetcher(t).Fetch(context.Background(), srv.URL+"/page")
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	want := store.LinkPreview{
		URL:         srv.URL + "/page",
		Title:       "Hello & welcome",
		Description: "A page",
		SiteName:    "Test site",
		ImageURL:    srv.URL + "/static/card.png",
	}
	if got != want {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if ua, _ := userAgent.Load().(string); !strings.Contains(ua, "chatql") {
		t.Errorf("User-Agent %q does not name chatql", ua)
	}
}

func TestFetchFollowsRedirectAndUsesFinalURL(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/old" {
			http.Redirect(w, r, "/new/", http.StatusMovedPermanently)
			return
		}
		htmlPage(`<head><title>New</title><meta property="og:image" content="i.png"></head>`)(w, r)
	})
	got, err := loopbackFetcher(t).Fetch(context.Background(), srv.URL+"/old")
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if got.Title != "New" || got.URL != srv.URL+"/new/" || got.ImageURL != srv.URL+"/new/i.png" {
		t.Errorf("got %+v", got)
	}
}

func TestFetchTooManyRedirects(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/again", http.StatusFound)
	})
	_, err := loopbackFetcher(t).Fetch(context.Background(), srv.URL)
	if !errors.Is(err, ErrTooManyRedirects) {
		t.Fatalf("err = %v, want ErrTooManyRedirects", err)
	}
	if n := srv.requests.Load(); n != 1+DefaultMaxRedirects {
		t.Errorf("server saw %d requests, want %d", n, 1+DefaultMaxRedirects)
	}
}

func TestFetchNoRedirects(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	})
	f := newFetcher(t, Options{AllowLoopback: true, MaxRedirects: -1})
	if _, err := f.Fetch(context.Background(), srv.URL); !errors.Is(err, ErrTooManyRedirects) {
		t.Fatalf("err = %v, want ErrTooManyRedirects", err)
	}
	if n := srv.requests.Load(); n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
}

func TestFetchCancelledContext(t *testing.T) {
	srv := newServer(t, htmlPage(ogPage))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := loopbackFetcher(t).Fetch(ctx, srv.URL); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := srv.requests.Load(); n != 0 {
		t.Errorf("server saw %d requests for a cancelled caller, want none", n)
	}
}

func TestFetchNotHTML(t *testing.T) {
	for _, ct := range []string{"image/png", "text/plain; charset=utf-8", "application/json", "bogus;;"} {
		srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ct)
			fmt.Fprint(w, "<html><head><title>Not really</title></head></html>")
		})
		_, err := loopbackFetcher(t).Fetch(context.Background(), srv.URL)
		if !errors.Is(err, ErrNotHTML) {
			t.Errorf("Content-Type %q: err = %v, want ErrNotHTML", ct, err)
		}
	}
}

func TestFetchXHTMLAndSniffedHTML(t *testing.T) {
	xhtml := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xhtml+xml")
		fmt.Fprint(w, `<html><head><title>X</title></head></html>`)
	})
	untyped := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = nil // no header, and no sniffing by the server
		fmt.Fprint(w, `<!DOCTYPE html><html><head><title>U</title></head></html>`)
	})
	f := loopbackFetcher(t)
	for srv, want := range map[*countingServer]string{xhtml: "X", untyped: "U"} {
		got, err := f.Fetch(context.Background(), srv.URL)
		if err != nil || got.Title != want {
			t.Errorf("got %+v, %v; want title %q", got, err, want)
		}
	}
}

func TestFetchStatus(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "<html><head><title>gone</title></head>", http.StatusNotFound)
	})
	_, err := loopbackFetcher(t).Fetch(context.Background(), srv.URL)
	if !errors.Is(err, ErrStatus) {
		t.Fatalf("err = %v, want ErrStatus", err)
	}
}

func TestFetchCutsLargePage(t *testing.T) {
	page := `<html><head><title>Early</title><!--` + strings.Repeat("x", 4096) +
		`--><meta name="description" content="beyond the cap"></head>`
	srv := newServer(t, htmlPage(page))
	f := newFetcher(t, Options{AllowLoopback: true, MaxBytes: 1024})
	got, err := f.Fetch(context.Background(), srv.URL)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if got.Title != "Early" || got.Description != "" {
		t.Errorf("got %+v; want the title only, the description being past the cap", got)
	}
}

func TestFetchEndlessPage(t *testing.T) {
	var written atomic.Int64
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<html><head><title>Endless</title><meta name="x" content="`)
		chunk := []byte(strings.Repeat("y", 32<<10))
		for r.Context().Err() == nil {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	f := newFetcher(t, Options{AllowLoopback: true, Timeout: 10 * time.Second, MaxBytes: 64 << 10})
	start := time.Now()
	got, err := f.Fetch(context.Background(), srv.URL)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if got.Title != "Endless" {
		t.Errorf("title %q, want Endless", got.Title)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("Fetch took %v on an endless page; it should stop at the byte cap", elapsed)
	}
}

func TestFetchTimeout(t *testing.T) {
	handlers := map[string]http.HandlerFunc{
		"no response": func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		},
		"slow body": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html><head><title>Slow")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		},
	}
	for name, h := range handlers {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t, h)
			f := newFetcher(t, Options{AllowLoopback: true, Timeout: 150 * time.Millisecond})
			start := time.Now()
			_, err := f.Fetch(context.Background(), srv.URL)
			if !errors.Is(err, ErrTimeout) {
				t.Fatalf("err = %v, want ErrTimeout", err)
			}
			if w, ok := err.(interface{ Unwrap() []error }); !ok || len(w.Unwrap()) != 2 {
				t.Errorf("timeout error %q does not wrap its cause", err)
			}
			if elapsed := time.Since(start); elapsed > 2*time.Second {
				t.Errorf("Fetch took %v with a 150ms timeout", elapsed)
			}
		})
	}
}

func TestFetchRefusesSchemesAndBadURLs(t *testing.T) {
	f := loopbackFetcher(t)
	refused := []string{"file:///etc/passwd", "gopher://127.0.0.1:70/", "ftp://127.0.0.1/", "javascript:alert(1)", "//127.0.0.1/"}
	for _, u := range refused {
		if _, err := f.Fetch(context.Background(), u); !errors.Is(err, ErrRefused) {
			t.Errorf("Fetch(%q): err = %v, want ErrRefused", u, err)
		}
	}
	bad := []string{"http://user:pw@127.0.0.1/", "http:///path", "http://127.0.0.1/" + strings.Repeat("a", MaxURLLength), "http://[::1"}
	for _, u := range bad {
		if _, err := f.Fetch(context.Background(), u); !errors.Is(err, ErrBadURL) {
			t.Errorf("Fetch(%.40q): err = %v, want ErrBadURL", u, err)
		}
	}
}

func TestFetchRefusesNonPublicAddresses(t *testing.T) {
	srv4 := newServer(t, htmlPage(ogPage))
	srv6 := newServerOn(t, "[::1]:0", htmlPage(ogPage))
	_, port, _ := net.SplitHostPort(srv4.Listener.Addr().String())
	_, port6, _ := net.SplitHostPort(srv6.Listener.Addr().String())
	f := newFetcher(t, Options{Timeout: 2 * time.Second}) // AllowLoopback off
	urls := []string{
		srv4.URL,
		"http://127.0.0.1:" + port + "/",
		"http://[::1]:" + port6 + "/",
		"http://localhost:" + port + "/",
		"http://0.0.0.0:" + port + "/",
		"http://[::ffff:127.0.0.1]:" + port + "/",
		"http://[::]:" + port + "/",
		"http://10.0.0.1/",
		"http://169.254.169.254/latest/meta-data/",
		"http://[fe80::1%25lo]/",
		"http://100.64.0.1/",
		"http://[fd00::1]/",
		"http://224.0.0.1/",
		"https://192.168.0.1/",
	}
	for _, u := range urls {
		if _, err := f.Fetch(context.Background(), u); !errors.Is(err, ErrRefused) {
			t.Errorf("Fetch(%s): err = %v, want ErrRefused", u, err)
		}
	}
	if n := srv4.requests.Load() + srv6.requests.Load(); n != 0 {
		t.Errorf("the loopback servers saw %d requests, want none", n)
	}
}

func TestFetchAllowLoopbackAllowsOnlyLoopback(t *testing.T) {
	srv := newServer(t, htmlPage(ogPage))
	srv6 := newServerOn(t, "[::1]:0", htmlPage(ogPage))
	f := loopbackFetcher(t)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	for _, u := range []string{srv.URL, srv6.URL, "http://localhost:" + port + "/"} {
		if _, err := f.Fetch(context.Background(), u); err != nil {
			t.Errorf("Fetch(%s) with AllowLoopback: %v", u, err)
		}
	}
	for _, u := range []string{"http://10.0.0.1/", "http://169.254.169.254/", "http://0.0.0.0:" + port + "/"} {
		if _, err := f.Fetch(context.Background(), u); !errors.Is(err, ErrRefused) {
			t.Errorf("Fetch(%s) with AllowLoopback: err = %v, want ErrRefused", u, err)
		}
	}
}

func TestFetchRefusesNameWithAnyRefusedAddress(t *testing.T) {
	srv := newServer(t, htmlPage(ogPage))
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	f := newFetcher(t, Options{Timeout: 2 * time.Second})
	f.allowed = onlyAddr("127.0.0.1")
	f.lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("10.0.0.1")}, nil
	}
	_, err := f.Fetch(context.Background(), "http://mixed.test:"+port+"/")
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("err = %v, want ErrRefused", err)
	}
	if n := srv.requests.Load(); n != 0 {
		t.Errorf("server saw %d requests, want none", n)
	}
	// The same policy lets the name through when all its addresses pass.
	f2 := newFetcher(t, Options{Timeout: 2 * time.Second})
	f2.allowed = onlyAddr("127.0.0.1")
	f2.lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	if _, err := f2.Fetch(context.Background(), "http://allowed.test:"+port+"/"); err != nil {
		t.Fatalf("Fetch of an allowed name: %v", err)
	}
}

func TestFetchRefusesRedirectToRefusedHost(t *testing.T) {
	inner := newServerOn(t, "127.0.0.2:0", htmlPage(ogPage))
	targets := []string{
		inner.URL + "/secret",
		"http://169.254.169.254/latest/meta-data/",
		"http://[::1]:1/",
		"file:///etc/passwd",
		"gopher://127.0.0.1:70/",
	}
	for _, target := range targets {
		outer := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target, http.StatusFound)
		})
		f := newFetcher(t, Options{Timeout: 2 * time.Second})
		f.allowed = onlyAddr("127.0.0.1") // the outer server is "public"
		_, err := f.Fetch(context.Background(), outer.URL)
		if !errors.Is(err, ErrRefused) {
			t.Errorf("redirect to %s: err = %v, want ErrRefused", target, err)
		}
		if n := outer.requests.Load(); n != 1 {
			t.Errorf("redirect to %s: outer server saw %d requests, want 1", target, n)
		}
	}
	if n := inner.requests.Load(); n != 0 {
		t.Errorf("the refused server saw %d requests, want none", n)
	}
}

func TestFetchIgnoresProxyEnvironment(t *testing.T) {
	f := loopbackFetcher(t)
	if f.transport.Proxy != nil {
		t.Error("the transport uses a proxy function; it must not read proxies from the environment")
	}
}

func TestFetchCachesPreviews(t *testing.T) {
	srv := newServer(t, htmlPage(ogPage))
	f := loopbackFetcher(t)
	clock := newFakeClock()
	f.now = clock.Now
	first, err := f.Fetch(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	second, err := f.Fetch(context.Background(), srv.URL)
	if err != nil || second != first {
		t.Fatalf("second Fetch = %+v, %v; want %+v", second, err, first)
	}
	if n := srv.requests.Load(); n != 1 {
		t.Fatalf("server saw %d requests, want 1", n)
	}
	clock.Advance(DefaultCacheTTL + time.Second)
	if _, err := f.Fetch(context.Background(), srv.URL); err != nil {
		t.Fatal(err)
	}
	if n := srv.requests.Load(); n != 2 {
		t.Errorf("after the TTL the server saw %d requests, want 2", n)
	}
}

func TestFetchCachesFailuresBriefly(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusInternalServerError)
	})
	f := newFetcher(t, Options{AllowLoopback: true, FailureTTL: 10 * time.Second})
	clock := newFakeClock()
	f.now = clock.Now
	for i := 0; i < 3; i++ {
		if _, err := f.Fetch(context.Background(), srv.URL); !errors.Is(err, ErrStatus) {
			t.Fatalf("Fetch %d: err = %v, want ErrStatus", i, err)
		}
	}
	if n := srv.requests.Load(); n != 1 {
		t.Fatalf("server saw %d requests, want 1", n)
	}
	clock.Advance(11 * time.Second)
	if _, err := f.Fetch(context.Background(), srv.URL); !errors.Is(err, ErrStatus) {
		t.Fatalf("err = %v, want ErrStatus", err)
	}
	if n := srv.requests.Load(); n != 2 {
		t.Errorf("after the failure TTL the server saw %d requests, want 2", n)
	}
}

func TestFetchCollapsesConcurrentFetches(t *testing.T) {
	release := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		htmlPage(ogPage)(w, r)
	})
	f := loopbackFetcher(t)
	const callers = 10
	var wg sync.WaitGroup
	var started sync.WaitGroup
	results := make([]store.LinkPreview, callers)
	errs := make([]error, callers)
	started.Add(callers)
	for i := range callers {
		wg.Go(func() {
			started.Done()
			results[i], errs[i] = f.Fetch(context.Background(), srv.URL)
		})
	}
	started.Wait()
	testenv.WaitFor(t, 2*time.Second, func() bool { return srv.requests.Load() >= 1 })
	time.Sleep(50 * time.Millisecond) // let the other callers join the fetch in flight
	close(release)
	wg.Wait()
	for i := range callers {
		if errs[i] != nil || results[i].Title != "Hello & welcome" {
			t.Errorf("caller %d: %+v, %v", i, results[i], errs[i])
		}
	}
	if n := srv.requests.Load(); n != 1 {
		t.Errorf("server saw %d requests for %d concurrent callers, want 1", n, callers)
	}
}

func TestFetchCallerCancelDoesNotCancelSharedFetch(t *testing.T) {
	release := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		htmlPage(ogPage)(w, r)
	})
	f := loopbackFetcher(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := f.Fetch(ctx, srv.URL)
		done <- err
	}()
	testenv.WaitFor(t, 2*time.Second, func() bool { return srv.requests.Load() >= 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller: err = %v, want context.Canceled", err)
	}
	close(release)
	got, err := f.Fetch(context.Background(), srv.URL)
	if err != nil || got.Title != "Hello & welcome" {
		t.Fatalf("second caller: %+v, %v", got, err)
	}
	if n := srv.requests.Load(); n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
}

// fakeClock is a clock that moves only when told to.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// newFakeClock returns a fake clock set to a fixed time.
func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// Now returns the clock's time.
func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestFetchDecodesCharsets(t *testing.T) {
	pages := map[string]struct{ contentType, body string }{
		"header":        {"text/html; charset=ISO-8859-1", "<head><title>caf\xe9</title></head>"},
		"meta tag":      {"text/html", `<head><meta charset="windows-1252"><title>caf` + "\xe9" + `</title></head>`},
		"utf-8":         {"text/html; charset=utf-8", "<head><title>caf\u00e9</title></head>"},
		"http-equiv":    {"text/html", `<head><meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1"><title>caf` + "\xe9" + `</title></head>`},
		"sniffed utf-8": {"text/html", "<head><title>caf\u00e9</title></head>"},
		"sniffed 1252":  {"text/html", "<head><title>caf\xe9</title></head>"},
		"utf-16 bom":    {"text/html", "\xff\xfe<\x00t\x00i\x00t\x00l\x00e\x00>\x00c\x00a\x00f\x00\xe9\x00<\x00/\x00t\x00i\x00t\x00l\x00e\x00>\x00"},
		"utf-8 bom":     {"text/html; charset=iso-8859-1", "\xef\xbb\xbf<head><title>caf\u00e9</title></head>"},
	}
	f := loopbackFetcher(t)
	for name, page := range pages {
		srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", page.contentType)
			fmt.Fprint(w, page.body)
		})
		got, err := f.Fetch(context.Background(), srv.URL)
		if err != nil || got.Title != "caf\u00e9" {
			t.Errorf("%s: got %+v, %v; want title café", name, got, err)
		}
	}
	// An East Asian encoding gets no preview rather than a garbled one.
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=Shift_JIS")
		fmt.Fprint(w, "<head><title>\x93\xfa\x96\x7b</title></head>")
	})
	if got, err := f.Fetch(context.Background(), srv.URL); !errors.Is(err, ErrCharset) {
		t.Errorf("Shift_JIS: got %+v, %v; want ErrCharset", got, err)
	}
}
