package e2e

import (
	"fmt"
	"sync"
	"testing"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/server"
)

// Room settings, pins, invite links and read receipts (issue 32 items 4
// and 3), end to end.

const (
	settingsQ  = `mutation($r: String!, $in: RoomSettingsInput!) { updateRoomSettings(room: $r, input: $in) { name banner title slowModeSeconds } }`
	roomLookQ  = `query($r: String!) { room(name: $r) { banner title slowModeSeconds } }`
	pinQ       = `mutation($id: ID!) { pinMessage(id: $id) { id } }`
	unpinQ     = `mutation($id: ID!) { unpinMessage(id: $id) { id } }`
	pinnedQ    = `query($r: String!) { room(name: $r) { pinnedMessages { message { id content } pinnedBy { login } pinnedAt } } }`
	inviteQ    = `mutation($r: String!, $n: Int) { createInvite(room: $r, maxUses: $n) { token invite { id maxUses uses createdBy { login } expiresAt } } }`
	invitesQ   = `query($r: String!) { room(name: $r) { invites { id uses maxUses } } }`
	revokeQ    = `mutation($r: String!, $id: ID!) { revokeInvite(room: $r, id: $id) }`
	joinByQ    = `mutation($t: String!) { joinByInvite(token: $t) { name participants { login } } }`
	settingSub = `subscription($r: String!) { roomEvents(room: $r) { kind user { login } message { id content system } } }`
	receiptsQ  = `mutation($on: Boolean!) { updateProfile(input: {readReceipts: $on}) { readReceipts } }`
	peerReadQ  = `query { inbox { id peerReadUpTo } }`
	receiptSub = `subscription { inboxEvents { kind conversationId user { login } message { id } } }`
)

type settingEvent struct {
	Kind    string
	User    struct{ Login string }
	Message *struct {
		ID, Content string
		System      bool
	}
}

// crew makes alice's private group crew with bob in it.
func crew(t *testing.T, alice *chatclient.Client) {
	t.Helper()
	mustDo(t, alice, createKind, map[string]any{"n": "crew", "k": "PRIVATE_GROUP"}, nil)
	mustDo(t, alice, addMember, map[string]any{"g": "crew", "l": "bob"}, nil)
}

func TestRoomSettings(t *testing.T) { forEachStore(t, testRoomSettings) }

// testRoomSettings: a public room's creator sets its banner and slow mode,
// a participant may not; subscribers get ROOM_SETTINGS_CHANGED; slow mode
// refuses a participant's second post with SLOW_MODE and retryAfter (even
// one whose membership the instance had cached before), not the
// creator's; a group's member sets its title, not its slow mode.
func testRoomSettings(t *testing.T, cfg server.Config) {
	ts, alice, bob, _ := teaParty(t, cfg)
	room := func(in map[string]any) map[string]any { return map[string]any{"r": "tea-party", "in": in} }
	post(t, bob, "tea-party", "before slow mode") // bob's membership is cached from here
	sub := ts.live(t, bob, settingSub, map[string]any{"r": "tea-party"})

	wantCode(t, bob, "FORBIDDEN", settingsQ, room(map[string]any{"banner": "mine now"}))
	wantCode(t, alice, "BAD_USER_INPUT", settingsQ, room(map[string]any{"title": "Tea"}))
	wantCode(t, alice, "BAD_USER_INPUT", settingsQ, room(map[string]any{"slowModeSeconds": -1}))
	wantCode(t, alice, "BAD_USER_INPUT", settingsQ, room(map[string]any{}))
	wantCode(t, alice, "NOT_FOUND", settingsQ, map[string]any{"r": "no-such-room", "in": map[string]any{"banner": "x"}})

	var set struct {
		UpdateRoomSettings struct {
			Banner          string
			Title           *string
			SlowModeSeconds int
		}
	}
	mustDo(t, alice, settingsQ, room(map[string]any{"banner": "Earl Grey only", "slowModeSeconds": 60}), &set)
	if s := set.UpdateRoomSettings; s.Banner != "Earl Grey only" || s.Title != nil || s.SlowModeSeconds != 60 {
		t.Fatalf("updateRoomSettings = %+v", s)
	}
	ev := nextOf[settingEvent](t, sub)
	if ev.Kind != "ROOM_SETTINGS_CHANGED" || ev.User.Login != "alice" || ev.Message == nil || !ev.Message.System ||
		ev.Message.Content != `alice set the topic to "Earl Grey only", set slow mode to one post every 1m0s` {
		t.Fatalf("event = %+v, want ROOM_SETTINGS_CHANGED by alice with its system message", ev)
	}

	post(t, bob, "tea-party", "first in slow mode")
	e := wantCode(t, bob, "SLOW_MODE", postMessage, map[string]any{"r": "tea-party", "c": "too soon"})
	if after, _ := e.Extensions["retryAfter"].(float64); after < 1 || after > 60 {
		t.Errorf("SLOW_MODE retryAfter = %v, want 1 to 60 seconds", e.Extensions["retryAfter"])
	}
	post(t, alice, "tea-party", "the creator")
	post(t, alice, "tea-party", "is not slowed")

	mustDo(t, alice, settingsQ, room(map[string]any{"slowModeSeconds": 0}), nil)
	post(t, bob, "tea-party", "slow mode is off")

	crew(t, alice)
	group := func(in map[string]any) map[string]any { return map[string]any{"r": "crew", "in": in} }
	mustDo(t, bob, settingsQ, group(map[string]any{"title": "The Crew", "banner": "we sail"}), nil)
	wantCode(t, bob, "FORBIDDEN", settingsQ, group(map[string]any{"slowModeSeconds": 5}))
	wantCode(t, ts.user(t, "eve"), "NOT_FOUND", settingsQ, group(map[string]any{"title": "Eve's"}))
	var look struct {
		Room struct {
			Banner          string
			Title           *string
			SlowModeSeconds int
		}
	}
	mustDo(t, alice, roomLookQ, map[string]any{"r": "crew"}, &look)
	if look.Room.Title == nil || *look.Room.Title != "The Crew" || look.Room.Banner != "we sail" {
		t.Errorf("crew = %+v, want the title and banner bob set", look.Room)
	}
}

func TestPins(t *testing.T) { forEachStore(t, testPins) }

type pinnedPage struct {
	Room struct {
		PinnedMessages []struct {
			Message  struct{ ID, Content string }
			PinnedBy struct{ Login string }
		}
	}
}

// pinnedIDs are the ids of room's pinned messages as c sees them.
func pinnedIDs(t *testing.T, c *chatclient.Client, room string) []string {
	t.Helper()
	var out pinnedPage
	mustDo(t, c, pinnedQ, map[string]any{"r": room}, &out)
	var ids []string
	for _, p := range out.Room.PinnedMessages {
		ids = append(ids, p.Message.ID)
	}
	return ids
}

// testPins: a public room's creator pins (a participant may not), with
// live events; pins follow the reader's view: a hidden message is shown
// pinned to its author only, a deleted one to nobody, and a group member
// does not see pinned what was posted before they joined.
func testPins(t *testing.T, cfg server.Config) {
	ts, alice, bob, carol := teaParty(t, cfg)
	sub := ts.live(t, bob, settingSub, map[string]any{"r": "tea-party"})
	first := post(t, bob, "tea-party", "pin me")
	second := post(t, alice, "tea-party", "me too")
	third := post(t, bob, "tea-party", "and me")
	wantCode(t, bob, "FORBIDDEN", pinQ, map[string]any{"id": first})
	for _, id := range []string{first, second, third} {
		mustDo(t, alice, pinQ, map[string]any{"id": id}, nil)
	}
	mustDo(t, alice, pinQ, map[string]any{"id": first}, nil) // again: no change, no event
	var pinned []string
	for len(pinned) < 3 {
		ev := nextOf[settingEvent](t, sub)
		if ev.Kind == "MESSAGE_PINNED" {
			if ev.User.Login != "alice" || ev.Message == nil {
				t.Fatalf("pin event = %+v", ev)
			}
			pinned = append(pinned, ev.Message.ID)
		}
	}
	if fmt.Sprint(pinned) != fmt.Sprint([]string{first, second, third}) {
		t.Errorf("MESSAGE_PINNED events of %v, want %v", pinned, []string{first, second, third})
	}
	if got := pinnedIDs(t, bob, "tea-party"); fmt.Sprint(got) != fmt.Sprint([]string{third, second, first}) {
		t.Errorf("pinnedMessages = %v, want the newest pin first", got)
	}
	if got := pinnedIDs(t, carol, "tea-party"); len(got) != 0 {
		t.Errorf("pinnedMessages for one not in the room = %v, want none", got)
	}

	mustDo(t, bob, hideQ, map[string]any{"id": first}, nil)
	mustDo(t, alice, deleteMsgQ, map[string]any{"id": second}, nil)
	if got := pinnedIDs(t, alice, "tea-party"); fmt.Sprint(got) != fmt.Sprint([]string{third}) {
		t.Errorf("alice's pinnedMessages = %v, want only the message neither hidden nor deleted", got)
	}
	if got := pinnedIDs(t, bob, "tea-party"); fmt.Sprint(got) != fmt.Sprint([]string{third, first}) {
		t.Errorf("bob's pinnedMessages = %v, want his hidden message too", got)
	}
	mustDo(t, alice, unpinQ, map[string]any{"id": third}, nil)
	for {
		if ev := nextOf[settingEvent](t, sub); ev.Kind == "MESSAGE_UNPINNED" {
			if ev.Message == nil || ev.Message.ID != third {
				t.Fatalf("unpin event = %+v", ev)
			}
			break
		}
	}

	// A group: any member pins; the one added later does not see the
	// earlier pin.
	crew(t, alice)
	early := post(t, bob, "crew", "before carol")
	mustDo(t, bob, pinQ, map[string]any{"id": early}, nil)
	mustDo(t, alice, addMember, map[string]any{"g": "crew", "l": "carol"}, nil)
	late := post(t, carol, "crew", "carol's")
	mustDo(t, carol, pinQ, map[string]any{"id": late}, nil)
	if got := pinnedIDs(t, carol, "crew"); fmt.Sprint(got) != fmt.Sprint([]string{late}) {
		t.Errorf("carol's pins of crew = %v, want only hers", got)
	}
	if got := pinnedIDs(t, alice, "crew"); fmt.Sprint(got) != fmt.Sprint([]string{late, early}) {
		t.Errorf("alice's pins of crew = %v, want both", got)
	}
	wantCode(t, ts.user(t, "eve"), "NOT_FOUND", pinQ, map[string]any{"id": early})

	var dm struct{ SendDirectMessage struct{ ID string } }
	mustDo(t, alice, sendDirect, map[string]any{"to": "bob", "c": "psst"}, &dm)
	wantCode(t, alice, "BAD_USER_INPUT", pinQ, map[string]any{"id": dm.SendDirectMessage.ID})
}

func TestInvites(t *testing.T) { forEachStore(t, testInvites) }

type createdInvite struct {
	CreateInvite struct {
		Token  string
		Invite struct {
			ID            string
			MaxUses, Uses int
			CreatedBy     struct{ Login string }
		}
	}
}

// testInvites: a group's creator makes invite links (a plain member may
// not, nor anyone for a public room); a link lets users in up to its limit,
// never past it under racing joins; it does not let in one banned from the
// group nor one who blocked its maker; a revoked link lets nobody in.
func testInvites(t *testing.T, cfg server.Config) {
	ts, alice, bob, carol := teaParty(t, cfg)
	crew(t, alice)
	wantCode(t, bob, "FORBIDDEN", inviteQ, map[string]any{"r": "crew"})
	wantCode(t, alice, "BAD_USER_INPUT", inviteQ, map[string]any{"r": "tea-party"})
	wantCode(t, alice, "BAD_USER_INPUT", inviteQ, map[string]any{"r": "crew", "n": 0})
	wantCode(t, carol, "NOT_FOUND", inviteQ, map[string]any{"r": "crew"})

	var inv createdInvite
	mustDo(t, alice, inviteQ, map[string]any{"r": "crew", "n": 2}, &inv)
	if i := inv.CreateInvite; i.Token == "" || i.Invite.MaxUses != 2 || i.Invite.Uses != 0 || i.Invite.CreatedBy.Login != "alice" {
		t.Fatalf("createInvite = %+v", i)
	}
	token := inv.CreateInvite.Token
	var joined struct {
		JoinByInvite struct {
			Name         string
			Participants []struct{ Login string }
		}
	}
	mustDo(t, carol, joinByQ, map[string]any{"t": token}, &joined)
	if len(joined.JoinByInvite.Participants) != 3 {
		t.Errorf("joinByInvite = %+v, want carol among the 3 members", joined.JoinByInvite)
	}
	mustDo(t, carol, joinByQ, map[string]any{"t": token}, nil) // in already: no use

	dave, erin := ts.user(t, "dave"), ts.user(t, "erin")
	mustDo(t, alice, banQ, map[string]any{"r": "crew", "l": "dave"}, nil)
	wantCode(t, dave, "FORBIDDEN", joinByQ, map[string]any{"t": token})
	mustDo(t, erin, `mutation { blockUser(login: "alice") { login } }`, nil, nil)
	wantCode(t, erin, "FORBIDDEN", joinByQ, map[string]any{"t": token})
	wantCode(t, erin, "NOT_FOUND", joinByQ, map[string]any{"t": token + "x"})

	var list struct {
		Room struct {
			Invites []struct {
				ID            string
				Uses, MaxUses int
			}
		}
	}
	mustDo(t, alice, invitesQ, map[string]any{"r": "crew"}, &list)
	if len(list.Room.Invites) != 1 || list.Room.Invites[0].Uses != 1 || list.Room.Invites[0].ID != inv.CreateInvite.Invite.ID {
		t.Errorf("invites = %+v, want the one invite used once", list.Room.Invites)
	}
	var bobs struct{ Room struct{ Invites *[]any } }
	mustDo(t, bob, invitesQ, map[string]any{"r": "crew"}, &bobs)
	if bobs.Room.Invites != nil {
		t.Errorf("a plain member's invites = %v, want null", *bobs.Room.Invites)
	}

	// Racing joins: 6 users, 3 uses.
	mustDo(t, alice, inviteQ, map[string]any{"r": "crew", "n": 3}, &inv)
	racers := make([]*chatclient.Client, 6)
	for i := range racers {
		racers[i] = ts.user(t, fmt.Sprintf("racer%d", i))
	}
	var wg sync.WaitGroup
	errs := make([]error, len(racers))
	for i, c := range racers {
		wg.Go(func() { errs[i] = c.Do(testContext(t), joinByQ, map[string]any{"t": inv.CreateInvite.Token}, nil) })
	}
	wg.Wait()
	in := 0
	for _, err := range errs {
		switch {
		case err == nil:
			in++
		case !isCode(err, "FORBIDDEN"):
			t.Errorf("a racing joinByInvite: %v", err)
		}
	}
	if in != 3 {
		t.Errorf("%d racing joins got in with an invite of 3 uses, want 3", in)
	}

	mustDo(t, alice, revokeQ, map[string]any{"r": "crew", "id": inv.CreateInvite.Invite.ID}, nil)
	wantCode(t, ts.user(t, "frank"), "NOT_FOUND", joinByQ, map[string]any{"t": inv.CreateInvite.Token})
	wantCode(t, alice, "NOT_FOUND", revokeQ, map[string]any{"r": "crew", "id": inv.CreateInvite.Invite.ID})
}

func TestReadReceipts(t *testing.T) { forEachStore(t, testReadReceipts) }

type receiptEvent struct {
	Kind           string
	ConversationID string
	User           struct{ Login string }
	Message        *struct{ ID string }
}

// peerReadUpTo is c's peerReadUpTo of the direct conversation id.
func peerReadUpTo(t *testing.T, c *chatclient.Client, id string) *string {
	t.Helper()
	var out struct {
		Inbox []struct {
			ID           string
			PeerReadUpTo *string
		}
	}
	mustDo(t, c, peerReadQ, nil, &out)
	for _, e := range out.Inbox {
		if e.ID == id {
			return e.PeerReadUpTo
		}
	}
	t.Fatalf("no %s in the inbox", id)
	return nil
}

// testReadReceipts: marking a direct conversation read tells the sender
// (READ_UPTO in their inbox, peerReadUpTo), marking a group read tells its
// subscribers and shows in readMarks; one who turns receipts off neither
// sends them nor sees others'.
func testReadReceipts(t *testing.T, cfg server.Config) {
	ts, alice, bob, _ := teaParty(t, cfg)
	inbox := ts.live(t, alice, receiptSub, nil)
	var sent struct{ SendDirectMessage struct{ ID string } }
	mustDo(t, alice, sendDirect, map[string]any{"to": "bob", "c": "seen it?"}, &sent)
	id := sent.SendDirectMessage.ID
	if got := peerReadUpTo(t, alice, "alice:bob"); got != nil {
		t.Errorf("peerReadUpTo before bob read = %v, want null", *got)
	}
	mustDo(t, bob, markReadQ, map[string]any{"c": "alice:bob", "up": id}, nil)
	for {
		ev := nextOf[receiptEvent](t, inbox)
		if ev.Kind == "READ_UPTO" {
			if ev.ConversationID != "alice:bob" || ev.User.Login != "bob" || ev.Message == nil || ev.Message.ID != id {
				t.Fatalf("READ_UPTO = %+v, want bob's up to %s", ev, id)
			}
			break
		}
	}
	if got := peerReadUpTo(t, alice, "alice:bob"); got == nil || *got != id {
		t.Errorf("alice's peerReadUpTo = %v, want %s (seen)", got, id)
	}

	crew(t, alice)
	groupSub := ts.live(t, alice, settingSub, map[string]any{"r": "crew"})
	msg := post(t, alice, "crew", "all hands")
	mustDo(t, bob, markReadQ, map[string]any{"c": "crew", "up": msg}, nil)
	for {
		ev := nextOf[settingEvent](t, groupSub)
		if ev.Kind == "READ_UPTO" {
			if ev.User.Login != "bob" || ev.Message == nil || ev.Message.ID != msg {
				t.Fatalf("group READ_UPTO = %+v", ev)
			}
			break
		}
	}
	var marks struct {
		Room struct {
			ReadMarks []struct {
				User struct{ Login string }
				UpTo string
			}
		}
	}
	mustDo(t, alice, readMarksQ, map[string]any{"r": "crew"}, &marks)
	if len(marks.Room.ReadMarks) != 1 || marks.Room.ReadMarks[0].User.Login != "bob" || marks.Room.ReadMarks[0].UpTo != msg {
		t.Errorf("crew's readMarks = %+v, want bob's up to %s", marks.Room.ReadMarks, msg)
	}

	// Bob turns receipts off: he sends none and sees none.
	var prof struct{ UpdateProfile struct{ ReadReceipts bool } }
	mustDo(t, bob, receiptsQ, map[string]any{"on": false}, &prof)
	if prof.UpdateProfile.ReadReceipts {
		t.Fatal("updateProfile(readReceipts: false) answered true")
	}
	if got := peerReadUpTo(t, alice, "alice:bob"); got != nil {
		t.Errorf("alice's peerReadUpTo once bob sends no receipts = %v, want null", *got)
	}
	bobInbox := ts.live(t, bob, receiptSub, nil)
	var reply struct{ SendDirectMessage struct{ ID string } }
	mustDo(t, bob, sendDirect, map[string]any{"to": "alice", "c": "quiet now"}, &reply)
	mustDo(t, alice, markReadQ, map[string]any{"c": "alice:bob", "up": reply.SendDirectMessage.ID}, nil)
	mustDo(t, alice, sendDirect, map[string]any{"to": "bob", "c": "after my read"}, nil)
	for {
		ev := nextOf[receiptEvent](t, bobInbox)
		if ev.Kind == "READ_UPTO" {
			t.Fatalf("bob, who sends no receipts, got %+v", ev)
		}
		if ev.Kind == "DIRECT_MESSAGE" && ev.User.Login == "alice" {
			break
		}
	}
	if got := peerReadUpTo(t, bob, "alice:bob"); got != nil {
		t.Errorf("bob's peerReadUpTo = %v, want null: he sees no receipts", *got)
	}
	mustDo(t, bob, readMarksQ, map[string]any{"r": "crew"}, &marks)
	if len(marks.Room.ReadMarks) != 0 {
		t.Errorf("crew's readMarks for bob = %+v, want none", marks.Room.ReadMarks)
	}
	msg2 := post(t, alice, "crew", "anyone?")
	mustDo(t, bob, markReadQ, map[string]any{"c": "crew", "up": msg2}, nil)
	mustDo(t, alice, readMarksQ, map[string]any{"r": "crew"}, &marks)
	if len(marks.Room.ReadMarks) != 1 || marks.Room.ReadMarks[0].UpTo != msg {
		t.Errorf("crew's readMarks after bob's silent read = %+v, want his old mark only", marks.Room.ReadMarks)
	}
}
