package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/server"
)

// TestRestartLosesNothing stops a server and starts another on the same
// data directory: accounts, rooms, messages and sessions all survive.
func TestRestartLosesNothing(t *testing.T) {
	cfg := testConfig(t)
	first := startServer(t, cfg)
	alice := first.user(t, "alice")
	mustDo(t, alice, createRoom, map[string]any{"n": "kept"}, nil)
	for i := range 5 {
		mustDo(t, alice, postMessage, map[string]any{"r": "kept", "c": fmt.Sprintf("before restart %d", i)}, nil)
	}
	if err := first.Close(testContext(t)); err != nil {
		t.Fatalf("close: %v", err)
	}

	second := startServer(t, cfg)
	alice = second.Client.WithToken(alice.Token) // the generated secret was kept
	var page messagePage
	mustDo(t, alice, messagesQ, map[string]any{"r": "kept", "n": 10}, &page)
	if got := len(page.Messages.Edges); got != 5 {
		t.Fatalf("after restart: got %d messages, want 5", got)
	}
	if got := page.Messages.Edges[0].Node.Content; got != "before restart 4" {
		t.Fatalf("newest after restart: got %q", got)
	}
	var me struct{ Me struct{ Rooms []string } }
	mustDo(t, alice, myRooms, nil, &me)
	if fmt.Sprint(me.Me.Rooms) != "[kept]" {
		t.Fatalf("rooms after restart: got %v", me.Me.Rooms)
	}
}

// TestShutdownFinishesInFlightWrites closes the server while posts are
// under way: every post the server acknowledged is stored, and the server
// refuses new work instead of losing it.
func TestShutdownFinishesInFlightWrites(t *testing.T) {
	cfg := testConfig(t)
	ts := startServer(t, cfg)
	alice := ts.user(t, "alice")
	mustDo(t, alice, createRoom, map[string]any{"n": "busy"}, nil)

	posts := startPosting(alice, "busy")
	waitFor(t, func() bool { return posts.acknowledged() >= 50 })
	if err := ts.Close(testContext(t)); err != nil {
		t.Fatalf("close: %v", err)
	}
	posts.checkStored(t, startServer(t, cfg).Client.WithToken(alice.Token))
}

// TestSIGTERMEndsStreamsAndFinishesWrites runs the real binary with an SSE
// stream and a burst of posts open,
// and sends it SIGTERM: the streams end at once rather than hold the
// shutdown for its whole timeout, the posts in flight finish, and the
// process exits with status 0. A server restarted on the same store has
// every acknowledged post.
func TestSIGTERMEndsStreamsAndFinishesWrites(t *testing.T) {
	bin := buildChatql(t)
	forEachStore(t, func(t *testing.T, cfg server.Config) {
		cfg.ShutdownTimeout = 20 * time.Second
		srv := startChatql(t, bin, cfg)
		anon := &testServer{URL: srv.URL, Client: chatclient.New(srv.URL)}
		alice := anon.user(t, "alice")
		for _, room := range []string{"live", "busy"} {
			mustDo(t, alice, createRoom, map[string]any{"n": room}, nil)
		}
		var first struct{ PostMessage struct{ ID string } }
		mustDo(t, alice, postMessage, map[string]any{"r": "live", "c": "first"}, &first)
		mustDo(t, alice, postMessage, map[string]any{"r": "live", "c": "replayed"}, nil)

		// The SSE stream replays the post after the first: then it is open.
		body, _ := json.Marshal(chatclient.Request{Query: roomEvents, Variables: map[string]any{"r": "live", "after": first.PostMessage.ID}})
		req, _ := http.NewRequestWithContext(testContext(t), http.MethodPost, srv.URL, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Bearer "+alice.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		stream, streamOpen, streamDone := &strings.Builder{}, make(chan struct{}), make(chan error, 1)
		go func() {
			chunk := make([]byte, 4096)
			var opened sync.Once
			for {
				n, err := resp.Body.Read(chunk)
				stream.Write(chunk[:n])
				if strings.Contains(stream.String(), "replayed") {
					opened.Do(func() { close(streamOpen) })
				}
				if err != nil {
					streamDone <- err
					return
				}
			}
		}()
		select {
		case <-streamOpen:
		case err := <-streamDone:
			t.Fatalf("SSE stream ended with %v before the replay, after %q", err, stream.String())
		}

		posts := startPosting(alice, "busy")
		waitFor(t, func() bool { return posts.acknowledged() >= 50 })
		status, took := srv.terminate(t)
		if status != 0 {
			t.Errorf("exit status after SIGTERM = %d, want 0", status)
		}
		// Well under the shutdown timeout: the streams end at once and the
		// posts in flight finish. Not a tight bound: under -race with every
		// package's tests at once, an exit took 5.25 s once in CI (0.15 s
		// is usual; 40 runs under load did not reproduce it; the store's
		// close waiting for a flush or compaction in progress is the
		// likeliest cause, unconfirmed).
		if took > cfg.ShutdownTimeout/2 {
			t.Errorf("exit took %v after SIGTERM, want well under the %v shutdown timeout", took, cfg.ShutdownTimeout)
		}
		if err := <-streamDone; !errors.Is(err, io.EOF) || !strings.Contains(stream.String(), "event: complete") {
			t.Errorf("SSE stream ended with %v after %q; want the server to complete it", err, stream.String())
		}
		again := startChatql(t, bin, cfg)
		posts.checkStored(t, chatclient.New(again.URL).WithToken(alice.Token))
		if status, _ := again.terminate(t); status != 0 {
			t.Errorf("exit status of the restarted server = %d, want 0", status)
		}
	})
}

// posting is a burst of posts to one room by 8 concurrent writers, each
// posting until the server refuses a connection: a shutdown in the middle.
type posting struct {
	client *chatclient.Client
	room   string
	wg     sync.WaitGroup
	mu     sync.Mutex
	acked  map[string]bool
	failed []error // answered with an error: cut off, not refused
}

func startPosting(c *chatclient.Client, room string) *posting {
	p := &posting{client: c, room: room, acked: map[string]bool{}}
	for w := range 8 {
		p.wg.Go(func() {
			for i := 0; ; i++ {
				content := fmt.Sprintf("w%d-%d", w, i)
				err := c.Do(context.Background(), postMessage, map[string]any{"r": room, "c": content}, nil)
				p.mu.Lock()
				var answered chatclient.Errors
				if errors.As(err, &answered) {
					p.failed = append(p.failed, err)
				} else if err == nil {
					p.acked[content] = true
				}
				p.mu.Unlock()
				if err != nil {
					return // the server is shutting down
				}
			}
		})
	}
	return p
}

func (p *posting) acknowledged() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.acked)
}

// checkStored waits for the writers to stop, then checks through reader,
// a server on the same store, that every acknowledged post is stored, and
// that no post was answered with an error: a post in flight when the
// shutdown began must finish, not be cut off.
func (p *posting) checkStored(t *testing.T, reader *chatclient.Client) {
	t.Helper()
	p.wg.Wait()
	for _, err := range p.failed {
		t.Errorf("a post in flight at shutdown failed: %v", err)
	}
	stored := map[string]bool{}
	var cursor any
	for {
		var page messagePage
		mustDo(t, reader, messagesQ, map[string]any{"r": p.room, "n": 100, "after": cursor}, &page)
		for _, e := range page.Messages.Edges {
			stored[e.Node.Content] = true
		}
		if !page.Messages.PageInfo.HasNextPage {
			break
		}
		cursor = *page.Messages.PageInfo.EndCursor
	}
	for content := range p.acked {
		if !stored[content] {
			t.Errorf("acknowledged post %q was lost", content)
		}
	}
}

func TestRequestLimits(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxBodyBytes = 4 << 10
	ts := startServer(t, cfg)
	alice := ts.user(t, "alice")

	t.Run("BodyTooLarge", func(t *testing.T) {
		body := `{"query":"{ me { login } }","variables":{"pad":"` + strings.Repeat("x", 8<<10) + `"}}`
		resp, err := http.Post(ts.URL, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("got HTTP %d, want 413", resp.StatusCode)
		}
	})
	t.Run("TooComplex", func(t *testing.T) {
		var fields strings.Builder
		for i := range 80 { // aliases, so the selections do not merge
			fmt.Fprintf(&fields, "p%d: participants { login firstname lastname } ", i)
		}
		e := wantCode(t, alice, "COMPLEXITY_LIMIT_EXCEEDED", "{ rooms { edges { node { "+fields.String()+" } } } }", nil)
		if !strings.Contains(e.Message, "complexity") {
			t.Fatalf("message %q does not mention complexity", e.Message)
		}
	})
	t.Run("Malformed", func(t *testing.T) {
		wantCode(t, alice, "GRAPHQL_PARSE_FAILED", "{ me { login ", nil)
	})
	t.Run("Introspection", func(t *testing.T) {
		var out struct {
			Schema struct{ QueryType struct{ Name string } } `json:"__schema"`
		}
		mustDo(t, ts.Client, "{ __schema { queryType { name } } }", nil, &out)
		if out.Schema.QueryType.Name != "Query" {
			t.Fatalf("introspection: got %+v", out)
		}
	})
	t.Run("HealthAndPlayground", func(t *testing.T) {
		base := strings.TrimSuffix(ts.URL, "/query")
		for path, want := range map[string]string{"/healthz": "ok", "/readyz": "ready", "/": "<title>chatql</title>", "/playground": "graphiql"} {
			resp, err := http.Get(base + path)
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 64<<10)
			n, _ := resp.Body.Read(buf)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(strings.ToLower(string(buf[:n])), want) {
				t.Errorf("GET %s: HTTP %d %.80q, want 200 containing %q", path, resp.StatusCode, buf[:n], want)
			}
		}
	})
}
