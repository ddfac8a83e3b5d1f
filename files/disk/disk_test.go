package disk

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/files"
	"github.com/killrchat/chatql/files/objectstest"
)

var secret = []byte("0123456789abcdef0123456789abcdef")

// newStore returns a Store in a fresh directory, mounted at /files/ of a
// real HTTP server, and the directory.
func newStore(t *testing.T, opts Options) (*Store, string) {
	t.Helper()
	dir := t.TempDir()
	var srv *httptest.Server
	base := func(context.Context) string { return srv.URL }
	s, err := New(dir, secret, base, "/files/", opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/files/", s)
	srv = httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return s, dir
}

func TestConformance(t *testing.T) {
	objectstest.Run(t, func(t *testing.T) files.Objects {
		s, dir := newStore(t, Options{})
		t.Cleanup(func() { checkNoTemp(t, dir) })
		return s
	})
}

// checkNoTemp fails t if a write left a temporary file.
func checkNoTemp(t *testing.T, dir string) {
	t.Helper()
	left, err := os.ReadDir(filepath.Join(dir, "tmp"))
	if err != nil || len(left) > 0 {
		t.Errorf("tmp/ holds %v (%v), want nothing", left, err)
	}
}

func TestNewRefusesBadArguments(t *testing.T) {
	base := func(context.Context) string { return "http://x" }
	if _, err := New(t.TempDir(), []byte("short"), base, "/files/", Options{}); err == nil {
		t.Error("New accepted a 5-byte secret")
	}
	if _, err := New(t.TempDir(), secret, base, "/files", Options{}); err == nil {
		t.Error("New accepted a prefix without a trailing slash")
	}
}

func TestSecondPutConflicts(t *testing.T) {
	s, dir := newStore(t, Options{})
	key := objectstest.Key(t)
	req, err := s.UploadURL(context.Background(), key, "text/plain", 5, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if code, body := objectstest.Do(t, req, []byte("first")); code != http.StatusOK {
		t.Fatalf("first PUT: %d %s", code, body)
	}
	if code, body := objectstest.Do(t, req, []byte("other")); code != http.StatusConflict {
		t.Fatalf("second PUT: %d %s, want 409", code, body)
	}
	objectstest.CheckContent(t, s, key, []byte("first"), "text/plain")
	checkNoTemp(t, dir)
}

func TestRefusalReasons(t *testing.T) {
	s, _ := newStore(t, Options{})
	key := objectstest.Key(t)
	req, err := s.UploadURL(context.Background(), key, "text/plain", 5, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	tampered := req
	tampered.URL = objectstest.Tamper(t, req.URL)
	if code, body := objectstest.Do(t, tampered, []byte("hello")); code != http.StatusForbidden || body != "invalid signature\n" {
		t.Errorf("tampered PUT = %d %q, want 403 invalid signature", code, body)
	}
	s.now = func() time.Time { return time.Now().Add(2 * time.Minute) }
	if code, body := objectstest.Do(t, req, []byte("hello")); code != http.StatusForbidden || body != "URL expired\n" {
		t.Errorf("expired PUT = %d %q, want 403 URL expired", code, body)
	}
}

func TestDownloadHeaders(t *testing.T) {
	s, _ := newStore(t, Options{})
	c, key := context.Background(), objectstest.Key(t)
	data := []byte("0123456789")
	if err := s.Put(c, key, bytes.NewReader(data), 10, "image/png"); err != nil {
		t.Fatal(err)
	}
	u, err := s.DownloadURL(c, key, time.Hour, files.ResponseHeaders{ContentDisposition: "inline"})
	if err != nil {
		t.Fatal(err)
	}
	resp, body := objectstest.Get(t, u)
	want := map[string]string{
		"Content-Type":            "image/png",
		"Content-Disposition":     "inline",
		"X-Content-Type-Options":  "nosniff",
		"Content-Security-Policy": "default-src 'none'; sandbox",
	}
	for k, v := range want {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	cc := resp.Header.Get("Cache-Control")
	age, err := strconv.Atoi(strings.TrimPrefix(cc, "private, max-age="))
	if err != nil || age < 3590 || age > 3601 {
		t.Errorf("Cache-Control = %q, want private, max-age=~3600", cc)
	}
	if !bytes.Equal(body, data) {
		t.Errorf("body = %q", body)
	}
	etag := resp.Header.Get("ETag")
	r, _ := http.NewRequest(http.MethodGet, u, nil)
	r.Header.Set("Range", "bytes=2-4")
	resp = do(t, r)
	if resp.StatusCode != http.StatusPartialContent || resp.Header.Get("Content-Range") != "bytes 2-4/10" {
		t.Errorf("Range GET = %d %q", resp.StatusCode, resp.Header.Get("Content-Range"))
	}
	r, _ = http.NewRequest(http.MethodGet, u, nil)
	r.Header.Set("If-None-Match", etag)
	if resp = do(t, r); etag == "" || resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match %q GET = %d, want 304", etag, resp.StatusCode)
	}
}

func do(t *testing.T, r *http.Request) *http.Response {
	t.Helper()
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func TestCORS(t *testing.T) {
	s, _ := newStore(t, Options{AllowedOrigins: []string{"https://app.example"}})
	req, err := s.UploadURL(context.Background(), objectstest.Key(t), "text/plain", 5, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	preflight := func(origin string) *http.Response {
		r, _ := http.NewRequest(http.MethodOptions, req.URL, nil)
		r.Header.Set("Origin", origin)
		r.Header.Set("Access-Control-Request-Method", "PUT")
		r.Header.Set("Access-Control-Request-Headers", "content-type")
		return do(t, r)
	}
	resp := preflight("https://app.example")
	if resp.StatusCode != http.StatusNoContent ||
		resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "PUT") ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Content-Type") {
		t.Errorf("preflight from the allowed origin = %d %v", resp.StatusCode, resp.Header)
	}
	r, _ := http.NewRequest(http.MethodPut, req.URL, strings.NewReader("hello"))
	r.Header.Set("Content-Type", "text/plain")
	r.Header.Set("Origin", "https://app.example")
	if resp := do(t, r); resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Errorf("PUT from the allowed origin = %d, Access-Control-Allow-Origin %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	resp = preflight("https://evil.example")
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from another origin = %d %v", resp.StatusCode, resp.Header)
	}
	any, _ := newStore(t, Options{AllowedOrigins: []string{"*"}})
	req, _ = any.UploadURL(context.Background(), objectstest.Key(t), "text/plain", 5, time.Minute)
	if resp := preflight("https://anywhere.example"); resp.StatusCode != http.StatusNoContent {
		t.Errorf("preflight with * = %d", resp.StatusCode)
	}
}

func TestHandlerRefusesBadPaths(t *testing.T) {
	s, _ := newStore(t, Options{})
	for _, p := range []string{"/files/../secret", "/files/a/../b", "/files/A", "/files/", "/other/a"} {
		r := httptest.NewRequest(http.MethodGet, "http://x/", nil)
		r.URL.Path = p
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", p, w.Code)
		}
	}
}

func TestChunkedUploadOfAnotherSize(t *testing.T) {
	s, dir := newStore(t, Options{})
	key := objectstest.Key(t)
	req, _ := s.UploadURL(context.Background(), key, "text/plain", 5, time.Minute)
	for _, body := range []string{"hell", "hello!"} {
		r, _ := http.NewRequest(http.MethodPut, req.URL, strings.NewReader(body))
		r.ContentLength = -1 // chunked: the handler must count
		r.Header.Set("Content-Type", "text/plain")
		if resp := do(t, r); resp.StatusCode/100 == 2 {
			t.Errorf("chunked PUT of %q accepted", body)
		}
		objectstest.CheckMissing(t, s, key)
	}
	checkNoTemp(t, dir)
}

// TestConcurrentPutsStoreOne: of concurrent PUTs of one signed URL, one
// stores its body and the others get 409, whatever their interleaving
// (the check before writing cannot decide it; the link that commits does).
func TestConcurrentPutsStoreOne(t *testing.T) {
	s, dir := newStore(t, Options{})
	for round := 0; round < 20; round++ {
		key := objectstest.Key(t)
		req, err := s.UploadURL(context.Background(), key, "text/plain", 4, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		const n = 6
		codes := make(chan int, n)
		bodies := make(chan []byte, n)
		start := make(chan struct{})
		for i := 0; i < n; i++ {
			body := []byte(fmt.Sprintf("b%03d", i))
			go func() {
				<-start
				code, _ := objectstest.Do(t, req, body)
				codes <- code
				if code == http.StatusOK {
					bodies <- body
				}
			}()
		}
		close(start)
		ok := 0
		for i := 0; i < n; i++ {
			switch code := <-codes; code {
			case http.StatusOK:
				ok++
			case http.StatusConflict:
			default:
				t.Errorf("PUT = %d, want 200 or 409", code)
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: %d PUTs succeeded, want 1", round, ok)
		}
		objectstest.CheckContent(t, s, key, <-bodies, "text/plain")
	}
	checkNoTemp(t, dir)
}

func TestPutOfALongerReader(t *testing.T) {
	s, dir := newStore(t, Options{})
	key := objectstest.Key(t)
	if err := s.Put(context.Background(), key, strings.NewReader("too long"), 3, "text/plain"); err == nil {
		t.Error("Put of 8 bytes announced as 3 succeeded")
	}
	objectstest.CheckMissing(t, s, key)
	checkNoTemp(t, dir)
}

func TestMaxSize(t *testing.T) {
	s, _ := newStore(t, Options{MaxSize: 100})
	if _, err := s.UploadURL(context.Background(), objectstest.Key(t), "text/plain", 101, time.Minute); err == nil {
		t.Error("UploadURL of 101 bytes with MaxSize 100 succeeded")
	}
	if _, err := s.UploadURL(context.Background(), objectstest.Key(t), "text/plain", 100, time.Minute); err != nil {
		t.Errorf("UploadURL of 100 bytes with MaxSize 100: %v", err)
	}
}

func TestNewRemovesStaleTemp(t *testing.T) {
	dir := t.TempDir()
	base := func(context.Context) string { return "http://x" }
	if _, err := New(dir, secret, base, "/files/", Options{}); err != nil {
		t.Fatal(err)
	}
	stale, fresh := filepath.Join(dir, "tmp", "put-stale"), filepath.Join(dir, "tmp", "put-fresh")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-25 * time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := New(dir, secret, base, "/files/", Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale temporary file: %v, want removed", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("fresh temporary file: %v, want kept", err)
	}
}

// TestDeleteRemovesEmptyDirectories: deleting a file's last object leaves
// no directory behind; one with objects left stays.
func TestDeleteRemovesEmptyDirectories(t *testing.T) {
	s, dir := newStore(t, Options{})
	ctx := context.Background()
	for _, key := range []string{"f/one/upload", "f/one/t160", "f/two/upload"} {
		if err := s.Put(ctx, key, strings.NewReader("data"), 4, "text/plain"); err != nil {
			t.Fatal(err)
		}
	}
	dirs := func() []string {
		var found []string
		root := filepath.Join(dir, "objects")
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() && p != root {
				rel, _ := filepath.Rel(root, p)
				found = append(found, filepath.ToSlash(rel))
			}
			return err
		})
		return found
	}
	for _, step := range []struct {
		delete string
		dirs   string
	}{
		{"f/one/upload", "f f/one f/two"},
		{"f/one/t160", "f f/two"},
		{"f/two/upload", ""},
		{"f/two/upload", ""}, // deleting a missing object
	} {
		if err := s.Delete(ctx, step.delete); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(dirs(), " "); got != step.dirs {
			t.Fatalf("after deleting %s the directories are %q, want %q", step.delete, got, step.dirs)
		}
	}
}

// TestPutsBesideDeletes: puts into a directory that deletes keep emptying
// all succeed (a put whose directory was just removed makes it again).
func TestPutsBesideDeletes(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 50 {
				key := fmt.Sprintf("f/shared/w%d-%d", w, i)
				if err := s.Put(ctx, key, strings.NewReader("data"), 4, "text/plain"); err != nil {
					t.Errorf("put %s: %v", key, err)
					return
				}
				objectstest.CheckContent(t, s, key, []byte("data"), "text/plain")
				if err := s.Delete(ctx, key); err != nil {
					t.Errorf("delete %s: %v", key, err)
					return
				}
			}
		})
	}
	wg.Wait()
}
