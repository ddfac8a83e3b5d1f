package webpush

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/killrchat/chatql/internal/netguard"
	"github.com/killrchat/chatql/notify/webpush/pushtest"
)

const testContact = "mailto:ops@chat.test"

// roundTripFunc is an http.RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

// RoundTrip calls f.
func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// fixture is a Sender, its key and a push service with one subscription.
type fixture struct {
	key     *VAPIDKey
	sender  *Sender
	service *pushtest.Service
	sub     Subscription
	sent    atomic.Int32 // requests that reached the Sender's transport
}

// newFixture returns a fixture whose Sender may push to loopback and
// times out after timeout.
func newFixture(t *testing.T, timeout time.Duration) *fixture {
	t.Helper()
	key, err := GenerateVAPIDKey()
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{key: key, service: pushtest.New(t)}
	f.sender = f.newSender(t, key, Config{Timeout: timeout, AllowLoopback: true})
	ps, err := f.service.Subscribe(key.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	f.sub = Subscription(ps)
	return f
}

// newSender returns a Sender with key whose requests are counted in f.sent.
func (f *fixture) newSender(t *testing.T, key *VAPIDKey, cfg Config) *Sender {
	t.Helper()
	cfg.Key, cfg.Contact = key, testContact
	s, err := NewSender(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	s.client.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		f.sent.Add(1)
		return s.transport.RoundTrip(r)
	})
	return s
}

// rewriteAuthorization makes the fixture's Sender replace the
// Authorization header of its requests with what rewrite returns.
func (f *fixture) rewriteAuthorization(rewrite func(string) string) {
	base := f.sender.client.Transport
	f.sender.client.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", rewrite(r.Header.Get("Authorization")))
		return base.RoundTrip(r)
	})
}

func TestSendRoundTrip(t *testing.T) {
	f := newFixture(t, 5*time.Second)
	payloads := [][]byte{
		[]byte(`{"kind":"mention","room":"general","from":"ada"}`),
		{},
		bytes.Repeat([]byte{0xff}, MaxPayload),
	}
	opts := Options{TTL: 90 * time.Second, Urgency: UrgencyHigh, Topic: "room-general"}
	for _, p := range payloads {
		res, err := f.sender.Send(context.Background(), f.sub, p, opts)
		if err != nil || res.Outcome != Delivered || res.StatusCode != http.StatusCreated {
			t.Fatalf("Send of %d bytes = %+v, %v; want delivered (rejections: %q)", len(p), res, err, f.service.Rejections())
		}
	}
	got := f.service.Messages(f.sub.Endpoint)
	if len(got) != len(payloads) {
		t.Fatalf("service received %d messages, want %d", len(got), len(payloads))
	}
	for i, m := range got {
		if !bytes.Equal(m.Plaintext, payloads[i]) {
			t.Errorf("message %d decrypts to %q, want %q", i, m.Plaintext, payloads[i])
		}
		if m.TTL != "90" || m.Urgency != "high" || m.Topic != "room-general" || m.Contact != testContact {
			t.Errorf("message %d headers = %+v", i, m)
		}
	}
}

// TestSendPaddedKeys checks that padded base64url keys, which Validate
// accepts, are sent correctly.
func TestSendPaddedKeys(t *testing.T) {
	f := newFixture(t, 5*time.Second)
	sub := f.sub
	sub.Auth += "=="
	sub.P256dh += "="
	if res, err := f.sender.Send(context.Background(), sub, []byte("padded"), Options{}); err != nil || res.Outcome != Delivered {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	if m := f.service.Messages(sub.Endpoint); len(m) != 1 || string(m[0].Plaintext) != "padded" {
		t.Fatalf("messages = %+v", m)
	}
}

func TestSendGone(t *testing.T) {
	f := newFixture(t, 5*time.Second)
	f.service.Unsubscribe(f.sub.Endpoint)
	res, err := f.sender.Send(context.Background(), f.sub, []byte("hello"), Options{})
	if err != nil || res.Outcome != Gone || res.StatusCode != http.StatusGone {
		t.Fatalf("Send = %+v, %v; want gone", res, err)
	}
	unknown := f.sub
	unknown.Endpoint = f.service.Origin() + "/push/no-such-subscription"
	res, err = f.sender.Send(context.Background(), unknown, []byte("hello"), Options{})
	if err != nil || res.Outcome != Gone || res.StatusCode != http.StatusNotFound {
		t.Fatalf("Send to an unknown endpoint = %+v, %v; want gone", res, err)
	}
}

func TestSendRetryLater(t *testing.T) {
	f := newFixture(t, 5*time.Second)
	date := time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)
	cases := []struct {
		status     int
		retryAfter string
		min, max   time.Duration
	}{
		{http.StatusTooManyRequests, "7", 7 * time.Second, 7 * time.Second},
		{http.StatusServiceUnavailable, "", 0, 0},
		{http.StatusServiceUnavailable, date, 58 * time.Minute, time.Hour},
		{http.StatusInternalServerError, "soon", 0, 0},
	}
	for _, c := range cases {
		f.service.FailNext(1, c.status, c.retryAfter)
		res, err := f.sender.Send(context.Background(), f.sub, []byte("x"), Options{})
		if err != nil || res.Outcome != RetryLater || res.StatusCode != c.status {
			t.Fatalf("%d: Send = %+v, %v; want retry later", c.status, res, err)
		}
		if res.RetryAfter < c.min || res.RetryAfter > c.max {
			t.Errorf("%d %q: RetryAfter = %v, want in [%v, %v]", c.status, c.retryAfter, res.RetryAfter, c.min, c.max)
		}
	}
	if res, err := f.sender.Send(context.Background(), f.sub, []byte("x"), Options{}); err != nil || res.Outcome != Delivered {
		t.Fatalf("Send after the failures = %+v, %v", res, err)
	}
}

func TestSendDuringAnOutage(t *testing.T) {
	f := newFixture(t, 5*time.Second)
	f.service.FailFor(time.Hour, http.StatusServiceUnavailable, "30")
	for range 3 {
		res, err := f.sender.Send(context.Background(), f.sub, []byte("x"), Options{})
		if err != nil || res.Outcome != RetryLater || res.RetryAfter != 30*time.Second {
			t.Fatalf("Send during the outage = %+v, %v; want retry after 30s", res, err)
		}
	}
	f.service.FailFor(0, 0, "")
	if res, err := f.sender.Send(context.Background(), f.sub, []byte("x"), Options{}); err != nil || res.Outcome != Delivered {
		t.Fatalf("Send after the outage = %+v, %v", res, err)
	}
	if got := len(f.service.Messages(f.sub.Endpoint)); got != 1 {
		t.Fatalf("service recorded %d messages, want 1", got)
	}
}

func TestSendHangTimesOut(t *testing.T) {
	f := newFixture(t, 300*time.Millisecond)
	f.service.Hang(true)
	// The caller's deadline only keeps a broken Sender from hanging the test.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	res, err := f.sender.Send(ctx, f.sub, []byte("x"), Options{})
	if res.Outcome != RetryLater || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Send = %+v, %v; want retry later after a timeout", res, err)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Fatalf("Send took %v with a 300ms timeout", elapsed)
	}
}

func TestNetworkErrorIsRetryLater(t *testing.T) {
	f := newFixture(t, 2*time.Second)
	f.service.Close()
	res, err := f.sender.Send(context.Background(), f.sub, []byte("x"), Options{})
	if err == nil || res.Outcome != RetryLater {
		t.Fatalf("Send to a closed service = %+v, %v; want retry later", res, err)
	}
}

func TestTamperedSignatureIsRejected(t *testing.T) {
	f := newFixture(t, 5*time.Second)
	f.rewriteAuthorization(func(h string) string {
		token, key, _ := strings.Cut(strings.TrimPrefix(h, "vapid t="), ", k=")
		head, sig, _ := strings.Cut(token[strings.Index(token, ".")+1:], ".")
		raw, _ := base64.RawURLEncoding.DecodeString(sig)
		raw[10] ^= 1
		token = token[:strings.Index(token, ".")+1] + head + "." + base64.RawURLEncoding.EncodeToString(raw)
		return "vapid t=" + token + ", k=" + key
	})
	res, err := f.sender.Send(context.Background(), f.sub, []byte("x"), Options{})
	if err != nil || res.Outcome != Refused || res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("Send = %+v, %v; want refused with 401", res, err)
	}
	if r := f.service.Rejections(); len(r) != 1 || !strings.Contains(r[0], "signature does not verify") {
		t.Fatalf("rejections = %q", r)
	}
	if m := f.service.Messages(f.sub.Endpoint); len(m) != 0 {
		t.Fatalf("service recorded %d messages", len(m))
	}
}

func TestOtherServerKeyIsForbidden(t *testing.T) {
	f := newFixture(t, 5*time.Second)
	other, _ := GenerateVAPIDKey()
	s := f.newSender(t, other, Config{AllowLoopback: true})
	res, err := s.Send(context.Background(), f.sub, []byte("x"), Options{})
	if err != nil || res.Outcome != Refused || res.StatusCode != http.StatusForbidden {
		t.Fatalf("Send with another key = %+v, %v; want refused with 403", res, err)
	}
}

// signToken returns an ES256 JWT of claims signed with key.
func signToken(t *testing.T, key *VAPIDKey, header string, claims map[string]any) string {
	t.Helper()
	body, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	input := base64.RawURLEncoding.EncodeToString([]byte(header)) + "." + base64.RawURLEncoding.EncodeToString(body)
	digest := sha256.Sum256([]byte(input))
	r, s, err := ecdsa.Sign(rand.Reader, key.private, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// TestServiceChecksVAPIDClaims sends hand-made tokens: a good one must be
// accepted (so the helper is right) and each bad one refused.
func TestServiceChecksVAPIDClaims(t *testing.T) {
	const es256 = `{"typ":"JWT","alg":"ES256"}`
	f := newFixture(t, 5*time.Second)
	now := time.Now()
	good := func() map[string]any {
		return map[string]any{"aud": f.service.Origin(), "exp": now.Add(time.Hour).Unix(), "sub": testContact}
	}
	with := func(name string, value any) map[string]any {
		c := good()
		if value == nil {
			delete(c, name)
		} else {
			c[name] = value
		}
		return c
	}
	cases := []struct {
		name   string
		header string
		claims map[string]any
		want   string
	}{
		{"good", es256, good(), ""},
		{"other audience", es256, with("aud", "https://push.example"), "aud"},
		{"expired", es256, with("exp", now.Add(-time.Minute).Unix()), "expired"},
		{"expires in 25 hours", es256, with("exp", now.Add(25*time.Hour).Unix()), "24 hours"},
		{"no sub", es256, with("sub", nil), "sub"},
		{"not ES256", `{"typ":"JWT","alg":"HS256"}`, good(), "ES256"},
	}
	for _, c := range cases {
		token := signToken(t, f.key, c.header, c.claims)
		f.sender = f.newSender(t, f.key, Config{AllowLoopback: true})
		f.rewriteAuthorization(func(string) string { return "vapid t=" + token + ", k=" + f.key.PublicKey() })
		res, err := f.sender.Send(context.Background(), f.sub, []byte(c.name), Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		rejections := f.service.Rejections()
		if c.want == "" {
			if res.Outcome != Delivered {
				t.Errorf("%s: %+v, want delivered (rejections %q)", c.name, res, rejections)
			}
			continue
		}
		if res.StatusCode != http.StatusUnauthorized || len(rejections) == 0 || !strings.Contains(rejections[len(rejections)-1], c.want) {
			t.Errorf("%s: %+v, rejections %q; want 401 naming %q", c.name, res, rejections, c.want)
		}
	}
}

func TestPayloadTooLargeIsRefusedBeforeSending(t *testing.T) {
	f := newFixture(t, 5*time.Second)
	res, err := f.sender.Send(context.Background(), f.sub, make([]byte, MaxPayload+1), Options{})
	if !errors.Is(err, ErrPayloadTooLarge) || res.Outcome != Refused {
		t.Fatalf("Send = %+v, %v; want ErrPayloadTooLarge", res, err)
	}
	if n := f.sent.Load(); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

func TestBadOptionsAreRefusedBeforeSending(t *testing.T) {
	f := newFixture(t, 5*time.Second)
	for _, opts := range []Options{
		{TTL: -time.Second},
		{Urgency: "urgent"},
		{Topic: strings.Repeat("a", 33)},
		{Topic: "room general"},
		{Topic: "room/general"},
	} {
		if res, err := f.sender.Send(context.Background(), f.sub, []byte("x"), opts); !errors.Is(err, ErrBadOptions) || res.Outcome != Refused {
			t.Errorf("Send with %+v = %+v, %v; want ErrBadOptions", opts, res, err)
		}
	}
	if n := f.sent.Load(); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

func TestSSRFRefusals(t *testing.T) {
	f := newFixture(t, 2*time.Second)
	strict := f.newSender(t, f.key, Config{Timeout: 2 * time.Second})
	port := f.service.Origin()[strings.LastIndex(f.service.Origin(), ":"):]
	withEndpoint := func(endpoint string) Subscription {
		s := f.sub
		s.Endpoint = endpoint
		return s
	}
	cases := []struct {
		name   string
		sender *Sender
		sub    Subscription
		want   error
	}{
		{"loopback service without the option", strict, f.sub, ErrInvalidSubscription},
		{"127.0.0.1 over https without the option", strict, withEndpoint("https://127.0.0.1" + port + "/push/x"), ErrInvalidSubscription},
		{"localhost name, refused when dialled", strict, withEndpoint("https://localhost" + port + "/push/x"), netguard.ErrRefused},
		{"[::ffff:127.0.0.1]", strict, withEndpoint("https://[::ffff:127.0.0.1]" + port + "/push/x"), ErrInvalidSubscription},
		{"10.0.0.1", strict, withEndpoint("https://10.0.0.1/push/x"), ErrInvalidSubscription},
		{"169.254.169.254", strict, withEndpoint("https://169.254.169.254/latest/meta-data"), ErrInvalidSubscription},
		{"10.0.0.1 with the loopback option", f.sender, withEndpoint("https://10.0.0.1/push/x"), ErrInvalidSubscription},
		{"169.254.169.254 over http with the loopback option", f.sender, withEndpoint("http://169.254.169.254/push/x"), ErrInvalidSubscription},
	}
	for _, c := range cases {
		res, err := c.sender.Send(context.Background(), c.sub, []byte("x"), Options{})
		if !errors.Is(err, c.want) || res.Outcome != Refused {
			t.Errorf("%s: Send = %+v, %v; want refused with %v", c.name, res, err, c.want)
		}
	}
	if m := f.service.Messages(f.sub.Endpoint); len(m) != 0 {
		t.Fatalf("the service received %d messages", len(m))
	}
}

func TestNewSenderConfig(t *testing.T) {
	key, _ := GenerateVAPIDKey()
	for _, cfg := range []Config{
		{Contact: testContact},
		{Key: key},
		{Key: key, Contact: "ops@chat.test"},
		{Key: key, Contact: "mailto:"},
		{Key: key, Contact: "http://chat.test/contact"},
	} {
		if _, err := NewSender(cfg); !errors.Is(err, ErrBadConfig) {
			t.Errorf("NewSender(%+v) = %v, want ErrBadConfig", cfg, err)
		}
	}
	for _, contact := range []string{testContact, "https://chat.test/contact"} {
		s, err := NewSender(Config{Key: key, Contact: contact})
		if err != nil {
			t.Errorf("NewSender with contact %q: %v", contact, err)
			continue
		}
		s.Close()
	}
}

func TestSenderIgnoresProxySettings(t *testing.T) {
	t.Setenv("HTTPS_PROXY", "http://10.0.0.1:3128")
	t.Setenv("HTTP_PROXY", "http://10.0.0.1:3128")
	key, _ := GenerateVAPIDKey()
	s, err := NewSender(Config{Key: key, Contact: testContact})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.transport.Proxy != nil {
		t.Fatal("the Sender's transport takes a proxy")
	}
	if s.client.CheckRedirect == nil {
		t.Fatal("the Sender's client follows redirects")
	}
}

func TestConcurrentSends(t *testing.T) {
	f := newFixture(t, 5*time.Second)
	subs := []Subscription{f.sub}
	for range 3 {
		ps, err := f.service.Subscribe(f.key.PublicKey())
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, Subscription(ps))
	}
	const perSub = 5
	errs := make(chan error, len(subs)*perSub)
	for _, sub := range subs {
		for i := range perSub {
			go func() {
				res, err := f.sender.Send(context.Background(), sub, []byte{byte('a' + i)}, Options{TTL: time.Minute})
				if err == nil && res.Outcome != Delivered {
					err = errors.New(res.Outcome.String())
				}
				errs <- err
			}()
		}
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	for _, sub := range subs {
		if got := len(f.service.Messages(sub.Endpoint)); got != perSub {
			t.Errorf("%s received %d messages, want %d", sub.Endpoint, got, perSub)
		}
	}
}

// TestTopicReplacesWhileAway: while the browser is away, the push service
// holds what it accepts, and a message with a Topic replaces the one held
// with the same Topic (RFC 8030 section 5.4); one without a Topic, or of
// another, stays. Back, the browser receives what is held.
func TestTopicReplacesWhileAway(t *testing.T) {
	f := newFixture(t, 5*time.Second)
	send := func(text, topic string) {
		t.Helper()
		if res, err := f.sender.Send(context.Background(), f.sub, []byte(text), Options{TTL: time.Minute, Topic: topic}); err != nil || res.Outcome != Delivered {
			t.Fatalf("Send(%q) = %+v, %v", text, res, err)
		}
	}
	send("before", "tea")
	f.service.Away(f.sub.Endpoint, true)
	send("first", "tea")
	send("second", "tea")
	send("other", "cake")
	send("untopical", "")
	send("third", "tea")
	texts := func(ms []pushtest.Message) []string {
		var out []string
		for _, m := range ms {
			out = append(out, string(m.Plaintext))
		}
		return out
	}
	if got := texts(f.service.Messages(f.sub.Endpoint)); !slices.Equal(got, []string{"before"}) {
		t.Fatalf("while away, the browser received %q; want only what came before", got)
	}
	f.service.Away(f.sub.Endpoint, false)
	if got, want := texts(f.service.Messages(f.sub.Endpoint)), []string{"before", "other", "untopical", "third"}; !slices.Equal(got, want) {
		t.Fatalf("back, the browser received %q, want %q", got, want)
	}
	if got := len(f.service.Accepted(f.sub.Endpoint)); got != 6 {
		t.Fatalf("the service accepted %d messages, want 6", got)
	}
}
