package webpush

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	lib "github.com/SherClockHolmes/webpush-go"

	"github.com/killrchat/chatql/internal/netguard"
)

// MaxPayload is the largest plaintext Send accepts, in bytes. A push body
// is one aes128gcm record of 4096 bytes (RFC 8291 section 4): 86 bytes of
// header (salt, record size, key length, 65-byte key), a 16-byte
// authentication tag and at least the 1-byte padding delimiter leave 3993.
const MaxPayload = 4096 - 86 - 16 - 1

// DefaultTimeout bounds one push when Config.Timeout is zero.
const DefaultTimeout = 10 * time.Second

var (
	// ErrPayloadTooLarge reports a payload longer than MaxPayload.
	ErrPayloadTooLarge = errors.New("webpush: payload too large")

	// ErrBadOptions reports push options a push service would refuse.
	ErrBadOptions = errors.New("webpush: bad options")

	// ErrBadConfig reports a Config that NewSender cannot use.
	ErrBadConfig = errors.New("webpush: bad configuration")
)

// Urgency is the Urgency header of a push (RFC 8030 section 5.3).
type Urgency string

// The urgencies a push may have; the empty Urgency sends no header, which
// push services take as UrgencyNormal.
const (
	UrgencyVeryLow Urgency = "very-low"
	UrgencyLow     Urgency = "low"
	UrgencyNormal  Urgency = "normal"
	UrgencyHigh    Urgency = "high"
)

// Options are the per-push settings of RFC 8030.
type Options struct {
	// TTL is how long the push service keeps the message for a user
	// agent that is offline; zero means deliver now or drop. It is sent
	// in whole seconds.
	TTL time.Duration

	// Urgency tells the push service how soon to wake the device.
	Urgency Urgency

	// Topic, if set, replaces an undelivered message with the same topic:
	// at most 32 characters of the base64url alphabet.
	Topic string
}

// Config configures a Sender.
type Config struct {
	// Key is the application server's VAPID key; required.
	Key *VAPIDKey

	// Contact is the VAPID "sub" claim, a way for the push service's
	// operator to reach ours: "mailto:address" or an https URL; required.
	Contact string

	// Timeout bounds each push, from dialling to the response's headers;
	// zero means DefaultTimeout.
	Timeout time.Duration

	// AllowLoopback, for tests only, lets the Sender push to http and
	// https endpoints on loopback addresses.
	AllowLoopback bool
}

// Sender sends pushes. It is safe for concurrent use; make one with
// NewSender and Close it when done.
type Sender struct {
	key           *VAPIDKey
	subscriber    string
	timeout       time.Duration
	allowLoopback bool
	transport     *http.Transport
	client        *http.Client
}

// NewSender returns a Sender configured by cfg.
func NewSender(cfg Config) (*Sender, error) {
	if cfg.Key == nil {
		return nil, fmt.Errorf("%w: no VAPID key", ErrBadConfig)
	}
	subscriber, err := libSubscriber(cfg.Contact)
	if err != nil {
		return nil, err
	}
	s := &Sender{
		key:           cfg.Key,
		subscriber:    subscriber,
		timeout:       cfg.Timeout,
		allowLoopback: cfg.AllowLoopback,
	}
	if s.timeout <= 0 {
		s.timeout = DefaultTimeout
	}
	s.transport = newTransport(netguard.PublicOnly(cfg.AllowLoopback), s.timeout)
	s.client = &http.Client{Transport: s.transport, CheckRedirect: noRedirects}
	return s, nil
}

// libSubscriber checks the contact and returns it in the form webpush-go
// expects: the library prefixes "mailto:" to anything not starting with
// "https:", so a mailto contact is given without its scheme.
func libSubscriber(contact string) (string, error) {
	if address, ok := strings.CutPrefix(contact, "mailto:"); ok && address != "" {
		return address, nil
	}
	if strings.HasPrefix(contact, "https://") && len(contact) > len("https://") {
		return contact, nil
	}
	return "", fmt.Errorf("%w: contact %q is neither mailto: nor an https URL", ErrBadConfig, contact)
}

// newTransport returns a transport that ignores proxy settings and dials
// only addresses allowed by policy.
func newTransport(policy netguard.Policy, timeout time.Duration) *http.Transport {
	dialer := &netguard.Dialer{Allowed: policy, Timeout: timeout}
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    timeout,
		ResponseHeaderTimeout:  timeout,
		MaxResponseHeaderBytes: 16 << 10,
		MaxIdleConns:           64,
		IdleConnTimeout:        90 * time.Second,
	}
}

// noRedirects makes the client return a redirect as the response: push
// services do not redirect, and following one would leave the endpoint
// that was validated.
func noRedirects(*http.Request, []*http.Request) error {
	return http.ErrUseLastResponse
}

// Close closes the Sender's idle connections.
func (s *Sender) Close() {
	s.transport.CloseIdleConnections()
}

// Send encrypts payload for sub and posts it to sub's endpoint with a VAPID
// authorization, within the Sender's timeout. An invalid subscription, an
// oversized payload, bad options or a refused address give Refused and an
// error; a timeout or network error gives RetryLater and an error; any
// answer of the push service gives a nil error and its classification.
func (s *Sender) Send(ctx context.Context, sub Subscription, payload []byte, opts Options) (Result, error) {
	libSub, err := s.check(sub, payload, opts)
	if err != nil {
		return Result{Outcome: Refused}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	resp, err := lib.SendNotificationWithContext(ctx, payload, libSub, s.libOptions(opts))
	if err != nil {
		return failure(err)
	}
	defer resp.Body.Close()
	return s.result(resp), nil
}

// check validates a push before anything is sent and returns the
// subscription in webpush-go's form, with canonical base64url keys.
func (s *Sender) check(sub Subscription, payload []byte, opts Options) (*lib.Subscription, error) {
	if err := Validate(sub, s.allowLoopback); err != nil {
		return nil, err
	}
	if len(payload) > MaxPayload {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrPayloadTooLarge, len(payload), MaxPayload)
	}
	if err := checkOptions(opts); err != nil {
		return nil, err
	}
	p256dh, _ := decodeBase64URL(sub.P256dh)
	auth, _ := decodeBase64URL(sub.Auth)
	return &lib.Subscription{Endpoint: sub.Endpoint, Keys: lib.Keys{
		P256dh: base64.RawURLEncoding.EncodeToString(p256dh),
		Auth:   base64.RawURLEncoding.EncodeToString(auth),
	}}, nil
}

// checkOptions returns an error wrapping ErrBadOptions for options that
// RFC 8030 does not allow.
func checkOptions(opts Options) error {
	if opts.TTL < 0 {
		return fmt.Errorf("%w: negative TTL", ErrBadOptions)
	}
	switch opts.Urgency {
	case "", UrgencyVeryLow, UrgencyLow, UrgencyNormal, UrgencyHigh:
	default:
		return fmt.Errorf("%w: urgency %q", ErrBadOptions, opts.Urgency)
	}
	if !validTopic(opts.Topic) {
		return fmt.Errorf("%w: topic %q is not at most 32 base64url characters", ErrBadOptions, opts.Topic)
	}
	return nil
}

// validTopic reports whether topic is at most 32 characters of the
// base64url alphabet (RFC 8030 section 5.4).
func validTopic(topic string) bool {
	if len(topic) > 32 {
		return false
	}
	for _, c := range topic {
		alnum := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

// libOptions returns webpush-go's options for one push.
func (s *Sender) libOptions(opts Options) *lib.Options {
	return &lib.Options{
		HTTPClient:      s.client,
		Subscriber:      s.subscriber,
		TTL:             int(opts.TTL / time.Second),
		Urgency:         lib.Urgency(opts.Urgency),
		Topic:           opts.Topic,
		VAPIDPublicKey:  s.key.PublicKey(),
		VAPIDPrivateKey: s.key.PrivateKeyBase64(),
	}
}

// failure classifies a push that got no answer: a refusal by the address
// policy is Refused, anything else (timeouts, network errors) RetryLater.
func failure(err error) (Result, error) {
	if errors.Is(err, netguard.ErrRefused) {
		return Result{Outcome: Refused}, err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return Result{Outcome: RetryLater}, fmt.Errorf("webpush: timed out: %w", err)
	}
	return Result{Outcome: RetryLater}, err
}

// maxDetail is how much of a response body Result.Detail keeps.
const maxDetail = 512

// result reads the push service's answer.
func (s *Sender) result(resp *http.Response) Result {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxDetail))
	r := Result{
		Outcome:    classify(resp.StatusCode),
		StatusCode: resp.StatusCode,
		Detail:     strings.ToValidUTF8(string(body), "?"),
	}
	if r.Outcome == RetryLater {
		r.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	return r
}
