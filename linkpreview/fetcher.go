package linkpreview

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"

	"github.com/killrchat/chatql/internal/netguard"
	"github.com/killrchat/chatql/store"
)

// Defaults for the zero fields of Options.
const (
	DefaultTimeout      = 5 * time.Second
	DefaultMaxBytes     = 512 << 10
	DefaultMaxRedirects = 3
	DefaultCacheSize    = 1024
	DefaultCacheTTL     = 30 * time.Minute
	DefaultFailureTTL   = time.Minute
	DefaultUserAgent    = "chatql-linkpreview/1.0 (+https://github.com/killrchat/chatql)"
)

// Options configures a Fetcher. A zero field takes its default.
type Options struct {
	// Timeout bounds a whole fetch: dialling, redirects, headers and body.
	Timeout time.Duration
	// MaxBytes is the most of a response body that is read; a longer page
	// is cut there.
	MaxBytes int64
	// MaxRedirects is the most redirects followed; a negative value
	// follows none.
	MaxRedirects int
	// CacheSize is the number of URLs whose previews are remembered.
	CacheSize int
	// CacheTTL is how long a preview is remembered.
	CacheTTL time.Duration
	// FailureTTL is how long a failed fetch is remembered.
	FailureTTL time.Duration
	// UserAgent is sent with every request.
	UserAgent string
	// AllowLoopback lets the Fetcher connect to 127.0.0.0/8 and ::1, and to
	// no other refused address. It is for tests only.
	AllowLoopback bool
}

// withDefaults returns o with its zero fields set to the defaults.
func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	switch {
	case o.MaxRedirects == 0:
		o.MaxRedirects = DefaultMaxRedirects
	case o.MaxRedirects < 0:
		o.MaxRedirects = 0
	}
	if o.CacheSize <= 0 {
		o.CacheSize = DefaultCacheSize
	}
	if o.CacheTTL <= 0 {
		o.CacheTTL = DefaultCacheTTL
	}
	if o.FailureTTL <= 0 {
		o.FailureTTL = DefaultFailureTTL
	}
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}
	return o
}

// Fetcher fetches link previews, caching them and sharing one fetch among
// concurrent callers asking for the same URL. It is safe for concurrent use;
// make one with New.
type Fetcher struct {
	opts      Options
	client    *http.Client
	transport *http.Transport
	cache     *lru.Cache[string, cacheEntry]
	group     singleflight.Group

	// allowed, lookup and now are the address policy, the resolver and
	// the clock; tests may replace them before the first Fetch.
	allowed addrPolicy
	lookup  func(ctx context.Context, host string) ([]netip.Addr, error)
	now     func() time.Time
}

// cacheEntry is a remembered outcome of a fetch.
type cacheEntry struct {
	preview store.LinkPreview
	err     error
	expires time.Time
}

// New returns a Fetcher configured by opts.
func New(opts Options) *Fetcher {
	f := &Fetcher{opts: opts.withDefaults(), now: time.Now}
	f.allowed = netguard.PublicOnly(f.opts.AllowLoopback)
	cache, err := lru.New[string, cacheEntry](f.opts.CacheSize)
	if err != nil {
		panic(err) // unreachable: the size is positive
	}
	f.cache = cache
	f.transport = f.newTransport()
	f.client = &http.Client{Transport: f.transport, CheckRedirect: f.checkRedirect}
	return f
}

// Close closes the Fetcher's idle connections.
func (f *Fetcher) Close() {
	f.transport.CloseIdleConnections()
}

// Fetch returns the preview of the page at rawURL, from the cache if it is
// there. Errors wrap ErrBadURL, ErrRefused, ErrNotHTML, ErrStatus,
// ErrTooManyRedirects or ErrTimeout where they apply. A cancelled ctx stops
// the wait but not a fetch that other callers share.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string) (store.LinkPreview, error) {
	if err := ctx.Err(); err != nil {
		return store.LinkPreview{}, err
	}
	u, err := parseTarget(rawURL)
	if err != nil {
		return store.LinkPreview{}, err
	}
	key := u.String()
	if e, ok := f.cached(key); ok {
		return e.preview, e.err
	}
	ch := f.group.DoChan(key, func() (any, error) {
		return f.fetchAndRemember(context.WithoutCancel(ctx), key, u), nil
	})
	select {
	case r := <-ch:
		e := r.Val.(cacheEntry)
		return e.preview, e.err
	case <-ctx.Done():
		return store.LinkPreview{}, ctx.Err()
	}
}

// parseTarget parses a URL given to Fetch and checks that it may be
// fetched at all.
func parseTarget(rawURL string) (*url.URL, error) {
	if len(rawURL) > MaxURLLength {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrBadURL, MaxURLLength)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadURL, err)
	}
	if err := checkURL(u); err != nil {
		return nil, err
	}
	return u, nil
}

// cached returns the unexpired cache entry for key, if any.
func (f *Fetcher) cached(key string) (cacheEntry, bool) {
	e, ok := f.cache.Get(key)
	if !ok || !f.now().Before(e.expires) {
		return cacheEntry{}, false
	}
	return e, true
}

// fetchAndRemember fetches u under the timeout and caches the outcome.
func (f *Fetcher) fetchAndRemember(ctx context.Context, key string, u *url.URL) cacheEntry {
	ctx, cancel := context.WithTimeout(ctx, f.opts.Timeout)
	defer cancel()
	p, err := f.fetch(ctx, u)
	if isTimeout(ctx, err) {
		err = fmt.Errorf("%w after %v: %w", ErrTimeout, f.opts.Timeout, err)
	}
	ttl := f.opts.CacheTTL
	if err != nil {
		p, ttl = store.LinkPreview{}, f.opts.FailureTTL
	}
	e := cacheEntry{preview: p, err: err, expires: f.now().Add(ttl)}
	f.cache.Add(key, e)
	return e
}

// isTimeout reports whether err is the failure of a fetch that ran out of
// time: its context expired, or the network reported a timeout.
func isTimeout(ctx context.Context, err error) bool {
	if err == nil {
		return false
	}
	var netErr net.Error
	return errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout()
}

// fetch requests u and parses the head of the HTML page it returns.
func (f *Fetcher) fetch(ctx context.Context, u *url.URL) (store.LinkPreview, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return store.LinkPreview{}, fmt.Errorf("%w: %w", ErrBadURL, err)
	}
	req.Header.Set("User-Agent", f.opts.UserAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml;q=0.9,*/*;q=0.1")
	resp, err := f.client.Do(req)
	if err != nil {
		return store.LinkPreview{}, fmt.Errorf("linkpreview: fetching %s: %w", u.Redacted(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return store.LinkPreview{}, fmt.Errorf("%w: %s from %s", ErrStatus, resp.Status, u.Redacted())
	}
	contentType := resp.Header.Get("Content-Type")
	body := bufio.NewReaderSize(io.LimitReader(resp.Body, f.opts.MaxBytes), 1024)
	if !isHTML(contentType, body) {
		return store.LinkPreview{}, fmt.Errorf("%w: %s is %q", ErrNotHTML, u.Redacted(), contentType)
	}
	page, ok := decodeUTF8(contentType, body)
	if !ok {
		return store.LinkPreview{}, fmt.Errorf("%w: %s", ErrCharset, u.Redacted())
	}
	p, err := parse(page, resp.Request.URL)
	if err != nil {
		return store.LinkPreview{}, fmt.Errorf("linkpreview: reading %s: %w", u.Redacted(), err)
	}
	return p, nil
}

// isHTML reports whether a response is an HTML page, by its Content-Type
// header or, when that is missing, by sniffing the start of the body.
func isHTML(contentType string, body *bufio.Reader) bool {
	if contentType == "" {
		start, _ := body.Peek(512)
		contentType = http.DetectContentType(start)
	}
	mediaType, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return mediaType == "text/html" || mediaType == "application/xhtml+xml"
}

// Preview fetches the card of the first link in a message's content: ok is
// false when the content links nowhere, or the page gives no title.
func (f *Fetcher) Preview(ctx context.Context, content string) (p store.LinkPreview, ok bool, err error) {
	link, found := FirstLink(content)
	if !found {
		return p, false, nil
	}
	p, err = f.Fetch(ctx, link)
	return p, err == nil && p.Title != "", err
}
