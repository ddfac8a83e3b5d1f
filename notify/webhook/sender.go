package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// DefaultTimeout bounds one attempt, from dialling to the end of the
// response body.
const DefaultTimeout = 10 * time.Second

// DefaultUserAgent is the User-Agent of requests.
const DefaultUserAgent = "chatql-webhooks/1 (+https://github.com/killrchat/chatql)"

// maxResponseBytes is how much of a response body is read (and discarded),
// so that the connection can be reused without reading a huge body.
const maxResponseBytes = 64 << 10

// Options configure a Sender. The zero value is ready for production.
type Options struct {
	// Timeout bounds one attempt; zero means DefaultTimeout.
	Timeout time.Duration
	// UserAgent is sent with each request; empty means DefaultUserAgent.
	UserAgent string
	// AllowLoopback, for tests only, accepts http URLs on loopback hosts
	// and lets the default dialer connect to loopback addresses.
	AllowLoopback bool
	// DialContext opens connections. Nil means a dialer that refuses
	// non-public addresses (loopback too unless AllowLoopback). A caller
	// that sets it is responsible for the address policy.
	DialContext DialFunc
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// withDefaults fills in the zero fields of o.
func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}
	if o.DialContext == nil {
		o.DialContext = newCheckedDialer(o.AllowLoopback, o.Timeout)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Target is an endpoint to deliver to.
type Target struct {
	// URL is the endpoint, checked with ValidateURL on every attempt.
	URL string
	// Secret signs the messages sent to this endpoint.
	Secret Secret
}

// Message is one event to deliver.
type Message struct {
	// ID identifies the message; it must be the same on every retry so
	// that receivers can drop duplicates.
	ID string
	// Timestamp is the time of this attempt (the receiver rejects
	// timestamps more than five minutes away from its clock, so a retry is
	// signed anew); zero means now.
	Timestamp time.Time
	// Body is the JSON payload.
	Body []byte
}

// Sender delivers messages over HTTP. It is safe for concurrent use.
type Sender struct {
	opts   Options
	client *http.Client
}

// NewSender returns a Sender with the given options.
func NewSender(opts Options) *Sender {
	opts = opts.withDefaults()
	transport := &http.Transport{
		Proxy:                  nil,
		DialContext:            opts.DialContext,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    opts.Timeout,
		MaxResponseHeaderBytes: maxResponseBytes,
		MaxIdleConns:           64,
		IdleConnTimeout:        90 * time.Second,
	}
	client := &http.Client{
		Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	return &Sender{opts: opts, client: client}
}

// Close closes idle connections.
func (s *Sender) Close() {
	s.client.CloseIdleConnections()
}

// Deliver makes one attempt to post msg to target and classifies it. It
// never follows redirects; the caller schedules retries with Next.
func (s *Sender) Deliver(ctx context.Context, target Target, msg Message) Result {
	start := s.opts.Now()
	r := s.attempt(ctx, target, msg, start)
	r.Elapsed = s.opts.Now().Sub(start)
	return r
}

// attempt validates, builds and sends the request.
func (s *Sender) attempt(ctx context.Context, target Target, msg Message, now time.Time) Result {
	req, err := s.newRequest(ctx, target, msg, now)
	if err != nil {
		return Result{Outcome: Failed, Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	resp, err := s.client.Do(req.WithContext(ctx))
	if err != nil {
		return classifyError(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBytes))
	return classifyStatus(resp.StatusCode, resp.Header, s.opts.Now())
}

// newRequest builds the signed POST of msg to target.
func (s *Sender) newRequest(ctx context.Context, target Target, msg Message, now time.Time) (*http.Request, error) {
	if err := checkMessage(target, msg); err != nil {
		return nil, err
	}
	u, err := ValidateURL(target.URL, s.opts.AllowLoopback)
	if err != nil {
		return nil, err
	}
	ts := msg.Timestamp
	if ts.IsZero() {
		ts = now
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(msg.Body))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadURL, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", s.opts.UserAgent)
	req.Header.Set(HeaderID, msg.ID)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set(HeaderSignature, Sign(target.Secret, msg.ID, ts, msg.Body))
	return req, nil
}

// ErrBadMessage reports a message or target that cannot be sent at all.
var ErrBadMessage = errors.New("webhook: bad message")

// checkMessage refuses a message without an id and a target without a
// secret.
func checkMessage(target Target, msg Message) error {
	if msg.ID == "" {
		return fmt.Errorf("%w: no id", ErrBadMessage)
	}
	if target.Secret.IsZero() {
		return fmt.Errorf("%w: target has no secret", ErrBadMessage)
	}
	return nil
}

// classifyError turns a failed request into a Result: a refused address
// fails for good, anything else (timeouts, network errors) is retried.
func classifyError(err error) Result {
	if errors.Is(err, ErrRefused) {
		return Result{Outcome: Failed, Err: err}
	}
	return Result{Outcome: Retry, Err: err}
}
