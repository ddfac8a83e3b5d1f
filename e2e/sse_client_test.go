package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/chatql/internal/testenv"
)

// sseClientDir holds the graphql-sse client's scenarios; its node_modules
// come from `npm ci --prefix clients/graphql-sse`.
const sseClientDir = "clients/graphql-sse"

// The official graphql-sse client, run by node against the real server in
// both of its modes: distinct connections (POST with Accept:
// text/event-stream per operation) and single connection (PUT, GET, POST
// and DELETE with a stream token). In each, one client follows two rooms at
// once from a cursor (replay, a live message, the room's deletion and the
// complete that follows), stops a third subscription, runs a query, and is
// refused a room it is not in; a bad token is refused. In single connection
// mode the member's operations share one event stream.
func TestOfficialSSEClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "node is not installed", "the npm SSE client tests")
	}
	if _, err := os.Stat(filepath.Join(repoRoot, sseClientDir, "node_modules", "graphql-sse")); err != nil {
		testenv.Missing(t, sseClientDir+"/node_modules is missing (npm ci --prefix "+sseClientDir+")", "the npm SSE client tests")
	}
	ts := startServer(t, testConfig(t))
	alice, bob := ts.user(t, "alice"), ts.user(t, "bob")
	type room struct {
		Name     string `json:"name"`
		After    string `json:"after"`
		Replayed string `json:"replayed"`
	}
	// prepare creates alice's room with two messages: a client follows it
	// from the first, so it is replayed the second.
	prepare := func(name string) room {
		mustDo(t, alice, createRoom, map[string]any{"n": name}, nil)
		var ids [2]string
		for i := range ids {
			var out struct{ PostMessage struct{ ID string } }
			mustDo(t, alice, postMessage, map[string]any{"r": name, "c": "before " + name}, &out)
			ids[i] = out.PostMessage.ID
		}
		return room{Name: name, After: ids[0], Replayed: ids[1]}
	}
	type rooms struct {
		First   room `json:"first"`
		Second  room `json:"second"`
		Stopped room `json:"stopped"`
	}
	mustDo(t, alice, createRoom, map[string]any{"n": "closed"}, nil)
	modes := map[string]rooms{
		"distinct": {First: prepare("distinct-1"), Second: prepare("distinct-2"), Stopped: prepare("distinct-stopped")},
		"single":   {First: prepare("single-1"), Second: prepare("single-2"), Stopped: prepare("single-stopped")},
	}
	arg, _ := json.Marshal(map[string]any{
		"http":       ts.URL,
		"member":     alice.Token,
		"outsider":   bob.Token,
		"closedRoom": "closed",
		"distinct":   modes["distinct"],
		"single":     modes["single"],
	})
	ctx, cancel := context.WithTimeout(testContext(t), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(repoRoot, sseClientDir, "scenarios.mjs"), string(arg))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node scenarios: %v (output %s)", err, stdout)
	}
	t.Logf("client saw: %s", stdout)

	type failure struct {
		Status int
		Other  string
	}
	type ending struct {
		Timeout   bool
		Completed bool
		Error     *failure
		Results   []struct {
			Data   json.RawMessage
			Errors []struct{ Message, Code string }
		}
	}
	type followed struct {
		Timeout   bool
		Completed bool
		Events    []struct{ Kind, ID, Content string }
		Error     *failure
		PostError string
	}
	type seen struct {
		FollowConnects int
		Follow         json.RawMessage // two followed, or a timeout
		Stopped        struct {
			Timeout bool
			Events  int
			Error   *failure
		}
		Query, NotParticipant, BadToken ending
	}
	var got map[string]seen
	if err := json.Unmarshal(stdout, &got); err != nil {
		t.Fatalf("node output: %v", err)
	}

	for _, name := range []string{"distinct", "single"} {
		m, rs := got[name], modes[name]
		var follows []followed
		if err := json.Unmarshal(m.Follow, &follows); err != nil || len(follows) != 2 {
			t.Errorf("%s: following two rooms at once: got %s", name, m.Follow)
			follows = make([]followed, 2)
		}
		for i, r := range []room{rs.First, rs.Second} {
			f := follows[i]
			kinds := make([]string, len(f.Events))
			for i, ev := range f.Events {
				kinds[i] = ev.Kind
			}
			if f.Timeout || !f.Completed || f.Error != nil || f.PostError != "" || len(f.Events) != 3 ||
				f.Events[0].ID != r.Replayed || f.Events[1].Content != "live in "+r.Name ||
				strings.Join(kinds, ",") != "MESSAGE_POSTED,MESSAGE_POSTED,ROOM_DELETED" {
				t.Errorf("%s: following %s: got %s; want the replayed message, the live one, ROOM_DELETED, then complete", name, r.Name, show(f))
			}
		}
		if s := m.Stopped; s.Timeout || s.Events != 1 || s.Error != nil {
			t.Errorf("%s: stopping a subscription: got %s, want one event and no error", name, show(s))
		}
		if q := m.Query; q.Timeout || !q.Completed || len(q.Results) != 1 || string(q.Results[0].Data) != `{"me":{"login":"alice"}}` {
			t.Errorf("%s: query: got %s, want one result, then complete", name, show(q))
		}
		if e := m.NotParticipant; e.Timeout || !e.Completed || len(e.Results) != 1 || len(e.Results[0].Errors) == 0 || e.Results[0].Errors[0].Code != "FORBIDDEN" {
			t.Errorf("%s: not a participant: got %s, want a result with FORBIDDEN, then complete", name, show(e))
		}
	}
	// Distinct connections carry the token with each operation, whose
	// resolver refuses it; single connection mode refuses the reservation.
	if e := got["distinct"].BadToken; e.Timeout || len(e.Results) != 1 || len(e.Results[0].Errors) == 0 || e.Results[0].Errors[0].Code != "UNAUTHENTICATED" {
		t.Errorf("distinct: bad token: got %s, want a result with UNAUTHENTICATED", show(e))
	}
	if e := got["single"].BadToken; e.Timeout || e.Error == nil || e.Error.Status != 401 {
		t.Errorf("single: bad token: got %s, want the reservation's 401 on the error sink", show(e))
	}
	if n := got["single"].FollowConnects; n != 1 {
		t.Errorf("single: the client opened %d event streams for its concurrent operations, want 1", n)
	}
	if n := got["distinct"].FollowConnects; n != 2 {
		t.Errorf("distinct: the client opened %d event streams for its two concurrent operations, want 2 (one each)", n)
	}
	waitFor(t, func() bool { return ts.Streams().Open() == 0 })
}
