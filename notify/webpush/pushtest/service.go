// Package pushtest provides a Web Push service for tests that also plays
// the browser: it hands out subscriptions with their own keys, checks the
// VAPID authorization of each push (RFC 8292), decrypts its aes128gcm body
// as a user agent does (RFC 8291) and records the plaintext. It can be told
// to answer as a push service in trouble would. It shares no code with the
// sending side, so that it checks it independently.
package pushtest

import (
	"bytes"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// MaxBody is the largest push body the service accepts; push services
// need not accept more (RFC 8030 section 7.2).
const MaxBody = 4096

// pushPath is the path under which subscriptions' endpoints live.
const pushPath = "/push/"

// Subscription is what a browser's PushSubscription gives a server. It has
// the fields of webpush.Subscription, in the same order, so that it
// converts to it.
type Subscription struct {
	Endpoint string
	P256dh   string
	Auth     string
}

// Message is a push the service accepted.
type Message struct {
	Plaintext []byte
	TTL       string // the TTL header
	Urgency   string // the Urgency header, if any
	Topic     string // the Topic header, if any
	Contact   string // the VAPID token's sub claim
}

// Service is a push service on a loopback httptest server. Its methods are
// safe for concurrent use.
type Service struct {
	server  *httptest.Server
	origin  string
	closing chan struct{}
	once    sync.Once

	mu         sync.Mutex
	subs       map[string]*subscription
	failures   []failure
	outage     failure   // the answer during an outage
	outageEnds time.Time // when the outage set by FailFor ends
	hang       bool
	attempts   int // pushes asked for, answered or not
	rejections []string
	now        func() time.Time
}

// subscription is the browser's side of one subscription.
type subscription struct {
	key       *ecdh.PrivateKey
	auth      []byte
	serverKey []byte // the applicationServerKey it was made for
	gone      bool
	// accepted are the messages the service accepted; messages those the
	// browser received; outstanding those it holds while the browser is
	// away (Away), which a message of the same Topic replaces.
	accepted    []Message
	messages    []Message
	outstanding []Message
	away        bool
}

// failure is a queued answer to give instead of accepting a push.
type failure struct {
	status     int
	retryAfter string
}

// New starts a Service and closes it when tb's test ends.
func New(tb testing.TB) *Service {
	s := &Service{closing: make(chan struct{}), subs: map[string]*subscription{}, now: time.Now}
	s.server = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.origin = s.server.URL
	tb.Cleanup(s.Close)
	return s
}

// Close releases hanging requests and stops the server.
func (s *Service) Close() {
	s.once.Do(func() {
		close(s.closing)
		s.server.Close()
	})
}

// Origin returns the service's origin, the aud its VAPID tokens must have.
func (s *Service) Origin() string {
	return s.origin
}

// Subscribe makes a subscription as a browser does for a page that passes
// applicationServerKey (base64url): a new P-256 key pair and 16-byte
// authentication secret, and an endpoint on the service. Pushes to it must
// carry that key as their VAPID k, as push services require.
func (s *Service) Subscribe(applicationServerKey string) (Subscription, error) {
	serverKey, err := decodeBase64URL(applicationServerKey)
	if err != nil {
		return Subscription{}, fmt.Errorf("pushtest: applicationServerKey: %v", err)
	}
	key, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		return Subscription{}, err
	}
	sub := &subscription{key: key, auth: make([]byte, 16), serverKey: serverKey}
	rand.Read(sub.auth)
	id := rand.Text()
	s.mu.Lock()
	s.subs[id] = sub
	s.mu.Unlock()
	return Subscription{
		Endpoint: s.origin + pushPath + id,
		P256dh:   base64.RawURLEncoding.EncodeToString(key.PublicKey().Bytes()),
		Auth:     base64.RawURLEncoding.EncodeToString(sub.auth),
	}, nil
}

// Messages returns the messages the browser of the subscription with the
// given endpoint received, oldest first: every message the service
// accepted for it but those replaced while it was away (see Away).
func (s *Service) Messages(endpoint string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub := s.subs[idOf(endpoint)]
	if sub == nil {
		return nil
	}
	return append([]Message(nil), sub.messages...)
}

// Accepted returns every message the service accepted for the
// subscription with the given endpoint, oldest first, replaced or not.
func (s *Service) Accepted(endpoint string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub := s.subs[idOf(endpoint)]
	if sub == nil {
		return nil
	}
	return append([]Message(nil), sub.accepted...)
}

// Away sets whether the browser of the subscription with the given
// endpoint is away (not connected to the service). While it is, the
// service holds the messages it accepts for it, and a message with a Topic
// replaces the one held with the same Topic, as RFC 8030 section 5.4 says
// of a push service; when it comes back, the browser receives the ones
// held, oldest first. A browser is connected until told otherwise.
func (s *Service) Away(endpoint string, away bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub := s.subs[idOf(endpoint)]
	if sub == nil {
		return
	}
	sub.away = away
	if !away {
		sub.messages = append(sub.messages, sub.outstanding...)
		sub.outstanding = nil
	}
}

// Unsubscribe ends the subscription with the given endpoint: pushes to it
// are answered 410 Gone from now on.
func (s *Service) Unsubscribe(endpoint string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sub := s.subs[idOf(endpoint)]; sub != nil {
		sub.gone = true
	}
}

// FailNext makes the next n pushes be answered with status, and with a
// Retry-After header if retryAfter is not empty (for 429 and 503).
func (s *Service) FailNext(n, status int, retryAfter string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.failures = append(s.failures, failure{status: status, retryAfter: retryAfter})
	}
}

// FailFor makes every push for the duration d be answered with status,
// and with a Retry-After header if retryAfter is not empty; pushes queued
// by FailNext come first. FailFor(0, ...) ends an outage.
func (s *Service) FailFor(d time.Duration, status int, retryAfter string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outage = failure{status: status, retryAfter: retryAfter}
	s.outageEnds = s.now().Add(d)
}

// Hang makes the service, while on is set, answer no push: requests wait
// until the client gives up or the service closes.
func (s *Service) Hang(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hang = on
}

// Attempts returns how many pushes were asked of the service, whatever it
// answered.
func (s *Service) Attempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts
}

// Rejections returns why pushes were refused for a bad authorization or
// body, oldest first.
func (s *Service) Rejections() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.rejections...)
}

// idOf returns the subscription id in an endpoint URL or path.
func idOf(endpoint string) string {
	_, id, _ := strings.Cut(endpoint, pushPath)
	return id
}

// serveHTTP handles a push: POST to a subscription's endpoint.
func (s *Service) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, pushPath) {
		http.Error(w, "not a push", http.StatusMethodNotAllowed)
		return
	}
	s.mu.Lock()
	s.attempts++
	s.mu.Unlock()
	if s.hanging() {
		s.waitForClient(r)
		return
	}
	if f, ok := s.nextFailure(); ok {
		if f.retryAfter != "" {
			w.Header().Set("Retry-After", f.retryAfter)
		}
		http.Error(w, "failing as told", f.status)
		return
	}
	status, text := s.accept(r)
	if status != http.StatusCreated {
		http.Error(w, text, status)
		return
	}
	w.Header().Set("Location", s.origin+"/message/"+rand.Text())
	w.WriteHeader(http.StatusCreated)
}

// hanging reports whether the service is told to hang.
func (s *Service) hanging() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hang
}

// waitForClient blocks until the request's client goes away or the
// service closes.
func (s *Service) waitForClient(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-s.closing:
	}
}

// nextFailure takes the next queued failure, or the outage's answer while
// an outage lasts.
func (s *Service) nextFailure() (failure, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.failures) == 0 {
		return s.outage, s.now().Before(s.outageEnds)
	}
	f := s.failures[0]
	s.failures = s.failures[1:]
	return f, true
}

// accept checks and decrypts a push and records its message, returning
// the status to answer and, for a refusal, why.
func (s *Service) accept(r *http.Request) (int, string) {
	s.mu.Lock()
	sub := s.subs[idOf(r.URL.Path)]
	s.mu.Unlock()
	if sub == nil {
		return http.StatusNotFound, "no such subscription"
	}
	auth, err := parseVAPID(r.Header.Get("Authorization"), s.origin, s.now())
	if err != nil {
		return s.reject(http.StatusUnauthorized, "vapid: "+err.Error())
	}
	if !bytes.Equal(auth.publicKey, sub.serverKey) {
		return s.reject(http.StatusForbidden, "vapid: k is not the subscription's applicationServerKey")
	}
	body, status, text := readPush(r)
	if status != 0 {
		return s.reject(status, text)
	}
	plaintext, err := decrypt(body, sub.key, sub.auth)
	if err != nil {
		return s.reject(http.StatusBadRequest, "aes128gcm: "+err.Error())
	}
	return s.record(sub, Message{
		Plaintext: plaintext,
		TTL:       r.Header.Get("TTL"),
		Urgency:   r.Header.Get("Urgency"),
		Topic:     r.Header.Get("Topic"),
		Contact:   auth.contact,
	})
}

// readPush checks a push's headers and reads its body, returning a
// non-zero status and why if the push is malformed.
func readPush(r *http.Request) ([]byte, int, string) {
	ttl := r.Header.Get("TTL")
	if _, err := strconv.ParseUint(ttl, 10, 31); err != nil {
		return nil, http.StatusBadRequest, fmt.Sprintf("TTL header %q is not a number of seconds", ttl)
	}
	if ce := r.Header.Get("Content-Encoding"); ce != "aes128gcm" {
		return nil, http.StatusUnsupportedMediaType, fmt.Sprintf("content encoding %q is not aes128gcm", ce)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		return nil, http.StatusBadRequest, "reading the body: " + err.Error()
	}
	if len(body) > MaxBody {
		return nil, http.StatusRequestEntityTooLarge, fmt.Sprintf("body longer than %d bytes", MaxBody)
	}
	return body, 0, ""
}

// reject records why a push was refused and returns the answer.
func (s *Service) reject(status int, why string) (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rejections = append(s.rejections, why)
	return status, why
}

// record stores an accepted message unless its subscription is gone: the
// browser receives it, or, while it is away, the service holds it in place
// of the one held with the same Topic.
func (s *Service) record(sub *subscription, m Message) (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sub.gone {
		return http.StatusGone, "subscription expired"
	}
	sub.accepted = append(sub.accepted, m)
	if !sub.away {
		sub.messages = append(sub.messages, m)
		return http.StatusCreated, ""
	}
	if m.Topic != "" {
		sub.outstanding = slices.DeleteFunc(sub.outstanding, func(o Message) bool { return o.Topic == m.Topic })
	}
	sub.outstanding = append(sub.outstanding, m)
	return http.StatusCreated, ""
}
