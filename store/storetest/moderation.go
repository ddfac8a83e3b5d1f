package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// moderate takes the action now and returns its event.
func moderate(ctx context.Context, s store.Store, room string, kind store.EventKind, by, target store.UserRef) (store.Event, error) {
	return s.Moderate(ctx, store.ModerationAction{Room: room, Kind: kind, By: by, Target: target, At: time.Now()})
}

// mustModerate takes the action, which must change the room, and checks
// its event: the target as User, a system message by the actor.
func mustModerate(t *testing.T, ctx context.Context, s store.Store, room string, kind store.EventKind, by, target store.UserRef) store.Event {
	t.Helper()
	ev, err := moderate(ctx, s, room, kind, by, target)
	if err != nil {
		t.Fatalf("Moderate(%s of %q by %q in %q) = %v, want nil", kind, target.Login, by.Login, room, err)
	}
	if ev.Kind != kind || ev.ID.IsZero() || ev.Room != room || ev.User.Login != target.Login ||
		ev.Message == nil || ev.Message.ID != ev.ID || !ev.Message.System || ev.Message.Author.Login != by.Login {
		t.Fatalf("Moderate(%s of %q by %q) = %+v, want the event with the target as user and a system message by %q", kind, target.Login, by.Login, ev, by.Login)
	}
	return ev
}

// wantNoChange checks that the action is allowed but changes nothing.
func wantNoChange(t *testing.T, ctx context.Context, s store.Store, room string, kind store.EventKind, by, target store.UserRef) {
	t.Helper()
	ev, err := moderate(ctx, s, room, kind, by, target)
	if err != nil || ev.Kind != "" {
		t.Errorf("Moderate(%s of %q by %q) = %+v, %v, want the zero event and nil: it changes nothing", kind, target.Login, by.Login, ev, err)
	}
}

// wantModerators checks the room's moderators, by login.
func wantModerators(t *testing.T, ctx context.Context, s store.Store, room string, logins ...string) {
	t.Helper()
	var got []string
	for _, m := range mustRoom(t, ctx, s, room).Moderators {
		got = append(got, m.Login)
	}
	if !slices.Equal(got, logins) {
		t.Errorf("Room(%q).Moderators = %q, want %q", room, got, logins)
	}
}

// logFrom reads the room's log from the event first on.
func logFrom(t *testing.T, s store.Store, room string, first store.MessageID) []store.Event {
	t.Helper()
	evs := roomLog(t, s, room, store.MessageID{})
	i := slices.IndexFunc(evs, func(ev store.Event) bool { return ev.ID == first })
	if i < 0 {
		t.Fatalf("RoomEvents(%q) lacks the event %v", room, first)
	}
	return evs[i:]
}

// wantBans checks the room's bans.
func wantBans(t *testing.T, ctx context.Context, s store.Store, room string, logins ...string) {
	t.Helper()
	got, err := s.Bans(ctx, room)
	if err != nil {
		t.Fatalf("Bans(%q) = %v, want nil", room, err)
	}
	if len(got) != 0 || len(logins) != 0 {
		if !slices.Equal(got, logins) {
			t.Errorf("Bans(%q) = %q, want %q", room, got, logins)
		}
	}
}

// testModerationRoles: the creator appoints and dismisses moderators among
// the participants; moderators remove participants but not each other nor
// the creator; a leave ends the role; every change is logged with who made
// it, and repeating one changes nothing.
func testModerationRoles(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	bob := mustCreateUser(t, ctx, s, "bob").UserRef
	carol := mustCreateUser(t, ctx, s, "carol").UserRef
	dave := mustCreateUser(t, ctx, s, "dave").UserRef
	r := mustCreateRoom(t, ctx, s, "moderated", alice)
	for _, u := range []store.UserRef{bob, carol, dave} {
		mustJoinRoom(t, ctx, s, r.Name, u)
	}

	_, err := moderate(ctx, s, r.Name, store.ModeratorAppointed, bob, carol)
	wantErr(t, "appointing by a participant", err, store.ErrForbidden)
	_, err = moderate(ctx, s, r.Name, store.ParticipantRemoved, bob, carol)
	wantErr(t, "removing by a participant", err, store.ErrForbidden)
	_, err = moderate(ctx, s, newRoomName(t, "nowhere"), store.ModeratorAppointed, alice, bob)
	wantErr(t, "appointing in a missing room", err, store.ErrNotFound)
	_, err = moderate(ctx, s, r.Name, store.ParticipantRemoved, alice, alice)
	wantErr(t, "removing oneself", err, store.ErrInvalid)

	appointed := mustModerate(t, ctx, s, r.Name, store.ModeratorAppointed, alice, bob)
	wantNoChange(t, ctx, s, r.Name, store.ModeratorAppointed, alice, bob)
	mustModerate(t, ctx, s, r.Name, store.ModeratorAppointed, alice, carol)
	wantModerators(t, ctx, s, r.Name, bob.Login, carol.Login)
	if m := mustMembership(t, ctx, s, r.Name, bob.Login); !m.Moderator || !m.Moderates() {
		t.Errorf("Membership(bob) = %+v, want a moderator", m)
	}
	if m := mustMembership(t, ctx, s, r.Name, dave.Login); m.Moderator || m.Moderates() {
		t.Errorf("Membership(dave) = %+v, want no moderator", m)
	}

	_, err = moderate(ctx, s, r.Name, store.ModeratorAppointed, bob, dave)
	wantErr(t, "appointing by a moderator", err, store.ErrForbidden)
	_, err = moderate(ctx, s, r.Name, store.ParticipantRemoved, bob, carol)
	wantErr(t, "a moderator removing a moderator", err, store.ErrForbidden)
	_, err = moderate(ctx, s, r.Name, store.ParticipantRemoved, bob, alice)
	wantErr(t, "a moderator removing the creator", err, store.ErrForbidden)
	outsider := mustCreateUser(t, ctx, s, "outsider").UserRef
	_, err = moderate(ctx, s, r.Name, store.ParticipantRemoved, bob, outsider)
	wantErr(t, "removing a non-participant", err, store.ErrNotFound)
	_, err = moderate(ctx, s, r.Name, store.ModeratorAppointed, alice, outsider)
	wantErr(t, "appointing a non-participant", err, store.ErrNotFound)

	removed := mustModerate(t, ctx, s, r.Name, store.ParticipantRemoved, bob, dave)
	wantMembership(t, ctx, s, r, dave.Login, false)
	wantChatRooms(t, ctx, s, dave.Login, r.Name, false)
	_, err = moderate(ctx, s, r.Name, store.ParticipantRemoved, bob, dave)
	wantErr(t, "removing again", err, store.ErrNotFound)
	// Removed is not banned: dave may come back.
	mustJoinRoom(t, ctx, s, r.Name, dave)

	dismissed := mustModerate(t, ctx, s, r.Name, store.ModeratorDismissed, alice, carol)
	wantNoChange(t, ctx, s, r.Name, store.ModeratorDismissed, alice, carol)
	wantModerators(t, ctx, s, r.Name, bob.Login)
	mustModerate(t, ctx, s, r.Name, store.ParticipantRemoved, alice, bob) // the creator removes a moderator
	wantModerators(t, ctx, s, r.Name)
	mustJoinRoom(t, ctx, s, r.Name, bob)
	wantModerators(t, ctx, s, r.Name) // coming back is no reappointment

	// A leave ends the role.
	mustModerate(t, ctx, s, r.Name, store.ModeratorAppointed, alice, carol)
	if _, err := s.LeaveRoom(ctx, r.Name, carol); err != nil {
		t.Fatalf("LeaveRoom(carol) = %v", err)
	}
	wantModerators(t, ctx, s, r.Name)

	// The log has each change, with the target as user and the actor as
	// the system message's author, and the messages show them.
	var got []string
	for _, ev := range logFrom(t, s, r.Name, appointed.ID) {
		if ev.Message == nil {
			t.Fatalf("log event %+v has no message", ev)
		}
		got = append(got, fmt.Sprintf("%s %s by %s", ev.Kind, ev.User.Login, ev.Message.Author.Login))
	}
	want := []string{
		"MODERATOR_APPOINTED " + bob.Login + " by " + alice.Login,
		"MODERATOR_APPOINTED " + carol.Login + " by " + alice.Login,
		"PARTICIPANT_REMOVED " + dave.Login + " by " + bob.Login,
		"PARTICIPANT_JOINED " + dave.Login + " by " + dave.Login,
		"MODERATOR_DISMISSED " + carol.Login + " by " + alice.Login,
		"PARTICIPANT_REMOVED " + bob.Login + " by " + alice.Login,
		"PARTICIPANT_JOINED " + bob.Login + " by " + bob.Login,
		"MODERATOR_APPOINTED " + carol.Login + " by " + alice.Login,
		"PARTICIPANT_LEFT " + carol.Login + " by " + carol.Login,
	}
	if !slices.Equal(got, want) {
		t.Errorf("RoomEvents after the moderation =\n%q\nwant\n%q", got, want)
	}
	for _, ev := range []store.Event{removed, dismissed} {
		m, err := s.Message(ctx, ev.ID)
		if err != nil || m.Content != ev.Message.Content || !m.System {
			t.Errorf("Message(%s) = %+v, %v, want the system message %q", ev.Kind, m, err, ev.Message.Content)
		}
	}
}

// testModerationBan: a ban removes a participant and keeps the login out
// until it is lifted; bans of non-participants hold too.
func testModerationBan(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	bob := mustCreateUser(t, ctx, s, "bob").UserRef
	carol := mustCreateUser(t, ctx, s, "carol").UserRef
	dave := mustCreateUser(t, ctx, s, "dave").UserRef
	r := mustCreateRoom(t, ctx, s, "banning", alice)
	mustJoinRoom(t, ctx, s, r.Name, bob)
	mustJoinRoom(t, ctx, s, r.Name, carol)
	mustModerate(t, ctx, s, r.Name, store.ModeratorAppointed, alice, bob)

	wantBans(t, ctx, s, r.Name)
	banned := mustModerate(t, ctx, s, r.Name, store.ParticipantBanned, bob, carol)
	wantNoChange(t, ctx, s, r.Name, store.ParticipantBanned, bob, carol)
	mustModerate(t, ctx, s, r.Name, store.ParticipantBanned, bob, dave) // not a participant
	wantBans(t, ctx, s, r.Name, carol.Login, dave.Login)
	wantMembership(t, ctx, s, r, carol.Login, false)
	wantChatRooms(t, ctx, s, carol.Login, r.Name, false)
	if m := mustMembership(t, ctx, s, r.Name, carol.Login); !m.Banned || m.Participant {
		t.Errorf("Membership(carol) after the ban = %+v, want banned, no participant", m)
	}
	if m := mustMembership(t, ctx, s, r.Name, bob.Login); m.Banned {
		t.Errorf("Membership(bob) = %+v, want not banned", m)
	}
	for _, u := range []store.UserRef{carol, dave} {
		_, _, err := s.JoinRoom(ctx, r.Name, u)
		wantErr(t, "JoinRoom of a banned login", err, store.ErrForbidden)
		wantMembership(t, ctx, s, r, u.Login, false)
		wantChatRooms(t, ctx, s, u.Login, r.Name, false)
	}
	_, err := moderate(ctx, s, r.Name, store.ParticipantBanned, carol, bob)
	wantErr(t, "a ban by the banned", err, store.ErrForbidden)
	_, err = moderate(ctx, s, r.Name, store.ParticipantBanned, bob, alice)
	wantErr(t, "banning the creator", err, store.ErrForbidden)

	mustModerate(t, ctx, s, r.Name, store.ParticipantUnbanned, bob, carol)
	wantNoChange(t, ctx, s, r.Name, store.ParticipantUnbanned, bob, carol)
	wantBans(t, ctx, s, r.Name, dave.Login)
	mustJoinRoom(t, ctx, s, r.Name, carol)
	if m := mustMembership(t, ctx, s, r.Name, carol.Login); m.Banned || !m.Participant {
		t.Errorf("Membership(carol) after the unban and join = %+v, want a participant, not banned", m)
	}

	// The creator bans a moderator, which ends the role.
	mustModerate(t, ctx, s, r.Name, store.ParticipantBanned, alice, bob)
	wantModerators(t, ctx, s, r.Name)
	wantMembership(t, ctx, s, r, bob.Login, false)

	var kinds []store.EventKind
	for _, ev := range logFrom(t, s, r.Name, banned.ID) {
		kinds = append(kinds, ev.Kind)
	}
	want := []store.EventKind{store.ParticipantBanned, store.ParticipantBanned, store.ParticipantUnbanned, store.ParticipantJoined, store.ParticipantBanned}
	if !slices.Equal(kinds, want) {
		t.Errorf("RoomEvents after the bans = %q, want %q", kinds, want)
	}
	_, err = s.Bans(ctx, newRoomName(t, "nowhere"))
	wantErr(t, "Bans of a missing room", err, store.ErrNotFound)
}

// testModerationGroup: removing or banning a group's member ends their
// window, as a leave does; a banned login cannot be added back.
func testModerationGroup(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	bob := mustCreateUser(t, ctx, s, "bob").UserRef
	carol := mustCreateUser(t, ctx, s, "carol").UserRef
	g := mustCreateGroup(t, ctx, s, "modgroup", alice)
	now := time.Now().Truncate(time.Millisecond)
	joined, removedAt, back, bannedAt := now.Add(-time.Hour), now.Add(-40*time.Minute), now.Add(-30*time.Minute), now.Add(-20*time.Minute)
	mustAddMember(t, ctx, s, g.Name, alice.Login, bob, joined)
	mustAddMember(t, ctx, s, g.Name, alice.Login, carol, joined)

	act := func(kind store.EventKind, target store.UserRef, at time.Time) {
		t.Helper()
		a := store.ModerationAction{Room: g.Name, Kind: kind, By: alice, Target: target, At: at}
		if ev, err := s.Moderate(ctx, a); err != nil || ev.Kind != kind {
			t.Fatalf("Moderate(%s of %q) = %+v, %v, want its event", kind, target.Login, ev, err)
		}
	}
	act(store.ParticipantRemoved, bob, removedAt)
	wantMembership(t, ctx, s, g, bob.Login, false)
	wantChatRooms(t, ctx, s, bob.Login, g.Name, false)
	checkConversation(t, "Conversation(bob) after the removal", mustConversation(t, ctx, s, bob.Login, g.Name),
		groupEntry(g.Name, store.Window{From: joined, To: removedAt}))

	mustAddMember(t, ctx, s, g.Name, alice.Login, bob, back)
	act(store.ParticipantBanned, bob, bannedAt)
	checkConversation(t, "Conversation(bob) after the ban", mustConversation(t, ctx, s, bob.Login, g.Name),
		groupEntry(g.Name, store.Window{From: joined, To: removedAt}, store.Window{From: back, To: bannedAt}))
	_, _, err := s.AddGroupMember(ctx, g.Name, store.UserRef{Login: carol.Login}, bob, now)
	wantErr(t, "AddGroupMember of a banned login", err, store.ErrForbidden)
	wantMembership(t, ctx, s, g, bob.Login, false)
	checkConversation(t, "Conversation(bob) after the refused add", mustConversation(t, ctx, s, bob.Login, g.Name),
		groupEntry(g.Name, store.Window{From: joined, To: removedAt}, store.Window{From: back, To: bannedAt}))

	// Deleting the group deletes the entry of the member removed.
	if _, _, err := s.DeleteRoom(ctx, g.Name, alice); err != nil {
		t.Fatalf("DeleteRoom = %v", err)
	}
	if _, err := s.Conversation(ctx, bob.Login, g.Name); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Conversation(bob) after the delete = %v, want ErrNotFound", err)
	}
}

// testModerationRacingJoin races a ban with joins of the banned login and
// a removal with a rejoin, many times: a ban always wins in the end (a
// banned login is never a participant, nor has the room in its rooms), and
// the store's participants, membership and log agree.
func testModerationRacingJoin(t *testing.T, s store.Store) {
	const rounds = 8
	ctx, cancel := context.WithTimeout(t.Context(), 2*subtestTimeout)
	defer cancel()
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	mod := mustCreateUser(t, ctx, s, "mod").UserRef
	r := mustCreateRoom(t, ctx, s, "banrace", alice)
	mustJoinRoom(t, ctx, s, r.Name, mod)
	mustModerate(t, ctx, s, r.Name, store.ModeratorAppointed, alice, mod)
	for round := range rounds {
		u := mustCreateUser(t, ctx, s, fmt.Sprintf("racer%d", round)).UserRef
		if round%2 == 1 {
			mustJoinRoom(t, ctx, s, r.Name, u) // a participant already, joining again
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				<-start
				if _, _, err := s.JoinRoom(ctx, r.Name, u); err != nil && !errors.Is(err, store.ErrForbidden) {
					t.Errorf("JoinRoom racing a ban = %v, want nil or ErrForbidden", err)
				}
			})
		}
		wg.Go(func() {
			<-start
			if _, err := moderate(ctx, s, r.Name, store.ParticipantBanned, mod, u); err != nil {
				t.Errorf("ban racing joins = %v, want nil", err)
			}
		})
		close(start)
		wg.Wait()
		if t.Failed() {
			return
		}
		if m := mustMembership(t, ctx, s, r.Name, u.Login); m.Participant || !m.Banned {
			t.Errorf("round %d: Membership after a ban raced joins = %+v, want banned and no participant", round, m)
		}
		if mustRoom(t, ctx, s, r.Name).HasParticipant(u.Login) {
			t.Errorf("round %d: Room lists the banned %q", round, u.Login)
		}
		wantChatRooms(t, ctx, s, u.Login, r.Name, false)
	}
	// The log replays to the same participants as the room holds.
	in := map[string]bool{alice.Login: true}
	for _, ev := range roomLog(t, s, r.Name, store.MessageID{}) {
		switch ev.Kind {
		case store.ParticipantJoined:
			in[ev.User.Login] = true
		case store.ParticipantLeft, store.ParticipantRemoved, store.ParticipantBanned:
			delete(in, ev.User.Login)
		}
	}
	var replayed []string
	for login := range in {
		replayed = append(replayed, login)
	}
	slices.Sort(replayed)
	var stored []string
	for _, p := range mustRoom(t, ctx, s, r.Name).Participants {
		stored = append(stored, p.Login)
	}
	if !slices.Equal(replayed, stored) {
		t.Errorf("participants replayed from the log = %q, stored = %q", replayed, stored)
	}
}

// testModerationRacingDelete races moderation with the room's deletion,
// then creates a room of the same name: nothing of the old room's
// moderation (moderators, bans, system messages, log events) shows in the
// new one, and no action leaves a row behind.
func testModerationRacingDelete(t *testing.T, s store.Store) {
	const racers = 6
	ctx, cancel := context.WithTimeout(t.Context(), 2*subtestTimeout)
	defer cancel()
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	heir := mustCreateUser(t, ctx, s, "heir").UserRef
	r := mustCreateRoom(t, ctx, s, "modrace", alice)
	users := make([]store.UserRef, racers)
	for i := range users {
		users[i] = mustCreateUser(t, ctx, s, fmt.Sprintf("racer%d", i)).UserRef
		mustJoinRoom(t, ctx, s, r.Name, users[i])
	}
	outsider := mustCreateUser(t, ctx, s, "outsider").UserRef
	kinds := []store.EventKind{store.ModeratorAppointed, store.ParticipantRemoved, store.ParticipantBanned}

	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, u := range users {
		wg.Go(func() {
			<-start
			_, err := moderate(ctx, s, r.Name, kinds[i%len(kinds)], alice, u)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Moderate racing the delete = %v, want nil or ErrNotFound", err)
			}
		})
	}
	wg.Go(func() {
		<-start
		if _, err := moderate(ctx, s, r.Name, store.ParticipantBanned, alice, outsider); err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Errorf("ban of an outsider racing the delete = %v, want nil or ErrNotFound", err)
		}
	})
	wg.Go(func() {
		<-start
		if _, _, err := s.DeleteRoom(ctx, r.Name, alice); err != nil {
			t.Errorf("DeleteRoom racing moderation = %v, want nil", err)
		}
	})
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}

	wantRoomNotFound(t, ctx, s, r.Name)
	for _, u := range users {
		wantChatRooms(t, ctx, s, u.Login, r.Name, false)
	}
	reborn := newRoom(r.Name, heir)
	if err := s.CreateRoom(ctx, reborn); err != nil {
		t.Fatalf("CreateRoom(%q) after DeleteRoom = %v, want nil", r.Name, err)
	}
	wantModerators(t, ctx, s, r.Name)
	wantBans(t, ctx, s, r.Name)
	checkRoom(t, "the room created again", mustRoom(t, ctx, s, r.Name), reborn)
	if evs := roomLog(t, s, r.Name, store.MessageID{}); len(evs) != 0 {
		t.Errorf("RoomEvents of the room created again = %+v, want none", evs)
	}
	msgs, err := s.Messages(ctx, r.Name, store.MessageID{}, 100)
	if err != nil || len(msgs) != 0 {
		t.Errorf("Messages of the room created again = %s, %v, want none", fmtMessages(msgs), err)
	}
	for _, u := range append(users, outsider) {
		if m := mustMembership(t, ctx, s, r.Name, u.Login); m.Participant || m.Banned || m.Moderator {
			t.Errorf("Membership(%q) in the room created again = %+v, want nothing", u.Login, m)
		}
	}
}
