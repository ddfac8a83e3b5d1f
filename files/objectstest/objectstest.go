// Package objectstest is the conformance suite of files.Objects: every
// backend's tests run it against a real store (a directory served by a real
// HTTP server, a real S3 server), with real HTTP requests on the signed
// URLs.
package objectstest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/chatql/files"
)

// signatureParams are the query parameters that carry a signed URL's
// signature in the backends: files/disk's and S3's (SigV4, then SigV2).
var signatureParams = []string{"sig", "X-Amz-Signature", "Signature"}

// Run runs the suite on the stores newObjects returns; each subtest calls
// it once and may share the store with others (keys are random).
func Run(t *testing.T, newObjects func(t *testing.T) files.Objects) {
	t.Run("PutOpenStatDelete", func(t *testing.T) { testPutOpenStatDelete(t, newObjects(t)) })
	t.Run("PutShortReader", func(t *testing.T) { testPutShortReader(t, newObjects(t)) })
	t.Run("InvalidKeys", func(t *testing.T) { testInvalidKeys(t, newObjects(t)) })
	t.Run("SignedUpload", func(t *testing.T) { testSignedUpload(t, newObjects(t)) })
	t.Run("SignedUploadOnce", func(t *testing.T) { testSignedUploadOnce(t, newObjects(t)) })
	t.Run("SignedUploadRefusals", func(t *testing.T) { testSignedUploadRefusals(t, newObjects(t)) })
	t.Run("SignedDownload", func(t *testing.T) { testSignedDownload(t, newObjects(t)) })
	t.Run("Expiry", func(t *testing.T) { testExpiry(t, newObjects(t)) })
}

// Key returns a fresh random key under test/.
func Key(t testing.TB) string {
	b := make([]byte, 8)
	rand.Read(b)
	return "test/" + hex.EncodeToString(b) + "/obj"
}

// ctx is a test's context, bounded so that a hung store fails the test.
func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func testPutOpenStatDelete(t *testing.T, o files.Objects) {
	c, key := ctx(t), Key(t)
	data := []byte("hello, object store\n")
	if err := o.Put(c, key, bytes.NewReader(data), int64(len(data)), "text/plain"); err != nil {
		t.Fatalf("Put: %v", err)
	}
	want := files.ObjectInfo{Size: int64(len(data)), ContentType: "text/plain"}
	if info, err := o.Stat(c, key); err != nil || info != want {
		t.Fatalf("Stat = %+v, %v; want %+v", info, err, want)
	}
	CheckContent(t, o, key, data, "text/plain")
	// Put replaces.
	data2 := []byte{0, 1, 2, 0xff}
	if err := o.Put(c, key, bytes.NewReader(data2), 4, "application/octet-stream"); err != nil {
		t.Fatalf("second Put: %v", err)
	}
	CheckContent(t, o, key, data2, "application/octet-stream")
	empty := Key(t)
	if err := o.Put(c, empty, bytes.NewReader(nil), 0, "text/plain"); err != nil {
		t.Fatalf("Put of 0 bytes: %v", err)
	}
	CheckContent(t, o, empty, []byte{}, "text/plain")
	for _, k := range []string{key, empty} {
		if err := o.Delete(c, k); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		CheckMissing(t, o, k)
		if err := o.Delete(c, k); err != nil {
			t.Fatalf("Delete of a deleted key: %v", err)
		}
	}
	if err := o.Delete(c, Key(t)); err != nil {
		t.Fatalf("Delete of a key never stored: %v", err)
	}
}

func testPutShortReader(t *testing.T, o files.Objects) {
	c, key := ctx(t), Key(t)
	if err := o.Put(c, key, strings.NewReader("short"), 10, "text/plain"); err == nil {
		t.Fatal("Put of 5 bytes announced as 10 succeeded")
	}
	CheckMissing(t, o, key)
}

func testInvalidKeys(t *testing.T, o files.Objects) {
	c := ctx(t)
	for _, key := range []string{"", "../x", "a/../../b", "/abs", "A", "a/", "a\x00b", "a/./b"} {
		if err := o.Put(c, key, strings.NewReader("x"), 1, "text/plain"); !errors.Is(err, files.ErrInvalidKey) {
			t.Errorf("Put(%q) = %v, want ErrInvalidKey", key, err)
		}
		if _, err := o.Stat(c, key); !errors.Is(err, files.ErrInvalidKey) {
			t.Errorf("Stat(%q) = %v, want ErrInvalidKey", key, err)
		}
		if _, err := o.UploadURL(c, key, "text/plain", 1, time.Minute); !errors.Is(err, files.ErrInvalidKey) {
			t.Errorf("UploadURL(%q) = %v, want ErrInvalidKey", key, err)
		}
		if _, err := o.DownloadURL(c, key, time.Minute, files.ResponseHeaders{}); !errors.Is(err, files.ErrInvalidKey) {
			t.Errorf("DownloadURL(%q) = %v, want ErrInvalidKey", key, err)
		}
	}
}

func testSignedUpload(t *testing.T, o files.Objects) {
	c, key := ctx(t), Key(t)
	data := bytes.Repeat([]byte("0123456789"), 1000)
	req, err := o.UploadURL(c, key, "image/png", int64(len(data)), time.Minute)
	if err != nil {
		t.Fatalf("UploadURL: %v", err)
	}
	if req.Method != http.MethodPut || req.Headers["Content-Type"] != "image/png" {
		t.Fatalf("UploadURL = %+v, want a PUT with Content-Type image/png", req)
	}
	if code, body := Do(t, req, data); code/100 != 2 {
		t.Fatalf("signed PUT: %d %s", code, body)
	}
	CheckContent(t, o, key, data, "image/png")
}

// testSignedUploadOnce: a signed URL stores one object and cannot replace
// it, nor replace one stored by Put.
func testSignedUploadOnce(t *testing.T, o files.Objects) {
	c, key := ctx(t), Key(t)
	req, err := o.UploadURL(c, key, "text/plain", 5, time.Minute)
	if err != nil {
		t.Fatalf("UploadURL: %v", err)
	}
	if code, body := Do(t, req, []byte("first")); code/100 != 2 {
		t.Fatalf("first PUT: %d %s", code, body)
	}
	code, body := Do(t, req, []byte("again"))
	if code/100 == 2 {
		t.Errorf("second PUT of the signed URL accepted: %d %s", code, body)
	} else {
		t.Logf("second PUT refused with %d", code)
	}
	CheckContent(t, o, key, []byte("first"), "text/plain")
	put := Key(t)
	if err := o.Put(c, put, strings.NewReader("by put"), 6, "text/plain"); err != nil {
		t.Fatalf("Put: %v", err)
	}
	if req, err = o.UploadURL(c, put, "text/plain", 5, time.Minute); err != nil {
		t.Fatalf("UploadURL: %v", err)
	}
	if code, body := Do(t, req, []byte("again")); code/100 == 2 {
		t.Errorf("signed PUT over an object stored by Put accepted: %d %s", code, body)
	}
	CheckContent(t, o, put, []byte("by put"), "text/plain")
}

func testSignedUploadRefusals(t *testing.T, o files.Objects) {
	c := ctx(t)
	data := []byte("exactly thirty-two bytes of data")
	sign := func(key string) files.SignedRequest {
		req, err := o.UploadURL(c, key, "image/png", int64(len(data)), time.Minute)
		if err != nil {
			t.Fatalf("UploadURL: %v", err)
		}
		return req
	}
	refused := func(what, key string, req files.SignedRequest, body []byte) {
		t.Helper()
		code, msg := Do(t, req, body)
		if code/100 == 2 {
			t.Errorf("%s: accepted (%d %s)", what, code, msg)
		} else {
			t.Logf("%s: refused with %d %.300s", what, code, strings.Join(strings.Fields(msg), " "))
		}
		CheckMissing(t, o, key)
	}
	key := Key(t)
	refused("a shorter body", key, sign(key), data[:len(data)-1])
	key = Key(t)
	refused("a longer body", key, sign(key), append(data, '!'))
	key = Key(t)
	req := sign(key)
	req.Headers = copyHeaders(req.Headers)
	req.Headers["Content-Type"] = "text/html"
	refused("another content type", key, req, data)
	key = Key(t)
	req = sign(key)
	req.URL = Tamper(t, req.URL)
	refused("a tampered signature", key, req, data)
	key, other := Key(t), Key(t)
	req = sign(key)
	req.URL = strings.Replace(req.URL, key, other, 1)
	refused("another key", other, req, data)
	CheckMissing(t, o, key)
}

func testSignedDownload(t *testing.T, o files.Objects) {
	c, key := ctx(t), Key(t)
	data := []byte("<html><script>alert(1)</script></html>")
	if err := o.Put(c, key, bytes.NewReader(data), int64(len(data)), "text/html"); err != nil {
		t.Fatalf("Put: %v", err)
	}
	h := files.ResponseHeaders{ContentType: "text/plain", ContentDisposition: `attachment; filename="page.html"`}
	u, err := o.DownloadURL(c, key, time.Minute, h)
	if err != nil {
		t.Fatalf("DownloadURL: %v", err)
	}
	resp, body := Get(t, u)
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, data) {
		t.Fatalf("GET = %d %q, want 200 %q", resp.StatusCode, body, data)
	}
	if ct := resp.Header.Get("Content-Type"); ct != h.ContentType {
		t.Errorf("Content-Type = %q, want %q", ct, h.ContentType)
	}
	if cd := resp.Header.Get("Content-Disposition"); cd != h.ContentDisposition {
		t.Errorf("Content-Disposition = %q, want %q", cd, h.ContentDisposition)
	}
	if resp, body := Get(t, Tamper(t, u)); resp.StatusCode != http.StatusForbidden {
		t.Errorf("GET of a tampered URL = %d %q, want 403", resp.StatusCode, body)
	}
	missing := Key(t)
	u, err = o.DownloadURL(c, missing, time.Minute, files.ResponseHeaders{})
	if err != nil {
		t.Fatalf("DownloadURL of a missing key: %v", err)
	}
	if resp, body := Get(t, u); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET of a missing object = %d %q, want 404", resp.StatusCode, body)
	}
}

// testExpiry signs an upload and a download for a second and uses them
// after two.
func testExpiry(t *testing.T, o files.Objects) {
	c, key, up := ctx(t), Key(t), Key(t)
	data := []byte("expiring")
	if err := o.Put(c, key, bytes.NewReader(data), int64(len(data)), "text/plain"); err != nil {
		t.Fatalf("Put: %v", err)
	}
	u, err := o.DownloadURL(c, key, time.Second, files.ResponseHeaders{})
	if err != nil {
		t.Fatalf("DownloadURL: %v", err)
	}
	req, err := o.UploadURL(c, up, "text/plain", int64(len(data)), time.Second)
	if err != nil {
		t.Fatalf("UploadURL: %v", err)
	}
	time.Sleep(2100 * time.Millisecond)
	if resp, body := Get(t, u); resp.StatusCode != http.StatusForbidden {
		t.Errorf("GET of an expired URL = %d %q, want 403", resp.StatusCode, body)
	}
	if code, body := Do(t, req, data); code/100 == 2 {
		t.Errorf("PUT of an expired URL accepted: %d %q", code, body)
	}
	CheckMissing(t, o, up)
}

// CheckContent fails t unless key's object is data of contentType.
func CheckContent(t testing.TB, o files.Objects, key string, data []byte, contentType string) {
	t.Helper()
	rc, info, err := o.Open(ctx(t), key)
	if err != nil {
		t.Fatalf("Open(%s): %v", key, err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading %s: %v", key, err)
	}
	want := files.ObjectInfo{Size: int64(len(data)), ContentType: contentType}
	if !bytes.Equal(got, data) || info != want {
		t.Fatalf("Open(%s) = %q %+v, want %q %+v", key, got, info, data, want)
	}
}

// CheckMissing fails t unless Stat and Open of key say files.ErrNotFound.
func CheckMissing(t testing.TB, o files.Objects, key string) {
	t.Helper()
	if info, err := o.Stat(ctx(t), key); !errors.Is(err, files.ErrNotFound) {
		t.Errorf("Stat(%s) = %+v, %v; want ErrNotFound", key, info, err)
	}
	if rc, _, err := o.Open(ctx(t), key); !errors.Is(err, files.ErrNotFound) {
		if err == nil {
			rc.Close()
		}
		t.Errorf("Open(%s) = %v, want ErrNotFound", key, err)
	}
}

// Do makes the signed request req with body, as a client would, and
// returns the status code and the response body.
func Do(t testing.TB, req files.SignedRequest, body []byte) (int, string) {
	t.Helper()
	r, err := http.NewRequestWithContext(ctx(t), req.Method, req.URL, bytes.NewReader(body))
	if err != nil {
		t.Fatalf("NewRequest: %v", err)
	}
	for k, v := range req.Headers {
		if !strings.EqualFold(k, "Content-Length") { // set from the body
			r.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(msg)
}

// Get GETs u and returns the response and its body.
func Get(t testing.TB, u string) (*http.Response, []byte) {
	t.Helper()
	r, err := http.NewRequestWithContext(ctx(t), http.MethodGet, u, nil)
	if err != nil {
		t.Fatalf("NewRequest: %v", err)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", u, err)
	}
	return resp, body
}

// Tamper returns u with its signature changed in one character.
func Tamper(t testing.TB, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatalf("parsing %s: %v", u, err)
	}
	q := p.Query()
	for _, name := range signatureParams {
		sig := q.Get(name)
		if sig == "" {
			continue
		}
		c := byte('0')
		if sig[0] == '0' {
			c = '1'
		}
		q.Set(name, string(c)+sig[1:])
		p.RawQuery = q.Encode()
		return p.String()
	}
	t.Fatalf("no signature (%v) in %s", signatureParams, u)
	return ""
}

// copyHeaders copies h.
func copyHeaders(h map[string]string) map[string]string {
	c := make(map[string]string, len(h))
	for k, v := range h {
		c[k] = v
	}
	return c
}
