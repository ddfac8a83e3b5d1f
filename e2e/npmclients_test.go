package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/internal/testenv"
)

// npmClient is an official npm client's scenarios (clients/<dir>/
// scenarios.mjs), which node runs against the real server; its node_modules
// come from `npm ci --prefix clients/<dir>`.
type npmClient struct {
	dir    string // under the repository
	module string // the client's package, which must be installed
	tests  string // what skips without it
}

// run runs the scenarios with arg as their JSON argument and returns what
// they print; it skips t (fails it in CI) without node or node_modules.
func (c npmClient) run(t *testing.T, arg any) []byte {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "node is not installed", c.tests)
	}
	if _, err := os.Stat(filepath.Join(repoRoot, c.dir, "node_modules", c.module)); err != nil {
		testenv.Missing(t, c.dir+"/node_modules is missing (npm ci --prefix "+c.dir+")", c.tests)
	}
	raw, err := json.Marshal(arg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(testContext(t), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(repoRoot, c.dir, "scenarios.mjs"), string(raw))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node scenarios: %v (output %s)", err, stdout)
	}
	t.Logf("%s saw: %s", c.module, stdout)
	return stdout
}

// clientRoom is a room a client follows from a cursor: its first message,
// so that those after it are replayed, the last of them (Replayed) closing
// the replay.
type clientRoom struct {
	Name     string   `json:"name"`
	After    string   `json:"after"`
	Replayed string   `json:"replayed"`
	Replays  []string `json:"-"` // every replayed message, in order
}

// prepareClientRoom creates owner's room with replays+1 messages.
func prepareClientRoom(t *testing.T, owner *chatclient.Client, name string, replays int) clientRoom {
	t.Helper()
	mustDo(t, owner, createRoom, map[string]any{"n": name}, nil)
	ids := make([]string, replays+1)
	for i := range ids {
		var out struct{ PostMessage struct{ ID string } }
		mustDo(t, owner, postMessage, map[string]any{"r": name, "c": fmt.Sprintf("before %s %d", name, i)}, &out)
		ids[i] = out.PostMessage.ID
	}
	return clientRoom{Name: name, After: ids[0], Replayed: ids[replays], Replays: ids[1:]}
}

// clientFollow is what a client saw following a clientRoom: the scenarios
// post "live in <room>", then delete the room.
type clientFollow struct {
	Timeout   bool
	Completed bool
	Events    []struct{ Kind, ID, Content string }
	Error     json.RawMessage
	PostError string
}

// check fails t unless the client got the replayed messages in order, the
// live one and ROOM_DELETED, then complete, and no error.
func (f clientFollow) check(t *testing.T, who string, r clientRoom) {
	t.Helper()
	kinds := make([]string, len(f.Events))
	for i, ev := range f.Events {
		kinds[i] = ev.Kind
	}
	n := len(r.Replays)
	want := strings.Repeat("MESSAGE_POSTED,", n) + "MESSAGE_POSTED,ROOM_DELETED"
	if f.Timeout || !f.Completed || len(f.Error) > 0 && string(f.Error) != "null" || f.PostError != "" || len(f.Events) != n+2 ||
		f.Events[n].Content != "live in "+r.Name || strings.Join(kinds, ",") != want {
		t.Errorf("%s: following %s: got %s; want the %d replayed messages, the live one, ROOM_DELETED, then complete", who, r.Name, show(f), n)
		return
	}
	for i, id := range r.Replays {
		if f.Events[i].ID != id {
			t.Errorf("%s: following %s: replayed message %d is %s, want %s", who, r.Name, i, f.Events[i].ID, id)
			return
		}
	}
}

// show renders what a client saw for a failure message.
func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
