package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"github.com/killrchat/chatql/internal/chatclient"
)

// The operations the load tool sends, as a chat app would.
const (
	signupMutation = `mutation($in: SignupInput!) { signup(input: $in) { login } }`
	loginMutation  = `mutation($l: String!, $p: String!) { login(login: $l, password: $p) { token } }`
	createRoomMut  = `mutation($n: String!) { createRoom(input: {name: $n, banner: "chatload"}) { name } }`
	joinRoomMut    = `mutation($r: String!) { joinRoom(room: $r) { name } }`
	postMutation   = `mutation($r: String!, $c: String!) { postMessage(room: $r, content: $c) { id postedAt } }`
	messagesQuery  = `query($r: String!, $n: Int) { messages(room: $r, first: $n) { edges { cursor node { id content system postedAt author { login firstname lastname } } } pageInfo { hasNextPage endCursor } } }`
	roomEventsSub  = `subscription($r: String!, $after: String) { roomEvents(room: $r, after: $after) { kind room cursor message { id content system postedAt author { login firstname lastname } } user { login } } }`
)

// newHTTPClient returns the one HTTP client of a run: enough idle
// connections per host that posters and readers keep theirs (the default
// of 2 would open and close a connection per request).
func newHTTPClient(conns int) *http.Client {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns * 2,
		MaxIdleConnsPerHost: conns * 2,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
	return &http.Client{Transport: tr}
}

// errorCounts counts errors by kind: the GraphQL error code, the HTTP
// status or the transport failure.
type errorCounts struct {
	mu     sync.Mutex
	counts map[string]int64
	total  atomic.Int64
	last   map[string]string // an example message per kind, for the report
}

func newErrorCounts() *errorCounts {
	return &errorCounts{counts: map[string]int64{}, last: map[string]string{}}
}

func (e *errorCounts) Add(op string, err error) {
	kind := op + ":" + errorKind(err)
	e.total.Add(1)
	e.mu.Lock()
	e.counts[kind]++
	if _, ok := e.last[kind]; !ok {
		e.last[kind] = truncate(err.Error(), 200)
	}
	e.mu.Unlock()
}

func (e *errorCounts) Snapshot() (map[string]int64, map[string]string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	counts := make(map[string]int64, len(e.counts))
	examples := make(map[string]string, len(e.last))
	for k, v := range e.counts {
		counts[k] = v
		examples[k] = e.last[k]
	}
	return counts, examples
}

// errorKind classifies an error for counting.
func errorKind(err error) string {
	var gql chatclient.Errors
	switch {
	case errors.As(err, &gql):
		if c := gql.Code(); c != "" {
			return "graphql-" + c
		}
		return "graphql"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection-refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection-reset"
	case errors.Is(err, syscall.EPIPE):
		return "broken-pipe"
	case errors.Is(err, os.ErrDeadlineExceeded):
		return "timeout"
	case websocket.CloseStatus(err) != -1:
		return fmt.Sprintf("ws-close-%d", websocket.CloseStatus(err))
	}
	var se *statusError
	if errors.As(err, &se) {
		return fmt.Sprintf("http-%d", se.status)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	if strings.Contains(err.Error(), "EOF") {
		return "eof"
	}
	return "transport"
}

type statusError struct {
	status int
	body   string
}

func (e *statusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.status, e.body) }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// world is what the setup created: users with their tokens, and rooms.
type world struct {
	prefix     string
	rooms      []string
	postRoom   string   // a room nobody subscribes to, for the post baseline
	idleRooms  []string // rooms nobody posts to, one per idle subscription of a connection
	posters    []*chatclient.Client
	subUsers   []*chatclient.Client // subscriber j acts as subUsers[j % len]
	idleUsers  []*chatclient.Client
	setupTime  time.Duration
	usersMade  int
	roomsMade  int
	joinsMade  int
	passwordOf func(login string) string
}

// setup signs up and logs in the users of the run, creates the rooms and
// makes everyone join the rooms they use, all through the API, with
// concurrency workers at a time.
func setup(ctx context.Context, api *chatclient.Client, cfg *config, errs *errorCounts) (*world, error) {
	start := time.Now()
	w := &world{prefix: cfg.prefix, passwordOf: func(login string) string { return "pw-" + login + "-chatload" }}
	for i := range cfg.rooms {
		w.rooms = append(w.rooms, fmt.Sprintf("%s-r%03d", cfg.prefix, i))
	}
	w.postRoom = cfg.prefix + "-post"
	if cfg.idleSubs > 0 && cfg.serverPID > 0 {
		w.idleRooms = []string{cfg.prefix + "-idle"}
		for k := 1; k < cfg.idleSubsPerConn; k++ {
			w.idleRooms = append(w.idleRooms, fmt.Sprintf("%s-idle%03d", cfg.prefix, k))
		}
	}

	nSub := cfg.users
	if nSub <= 0 || nSub > cfg.subscribers {
		nSub = cfg.subscribers
	}
	nIdle := 0
	if cfg.idleSubs > 0 && cfg.serverPID > 0 {
		nIdle = min(cfg.idleSubs, 100)
	}
	logins := make([]string, 0, cfg.posters+nSub+nIdle)
	for i := range cfg.posters {
		logins = append(logins, fmt.Sprintf("%s-p%03d", cfg.prefix, i))
	}
	for i := range nSub {
		logins = append(logins, fmt.Sprintf("%s-s%05d", cfg.prefix, i))
	}
	for i := range nIdle {
		logins = append(logins, fmt.Sprintf("%s-i%03d", cfg.prefix, i))
	}
	clients := make([]*chatclient.Client, len(logins))
	progress := newStepProgress("users", len(logins))
	err := parallel(ctx, cfg.setupConcurrency, len(logins), func(ctx context.Context, i int) error {
		c, err := signupAndLogin(ctx, api, logins[i], w.passwordOf(logins[i]))
		if err != nil {
			errs.Add("setup-user", err)
			return fmt.Errorf("user %s: %w", logins[i], err)
		}
		clients[i] = c
		progress.done()
		return nil
	})
	progress.finish()
	if err != nil {
		return nil, err
	}
	w.usersMade = len(logins)
	w.posters = clients[:cfg.posters]
	w.subUsers = clients[cfg.posters : cfg.posters+nSub]
	w.idleUsers = clients[cfg.posters+nSub:]

	creator := w.posters[0]
	allRooms := append(append([]string{}, w.rooms...), w.postRoom)
	allRooms = append(allRooms, w.idleRooms...)
	for _, r := range allRooms {
		if err := creator.Do(ctx, createRoomMut, map[string]any{"n": r}, nil); err != nil && !isCode(err, "CONFLICT") {
			errs.Add("setup-room", err)
			return nil, fmt.Errorf("create room %s: %w", r, err)
		}
		w.roomsMade++
	}

	// Who joins what: every poster every room (readers act as posters);
	// each subscriber user the rooms of its subscriptions; idle users the
	// idle room.
	type join struct {
		c    *chatclient.Client
		room string
	}
	var joins []join
	for _, p := range w.posters {
		for _, r := range allRooms[:len(w.rooms)+1] {
			joins = append(joins, join{p, r})
		}
	}
	seen := map[[2]int]bool{}
	for j := range cfg.subscribers {
		u, r := j%len(w.subUsers), j%len(w.rooms)
		if !seen[[2]int{u, r}] {
			seen[[2]int{u, r}] = true
			joins = append(joins, join{w.subUsers[u], w.rooms[r]})
		}
	}
	for _, u := range w.idleUsers {
		for _, r := range w.idleRooms {
			joins = append(joins, join{u, r})
		}
	}
	progress = newStepProgress("joins", len(joins))
	err = parallel(ctx, cfg.setupConcurrency, len(joins), func(ctx context.Context, i int) error {
		if err := joins[i].c.Do(ctx, joinRoomMut, map[string]any{"r": joins[i].room}, nil); err != nil {
			errs.Add("setup-join", err)
			return fmt.Errorf("join %s: %w", joins[i].room, err)
		}
		progress.done()
		return nil
	})
	progress.finish()
	if err != nil {
		return nil, err
	}
	w.joinsMade = len(joins)
	w.setupTime = time.Since(start)
	return w, nil
}

func signupAndLogin(ctx context.Context, api *chatclient.Client, login, password string) (*chatclient.Client, error) {
	in := map[string]any{"login": login, "password": password, "firstname": "Load", "lastname": "Tester " + login}
	if err := api.Do(ctx, signupMutation, map[string]any{"in": in}, nil); err != nil && !isCode(err, "CONFLICT") {
		return nil, err
	}
	var out struct{ Login struct{ Token string } }
	if err := api.Do(ctx, loginMutation, map[string]any{"l": login, "p": password}, &out); err != nil {
		return nil, err
	}
	return api.WithToken(out.Login.Token), nil
}

func isCode(err error, code string) bool {
	var gql chatclient.Errors
	return errors.As(err, &gql) && gql.Code() == code
}

// parallel runs fn(0..n-1) on up to workers goroutines and returns the
// first error, after which it starts no more calls.
func parallel(parent context.Context, workers, n int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	var (
		next     atomic.Int64
		firstErr error
		once     sync.Once
		wg       sync.WaitGroup
	)
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(ctx, i); err != nil {
					once.Do(func() { firstErr = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr == nil {
		firstErr = parent.Err()
	}
	return firstErr
}

// stepProgress prints "users 120/1010" lines while a setup step runs.
type stepProgress struct {
	name  string
	total int
	n     atomic.Int64
	start time.Time
	last  atomic.Int64 // unix nanos of the last line
}

func newStepProgress(name string, total int) *stepProgress {
	p := &stepProgress{name: name, total: total, start: time.Now()}
	p.last.Store(time.Now().UnixNano())
	return p
}

func (p *stepProgress) done() {
	n := p.n.Add(1)
	now := time.Now().UnixNano()
	if last := p.last.Load(); now-last > int64(time.Second) && p.last.CompareAndSwap(last, now) {
		logf("setup: %s %d/%d", p.name, n, p.total)
	}
}

func (p *stepProgress) finish() {
	logf("setup: %s %d/%d in %.1fs", p.name, p.n.Load(), p.total, time.Since(p.start).Seconds())
}
