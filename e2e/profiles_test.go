package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/server"
)

const (
	updateProfileQ = `mutation($in: ProfileInput!) { updateProfile(input: $in) { login firstname lastname email bio } }`
	deleteAccountQ = `mutation($p: String!) { deleteAccount(password: $p) }`
	// profilesQ shows a user wherever a UserSummary appears: the authors of
	// a room's messages, the room's creator and participants, the peers of
	// the caller's inbox.
	profilesQ = `query($r: String!) {
		messages(room: $r, first: 50) { edges { node { content system author { login firstname lastname deleted } } } }
		room(name: $r) { creator { login firstname lastname deleted } participants { login firstname lastname deleted } }
		inbox { id peer { login firstname lastname deleted } }
	}`
	// sessionOnly reads no profile: only the session check refuses it.
	sessionOnly   = `{ blockedUsers { login } }`
	profileEvents = `subscription($r: String!) { roomEvents(room: $r) { kind user { login firstname deleted } message { content author { login firstname lastname deleted } } } }`
)

type summary struct {
	Login, Firstname, Lastname string
	Deleted                    bool
}

type profilesView struct {
	Messages struct {
		Edges []struct {
			Node struct {
				Content string
				System  bool
				Author  summary
			}
		}
	}
	Room *struct {
		Creator      summary
		Participants []summary
	}
	Inbox []struct {
		ID   string
		Peer *summary
	}
}

// authorOf returns how the page shows the author of the message content.
func (v profilesView) authorOf(t *testing.T, content string) summary {
	t.Helper()
	for _, e := range v.Messages.Edges {
		if e.Node.Content == content {
			return e.Node.Author
		}
	}
	t.Fatalf("no message %q in %+v", content, v.Messages.Edges)
	return summary{}
}

func (v profilesView) participant(login string) (summary, bool) {
	if v.Room == nil {
		return summary{}, false
	}
	for _, p := range v.Room.Participants {
		if p.Login == login {
			return p, true
		}
	}
	return summary{}, false
}

func (v profilesView) peer(t *testing.T, conversation string) summary {
	t.Helper()
	for _, e := range v.Inbox {
		if e.ID == conversation && e.Peer != nil {
			return *e.Peer
		}
	}
	t.Fatalf("no conversation %q with a peer in %+v", conversation, v.Inbox)
	return summary{}
}

func viewProfiles(t *testing.T, c *chatclient.Client, room string) profilesView {
	t.Helper()
	var v profilesView
	mustDo(t, c, profilesQ, map[string]any{"r": room}, &v)
	return v
}

type profileEvent struct {
	Kind string
	User struct {
		Login, Firstname string
		Deleted          bool
	}
	Message *struct {
		Content string
		Author  summary
	}
}

func nextProfileEvent(t *testing.T, sub *chatclient.Subscription) profileEvent {
	t.Helper()
	var out struct{ RoomEvents profileEvent }
	nextData(t, sub, &out)
	return out.RoomEvents
}

func TestUpdateProfile(t *testing.T) { forEachStore(t, testUpdateProfile) }

// testUpdateProfile: a profile change shows at once wherever the user
// appears, in messages written before it too (which stored the old names,
// as did the room's participants and the token the user still posts with),
// and in live events; bad input is refused by signup's rules.
func testUpdateProfile(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice, bob := ts.user(t, "alice"), ts.user(t, "bob")
	mustDo(t, alice, createRoom, map[string]any{"n": "tea-party"}, nil)
	mustDo(t, bob, joinRoom, map[string]any{"r": "tea-party"}, nil)
	mustDo(t, alice, postMessage, map[string]any{"r": "tea-party", "c": "before"}, nil)
	mustDo(t, alice, sendDirect, map[string]any{"to": "bob", "c": "psst"}, nil)

	// Bob has seen alice's names: they are cached.
	v := viewProfiles(t, bob, "tea-party")
	if a := v.authorOf(t, "before"); a.Firstname != "Alice" || a.Lastname != "Tester" || a.Deleted {
		t.Fatalf("author before the change: %+v", a)
	}
	sub := ts.live(t, bob, profileEvents, map[string]any{"r": "tea-party"})

	var out struct{ UpdateProfile map[string]string }
	mustDo(t, alice, updateProfileQ, map[string]any{"in": map[string]any{"firstname": "Alicia", "bio": "curiouser"}}, &out)
	if got := out.UpdateProfile; got["firstname"] != "Alicia" || got["lastname"] != "Tester" || got["bio"] != "curiouser" || got["login"] != "alice" {
		t.Fatalf("updateProfile = %v, want firstname and bio changed, lastname kept", got)
	}
	mustDo(t, alice, updateProfileQ, map[string]any{"in": map[string]any{"lastname": "Liddell", "firstname": nil}}, &out)
	if got := out.UpdateProfile; got["firstname"] != "Alicia" || got["lastname"] != "Liddell" || got["bio"] != "curiouser" {
		t.Fatalf("second updateProfile = %v, want lastname changed, the rest kept", got)
	}
	var me struct{ Me map[string]any }
	mustDo(t, alice, `{ me { firstname lastname bio } }`, nil, &me)
	if me.Me["firstname"] != "Alicia" || me.Me["lastname"] != "Liddell" || me.Me["bio"] != "curiouser" {
		t.Fatalf("me after the changes = %v", me.Me)
	}

	fresh := summary{Login: "alice", Firstname: "Alicia", Lastname: "Liddell"}
	v = viewProfiles(t, bob, "tea-party")
	if a := v.authorOf(t, "before"); a != fresh {
		t.Errorf("author of a message posted before the change: %+v, want %+v", a, fresh)
	}
	if v.Room.Creator != fresh {
		t.Errorf("room creator: %+v, want %+v", v.Room.Creator, fresh)
	}
	if p, _ := v.participant("alice"); p != fresh {
		t.Errorf("participant: %+v, want %+v", p, fresh)
	}
	if p := v.peer(t, "alice:bob"); p != fresh {
		t.Errorf("bob's inbox peer: %+v, want %+v", p, fresh)
	}

	// Alice still posts with the token she got as "Alice": subscribers see
	// her as she is now.
	mustDo(t, alice, postMessage, map[string]any{"r": "tea-party", "c": "after"}, nil)
	ev := nextProfileEvent(t, sub)
	if ev.Kind != "MESSAGE_POSTED" || ev.Message == nil || ev.Message.Author != fresh || ev.User.Firstname != "Alicia" {
		t.Fatalf("live event after the change: %+v, want the author as %+v", ev, fresh)
	}
	var posted struct {
		PostMessage struct{ Author struct{ Firstname string } }
	}
	mustDo(t, alice, postMessage, map[string]any{"r": "tea-party", "c": "again"}, &posted)
	if got := posted.PostMessage.Author.Firstname; got != "Alicia" {
		t.Errorf("postMessage's author after the change: %q, want Alicia", got)
	}

	long := strings.Repeat("é", 65)
	for name, in := range map[string]map[string]any{
		"firstname": {"firstname": " "},
		"lastname":  {"lastname": long},
		"bio":       {"bio": strings.Repeat("b", 501)},
	} {
		e := wantCode(t, alice, "BAD_USER_INPUT", updateProfileQ, map[string]any{"in": in})
		if !strings.Contains(e.Message, name) {
			t.Errorf("message %q does not name %s", e.Message, name)
		}
	}
	mustDo(t, alice, updateProfileQ, map[string]any{"in": map[string]any{"firstname": strings.Repeat("é", 64), "bio": ""}}, &out)
	if got := out.UpdateProfile; got["bio"] != "" || got["lastname"] != "Liddell" {
		t.Fatalf("updateProfile at the limits = %v", got)
	}
	wantCode(t, ts.Client, "UNAUTHENTICATED", updateProfileQ, map[string]any{"in": map[string]any{"firstname": "Eve"}})
}

func TestDeleteAccount(t *testing.T) { forEachStore(t, testDeleteAccount) }

// testDeleteAccount: a deleted account's tokens, refresh tokens and login
// stop working at once (an open websocket closes with 4401), its login is
// never available again, it leaves its rooms and groups (others see it
// leave), its rooms stay, and its messages and conversations remain, from a
// deleted user.
func testDeleteAccount(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice, bob := ts.user(t, "alice"), ts.user(t, "bob")
	mustDo(t, alice, createRoom, map[string]any{"n": "tea-party"}, nil)
	mustDo(t, bob, joinRoom, map[string]any{"r": "tea-party"}, nil)
	mustDo(t, bob, createRoom, map[string]any{"n": "croquet"}, nil)
	mustDo(t, alice, joinRoom, map[string]any{"r": "croquet"}, nil)
	mustDo(t, bob, createKind, map[string]any{"n": "secret", "k": "PRIVATE_GROUP"}, nil)
	mustDo(t, bob, addMember, map[string]any{"g": "secret", "l": "alice"}, nil)
	mustDo(t, alice, postMessage, map[string]any{"r": "tea-party", "c": "mine"}, nil)
	mustDo(t, alice, postMessage, map[string]any{"r": "croquet", "c": "off with her head"}, nil)
	mustDo(t, alice, sendDirect, map[string]any{"to": "bob", "c": "psst"}, nil)
	if v := viewProfiles(t, bob, "croquet"); v.authorOf(t, "off with her head").Firstname != "Alice" {
		t.Fatalf("before the delete: %+v", v)
	}

	session := login(t, ts, "alice", "password-alice")
	mustDo(t, ts.Client.WithToken(session.Token), sessionOnly, nil, nil) // its session is cached
	// (Her room subscriptions end as she leaves the rooms; her inbox's ends
	// with her session.)
	aliceWS := ts.live(t, ts.Client.WithToken(session.Token), inboxSub, nil)
	bobSub := ts.live(t, bob, profileEvents, map[string]any{"r": "croquet"})

	wantCode(t, alice, "UNAUTHENTICATED", deleteAccountQ, map[string]any{"p": "wrong-password"})
	wantCode(t, ts.Client, "UNAUTHENTICATED", deleteAccountQ, map[string]any{"p": "password-alice"})
	mustDo(t, alice, myRooms, nil, nil) // still there

	var out struct{ DeleteAccount bool }
	mustDo(t, alice, deleteAccountQ, map[string]any{"p": "password-alice"}, &out)
	if !out.DeleteAccount {
		t.Fatal("deleteAccount returned false")
	}

	// The login stops working, every token of it at once.
	wantCode(t, alice, "UNAUTHENTICATED", myRooms, nil)
	wantCode(t, alice, "UNAUTHENTICATED", sessionOnly, nil)
	wantCode(t, ts.Client.WithToken(session.Token), "UNAUTHENTICATED", sessionOnly, nil)
	wantCode(t, ts.Client, "UNAUTHENTICATED", refreshQ, map[string]any{"t": session.RefreshToken})
	wantCode(t, ts.Client, "UNAUTHENTICATED", loginQ, map[string]any{"l": "alice", "p": "password-alice"})
	wantClosed4401(t, aliceWS)
	wantCode(t, alice, "UNAUTHENTICATED", deleteAccountQ, map[string]any{"p": "password-alice"})
	// Nobody can take the login and pass for the author of her messages.
	wantCode(t, ts.Client, "CONFLICT", `mutation($in: SignupInput!) { signup(input: $in) { login } }`,
		map[string]any{"in": map[string]any{"login": "alice", "password": "impostor-pass", "firstname": "Alice", "lastname": "Impostor"}})
	wantCode(t, ts.Client, "UNAUTHENTICATED", loginQ, map[string]any{"l": "alice", "p": "impostor-pass"})

	// Bob saw her leave the room she had joined; the event shows her deleted.
	ev := nextProfileEvent(t, bobSub)
	if ev.Kind != "PARTICIPANT_LEFT" || ev.User.Login != "alice" || !ev.User.Deleted || ev.User.Firstname != "" {
		t.Fatalf("bob's event: %+v, want alice, deleted, leaving", ev)
	}

	gone := summary{Login: "alice", Deleted: true}
	for _, room := range []string{"tea-party", "croquet", "secret"} {
		v := viewProfiles(t, bob, room)
		if v.Room == nil {
			t.Fatalf("room %q is gone", room)
		}
		if _, in := v.participant("alice"); in {
			t.Errorf("room %q still lists alice: %+v", room, v.Room.Participants)
		}
		if room == "tea-party" && v.Room.Creator != gone {
			t.Errorf("creator of her room: %+v, want %+v", v.Room.Creator, gone)
		}
	}
	v := viewProfiles(t, bob, "tea-party")
	if a := v.authorOf(t, "mine"); a != gone {
		t.Errorf("author of her message: %+v, want %+v", a, gone)
	}
	if p := v.peer(t, "alice:bob"); p != gone {
		t.Errorf("bob's inbox peer: %+v, want %+v", p, gone)
	}
	var dm struct {
		DirectMessages struct {
			Edges []struct{ Node struct{ Content string } }
		}
	}
	mustDo(t, bob, directQ, map[string]any{"with": "alice"}, &dm)
	if len(dm.DirectMessages.Edges) != 1 || dm.DirectMessages.Edges[0].Node.Content != "psst" {
		t.Errorf("bob's direct messages with alice: %+v, want hers kept", dm)
	}
	wantCode(t, bob, "NOT_FOUND", sendDirect, map[string]any{"to": "alice", "c": "hello?"})
	wantCode(t, bob, "NOT_FOUND", addMember, map[string]any{"g": "secret", "l": "alice"})
	// Bob posts on in her room; nobody can delete it any more.
	mustDo(t, bob, postMessage, map[string]any{"r": "tea-party", "c": "still here"}, nil)
	wantCode(t, bob, "FORBIDDEN", deleteRoom, map[string]any{"r": "tea-party"})
}

// TestClusterProfiles: a profile change and an account deletion made on
// one instance show on another at once, though the other had cached the
// names and trusted the session: both instances keep names and sessions
// for an hour here, so only the announcement on Redis can tell them.
func TestClusterProfiles(t *testing.T) {
	cl, alice, bob := acrossCluster(t, across{configure: func(c *server.Config) {
		c.ProfileTTL = time.Hour
		c.SessionCheck = time.Hour
	}})
	b := cl.instances[1]
	aliceOnB := cl.on(1, alice)
	mustDo(t, alice, postMessage, map[string]any{"r": "across", "c": "hi"}, nil)
	if a := viewProfiles(t, bob, "across").authorOf(t, "hi"); a.Firstname != "Alice" {
		t.Fatalf("bob on B sees the author as %+v", a)
	}
	mustDo(t, aliceOnB, sessionOnly, nil, nil) // B trusts her session now
	aliceWS := b.live(t, aliceOnB, inboxSub, nil)
	sub := b.live(t, bob, profileEvents, map[string]any{"r": "across"})

	mustDo(t, alice, updateProfileQ, map[string]any{"in": map[string]any{"firstname": "Alicia"}}, nil)
	eventually(t, 5*time.Second, "the new name on B", func() (bool, any) {
		a := viewProfiles(t, bob, "across").authorOf(t, "hi")
		return a.Firstname == "Alicia", a
	})
	mustDo(t, alice, postMessage, map[string]any{"r": "across", "c": "renamed"}, nil)
	// (Events of before the subscription may still be on their way.)
	ev := nextProfileEvent(t, sub)
	for ev.Message != nil && ev.Message.Content != "renamed" {
		ev = nextProfileEvent(t, sub)
	}
	if ev.Message == nil || ev.Message.Author.Firstname != "Alicia" {
		t.Fatalf("bob's live event on B: %+v %+v, want the author as Alicia", ev, ev.Message)
	}

	mustDo(t, alice, deleteAccountQ, map[string]any{"p": "password-alice"}, nil)
	eventually(t, 5*time.Second, "her token refused on B", func() (bool, any) {
		err := aliceOnB.Do(testContext(t), sessionOnly, nil, nil)
		return isCode(err, "UNAUTHENTICATED"), err
	})
	wantClosed4401(t, aliceWS)
	if ev := nextProfileEvent(t, sub); ev.Kind != "PARTICIPANT_LEFT" || ev.User.Login != "alice" {
		t.Fatalf("bob's live event on B: %+v, want alice leaving", ev)
	}
	eventually(t, 5*time.Second, "her messages from a deleted user on B", func() (bool, any) {
		a := viewProfiles(t, bob, "across").authorOf(t, "hi")
		return a == summary{Login: "alice", Deleted: true}, a
	})
}

// TestMessagePageReadsAuthorsOnce: a page of messages by many authors reads
// their names in one store read, none when they are cached, and none when
// the page shows no names.
func TestMessagePageReadsAuthorsOnce(t *testing.T) {
	ts := startServer(t, testConfig(t))
	owner := ts.user(t, "owner")
	mustDo(t, owner, createRoom, map[string]any{"n": "crowd"}, nil)
	for i := range 30 {
		u := ts.user(t, fmt.Sprintf("author%02d", i))
		mustDo(t, u, joinRoom, map[string]any{"r": "crowd"}, nil)
		mustDo(t, u, postMessage, map[string]any{"r": "crowd", "c": fmt.Sprintf("m%02d", i)}, nil)
	}
	const named = `query($r: String!) { messages(room: $r, first: 100) { edges { node { content author { login firstname lastname deleted } } } } }`
	reads := func(query string) int {
		t.Helper()
		before := ts.Profiles().Reads()
		var page profilesView
		mustDo(t, owner, query, map[string]any{"r": "crowd"}, &page)
		if n := len(page.Messages.Edges); n != 60 {
			t.Fatalf("page of %d messages, want 60 (30 joins, 30 posts)", n)
		}
		for _, e := range page.Messages.Edges {
			if query == named && (e.Node.Author.Firstname == "" || e.Node.Author.Deleted) {
				t.Fatalf("author %+v", e.Node.Author)
			}
		}
		return ts.Profiles().Reads() - before
	}
	ts.Profiles().Purge()
	if n := reads(named); n != 1 {
		t.Errorf("a page by 30 uncached authors made %d store reads of names, want 1", n)
	}
	if n := reads(named); n != 0 {
		t.Errorf("a page by cached authors made %d store reads of names, want 0", n)
	}
	ts.Profiles().Purge()
	if n := reads(`query($r: String!) { messages(room: $r, first: 100) { edges { node { content author { login } } } } }`); n != 0 {
		t.Errorf("a page showing no names made %d store reads of names, want 0", n)
	}
}
