package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/killrchat/chatql/internal/chatclient"
)

// contentMarker starts the content of every message the load tool posts;
// the send time (unix nanoseconds) follows it.
const contentMarker = "chatload "

// metrics are the counters of a run. They only grow; the figures of a
// window are differences of two snapshots.
type metrics struct {
	deliveries    atomic.Int64 // MESSAGE_POSTED events of our posts received, all subscribers
	deliveryBytes atomic.Int64 // their websocket message sizes
	otherEvents   atomic.Int64 // events that are not our posts (joins, ...)
	delivery      hist         // post sent -> event received

	posts atomic.Int64 // accepted postMessage calls
	post  hist         // postMessage round trip

	reads atomic.Int64 // messages pages read
	read  hist         // messages page round trip

	subsLive      atomic.Int64 // subscriptions currently open
	subsReceiving atomic.Int64 // subscriptions that have received an event of ours
	resubscribes  atomic.Int64

	errs *errorCounts
}

type metricsSnap struct {
	at                                  time.Time
	deliveries, deliveryBytes, otherEvs int64
	posts, reads, errors                int64
	delivery, post, read                *histSnap
	errCounts                           map[string]int64
	serverCPU, clientCPU                time.Duration
	serverWrites                        int64 // write syscalls so far
	machineBusy, machineTotal           time.Duration
	redisCPU                            time.Duration
}

func (m *metrics) snapshot(r *runner) *metricsSnap {
	s := &metricsSnap{
		at:            time.Now(),
		deliveries:    m.deliveries.Load(),
		deliveryBytes: m.deliveryBytes.Load(),
		otherEvs:      m.otherEvents.Load(),
		posts:         m.posts.Load(),
		reads:         m.reads.Load(),
		errors:        m.errs.total.Load(),
		delivery:      m.delivery.Snapshot(),
		post:          m.post.Snapshot(),
		read:          m.read.Snapshot(),
		clientCPU:     selfCPU(),
	}
	s.errCounts, _ = m.errs.Snapshot()
	s.machineBusy, s.machineTotal = machineCPU()
	if r != nil && r.cfg.serverPID > 0 {
		s.serverCPU, _ = procCPU(r.cfg.serverPID)
		s.serverWrites, _ = procWrites(r.cfg.serverPID)
	}
	if r != nil && r.redis != nil {
		s.redisCPU = r.redisCPU()
	}
	return s
}

// subscriber is one websocket with one subscription to a room. When the
// server ends the subscription (a slow subscriber is cut off), it counts
// the error and resubscribes after the last position it saw, as an app
// would.
type subscriber struct {
	m    *metrics
	open func(ctx context.Context, resume []byte) (stream, error)

	mu      sync.Mutex
	sub     stream
	stopped bool

	resume    []byte // the position of the last event, to resume after
	receiving bool
}

var errStopped = errors.New("stopped")

func (s *subscriber) connect(ctx context.Context) error {
	sub, err := s.open(ctx, s.resume)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		sub.CloseNow()
		return errStopped
	}
	s.sub = sub
	return nil
}

// stop closes the websocket, which ends a blocked read.
func (s *subscriber) stop() {
	s.mu.Lock()
	s.stopped = true
	sub := s.sub
	s.mu.Unlock()
	if sub != nil {
		sub.CloseNow()
	}
}

func (s *subscriber) isStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

// loop reads events until stopped, resubscribing when the server ends the
// subscription.
func (s *subscriber) loop(ctx context.Context) {
	buf := make([]byte, 0, 4096)
	failures := 0
	for {
		s.mu.Lock()
		sub, stopped := s.sub, s.stopped
		s.mu.Unlock()
		if stopped || ctx.Err() != nil {
			return
		}
		if sub == nil {
			if failures > 0 && !sleepCtx(ctx, min(time.Duration(failures)*100*time.Millisecond, 2*time.Second)) {
				return
			}
			if err := s.connect(ctx); err != nil {
				if errors.Is(err, errStopped) || ctx.Err() != nil {
					return
				}
				failures++
				s.m.errs.Add("subscribe", err)
				continue
			}
			s.m.resubscribes.Add(1)
			continue
		}
		s.m.subsLive.Add(1)
		err := s.read(sub, &buf)
		s.m.subsLive.Add(-1)
		sub.CloseNow()
		s.mu.Lock()
		s.sub = nil
		stopped = s.stopped
		s.mu.Unlock()
		if stopped {
			return
		}
		failures++
		s.m.errs.Add("subscription", err)
	}
}

var markerContent = []byte(`"content":"` + contentMarker)

func (s *subscriber) read(sub stream, buf *[]byte) error {
	for {
		msg, position, err := sub.next(*buf)
		*buf = msg[:0]
		if err != nil {
			return err
		}
		if position != nil {
			s.resume = append(s.resume[:0], position...)
		}
		s.event(msg)
	}
}

// event takes the send time from an event's content, without decoding it.
func (s *subscriber) event(msg []byte) {
	now := time.Now().UnixNano()
	i := bytes.Index(msg, markerContent)
	if i < 0 {
		s.m.otherEvents.Add(1)
		return
	}
	sent, ok := parseLeadingInt(msg[i+len(markerContent):])
	if !ok {
		s.m.otherEvents.Add(1)
		return
	}
	s.m.delivery.Record(time.Duration(now - sent))
	s.m.deliveries.Add(1)
	s.m.deliveryBytes.Add(int64(len(msg)))
	if !s.receiving {
		s.receiving = true
		s.m.subsReceiving.Add(1)
	}
}

func parseLeadingInt(b []byte) (int64, bool) {
	var n int64
	i := 0
	for ; i < len(b) && i < 19 && b[i] >= '0' && b[i] <= '9'; i++ {
		n = n*10 + int64(b[i]-'0')
	}
	return n, i > 0
}

// rawErrors decodes the errors of an "error" or "next" message.
func rawErrors(msg []byte) error {
	var m struct {
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		return fmt.Errorf("undecodable message %.200q", msg)
	}
	var errs chatclient.Errors
	if json.Unmarshal(m.Payload, &errs) == nil && len(errs) > 0 {
		return errs
	}
	var resp chatclient.Response
	if json.Unmarshal(m.Payload, &resp) == nil && len(resp.Errors) > 0 {
		return resp.Errors
	}
	var one chatclient.Error
	if json.Unmarshal(m.Payload, &one) == nil && one.Message != "" {
		return chatclient.Errors{one}
	}
	return fmt.Errorf("subscription error %.200s", m.Payload)
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// content builds a message of size bytes that starts with the marker and
// the send time.
func content(buf []byte, sent int64, size int) []byte {
	buf = append(buf[:0], contentMarker...)
	buf = strconv.AppendInt(buf, sent, 10)
	buf = append(buf, ' ')
	for i := 0; len(buf) < size; i++ {
		buf = append(buf, "the quick brown fox jumps over the lazy dog "[i%44])
	}
	return buf
}

// paceInterval is the tick of each of workers sharing rate operations per
// second: workers ticks of it make rate per second. 0 (as fast as the
// server answers) when rate is not positive, or without workers.
func paceInterval(workers int, rate float64) time.Duration {
	if rate <= 0 || workers <= 0 {
		return 0
	}
	return time.Duration(float64(time.Second) * float64(workers) / rate)
}

// poster i of of posts to the rooms in turn, one post per tick of interval
// (or as fast as the server answers if interval is 0), until ctx ends; the
// posters start spread over one interval.
func (r *runner) poster(ctx context.Context, i, of int, post postFunc, interval time.Duration) {
	var tick <-chan time.Time
	if interval > 0 {
		// Stagger the posters over one interval, so posts are evenly spread.
		if !sleepCtx(ctx, interval*time.Duration(i)/time.Duration(of)) {
			return
		}
		t := time.NewTicker(interval)
		defer t.Stop()
		tick = t.C
	}
	buf := make([]byte, 0, r.cfg.msgSize+32)
	for k := 0; ; k++ {
		if tick != nil {
			select {
			case <-ctx.Done():
				return
			case <-tick:
			}
		} else if ctx.Err() != nil {
			return
		}
		room := r.w.rooms[(i+k)%len(r.w.rooms)]
		start := time.Now()
		buf = content(buf, start.UnixNano(), r.cfg.msgSize)
		if err := post(ctx, room, buf); err != nil {
			if ctx.Err() == nil {
				r.m.errs.Add("post", err)
			}
			continue
		}
		r.m.post.Record(time.Since(start))
		r.m.posts.Add(1)
	}
}

// reader reads the newest page of 50 of the rooms in turn.
func (r *runner) reader(ctx context.Context, i int, read readFunc, interval time.Duration) {
	var tick <-chan time.Time
	if interval > 0 {
		if !sleepCtx(ctx, interval*time.Duration(i)/time.Duration(max(r.cfg.readers, 1))) {
			return
		}
		t := time.NewTicker(interval)
		defer t.Stop()
		tick = t.C
	}
	for k := 0; ; k++ {
		if tick != nil {
			select {
			case <-ctx.Done():
				return
			case <-tick:
			}
		} else if ctx.Err() != nil {
			return
		}
		room := r.w.rooms[(i+k)%len(r.w.rooms)]
		start := time.Now()
		if err := read(ctx, room); err != nil {
			if ctx.Err() == nil {
				r.m.errs.Add("messages", err)
			}
			continue
		}
		r.m.read.Record(time.Since(start))
		r.m.reads.Add(1)
	}
}

// page is a messages page as both the GraphQL API and the plain baseline
// handler return it; readers decode it fully, as an app would.
type page struct {
	Edges    []pageEdge `json:"edges"`
	PageInfo pageInfo   `json:"pageInfo"`
}

type pageEdge struct {
	Cursor string     `json:"cursor"`
	Node   apiMessage `json:"node"`
}

type pageInfo struct {
	HasNextPage bool    `json:"hasNextPage"`
	EndCursor   *string `json:"endCursor"`
}

// apiMessage is a message as the load's queries select it (messagesQuery,
// roomEventsSub): what readers decode, the plain baseline encodes, and
// Centrifugo's posters publish.
type apiMessage struct {
	ID       string    `json:"id"`
	Content  string    `json:"content"`
	System   bool      `json:"system"`
	PostedAt time.Time `json:"postedAt"`
	Author   apiAuthor `json:"author"`
}

type apiAuthor struct {
	Login     string `json:"login"`
	Firstname string `json:"firstname"`
	Lastname  string `json:"lastname"`
}

// graphqlPage reads a room's newest page over the GraphQL API.
func graphqlPage(ctx context.Context, hc *http.Client, url, token, room string, n int) (int, error) {
	body, _ := json.Marshal(chatclient.Request{Query: messagesQuery, Variables: map[string]any{"r": room, "n": n}})
	var out struct {
		Data   *struct{ Messages page } `json:"data"`
		Errors chatclient.Errors        `json:"errors"`
	}
	if err := httpJSON(ctx, hc, http.MethodPost, url, token, body, &out); err != nil {
		return 0, err
	}
	if len(out.Errors) > 0 {
		return 0, out.Errors
	}
	if out.Data == nil {
		return 0, errors.New("messages: no data")
	}
	return len(out.Data.Messages.Edges), nil
}

// httpJSON sends a request and decodes a JSON answer into out. Every
// baseline that goes through HTTP uses it, with the same client.
func httpJSON(ctx context.Context, hc *http.Client, method, url, token string, body []byte, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK && len(raw) > 0 && raw[0] != '{' {
		return &statusError{status: resp.StatusCode, body: truncate(string(raw), 200)}
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return &statusError{status: resp.StatusCode, body: truncate(string(raw), 200)}
	}
	return nil
}
