package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// rx is a Reaction.
func rx(emoji string, count int, mine bool) store.Reaction {
	return store.Reaction{Emoji: emoji, Count: count, Mine: mine}
}

// mustReact adds or removes a reaction and returns its event.
func mustReact(t *testing.T, s ConversationStore, m store.Message, by store.UserRef, emoji string, add bool) store.Event {
	t.Helper()
	ev, err := s.React(newContext(t), m, by, emoji, add)
	if err != nil {
		t.Fatalf("React(%v, %s, %q, %v) = %v", m.ID, by.Login, emoji, add, err)
	}
	return ev
}

// wantReactions checks the reactions of msgs as viewer reads them.
func wantReactions(t *testing.T, s ConversationStore, msgs []store.Message, viewer string, want map[store.MessageID][]store.Reaction) {
	t.Helper()
	got, err := s.Reactions(newContext(t), msgs, viewer)
	if err != nil {
		t.Fatalf("Reactions = %v", err)
	}
	if len(got) != len(want) {
		t.Errorf("Reactions for %s = %v, want %v", viewer, got, want)
		return
	}
	for id, w := range want {
		if !slices.Equal(got[id], w) {
			t.Errorf("Reactions for %s of %v = %v, want %v", viewer, id, got[id], w)
		}
	}
}

// testReact: adding and removing reactions counts them per emoji, with the
// viewer's own marked, and logs each change; a change that changes nothing
// logs nothing.
func testReact(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice, room := chatRoom(t, ctx, s, "react")
	bob := mustCreateUser(t, ctx, s, "bob").UserRef
	m := mustPost(t, ctx, s, room.Name, store.NewMessageID(), alice.UserRef, "we won")
	ev := mustReact(t, s, m, bob, "👍", true)
	want := store.Event{ID: ev.ID, Kind: store.ReactionChanged, Room: room.Name, User: bob, Message: &m}
	checkEvent(t, "React's event", ev, want)
	checkFresh(t, "React's event", ev, m.ID)
	checkNoEvent(t, "React with a reaction bob has", mustReact(t, s, m, bob, "👍", true))
	mustReact(t, s, m, alice.UserRef, "👍", true)
	mustReact(t, s, m, alice.UserRef, "🎉", true)
	msgs := []store.Message{m}
	wantReactions(t, s, msgs, bob.Login, map[store.MessageID][]store.Reaction{m.ID: {rx("🎉", 1, false), rx("👍", 2, true)}})
	wantReactions(t, s, msgs, alice.Login, map[store.MessageID][]store.Reaction{m.ID: {rx("🎉", 1, true), rx("👍", 2, true)}})

	removed := mustReact(t, s, m, bob, "👍", false)
	checkNoEvent(t, "React removing a reaction bob has not", mustReact(t, s, m, bob, "👍", false))
	wantReactions(t, s, msgs, bob.Login, map[store.MessageID][]store.Reaction{m.ID: {rx("🎉", 1, false), rx("👍", 1, false)}})
	log := roomLog(t, s, room.Name, m.ID)
	if len(log) != 4 || !sameEvent(log[0], want) || log[3].ID != removed.ID || log[3].Kind != store.ReactionChanged {
		t.Errorf("the room's log after the reactions: %s, want bob's, alice's two, bob's removal", fmtEvents(log))
	}
}

// testReactCap: a message holds at most MaxReactionKinds kinds; more of a
// kind it has are welcome.
func testReactCap(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice, room := chatRoom(t, ctx, s, "cap")
	bob := mustCreateUser(t, ctx, s, "bob").UserRef
	m := mustPost(t, ctx, s, room.Name, store.NewMessageID(), alice.UserRef, "react to me")
	for i := range store.MaxReactionKinds {
		mustReact(t, s, m, alice.UserRef, fmt.Sprintf(":k%02d:", i), true)
	}
	if _, err := s.React(ctx, m, bob, ":one-too-many:", true); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("React of kind %d = %v, want ErrInvalid", store.MaxReactionKinds+1, err)
	}
	mustReact(t, s, m, bob, ":k00:", true)
	got, err := s.Reactions(ctx, []store.Message{m}, bob.Login)
	if err != nil || len(got[m.ID]) != store.MaxReactionKinds || got[m.ID][0] != (store.Reaction{Emoji: ":k00:", Count: 2, Mine: true}) {
		t.Errorf("Reactions = %v, %v; want %d kinds, :k00: twice", got[m.ID], err, store.MaxReactionKinds)
	}
}

// testReactGone: no reaction to a message that does not exist, or is
// deleted, or whose room was deleted; a deleted room's reactions go with it.
func testReactGone(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice, room := chatRoom(t, ctx, s, "gone")
	ghost := store.Message{Room: room.Name, ID: store.NewMessageID(), Author: alice.UserRef, Content: "never"}
	if _, err := s.React(ctx, ghost, alice.UserRef, "👻", true); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("React to no message = %v, want ErrNotFound", err)
	}
	m := mustPost(t, ctx, s, room.Name, store.NewMessageID(), alice.UserRef, "soon gone")
	kept := mustPost(t, ctx, s, room.Name, store.NewMessageID(), alice.UserRef, "kept until the room goes")
	mustReact(t, s, kept, alice.UserRef, "👋", true)
	if _, err := s.DeleteMessage(ctx, m, alice.UserRef); err != nil {
		t.Fatal(err)
	}
	if _, err := s.React(ctx, m, alice.UserRef, "👋", true); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("React to a deleted message = %v, want ErrNotFound", err)
	}
	if _, _, err := s.DeleteRoom(ctx, room.Name, alice.UserRef); err != nil {
		t.Fatal(err)
	}
	wantReactions(t, s, []store.Message{kept}, alice.Login, map[store.MessageID][]store.Reaction{})
}

// testReactionsPage reads the reactions of messages of two rooms, two days
// and a direct conversation in one call; a direct message's reaction is
// logged in both users' inbox logs.
func testReactionsPage(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice, bob, _ := dmUsers(t, ctx, s)
	r1 := mustCreateRoom(t, ctx, s, "one", alice)
	r2 := mustCreateRoom(t, ctx, s, "two", alice)
	msgs := []store.Message{
		mustPost(t, ctx, s, r1.Name, store.MessageIDAt(time.Now().Add(-49*time.Hour)), alice, "old"),
		mustPost(t, ctx, s, r1.Name, store.NewMessageID(), alice, "new"),
		mustPost(t, ctx, s, r2.Name, store.NewMessageID(), alice, "elsewhere"),
		mustPost(t, ctx, s, r2.Name, store.NewMessageID(), alice, "no reactions"),
		mustSendDirect(t, ctx, s, alice, bob, store.NewMessageID(), "psst"),
	}
	want := map[store.MessageID][]store.Reaction{}
	for i, m := range msgs {
		if i == 3 {
			continue
		}
		emoji := fmt.Sprintf(":r%d:", i)
		ev := mustReact(t, s, m, bob, emoji, true)
		want[m.ID] = []store.Reaction{{Emoji: emoji, Count: 1, Mine: true}}
		if i == 4 {
			for _, login := range []string{alice.Login, bob.Login} {
				log := inboxLog(t, s, login, m.ID)
				if len(log) != 1 || !sameEvent(log[0], store.Event{ID: ev.ID, Kind: store.ReactionChanged, Room: m.Room, User: bob, Message: &m}) {
					t.Errorf("%s's inbox log after the reaction: %s", login, fmtEvents(log))
				}
			}
		}
	}
	wantReactions(t, s, msgs, bob.Login, want)
}
