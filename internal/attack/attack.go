// Package attack is the hostile-client suite: requests an attacker (or a
// broken client) sends to a chat server, each with the answer the server
// owes it - a GraphQL error with a code, at a bounded cost - and, after
// each, proof that the server still serves. cmd/chatattack runs it against
// any running server; e2e/attack_test.go runs it against the built binary.
package attack

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Target is a running server and what the suite may know of it.
type Target struct {
	// Base is the server's root URL, e.g. http://127.0.0.1:8080.
	Base string
	// Secret is the server's JWT secret. With it the suite forges tokens
	// with valid signatures, as a thief of the secret or of a token
	// could; without it those attacks are skipped.
	Secret []byte
	// ConnsPerAddress is the server's cap on connections from one
	// address; 0 skips the connection flood.
	ConnsPerAddress int
	// HeaderTimeout is the server's read-header timeout; 0 skips the
	// slow-headers attack (it lasts that long).
	HeaderTimeout time.Duration
	// SessionCheck bounds how long a revoked session may keep working;
	// 0 skips the attacks that wait for it.
	SessionCheck time.Duration
	// FloodFrom is a local address (e.g. 127.0.0.2 for a server on
	// loopback) that the floods come from, so that the per-address limits
	// they trip do not refuse the other attacks; empty: the default.
	FloodFrom string
	// HTTP is the client of every request; nil means a fresh one.
	HTTP *http.Client
	// local is the address this copy of the Target dials from.
	local     string
	floodOnce sync.Once
	flood     *Target
}

// flooder returns the Target as seen from FloodFrom: one copy, whose
// connections the floods share (so that one flood's idle connections do
// not count against the next one's per-address cap).
func (t *Target) flooder() *Target {
	if t.FloodFrom == "" {
		return t
	}
	t.floodOnce.Do(func() {
		dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(t.FloodFrom)}}
		t.flood = &Target{Base: t.Base, Secret: t.Secret, ConnsPerAddress: t.ConnsPerAddress,
			HeaderTimeout: t.HeaderTimeout, SessionCheck: t.SessionCheck, local: t.FloodFrom,
			HTTP: &http.Client{Timeout: t.HTTP.Timeout, Transport: &http.Transport{DialContext: dialer.DialContext, MaxIdleConnsPerHost: 16}}}
	})
	return t.flood
}

// An Attack is one hostile request (or a few) and the check of the answer.
type Attack struct {
	Name string
	// Item is the item of issue 11 the attack proves.
	Item int
	What string
	Run  func(ctx context.Context, t *Target) error
}

// ErrSkipped is returned by an attack that the Target does not allow.
var ErrSkipped = errors.New("skipped")

// Result is the outcome of one attack.
type Result struct {
	Attack
	Err  error
	Took time.Duration
}

// Run runs the attacks whose name matches only (all if nil), one after
// another, and checks after each that the server still answers /healthz.
func Run(ctx context.Context, t *Target, only *regexp.Regexp) []Result {
	if t.HTTP == nil {
		t.HTTP = &http.Client{Timeout: 30 * time.Second}
	}
	var out []Result
	for _, a := range All() {
		if only != nil && !only.MatchString(a.Name) {
			continue
		}
		start := time.Now()
		err := a.Run(ctx, t)
		took := time.Since(start)
		if err == nil || !errors.Is(err, ErrSkipped) {
			err = errors.Join(err, t.healthy(ctx))
		}
		out = append(out, Result{Attack: a, Err: err, Took: took})
	}
	return out
}

// All is the suite, in issue 11's order.
func All() []Attack {
	return []Attack{
		{"parser-token-limit", 6, "340,000 unknown directives in a 1 MB document", parserTokens},
		{"fragment-bomb", 6, "25 fragments, each spreading the previous one twice", fragmentBomb},
		{"nested-list-literal", 6, "a list literal nested 50,000 deep in an argument", nestedListLiteral},
		{"nested-variables", 6, "a JSON variable nested 100,000 deep", nestedVariables},
		{"list-complexity", 6, "33 aliases of messages(first: 100)", listComplexity},
		{"error-flood", 6, "2,000 unknown fields: the errors of one response are capped", errorFlood},
		{"transport-errors", 7, "malformed requests each get a coded error", transportErrors},
		{"persisted-query-not-found", 7, "an unknown persisted query hash, as Apollo clients send it", persistedQueryNotFound},
		{"websocket-bad-token", 8, "connection_init with a forged token closes the socket 4401", websocketBadToken},
		{"slow-headers", 9, "headers sent a byte at a time are cut off", slowHeaders},
		{"connection-flood", 9, "one address opens more connections than its cap", connectionFlood},
		{"signup-flood", 9, "500 concurrent signups while /healthz must answer", signupFlood},
		{"post-flood", 10, "one user posts 300 messages at once", postFlood},
		{"password-guessing", 10, "50 wrong passwords for one login", passwordGuessing},
		{"forged-tokens", 11, "tokens with a valid signature that must still be refused", forgedTokens},
		{"refresh-token-reuse", 12, "a used refresh token revokes its family", refreshTokenReuse},
		{"logout-ends-stream", 12, "an open subscription ends when its session is revoked", logoutEndsStream},
	}
}

// answer is a response as the suite reads it.
type answer struct {
	Status int
	Header http.Header
	Body   []byte
	Took   time.Duration
	Errors []gqlError
}

type gqlError struct {
	Message    string         `json:"message"`
	Extensions map[string]any `json:"extensions"`
}

func (e gqlError) code() string { s, _ := e.Extensions["code"].(string); return s }

// maxAnswer is the most the suite reads of a response: an answer to a
// hostile request is an error, a few hundred bytes.
const maxAnswer = 64 << 10

// send makes a request and reads its answer, at most maxAnswer bytes.
func (t *Target) send(ctx context.Context, method, path string, header http.Header, body io.Reader) (answer, error) {
	req, err := http.NewRequestWithContext(ctx, method, t.Base+path, body)
	if err != nil {
		return answer{}, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	start := time.Now()
	resp, err := t.HTTP.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	a := answer{Status: resp.StatusCode, Header: resp.Header, Body: raw, Took: time.Since(start)}
	if err != nil {
		return a, err
	}
	if len(raw) > maxAnswer {
		return a, fmt.Errorf("answer is larger than %d bytes (HTTP %d): %.200s", maxAnswer, resp.StatusCode, raw)
	}
	var decoded struct{ Errors []gqlError }
	if json.Unmarshal(raw, &decoded) == nil {
		a.Errors = decoded.Errors
	}
	return a, nil
}

// postJSON posts a GraphQL request body, with a token if given.
func (t *Target) postJSON(ctx context.Context, token string, body any) (answer, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return answer{}, err
	}
	return t.postRaw(ctx, token, raw)
}

func (t *Target) postRaw(ctx context.Context, token string, raw []byte) (answer, error) {
	h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/graphql-response+json, application/json"}}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	return t.send(ctx, http.MethodPost, "/query", h, bytes.NewReader(raw))
}

// query runs an operation and returns its answer; the request itself must
// have gone through.
func (t *Target) query(ctx context.Context, token, query string, vars map[string]any) (answer, error) {
	return t.postJSON(ctx, token, map[string]any{"query": query, "variables": vars})
}

// refused checks that a is a refusal: no server error status, and only
// errors that carry a code, the first one of codes (any code if none).
func refused(a answer, codes ...string) error {
	if a.Status >= 500 {
		return fmt.Errorf("HTTP %d (a server error) for a client's fault: %.300s", a.Status, a.Body)
	}
	if len(a.Errors) == 0 {
		return fmt.Errorf("HTTP %d with no GraphQL errors: %.300s", a.Status, a.Body)
	}
	for _, e := range a.Errors {
		if e.code() == "" {
			return fmt.Errorf("an error without extensions.code: %q (HTTP %d)", e.Message, a.Status)
		}
		if e.Message == "" {
			return fmt.Errorf("an error without a message (code %s)", e.code())
		}
	}
	if len(codes) == 0 {
		return nil
	}
	for _, c := range codes {
		if a.Errors[0].code() == c {
			return nil
		}
	}
	return fmt.Errorf("code %s (%q), want %s", a.Errors[0].code(), a.Errors[0].Message, strings.Join(codes, " or "))
}

// within checks that a refusal came quickly: a limit must act before the
// work it protects. The bound is generous (a loaded CI machine); the
// issue's aim is far below it.
func within(a answer, bound time.Duration) error {
	if a.Took > bound {
		return fmt.Errorf("the answer took %v, more than %v: the limit acted after the work", a.Took, bound)
	}
	return nil
}

// healthy checks that the server still answers its liveness probe.
func (t *Target) healthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	a, err := t.send(ctx, http.MethodGet, "/healthz", nil, nil)
	if err != nil {
		return fmt.Errorf("server unhealthy after the attack: %w", err)
	}
	if a.Status != http.StatusOK {
		return fmt.Errorf("server unhealthy after the attack: /healthz HTTP %d", a.Status)
	}
	return nil
}

// account is a user the suite signed up, with its session.
type account struct {
	Login, Password     string
	Token, RefreshToken string
}

// newAccount signs up a fresh user and logs in.
func (t *Target) newAccount(ctx context.Context) (account, error) {
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	acc := account{Login: "atk" + hex.EncodeToString(suffix), Password: "correct-horse-battery"}
	for {
		a, err := t.query(ctx, "", `mutation($in: SignupInput!) { signup(input: $in) { login } }`,
			map[string]any{"in": map[string]any{"login": acc.Login, "password": acc.Password, "firstname": "Mallory", "lastname": "Attacker"}})
		if err != nil {
			return acc, err
		}
		if len(a.Errors) == 0 {
			return acc, t.login(ctx, &acc)
		}
		// The suite's own accounts wait out a signup limit, as a
		// well-behaved client does.
		if err := a.waitRetry(ctx); err != nil {
			return acc, fmt.Errorf("signup %s: %s (%s)", acc.Login, a.Errors[0].Message, a.Errors[0].code())
		}
	}
}

// waitRetry waits as long as a RATE_LIMITED answer asks; any other answer
// is an error.
func (a answer) waitRetry(ctx context.Context) error {
	if len(a.Errors) == 0 || a.Errors[0].code() != "RATE_LIMITED" {
		return errors.New("not rate limited")
	}
	wait, _ := a.Errors[0].Extensions["retryAfter"].(float64)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Duration(max(wait, 1) * float64(time.Second))):
		return nil
	}
}

// login logs acc in, keeping its tokens.
func (t *Target) login(ctx context.Context, acc *account) error {
	var a answer
	for {
		var err error
		a, err = t.query(ctx, "", `mutation($l: String!, $p: String!) { login(login: $l, password: $p) { token refreshToken } }`,
			map[string]any{"l": acc.Login, "p": acc.Password})
		if err != nil {
			return err
		}
		if a.waitRetry(ctx) != nil { // not rate limited: an answer
			break
		}
	}
	var out struct {
		Data struct {
			Login struct{ Token, RefreshToken string }
		}
	}
	if err := json.Unmarshal(a.Body, &out); err != nil || out.Data.Login.Token == "" {
		return fmt.Errorf("login %s: HTTP %d %.300s", acc.Login, a.Status, a.Body)
	}
	acc.Token, acc.RefreshToken = out.Data.Login.Token, out.Data.Login.RefreshToken
	return nil
}

// accountWithRoom signs up a fresh user who creates a room named after
// them; it returns both.
func (t *Target) accountWithRoom(ctx context.Context) (account, string, error) {
	acc, err := t.newAccount(ctx)
	if err != nil {
		return acc, "", err
	}
	room := "atk-" + acc.Login[3:]
	a, err := t.query(ctx, acc.Token, `mutation($n: String!) { createRoom(input: {name: $n}) { name } }`, map[string]any{"n": room})
	if err == nil && len(a.Errors) > 0 {
		err = fmt.Errorf("createRoom: %s (%s)", a.Errors[0].Message, a.Errors[0].code())
	}
	return acc, room, err
}
