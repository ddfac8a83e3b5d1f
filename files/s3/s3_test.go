package s3

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/chatql/files"
	"github.com/killrchat/chatql/files/objectstest"
	"github.com/killrchat/chatql/internal/testenv"
)

// URLVar addresses the S3 server of the tests, as `scripts/s3.sh url`
// prints it.
const URLVar = "CHAT_S3_URL"

// testConfig is the Config of CHAT_S3_URL, creating the bucket, or it
// reports the server missing.
func testConfig(t *testing.T) Config {
	t.Helper()
	cfg, err := ParseURL(testenv.Service(t, URLVar, "the S3 tests"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.CreateBucket = true
	return cfg
}

// newStore connects to the bucket of cfg.
func newStore(t *testing.T, cfg Config) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := New(ctx, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

func TestConformance(t *testing.T) {
	cfg := testConfig(t)
	objectstest.Run(t, func(t *testing.T) files.Objects { return newStore(t, cfg) })
}

func TestParseURL(t *testing.T) {
	cfg, err := ParseURL("https://ak:s%2Fk@s3.example:9000/bucket-1?region=eu-west-3&create=true&timeout=5s")
	want := Config{Endpoint: "https://s3.example:9000", Bucket: "bucket-1", Region: "eu-west-3",
		AccessKey: "ak", SecretKey: "s/k", PathStyle: true, CreateBucket: true, Timeout: 5 * time.Second}
	if err != nil || cfg != want {
		t.Errorf("ParseURL = %+v, %v; want %+v", cfg, err, want)
	}
	cfg, err = ParseURL("http://a:b@h/b?path-style=false")
	if err != nil || cfg.PathStyle || cfg.CreateBucket {
		t.Errorf("ParseURL(path-style=false) = %+v, %v", cfg, err)
	}
	for _, bad := range []string{"ftp://a:b@h/b", "http://a:b@h/", "http://a:b@h/b/c", "http://a:b@h/b?create=maybe", "http://a:b@h/b?timeout=-1s"} {
		if _, err := ParseURL(bad); err == nil {
			t.Errorf("ParseURL(%q) succeeded", bad)
		} else if strings.Contains(err.Error(), ":b@") {
			t.Errorf("ParseURL(%q) error shows the secret: %v", bad, err)
		}
	}
}

// closedPort returns the address of a TCP port on which nothing listens.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// silentServer returns the address of a TCP server that accepts
// connections and never answers.
func silentServer(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}

// TestUnavailable points the Store at a closed port, at a server that
// never answers and at one that answers 503: every operation fails with
// files.ErrUnavailable within the timeout.
func TestUnavailable(t *testing.T) {
	const timeout = time.Second
	unavailable := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer unavailable.Close()
	for name, endpoint := range map[string]string{
		"closed port": "http://" + closedPort(t),
		"silent":      "http://" + silentServer(t),
		"503":         unavailable.URL,
	} {
		t.Run(name, func(t *testing.T) {
			cfg := Config{Endpoint: endpoint, Bucket: "bucket", AccessKey: "a", SecretKey: "s", PathStyle: true, Timeout: timeout}
			s, err := New(context.Background(), cfg)
			if err != nil {
				t.Fatalf("New without CreateBucket: %v", err)
			}
			checkUnavailable(t, timeout, "Put", func(ctx context.Context) error {
				return s.Put(ctx, "a/b", strings.NewReader("x"), 1, "text/plain")
			})
			checkUnavailable(t, timeout, "Stat", func(ctx context.Context) error { _, err := s.Stat(ctx, "a/b"); return err })
			checkUnavailable(t, timeout, "Open", func(ctx context.Context) error { _, _, err := s.Open(ctx, "a/b"); return err })
			checkUnavailable(t, timeout, "Delete", func(ctx context.Context) error { return s.Delete(ctx, "a/b") })
			checkUnavailable(t, timeout, "New with CreateBucket", func(ctx context.Context) error {
				cfg.CreateBucket = true
				_, err := New(ctx, cfg)
				return err
			})
		})
	}
}

// checkUnavailable fails t unless f fails with files.ErrUnavailable within
// timeout (and a second of slack).
func checkUnavailable(t *testing.T, timeout time.Duration, what string, f func(context.Context) error) {
	t.Helper()
	start := time.Now()
	err := f(context.Background())
	took := time.Since(start)
	if !errors.Is(err, files.ErrUnavailable) {
		t.Errorf("%s = %v, want ErrUnavailable", what, err)
	}
	if took > timeout+time.Second {
		t.Errorf("%s took %v, want at most the timeout %v", what, took, timeout)
	}
}

// TestCancelledContext: a caller's cancellation is not the store's failure.
func TestCancelledContext(t *testing.T) {
	s, err := New(context.Background(), Config{Endpoint: "http://" + silentServer(t), Bucket: "bucket", PathStyle: true, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	if _, err := s.Stat(ctx, "a"); !errors.Is(err, context.Canceled) || errors.Is(err, files.ErrUnavailable) {
		t.Errorf("Stat with a cancelled context = %v, want context.Canceled", err)
	}
}

// TestUploadURLSignsHeaders: the presigned PUT's signature covers the
// headers that the conformance suite changes.
func TestUploadURLSignsHeaders(t *testing.T) {
	s, err := New(context.Background(), Config{Endpoint: "http://127.0.0.1:1", Bucket: "bucket", AccessKey: "a", SecretKey: "s", PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	req, err := s.UploadURL(context.Background(), "a/b", "image/png", 42, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(req.URL)
	if err != nil {
		t.Fatal(err)
	}
	if got := u.Query().Get("X-Amz-SignedHeaders"); got != "content-length;content-type;host;if-none-match" {
		t.Errorf("X-Amz-SignedHeaders = %q, want content-length;content-type;host;if-none-match", got)
	}
	if req.Headers["Content-Length"] != "42" || req.Headers["Content-Type"] != "image/png" || u.Path != "/bucket/a/b" {
		t.Errorf("UploadURL = %+v", req)
	}
}
