package e2e

import (
	"encoding/json"
	"testing"
)

// The official graphql-sse client, run by node against the real server in
// both of its modes: distinct connections (POST with Accept:
// text/event-stream per operation) and single connection (PUT, GET, POST
// and DELETE with a stream token). In each, one client follows two rooms at
// once from a cursor (replay, a live message, the room's deletion and the
// complete that follows), stops a third subscription, runs a query, and is
// refused a room it is not in; a bad token is refused. In single connection
// mode the member's operations share one event stream.
func TestOfficialSSEClient(t *testing.T) {
	ts := startServer(t, testConfig(t))
	alice, bob := ts.user(t, "alice"), ts.user(t, "bob")
	prepare := func(name string) clientRoom { return prepareClientRoom(t, alice, name, 1) }
	type rooms struct {
		First   clientRoom `json:"first"`
		Second  clientRoom `json:"second"`
		Stopped clientRoom `json:"stopped"`
	}
	mustDo(t, alice, createRoom, map[string]any{"n": "closed"}, nil)
	modes := map[string]rooms{
		"distinct": {First: prepare("distinct-1"), Second: prepare("distinct-2"), Stopped: prepare("distinct-stopped")},
		"single":   {First: prepare("single-1"), Second: prepare("single-2"), Stopped: prepare("single-stopped")},
	}
	stdout := npmClient{"clients/graphql-sse", "graphql-sse", "the npm SSE client tests"}.run(t, map[string]any{
		"http":       ts.URL,
		"member":     alice.Token,
		"outsider":   bob.Token,
		"closedRoom": "closed",
		"distinct":   modes["distinct"],
		"single":     modes["single"],
	})

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
		var follows []clientFollow
		if err := json.Unmarshal(m.Follow, &follows); err != nil || len(follows) != 2 {
			t.Errorf("%s: following two rooms at once: got %s", name, m.Follow)
			follows = make([]clientFollow, 2)
		}
		for i, r := range []clientRoom{rs.First, rs.Second} {
			follows[i].check(t, name, r)
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
