package webhook

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// receiver is an httptest endpoint that verifies every request it gets
// and answers with the status its respond function picks.
type receiver struct {
	srv      *httptest.Server
	secret   Secret
	mu       sync.Mutex
	requests []receivedRequest
	respond  func(w http.ResponseWriter, r *http.Request, n int)
}

// receivedRequest is what the receiver saw of one request.
type receivedRequest struct {
	header    http.Header
	body      []byte
	verifyErr error
}

// newReceiver starts a receiver on loopback; it stops with the test.
func newReceiver(t *testing.T, respond func(w http.ResponseWriter, r *http.Request, n int)) *receiver {
	t.Helper()
	secret, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	rc := &receiver{secret: secret, respond: respond}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.handle))
	t.Cleanup(rc.srv.Close)
	return rc
}

// handle records and verifies a request, then answers it.
func (rc *receiver) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := receivedRequest{header: r.Header.Clone(), body: body, verifyErr: Verify(rc.secret, r.Header, body, time.Now())}
	rc.mu.Lock()
	rc.requests = append(rc.requests, req)
	n := len(rc.requests)
	rc.mu.Unlock()
	if req.verifyErr != nil {
		http.Error(w, req.verifyErr.Error(), http.StatusUnauthorized)
		return
	}
	rc.respond(w, r, n)
}

// received returns a copy of the requests seen so far.
func (rc *receiver) received() []receivedRequest {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]receivedRequest(nil), rc.requests...)
}

// target returns the receiver as a Target at path.
func (rc *receiver) target(path string) Target {
	return Target{URL: rc.srv.URL + path, Secret: rc.secret}
}

// testSender returns a Sender allowed to reach loopback receivers.
func testSender(t *testing.T, opts Options) *Sender {
	opts.AllowLoopback = true
	s := NewSender(opts)
	t.Cleanup(s.Close)
	return s
}

// answer returns a respond function that always writes status.
func answer(status int) func(http.ResponseWriter, *http.Request, int) {
	return func(w http.ResponseWriter, _ *http.Request, _ int) { w.WriteHeader(status) }
}

var testBody = []byte(`{"type":"message.created","data":{"roomId":"r1","text":"hi"}}`)

func TestDeliverSignedRequest(t *testing.T) {
	rc := newReceiver(t, answer(http.StatusNoContent))
	s := testSender(t, Options{})
	r := s.Deliver(context.Background(), rc.target("/hooks"), Message{ID: "msg_1", Body: testBody})
	if r.Outcome != Delivered || r.StatusCode != http.StatusNoContent || r.Err != nil {
		t.Fatalf("Deliver = %+v, want delivered 204", r)
	}
	got := rc.received()
	if len(got) != 1 {
		t.Fatalf("receiver got %d requests, want 1", len(got))
	}
	req := got[0]
	if req.verifyErr != nil {
		t.Fatalf("receiver could not verify: %v", req.verifyErr)
	}
	if string(req.body) != string(testBody) {
		t.Errorf("body = %s", req.body)
	}
	if ct := req.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	if ua := req.header.Get("User-Agent"); !strings.Contains(ua, "chatql") {
		t.Errorf("User-Agent = %q, want one naming chatql", ua)
	}
	if req.header.Get(HeaderID) != "msg_1" {
		t.Errorf("webhook-id = %q", req.header.Get(HeaderID))
	}
}

// TestReceiverRejectsForgery checks that the receiver's check can fail: a
// message signed with another secret is refused, and so reported.
func TestReceiverRejectsForgery(t *testing.T) {
	rc := newReceiver(t, answer(http.StatusOK))
	forger, _ := NewSecret()
	s := testSender(t, Options{})
	tgt := rc.target("/")
	tgt.Secret = forger
	r := s.Deliver(context.Background(), tgt, Message{ID: "msg_1", Body: testBody})
	if r.Outcome != Retry || r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("Deliver = %+v, want retry after 401", r)
	}
	got := rc.received()
	if len(got) != 1 || !errors.Is(got[0].verifyErr, ErrSignature) {
		t.Fatalf("receiver saw %+v, want one request failing with ErrSignature", got)
	}
}

func TestRetryKeepsID(t *testing.T) {
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, n int) {
		if n == 1 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	s := testSender(t, Options{})
	msg := Message{ID: "msg_retry", Body: testBody}
	first := s.Deliver(context.Background(), rc.target("/"), msg)
	if first.Outcome != Retry || first.StatusCode != 500 || !errors.Is(first.Err, ErrStatus) {
		t.Fatalf("first attempt = %+v, want retry after 500", first)
	}
	if _, again := Next(1, first); !again {
		t.Fatalf("Next says not to retry a 500")
	}
	second := s.Deliver(context.Background(), rc.target("/"), msg)
	if second.Outcome != Delivered {
		t.Fatalf("second attempt = %+v, want delivered", second)
	}
	got := rc.received()
	if len(got) != 2 {
		t.Fatalf("receiver got %d requests, want 2", len(got))
	}
	for i, req := range got {
		if id := req.header.Get(HeaderID); id != "msg_retry" {
			t.Errorf("attempt %d has id %q", i+1, id)
		}
		if req.verifyErr != nil {
			t.Errorf("attempt %d: %v", i+1, req.verifyErr)
		}
	}
}

func TestRedirectNotFollowed(t *testing.T) {
	var followed atomic.Int32
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		if r.URL.Path == "/moved" {
			followed.Add(1)
			w.WriteHeader(http.StatusOK)
			return
		}
		http.Redirect(w, r, "/moved", http.StatusTemporaryRedirect)
	})
	s := testSender(t, Options{})
	r := s.Deliver(context.Background(), rc.target("/hooks"), Message{ID: "msg_1", Body: testBody})
	if r.Outcome != Retry || r.StatusCode != http.StatusTemporaryRedirect {
		t.Fatalf("Deliver = %+v, want retry after 307", r)
	}
	if followed.Load() != 0 || len(rc.received()) != 1 {
		t.Fatalf("the redirect was followed")
	}
}

func TestGoneIsPermanent(t *testing.T) {
	rc := newReceiver(t, answer(http.StatusGone))
	s := testSender(t, Options{})
	r := s.Deliver(context.Background(), rc.target("/"), Message{ID: "msg_1", Body: testBody})
	if r.Outcome != Failed || r.StatusCode != http.StatusGone {
		t.Fatalf("Deliver = %+v, want failed after 410", r)
	}
	if _, again := Next(1, r); again {
		t.Fatalf("Next retries after 410")
	}
}

func TestOtherClientErrorRetried(t *testing.T) {
	rc := newReceiver(t, answer(http.StatusNotFound))
	s := testSender(t, Options{})
	r := s.Deliver(context.Background(), rc.target("/"), Message{ID: "msg_1", Body: testBody})
	if r.Outcome != Retry || r.StatusCode != http.StatusNotFound {
		t.Fatalf("Deliver = %+v, want retry after 404", r)
	}
	if _, again := Next(MaxAttempts, r); again {
		t.Fatalf("Next retries past MaxAttempts")
	}
}

func TestRetryAfter(t *testing.T) {
	date := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	cases := []struct {
		status     int
		retryAfter string
		min, max   time.Duration
	}{
		{http.StatusServiceUnavailable, "120", 120 * time.Second, 120 * time.Second},
		{http.StatusTooManyRequests, "3600", time.Hour, time.Hour},
		{http.StatusTooManyRequests, date, 85 * time.Second, 91 * time.Second},
		{http.StatusServiceUnavailable, "", 0, 0},
		{http.StatusTooManyRequests, "tomorrow", 0, 0},
	}
	s := testSender(t, Options{})
	for _, c := range cases {
		rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
			if c.retryAfter != "" {
				w.Header().Set("Retry-After", c.retryAfter)
			}
			w.WriteHeader(c.status)
		})
		r := s.Deliver(context.Background(), rc.target("/"), Message{ID: "msg_1", Body: testBody})
		if r.Outcome != Retry || r.StatusCode != c.status {
			t.Errorf("%d %q: Deliver = %+v, want retry", c.status, c.retryAfter, r)
			continue
		}
		if r.RetryAfter < c.min || r.RetryAfter > c.max {
			t.Errorf("%d %q: RetryAfter = %v, want %v..%v", c.status, c.retryAfter, r.RetryAfter, c.min, c.max)
		}
		delay, again := Next(1, r)
		want := max(c.min, 4*time.Second)
		if !again || delay < want || delay > max(c.max, 6*time.Second) {
			t.Errorf("%d %q: Next = %v %v, want at least %v", c.status, c.retryAfter, delay, again, want)
		}
	}
}

func TestHangingReceiverTimesOut(t *testing.T) {
	release := make(chan struct{})
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	s := testSender(t, Options{Timeout: 300 * time.Millisecond})
	start := time.Now()
	r := s.Deliver(context.Background(), rc.target("/"), Message{ID: "msg_1", Body: testBody})
	if r.Outcome != Retry || !errors.Is(r.Err, context.DeadlineExceeded) {
		t.Fatalf("Deliver = %+v, want retry after a timeout", r)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("Deliver took %v with a 300ms timeout", took)
	}
}

func TestLargeResponseBodyDiscarded(t *testing.T) {
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		w.WriteHeader(http.StatusOK)
		chunk := []byte(strings.Repeat("x", 32<<10))
		for range 1024 { // 32 MiB, unless the client hangs up
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	s := testSender(t, Options{})
	r := s.Deliver(context.Background(), rc.target("/"), Message{ID: "msg_1", Body: testBody})
	if r.Outcome != Delivered {
		t.Fatalf("Deliver = %+v, want delivered", r)
	}
}

func TestNetworkErrorRetried(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	secret, _ := NewSecret()
	s := testSender(t, Options{})
	r := s.Deliver(context.Background(), Target{URL: "http://" + addr + "/", Secret: secret}, Message{ID: "msg_1", Body: testBody})
	if r.Outcome != Retry || r.Err == nil || r.StatusCode != 0 {
		t.Fatalf("Deliver = %+v, want retry after a refused connection", r)
	}
}

// TestPrivateTargetsRefused checks that without AllowLoopback the sender
// does not even connect to a loopback receiver, whether it is named by an
// IP address or by a name that resolves to one.
func TestPrivateTargetsRefused(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	secret, _ := NewSecret()
	s := NewSender(Options{})
	t.Cleanup(s.Close)
	for _, host := range []string{"127.0.0.1", "localhost", "[::ffff:127.0.0.1]"} {
		u := "https://" + net.JoinHostPort(strings.Trim(host, "[]"), itoa(port)) + "/"
		r := s.Deliver(context.Background(), Target{URL: u, Secret: secret}, Message{ID: "msg_1", Body: testBody})
		if r.Outcome != Failed || !errors.Is(r.Err, ErrRefused) {
			t.Errorf("%s: Deliver = %+v, want failed with ErrRefused", u, r)
		}
	}
	if n := conns.Load(); n != 0 {
		t.Fatalf("the receiver got %d connections", n)
	}
	// The same receiver is reachable once loopback is allowed, so the
	// refusal above is the policy's doing.
	allowed := NewSender(Options{AllowLoopback: true, DialContext: nil})
	t.Cleanup(allowed.Close)
	r := allowed.Deliver(context.Background(), Target{URL: srv.URL, Secret: secret}, Message{ID: "msg_1", Body: testBody})
	if conns.Load() == 0 {
		t.Fatalf("with loopback allowed the receiver got no connection: %+v", r)
	}
}

func TestPlainHTTPRefusedWithoutTestOption(t *testing.T) {
	rc := newReceiver(t, answer(http.StatusOK))
	s := NewSender(Options{})
	t.Cleanup(s.Close)
	r := s.Deliver(context.Background(), rc.target("/"), Message{ID: "msg_1", Body: testBody})
	if r.Outcome != Failed || !errors.Is(r.Err, ErrBadURL) {
		t.Fatalf("Deliver = %+v, want failed with ErrBadURL", r)
	}
	if len(rc.received()) != 0 {
		t.Fatalf("the receiver was reached")
	}
}

func TestBadMessage(t *testing.T) {
	rc := newReceiver(t, answer(http.StatusOK))
	s := testSender(t, Options{})
	for _, c := range []struct {
		tgt Target
		msg Message
	}{
		{rc.target("/"), Message{Body: testBody}},
		{Target{URL: rc.srv.URL}, Message{ID: "msg_1", Body: testBody}},
	} {
		if r := s.Deliver(context.Background(), c.tgt, c.msg); r.Outcome != Failed || !errors.Is(r.Err, ErrBadMessage) {
			t.Errorf("Deliver = %+v, want failed with ErrBadMessage", r)
		}
	}
	if len(rc.received()) != 0 {
		t.Fatalf("the receiver was reached")
	}
}
