package e2e

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/killrchat/chatql/chat"
	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/live"
	"github.com/killrchat/chatql/server"
)

func TestAccounts(t *testing.T) { forEachStore(t, testAccounts) }

func testAccounts(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	signup := `mutation($in: SignupInput!) { signup(input: $in) { login firstname lastname email bio rooms } }`
	alice := map[string]any{"login": "alice", "password": "s3cret-pass", "firstname": "Alice", "lastname": "Liddell", "email": "alice@example.com", "bio": "down the hole"}

	t.Run("Signup", func(t *testing.T) {
		var out struct{ Signup map[string]any }
		mustDo(t, ts.Client, signup, map[string]any{"in": alice}, &out)
		if out.Signup["login"] != "alice" || out.Signup["email"] != "alice@example.com" {
			t.Fatalf("got %v", out.Signup)
		}
	})
	t.Run("ErrConflictKeepsFirstAccount", func(t *testing.T) {
		impostor := map[string]any{"login": "alice", "password": "other-pass", "firstname": "Eve", "lastname": "Impostor"}
		wantCode(t, ts.Client, "CONFLICT", signup, map[string]any{"in": impostor})
		wantCode(t, ts.Client, "UNAUTHENTICATED", `mutation { login(login: "alice", password: "other-pass") { token } }`, nil)
		var out struct {
			Login struct{ User struct{ Firstname string } }
		}
		mustDo(t, ts.Client, `mutation { login(login: "alice", password: "s3cret-pass") { token user { firstname } } }`, nil, &out)
		if got := out.Login.User.Firstname; got != "Alice" {
			t.Fatalf("firstname after conflicting signup: got %q, want Alice", got)
		}
	})
	t.Run("ErrBadUserInput", func(t *testing.T) {
		for name, in := range map[string]map[string]any{
			"login":    {"login": "A!", "password": "password1", "firstname": "a", "lastname": "b"},
			"password": {"login": "shorty", "password": "short", "firstname": "a", "lastname": "b"},
			"name":     {"login": "noname", "password": "password1", "firstname": " ", "lastname": "b"},
			"email":    {"login": "bademail", "password": "password1", "firstname": "a", "lastname": "b", "email": "nope"},
		} {
			t.Run(name, func(t *testing.T) {
				e := wantCode(t, ts.Client, "BAD_USER_INPUT", signup, map[string]any{"in": in})
				if !strings.Contains(e.Message, name) {
					t.Errorf("message %q does not name the %s rule", e.Message, name)
				}
			})
		}
	})
	t.Run("LoginErrUnauthenticated", func(t *testing.T) {
		wantCode(t, ts.Client, "UNAUTHENTICATED", `mutation { login(login: "alice", password: "wrong-pass") { token } }`, nil)
		wantCode(t, ts.Client, "UNAUTHENTICATED", `mutation { login(login: "nobody", password: "wrong-pass") { token } }`, nil)
	})
	t.Run("Me", func(t *testing.T) {
		var login struct{ Login struct{ Token string } }
		mustDo(t, ts.Client, `mutation { login(login: "alice", password: "s3cret-pass") { token expiresAt } }`, nil, &login)
		var out struct {
			Me struct {
				Login, Firstname, Lastname, Email, Bio string
				Rooms                                  []string
			}
		}
		mustDo(t, ts.Client.WithToken(login.Login.Token), `{ me { login firstname lastname email bio rooms } }`, nil, &out)
		if out.Me.Login != "alice" || out.Me.Lastname != "Liddell" || out.Me.Bio != "down the hole" || len(out.Me.Rooms) != 0 {
			t.Fatalf("got %+v", out.Me)
		}
	})
	t.Run("MeErrUnauthenticated", func(t *testing.T) {
		wantCode(t, ts.Client, "UNAUTHENTICATED", myRooms, nil)
		wantCode(t, ts.Client.WithToken("not.a.jwt"), "UNAUTHENTICATED", myRooms, nil)
		// A token signed with another secret is rejected too.
		forged := "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJjaGF0cWwiLCJzdWIiOiJhbGljZSIsImV4cCI6NDEwMjQ0NDgwMH0.x0q3w8iZ9GzXzU3mT0qfA4m1m0Hc0C2j8b6xI1vU0kE"
		wantCode(t, ts.Client.WithToken(forged), "UNAUTHENTICATED", myRooms, nil)
	})
}

func TestRooms(t *testing.T) { forEachStore(t, testRooms) }

func testRooms(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice, bob, carol := ts.user(t, "alice"), ts.user(t, "bob"), ts.user(t, "carol")

	var created struct {
		CreateRoom struct {
			Name, Banner string
			Creator      struct{ Login string }
			Participants []struct{ Login string }
		}
	}
	mustDo(t, alice, createRoom, map[string]any{"n": "games"}, &created)
	if c := created.CreateRoom; c.Creator.Login != "alice" || len(c.Participants) != 1 || c.Banner != "welcome" {
		t.Fatalf("createRoom: got %+v", c)
	}

	t.Run("CreateErrors", func(t *testing.T) {
		wantCode(t, bob, "CONFLICT", createRoom, map[string]any{"n": "games"})
		e := wantCode(t, bob, "BAD_USER_INPUT", createRoom, map[string]any{"n": "No Spaces"})
		if !strings.Contains(e.Message, "lowercase letters") {
			t.Errorf("message %q does not state the naming rule", e.Message)
		}
		wantCode(t, ts.Client, "UNAUTHENTICATED", createRoom, map[string]any{"n": "anon"})
	})
	t.Run("JoinAndRead", func(t *testing.T) {
		mustDo(t, bob, joinRoom, map[string]any{"r": "games"}, nil)
		mustDo(t, bob, joinRoom, map[string]any{"r": "games"}, nil) // idempotent
		var out struct {
			Room struct {
				Creator      struct{ Login string }
				Participants []struct{ Login string }
			}
		}
		mustDo(t, carol, `{ room(name: "games") { creator { login } participants { login } } }`, nil, &out)
		if got := fmt.Sprint(out.Room.Participants); got != "[{alice} {bob}]" {
			t.Fatalf("participants: got %s", got)
		}
		var me struct{ Me struct{ Rooms []string } }
		mustDo(t, bob, myRooms, nil, &me)
		if fmt.Sprint(me.Me.Rooms) != "[games]" {
			t.Fatalf("bob's rooms: got %v", me.Me.Rooms)
		}
		wantCode(t, bob, "NOT_FOUND", joinRoom, map[string]any{"r": "missing"})
		wantNull(t, bob, `{ v: room(name: "missing") { name } }`, nil)
	})
	t.Run("Leave", func(t *testing.T) {
		mustDo(t, carol, joinRoom, map[string]any{"r": "games"}, nil)
		var out struct {
			LeaveRoom struct{ Participants []struct{ Login string } }
		}
		mustDo(t, carol, leaveRoom, map[string]any{"r": "games"}, &out)
		if got := fmt.Sprint(out.LeaveRoom.Participants); got != "[{alice} {bob}]" {
			t.Fatalf("after leave: got %s", got)
		}
		wantCode(t, carol, "NOT_FOUND", leaveRoom, map[string]any{"r": "games"})
		var page messagePage
		mustDo(t, alice, messagesQ, map[string]any{"r": "games", "n": 10}, &page)
		var system []string
		for _, e := range page.Messages.Edges {
			if e.Node.System {
				system = append(system, e.Node.Content)
			}
		}
		if got := strings.Join(system, "|"); got != "carol left the room|carol joined the room|bob joined the room" {
			t.Fatalf("system messages: got %q", got)
		}
	})
	t.Run("Paging", func(t *testing.T) {
		for i := range 5 {
			mustDo(t, carol, createRoom, map[string]any{"n": fmt.Sprintf("page-%d", i)}, nil)
		}
		seen := map[string]int{}
		var after any
		for pages := 0; ; pages++ {
			var out struct {
				Rooms struct {
					Edges []struct {
						Cursor string
						Node   struct{ Name string }
					}
					PageInfo struct {
						HasNextPage bool
						EndCursor   *string
					}
				}
			}
			mustDo(t, carol, `query($after: String) { rooms(first: 2, after: $after) { edges { cursor node { name } } pageInfo { hasNextPage endCursor } } }`, map[string]any{"after": after}, &out)
			for _, e := range out.Rooms.Edges {
				seen[e.Node.Name]++
			}
			if !out.Rooms.PageInfo.HasNextPage {
				break
			}
			after = *out.Rooms.PageInfo.EndCursor
			if pages > 10 {
				t.Fatal("paging does not end")
			}
		}
		if len(seen) != 6 {
			t.Fatalf("got rooms %v, want games and page-0..4", seen)
		}
		for name, n := range seen {
			if n != 1 {
				t.Errorf("room %s seen %d times", name, n)
			}
		}
		wantCode(t, carol, "BAD_USER_INPUT", `{ rooms(first: 1000) { edges { cursor } } }`, nil)
	})
	t.Run("Delete", func(t *testing.T) {
		e := wantCode(t, bob, "FORBIDDEN", deleteRoom, map[string]any{"r": "games"})
		if strings.Contains(e.Message, "internal") {
			t.Errorf("message %q", e.Message)
		}
		var out struct {
			DeleteRoom struct{ Participants []struct{ Login string } }
		}
		mustDo(t, alice, deleteRoom, map[string]any{"r": "games"}, &out)
		if len(out.DeleteRoom.Participants) != 2 {
			t.Fatalf("deleted room: got %+v", out.DeleteRoom)
		}
		for _, c := range []*chatclient.Client{alice, bob} {
			var me struct{ Me struct{ Rooms []string } }
			mustDo(t, c, myRooms, nil, &me)
			for _, r := range me.Me.Rooms {
				if r == "games" {
					t.Fatalf("deleted room still in a participant's rooms: %v", me.Me.Rooms)
				}
			}
		}
		wantCode(t, carol, "NOT_FOUND", joinRoom, map[string]any{"r": "games"})
		wantNull(t, carol, `{ v: room(name: "games") { name } }`, nil)
		wantCode(t, alice, "NOT_FOUND", deleteRoom, map[string]any{"r": "games"})
	})
}

func TestMessages(t *testing.T) { forEachStore(t, testMessages) }

func testMessages(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice, bob := ts.user(t, "alice"), ts.user(t, "bob")
	mustDo(t, alice, createRoom, map[string]any{"n": "chat"}, nil)

	t.Run("OnlyParticipants", func(t *testing.T) {
		wantCode(t, bob, "FORBIDDEN", postMessage, map[string]any{"r": "chat", "c": "let me in"})
		wantCode(t, bob, "FORBIDDEN", messagesQ, map[string]any{"r": "chat"})
		wantCode(t, bob, "NOT_FOUND", postMessage, map[string]any{"r": "nowhere", "c": "hello"})
	})
	t.Run("Validation", func(t *testing.T) {
		wantCode(t, alice, "BAD_USER_INPUT", postMessage, map[string]any{"r": "chat", "c": "   "})
		wantCode(t, alice, "BAD_USER_INPUT", postMessage, map[string]any{"r": "chat", "c": strings.Repeat("x", 4001)})
		wantCode(t, alice, "BAD_USER_INPUT", messagesQ, map[string]any{"r": "chat", "after": "not-a-cursor"})
		wantCode(t, alice, "BAD_USER_INPUT", messagesQ, map[string]any{"r": "chat", "n": 0})
	})
	t.Run("PagesNewestFirst", func(t *testing.T) {
		const n = 23
		for i := range n {
			var out struct{ PostMessage struct{ ID, PostedAt string } }
			mustDo(t, alice, postMessage, map[string]any{"r": "chat", "c": fmt.Sprintf("m%02d", i)}, &out)
			if out.PostMessage.ID == "" || out.PostMessage.PostedAt == "" {
				t.Fatalf("post: got %+v", out)
			}
		}
		var got []string
		var after any
		for {
			var page messagePage
			mustDo(t, alice, messagesQ, map[string]any{"r": "chat", "n": 5, "after": after}, &page)
			for _, e := range page.Messages.Edges {
				if e.Cursor != e.Node.ID {
					t.Fatalf("cursor %s differs from id %s", e.Cursor, e.Node.ID)
				}
				got = append(got, e.Node.Content)
			}
			if !page.Messages.PageInfo.HasNextPage {
				break
			}
			after = *page.Messages.PageInfo.EndCursor
		}
		var want []string
		for i := n - 1; i >= 0; i-- {
			want = append(want, fmt.Sprintf("m%02d", i))
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("pages:\n got %v\nwant %v", got, want)
		}
	})
}

func TestSubscriptions(t *testing.T) { forEachStore(t, testSubscriptions) }

func testSubscriptions(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice, bob := ts.user(t, "alice"), ts.user(t, "bob")
	mustDo(t, alice, createRoom, map[string]any{"n": "live"}, nil)

	for _, protocol := range []string{chatclient.GraphQLTransportWS, chatclient.GraphQLWS} {
		t.Run(protocol, func(t *testing.T) {
			sub := ts.subscribe(t, alice, protocol, "live", nil)
			mustDo(t, alice, postMessage, map[string]any{"r": "live", "c": "hi " + protocol}, nil)
			ev := nextEvent(t, sub)
			if ev.Kind != "MESSAGE_POSTED" || ev.Message == nil || ev.Message.Content != "hi "+protocol || ev.Cursor == nil || *ev.Cursor != ev.Message.ID {
				t.Fatalf("got %+v", ev)
			}
			mustDo(t, bob, joinRoom, map[string]any{"r": "live"}, nil)
			if ev := nextEvent(t, sub); ev.Kind != "PARTICIPANT_JOINED" || ev.User.Login != "bob" || ev.Message == nil || !ev.Message.System {
				t.Fatalf("got %+v", ev)
			}
			mustDo(t, bob, leaveRoom, map[string]any{"r": "live"}, nil)
			if ev := nextEvent(t, sub); ev.Kind != "PARTICIPANT_LEFT" || ev.User.Login != "bob" {
				t.Fatalf("got %+v", ev)
			}
		})
	}

	t.Run("Errors", func(t *testing.T) {
		// Not a participant.
		sub := subscribeNoWait(t, bob, chatclient.GraphQLTransportWS, "live", nil)
		ctx := testContext(t)
		if _, err := sub.Next(ctx); !isCode(err, "FORBIDDEN") {
			t.Fatalf("non-participant: got %v, want FORBIDDEN", err)
		}
		// No token.
		sub = subscribeNoWait(t, ts.Client, chatclient.GraphQLTransportWS, "live", nil)
		if _, err := sub.Next(ctx); !isCode(err, "UNAUTHENTICATED") {
			t.Fatalf("anonymous: got %v, want UNAUTHENTICATED", err)
		}
		// A bad token closes the socket with 4401.
		_, err := ts.Client.WithToken("bad-token").Subscribe(ctx, chatclient.GraphQLTransportWS, roomEvents, map[string]any{"r": "live"})
		if got := websocket.CloseStatus(err); got != 4401 {
			t.Fatalf("bad token: got close status %d (%v), want 4401", got, err)
		}
	})

	t.Run("Resume", func(t *testing.T) {
		var first struct{ PostMessage struct{ ID string } }
		mustDo(t, alice, postMessage, map[string]any{"r": "live", "c": "r0"}, &first)
		for _, c := range []string{"r1", "r2"} {
			mustDo(t, alice, postMessage, map[string]any{"r": "live", "c": c}, nil)
		}
		sub := ts.subscribe(t, alice, chatclient.GraphQLTransportWS, "live", first.PostMessage.ID)
		mustDo(t, alice, postMessage, map[string]any{"r": "live", "c": "r3"}, nil)
		var got []string
		for range 3 {
			got = append(got, nextEvent(t, sub).Message.Content)
		}
		if strings.Join(got, ",") != "r1,r2,r3" {
			t.Fatalf("resumed: got %v, want r1,r2,r3", got)
		}
		wantSubscriptionError(t, alice, "BAD_USER_INPUT", "live", "not-a-cursor")
	})

	t.Run("SSE", func(t *testing.T) {
		resp := ts.openSSE(t, alice.Token, `subscription { roomEvents(room: \"live\") { kind message { content } } }`)
		go mustDoNoFatal(alice, postMessage, map[string]any{"r": "live", "c": "over sse"})
		buf := make([]byte, 0, 4096)
		chunk := make([]byte, 1024)
		for !strings.Contains(string(buf), "over sse") {
			n, err := resp.Body.Read(chunk)
			if err != nil {
				t.Fatalf("read SSE: %v (got %q)", err, buf)
			}
			buf = append(buf, chunk[:n]...)
		}
	})

	t.Run("RoomDeletedEndsSubscription", func(t *testing.T) {
		mustDo(t, alice, createRoom, map[string]any{"n": "doomed"}, nil)
		sub := ts.subscribe(t, alice, chatclient.GraphQLTransportWS, "doomed", nil)
		mustDo(t, alice, deleteRoom, map[string]any{"r": "doomed"}, nil)
		if ev := nextEvent(t, sub); ev.Kind != "ROOM_DELETED" || ev.User.Login != "alice" || ev.Cursor != nil {
			t.Fatalf("got %+v", ev)
		}
		if _, err := sub.Next(testContext(t)); !errors.Is(err, chatclient.ErrComplete) {
			t.Fatalf("after delete: got %v, want complete", err)
		}
	})
}

func mustDoNoFatal(c *chatclient.Client, query string, vars map[string]any) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = c.Do(ctx, query, vars, nil)
}

func wantSubscriptionError(t *testing.T, c *chatclient.Client, code, room string, after any) {
	t.Helper()
	sub := subscribeNoWait(t, c, chatclient.GraphQLTransportWS, room, after)
	if _, err := sub.Next(testContext(t)); !isCode(err, code) {
		t.Fatalf("got %v, want %s", err, code)
	}
}

func countGoroutines(fn string) int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), fn)
}

func TestSubscriptionsAreReleased(t *testing.T) {
	forEachStore(t, testSubscriptionsAreReleased)
}

// testSubscriptionsAreReleased opens and closes 50 subscriptions at once:
// the server then holds no stream, connection or encoder of theirs. It
// counts what this server holds, not the process's goroutines, which other
// tests' leftovers would blur.
func testSubscriptionsAreReleased(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice := ts.user(t, "alice")
	mustDo(t, alice, createRoom, map[string]any{"n": "churn"}, nil)
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := alice.Subscribe(testContext(t), chatclient.GraphQLTransportWS, roomEvents, map[string]any{"r": "churn"})
			if err != nil {
				t.Error(err)
				return
			}
			s.Close()
		}()
	}
	wg.Wait()
	waitFor(t, ts.Released)
}

// TestMembershipTTLConfig: the membership cache is on by default with the
// in-process broker (one instance) and off with Redis (several), unless
// CHAT_MEMBERSHIP_TTL says otherwise; a bad value is refused.
func TestMembershipTTLConfig(t *testing.T) {
	for _, c := range []struct {
		redis, ttl string
		want       time.Duration
		bad        bool
	}{
		{"", "", chat.DefaultMembershipTTL, false},
		{"redis://127.0.0.1:6379/0", "", 0, false},
		{"", "auto", chat.DefaultMembershipTTL, false},
		{"redis://127.0.0.1:6379/0", "2s", 2 * time.Second, false},
		{"", "0", 0, false},
		{"", "-1s", 0, true},
		{"", "soon", 0, true},
	} {
		env := map[string]string{"CHAT_REDIS_URL": c.redis, "CHAT_MEMBERSHIP_TTL": c.ttl}
		cfg, err := server.ParseConfig(nil, func(k string) string { return env[k] })
		if (err != nil) != c.bad || err == nil && cfg.MembershipTTL != c.want {
			t.Errorf("Redis %q, CHAT_MEMBERSHIP_TTL=%q: TTL %v, error %v; want %v, error %v", c.redis, c.ttl, cfg.MembershipTTL, err, c.want, c.bad)
		}
	}
}

// TestWriteDelayConfig: CHAT_WRITE_DELAY is auto by default (the default
// delay while the cores are full), and takes auto or a duration from 0
// (events written at once) to 1s, applied to every event.
func TestWriteDelayConfig(t *testing.T) {
	for _, c := range []struct {
		value    string
		want     time.Duration
		whenBusy bool
		bad      bool
	}{
		{"", live.DefaultWriteDelay, true, false},
		{"auto", live.DefaultWriteDelay, true, false},
		{"0", 0, false, false},
		{"5ms", 5 * time.Millisecond, false, false},
		{"1s", time.Second, false, false},
		{"1001ms", 0, false, true},
		{"-1ms", 0, false, true},
		{"soon", 0, false, true},
	} {
		cfg, err := server.ParseConfig(nil, func(k string) string {
			if k == "CHAT_WRITE_DELAY" {
				return c.value
			}
			return ""
		})
		if (err != nil) != c.bad || err == nil && (cfg.WriteDelay != c.want || cfg.WriteDelayWhenBusy != c.whenBusy) {
			t.Errorf("CHAT_WRITE_DELAY=%q: %v (when busy %v), error %v; want %v (when busy %v), error %v",
				c.value, cfg.WriteDelay, cfg.WriteDelayWhenBusy, err, c.want, c.whenBusy, c.bad)
		}
	}
}

// TestMaxRoomsPerUserConfig: CHAT_MAX_ROOMS_PER_USER sets the cap (1,000
// by default), and CHAT_MAX_SYNCS_PER_USER the syncs' (16); a cap under
// one is refused.
func TestMaxRoomsPerUserConfig(t *testing.T) {
	for _, cap := range []struct {
		env   string
		def   int
		value func(server.Config) int
	}{
		{"CHAT_MAX_ROOMS_PER_USER", chat.DefaultMaxRoomsPerUser, func(c server.Config) int { return c.MaxRoomsPerUser }},
		{"CHAT_MAX_SYNCS_PER_USER", chat.DefaultMaxSyncsPerUser, func(c server.Config) int { return c.MaxSyncsPerUser }},
	} {
		for _, c := range []struct {
			value string
			want  int
			bad   bool
		}{
			{"", cap.def, false},
			{"50", 50, false},
			{"0", 0, true},
			{"-3", 0, true},
			{"many", 0, true},
		} {
			cfg, err := server.ParseConfig(nil, func(k string) string {
				if k == cap.env {
					return c.value
				}
				return ""
			})
			if (err != nil) != c.bad || err == nil && cap.value(cfg) != c.want {
				t.Errorf("%s=%q: %d, error %v; want %d, error %v", cap.env, c.value, cap.value(cfg), err, c.want, c.bad)
			}
		}
	}
}
