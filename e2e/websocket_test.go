package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/killrchat/chatql/internal/testenv"
	"github.com/killrchat/chatql/server"
)

// clientsDir holds the npm clients' scenarios (clients/graphql-ws); its
// node_modules come from `npm ci --prefix clients/graphql-ws`.
const clientsDir = "clients/graphql-ws"

// The official npm clients, run by node against the real server: the
// graphql-ws library (graphql-transport-ws) and subscriptions-transport-ws
// (legacy graphql-ws). Each follows a room from a cursor (replay, a live
// message, the room's deletion and the complete that follows), runs a query,
// gets refused subscriptions on its error sink with extensions.code, and is
// refused a bad token: graphql-ws by the 4401 close, without retrying;
// subscriptions-transport-ws by connection_error, then 4401.
func TestOfficialWebsocketClients(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "node is not installed", "the npm websocket client tests")
	}
	if _, err := os.Stat(filepath.Join(repoRoot, clientsDir, "node_modules", "graphql-ws")); err != nil {
		testenv.Missing(t, clientsDir+"/node_modules is missing (npm ci --prefix "+clientsDir+")", "the npm websocket client tests")
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
	mustDo(t, alice, createRoom, map[string]any{"n": "closed"}, nil)
	cfg := map[string]any{
		"ws":                 "ws" + strings.TrimPrefix(ts.URL, "http"),
		"http":               ts.URL,
		"member":             alice.Token,
		"outsider":           bob.Token,
		"closedRoom":         "closed",
		"graphqlTransportWS": prepare("modern"),
		"graphqlWS":          prepare("legacy"),
	}
	arg, _ := json.Marshal(cfg)
	ctx, cancel := context.WithTimeout(testContext(t), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(repoRoot, clientsDir, "scenarios.mjs"), string(arg))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node scenarios: %v (output %s)", err, stdout)
	}
	t.Logf("clients saw: %s", stdout)

	type graphqlErrors = []struct{ Message, Code string }
	type ending struct {
		Timeout   bool
		Completed bool
		Error     *struct {
			GraphqlErrors graphqlErrors
			CloseCode     int
			CloseReason   string
			Other         string
		}
		Results  []json.RawMessage
		Connects int
	}
	type followed struct {
		Timeout   bool
		Completed bool
		Events    []struct{ Kind, ID, Content string }
		Error     json.RawMessage
		PostError string
	}
	var got struct {
		GraphqlTransportWS struct {
			Follow                                     followed
			Query                                      ending
			NotParticipant, NoSuchRoom, AnonymousInbox ending
			BadToken                                   ending
		}
		GraphqlWS struct {
			Follow         followed
			NotParticipant ending
			BadToken       struct {
				Timeout         bool
				ConnectionError *struct{ GraphqlErrors graphqlErrors }
				CloseCode       int
			}
		}
	}
	if err := json.Unmarshal(stdout, &got); err != nil {
		t.Fatalf("node output: %v", err)
	}

	checkFollow := func(protocol string, f followed, r room) {
		t.Helper()
		kinds := make([]string, len(f.Events))
		for i, ev := range f.Events {
			kinds[i] = ev.Kind
		}
		if f.Timeout || !f.Completed || f.Error != nil || f.PostError != "" || len(f.Events) != 3 ||
			f.Events[0].ID != r.Replayed || f.Events[1].Content != "live in "+r.Name ||
			strings.Join(kinds, ",") != "MESSAGE_POSTED,MESSAGE_POSTED,ROOM_DELETED" {
			t.Errorf("%s: following a room: got %s; want the replayed message, the live one, ROOM_DELETED, then complete", protocol, show(f))
		}
	}
	refused := func(protocol, what string, e ending, code string) {
		t.Helper()
		if e.Timeout || e.Completed || len(e.Results) != 0 || e.Error == nil || len(e.Error.GraphqlErrors) == 0 || e.Error.GraphqlErrors[0].Code != code {
			t.Errorf("%s: %s: got %s, want GraphQL errors with %s on the error sink", protocol, what, show(e), code)
		}
	}

	modern := got.GraphqlTransportWS
	checkFollow("graphql-ws", modern.Follow, cfg["graphqlTransportWS"].(room))
	if q := modern.Query; q.Timeout || !q.Completed || len(q.Results) != 1 || string(q.Results[0]) != `{"data":{"me":{"login":"alice"}}}` {
		t.Errorf("graphql-ws: query: got %s, want one result, then complete", show(q))
	}
	refused("graphql-ws", "not a participant", modern.NotParticipant, "FORBIDDEN")
	refused("graphql-ws", "no such room", modern.NoSuchRoom, "NOT_FOUND")
	refused("graphql-ws", "anonymous inboxEvents", modern.AnonymousInbox, "UNAUTHENTICATED")
	if b := modern.BadToken; b.Timeout || b.Error == nil || b.Error.CloseCode != 4401 || b.Error.CloseReason == "" || b.Connects != 1 {
		t.Errorf("graphql-ws: bad token: got %s, want the 4401 close on the error sink after one connection (no retry)", show(b))
	}

	old := got.GraphqlWS
	checkFollow("subscriptions-transport-ws", old.Follow, cfg["graphqlWS"].(room))
	refused("subscriptions-transport-ws", "not a participant", old.NotParticipant, "FORBIDDEN")
	if b := old.BadToken; b.Timeout || b.ConnectionError == nil || len(b.ConnectionError.GraphqlErrors) != 1 ||
		b.ConnectionError.GraphqlErrors[0].Code != "UNAUTHENTICATED" || b.CloseCode != 4401 {
		t.Errorf("subscriptions-transport-ws: bad token: got %s, want connection_error with UNAUTHENTICATED, then 4401", show(b))
	}
}

// show renders what a client saw for a failure message.
func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// CHAT_MAX_UNAUTHENTICATED_WEBSOCKETS caps the websockets without a user:
// over it, the server refuses upgrades with a coded 503.
func TestUnauthenticatedWebsocketCap(t *testing.T) {
	cfg, err := server.ParseConfig(nil, func(k string) string {
		return map[string]string{"CHAT_MAX_UNAUTHENTICATED_WEBSOCKETS": "1"}[k]
	})
	if err != nil || cfg.MaxUnauthenticatedWebsockets != 1 {
		t.Fatalf("got %d, %v; want 1", cfg.MaxUnauthenticatedWebsockets, err)
	}
	if _, err := server.ParseConfig([]string{"-max-unauthenticated-websockets", "0"}, func(string) string { return "" }); err == nil {
		t.Fatal("a cap of 0 was accepted")
	}
	cfg = testConfig(t)
	cfg.MaxUnauthenticatedWebsockets = 1
	ts := startServer(t, cfg)
	url := "ws" + strings.TrimPrefix(ts.URL, "http")
	dial := func() (*websocket.Conn, *http.Response, error) {
		return websocket.Dial(testContext(t), url, &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	}
	first, _, err := dial()
	if err != nil {
		t.Fatal(err)
	}
	defer first.CloseNow()
	_, resp, err := dial()
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("second unauthenticated websocket: got %v %+v, want 503", err, resp)
	}
	var body struct {
		Errors []struct{ Extensions struct{ Code string } }
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || len(body.Errors) != 1 || body.Errors[0].Extensions.Code != "TOO_MANY_CONNECTIONS" {
		t.Fatalf("refusal body: %+v (%v), want one TOO_MANY_CONNECTIONS error", body, err)
	}
}
