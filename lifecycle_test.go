package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
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

	var mu sync.Mutex
	acked := map[string]bool{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := 0; ; i++ {
				content := fmt.Sprintf("w%d-%d", w, i)
				if err := alice.Do(context.Background(), postMessage, map[string]any{"r": "busy", "c": content}, nil); err != nil {
					return // the server is shutting down
				}
				mu.Lock()
				acked[content] = true
				mu.Unlock()
			}
		}()
	}
	close(start)
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(acked) >= 50 })
	if err := ts.Close(testContext(t)); err != nil {
		t.Fatalf("close: %v", err)
	}
	wg.Wait()

	after := startServer(t, cfg).Client.WithToken(alice.Token)
	stored := map[string]bool{}
	var cursor any
	for {
		var page messagePage
		mustDo(t, after, messagesQ, map[string]any{"r": "busy", "n": 100, "after": cursor}, &page)
		for _, e := range page.Messages.Edges {
			stored[e.Node.Content] = true
		}
		if !page.Messages.PageInfo.HasNextPage {
			break
		}
		cursor = *page.Messages.PageInfo.EndCursor
	}
	for content := range acked {
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
		for path, want := range map[string]string{"/healthz": "ok", "/readyz": "ready", "/": "graphiql"} {
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

// waitFor polls cond until it holds, or fails the test after 10 seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	waitGoroutines(t, func(int) bool { return cond() })
}
