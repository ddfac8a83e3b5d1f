package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// RunSearchTests runs the conformance suite of store.MessageSearch against
// s: what a word is, phrases, an author's messages, the conversations
// searched, newest first with a cursor, and that posts, edits and deletes
// are searchable as soon as they return.
func RunSearchTests(t *testing.T, s store.Store) {
	t.Helper()
	runGroups(t, s, []group[store.Store]{{"Search", []storeTest{
		{"Words", testSearchWords},
		{"Phrases", testSearchPhrases},
		{"Author", testSearchAuthor},
		{"Conversations", testSearchConversations},
		{"NewestFirst", testSearchNewestFirst},
		{"EditDeleteHide", testSearchEditDeleteHide},
		{"RoomDeleted", testSearchRoomDeleted},
		{"Invalid", testSearchInvalid},
		{"Users", testSearchUsers},
		{"Rooms", testSearchRooms},
	}}})
}

// searchWord is a word no other subtest's messages hold.
func searchWord(prefix string) string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	b := []byte(prefix)
	for range 10 {
		b = append(b, letters[rand.IntN(len(letters))])
	}
	return string(b)
}

// mustSearch searches and returns the ids found, newest first.
func mustSearch(t *testing.T, ctx context.Context, s store.Store, q store.MessageQuery) []store.MessageID {
	t.Helper()
	if q.Limit == 0 {
		q.Limit = 50
	}
	page, err := s.SearchMessages(ctx, q)
	if err != nil {
		t.Fatalf("SearchMessages(%+v) = %v", q, err)
	}
	ids := make([]store.MessageID, len(page.Messages))
	for i, m := range page.Messages {
		ids[i] = m.ID
	}
	return ids
}

func wantFound(t *testing.T, what string, got []store.MessageID, want ...store.Message) {
	t.Helper()
	ids := make([]store.MessageID, len(want))
	for i, m := range want {
		ids[i] = m.ID
	}
	if !slices.Equal(got, ids) {
		t.Errorf("%s: found %v, want %v", what, got, ids)
	}
}

// newIDs returns n fresh ids, oldest first, each a millisecond after the
// one before.
func newIDs(n int) []store.MessageID {
	start := time.Now().Add(-time.Duration(n) * time.Millisecond)
	ids := make([]store.MessageID, n)
	for i := range ids {
		ids[i] = store.MinMessageID(start.Add(time.Duration(i) * time.Millisecond))
	}
	return ids
}

func testSearchWords(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	room := mustCreateRoom(t, ctx, s, "search", alice)
	w := searchWord("cafe")
	m := mustPost(t, ctx, s, room.Name, store.NewMessageID(), alice, "Meet at the Café-"+w+" at NOON, señor Łukasz!")
	for _, word := range []string{"café", "CAFE", "noon", "Señor", "senor", w} {
		q := store.MessageQuery{Conversations: []string{room.Name}, Terms: store.Terms(word)}
		if word == w {
			q.Terms = []string{w}
		} else {
			q.Terms = append(q.Terms, w)
		}
		wantFound(t, "search "+word, mustSearch(t, ctx, s, q), m)
	}
	q := store.MessageQuery{Conversations: []string{room.Name}, Terms: []string{w, "noo"}}
	wantFound(t, "a part of a word", mustSearch(t, ctx, s, q))
	q = store.MessageQuery{Conversations: []string{room.Name}, Terms: []string{w, "absent"}}
	wantFound(t, "a word it lacks", mustSearch(t, ctx, s, q))
}

func testSearchPhrases(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	room := mustCreateRoom(t, ctx, s, "search", alice)
	w := searchWord("fox")
	ids := newIDs(2)
	a := mustPost(t, ctx, s, room.Name, ids[0], alice, w+": the quick brown fox")
	b := mustPost(t, ctx, s, room.Name, ids[1], alice, w+": brown, and quick")
	q := store.MessageQuery{Conversations: []string{room.Name}, Terms: []string{w}, Phrases: [][]string{{"quick", "brown"}}}
	wantFound(t, "phrase quick brown", mustSearch(t, ctx, s, q), a)
	q.Phrases = nil
	q.Terms = []string{w, "quick", "brown"}
	wantFound(t, "words quick brown", mustSearch(t, ctx, s, q), b, a)
}

func testSearchAuthor(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	bob := mustCreateUser(t, ctx, s, "bob").UserRef
	room := mustCreateRoom(t, ctx, s, "search", alice)
	mustJoinRoom(t, ctx, s, room.Name, bob)
	w := searchWord("from")
	ids := newIDs(2)
	a := mustPost(t, ctx, s, room.Name, ids[0], alice, "hello "+w)
	b := mustPost(t, ctx, s, room.Name, ids[1], bob, "hello "+w)
	q := store.MessageQuery{Conversations: []string{room.Name}, Terms: []string{w}}
	wantFound(t, "everyone's", mustSearch(t, ctx, s, q), b, a)
	q.Author = alice.Login
	wantFound(t, "alice's", mustSearch(t, ctx, s, q), a)
	// The author's term is no word: a message saying "from alice" is not hers.
	q = store.MessageQuery{Conversations: []string{room.Name}, Terms: []string{"from", w}}
	wantFound(t, "the word from", mustSearch(t, ctx, s, q))
}

func testSearchConversations(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice, bob, dm := dmUsers(t, ctx, s)
	room := mustCreateRoom(t, ctx, s, "search", alice)
	other := mustCreateRoom(t, ctx, s, "search", alice)
	group := mustCreateGroup(t, ctx, s, "search", alice)
	members := mustAddMember(t, ctx, s, group.Name, alice.Login, bob, time.Now()).Participants
	w := searchWord("conv")
	ids := newIDs(5)
	inRoom := mustPost(t, ctx, s, room.Name, ids[0], alice, w)
	mustPost(t, ctx, s, other.Name, ids[1], alice, w)
	inGroup := mustPostGroup(t, ctx, s, group.Name, ids[2], alice, w, members)
	direct := mustSendDirect(t, ctx, s, alice, bob, ids[3], w)
	// The system messages of joins and leaves are never found.
	mustJoinRoom(t, ctx, s, room.Name, bob)

	q := store.MessageQuery{Conversations: []string{room.Name, group.Name, dm}, Terms: []string{w}}
	wantFound(t, "three conversations", mustSearch(t, ctx, s, q), direct, inGroup, inRoom)
	q.Conversations = nil
	wantFound(t, "no conversation", mustSearch(t, ctx, s, q))
	q = store.MessageQuery{Conversations: []string{room.Name}, Terms: []string{"joined"}}
	for _, id := range mustSearch(t, ctx, s, q) {
		m, err := s.Message(ctx, id)
		if err == nil && m.System {
			t.Errorf("search joined found the system message %v", fmtMessage(m))
		}
	}
}

func testSearchNewestFirst(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	room := mustCreateRoom(t, ctx, s, "search", alice)
	other := mustCreateRoom(t, ctx, s, "search", alice)
	w := searchWord("page")
	// Over three days, in two rooms.
	now := time.Now()
	var posted []store.Message
	for i := range 9 {
		at := now.Add(-time.Duration(8-i) * 20 * time.Hour)
		r := room.Name
		if i%2 == 1 {
			r = other.Name
		}
		posted = append(posted, mustPost(t, ctx, s, r, store.MinMessageID(at), alice, fmt.Sprintf("%s number %d", w, i)))
	}
	want := newestFirst(posted)
	var got []store.MessageID
	q := store.MessageQuery{Conversations: []string{room.Name, other.Name}, Terms: []string{w}, Limit: 4}
	for range 20 {
		page, err := s.SearchMessages(ctx, q)
		if err != nil {
			t.Fatalf("SearchMessages = %v", err)
		}
		for _, m := range page.Messages {
			got = append(got, m.ID)
		}
		switch {
		case !page.Resume.IsZero():
			q.Before = page.Resume
		case len(page.Messages) == q.Limit:
			q.Before = page.Messages[len(page.Messages)-1].ID
		default:
			wantFound(t, "pages of 4", got, want...)
			return
		}
	}
	t.Fatalf("the search never ended: found %v", got)
}

func testSearchEditDeleteHide(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	room := mustCreateRoom(t, ctx, s, "search", alice)
	old, edited := searchWord("old"), searchWord("new")
	m := mustPost(t, ctx, s, room.Name, store.NewMessageID(), alice, "it says "+old)
	find := func(word string) []store.MessageID {
		return mustSearch(t, ctx, s, store.MessageQuery{Conversations: []string{room.Name}, Terms: []string{word}})
	}
	wantFound(t, "posted", find(old), m)
	if _, err := s.EditMessage(ctx, m, alice, "it says "+edited, time.Now()); err != nil {
		t.Fatalf("EditMessage = %v", err)
	}
	wantFound(t, "the old word after the edit", find(old))
	wantFound(t, "the new word after the edit", find(edited), m)

	if _, err := s.HideMessage(ctx, m, alice); err != nil {
		t.Fatalf("HideMessage = %v", err)
	}
	page, err := s.SearchMessages(ctx, store.MessageQuery{Conversations: []string{room.Name}, Terms: []string{edited}, Limit: 5})
	if err != nil || len(page.Messages) != 1 || !page.Messages[0].Hidden {
		t.Errorf("hidden: SearchMessages = %v, %v; want the message, hidden (the reader's view decides)", fmtMessages(page.Messages), err)
	}

	if _, err := s.DeleteMessage(ctx, m, alice); err != nil {
		t.Fatalf("DeleteMessage = %v", err)
	}
	wantFound(t, "after the delete", find(edited))
}

func testSearchRoomDeleted(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	room := mustCreateRoom(t, ctx, s, "search", alice)
	w := searchWord("gone")
	m := mustPost(t, ctx, s, room.Name, store.NewMessageID(), alice, w)
	q := store.MessageQuery{Conversations: []string{room.Name}, Terms: []string{w}}
	wantFound(t, "before", mustSearch(t, ctx, s, q), m)
	if _, _, err := s.DeleteRoom(ctx, room.Name, alice); err != nil {
		t.Fatalf("DeleteRoom = %v", err)
	}
	wantFound(t, "after the room's deletion", mustSearch(t, ctx, s, q))
	if err := s.CreateRoom(ctx, newRoom(room.Name, alice)); err != nil {
		t.Fatalf("CreateRoom(again) = %v", err)
	}
	wantFound(t, "a room made again", mustSearch(t, ctx, s, q))
}

func testSearchInvalid(t *testing.T, s store.Store) {
	ctx := newContext(t)
	_, err := s.SearchMessages(ctx, store.MessageQuery{Conversations: []string{"x"}, Limit: 5})
	wantErr(t, "SearchMessages(no words)", err, store.ErrInvalid)
}

func userLogins(us []store.UserRef) []string {
	out := []string{}
	for _, u := range us {
		out = append(out, u.Login)
	}
	return out
}

func testSearchUsers(t *testing.T, s store.Store) {
	ctx := newContext(t)
	w := searchWord("p")
	a := newAccount(t, w+"-a")
	a.Firstname, a.Lastname = "Émile", "Zola"
	b := newAccount(t, w+"-b")
	b.Firstname, b.Lastname = "Emma", "Bovary"
	for _, acct := range []store.Account{a, b} {
		if err := s.CreateUser(ctx, acct); err != nil {
			t.Fatalf("CreateUser = %v", err)
		}
	}
	find := func(words ...string) []string {
		t.Helper()
		got, err := s.SearchUsers(ctx, words, 10)
		if err != nil {
			t.Fatalf("SearchUsers(%q) = %v", words, err)
		}
		return userLogins(got)
	}
	check := func(what string, got []string, want ...string) {
		t.Helper()
		if want == nil {
			want = []string{}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: found %q, want %q", what, got, want)
		}
	}
	check("the login's start", find(w), a.Login, b.Login)
	check("a first name, no accent", find(w, "emi"), a.Login)
	check("two names", find(w, "em"), a.Login, b.Login)
	check("a last name", find(w, "bov"), b.Login)
	check("no such start", find(w, "9z")) // the random parts of logins are letters
	check("longer than the prefixes kept", find(w, "bovaryish"))

	emile := "Zacharie"
	if _, err := s.UpdateProfile(ctx, a.Login, store.ProfileUpdate{Firstname: &emile}); err != nil {
		t.Fatalf("UpdateProfile = %v", err)
	}
	check("the old first name", find(w, "emi"))
	check("the new first name", find(w, "zach"), a.Login)
	if _, err := s.DeleteAccount(ctx, b.Login, b.PassHash); err != nil {
		t.Fatalf("DeleteAccount = %v", err)
	}
	check("after a deletion", find(w), a.Login)
}

func testSearchRooms(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	w := searchWord("dir")
	public := newRoom(newRoomName(t, w), alice)
	public.Banner = "Jazz & Café talk"
	group := newGroup(newRoomName(t, w), alice, time.Now())
	group.Banner = "Jazz secrets"
	for _, r := range []store.Room{public, group} {
		if err := s.CreateRoom(ctx, r); err != nil {
			t.Fatalf("CreateRoom = %v", err)
		}
	}
	find := func(words ...string) []string {
		t.Helper()
		got, err := s.SearchRooms(ctx, words, 10)
		if err != nil {
			t.Fatalf("SearchRooms(%q) = %v", words, err)
		}
		out := []string{}
		for _, r := range got {
			out = append(out, r.Name)
		}
		return out
	}
	if got := find(w); !slices.Equal(got, []string{public.Name}) {
		t.Errorf("by name: %q, want only the public room %q", got, public.Name)
	}
	if got := find(w, "caf", "jaz"); !slices.Equal(got, []string{public.Name}) {
		t.Errorf("by banner: %q, want %q", got, public.Name)
	}
	// A new banner is found, the old one no longer.
	if _, _, err := s.SetRoomSettings(ctx, store.RoomSettingsChange{Room: public.Name, By: alice, Banner: ptr("Chess club")}); err != nil {
		t.Fatalf("SetRoomSettings = %v", err)
	}
	if got := find(w, "chess"); !slices.Equal(got, []string{public.Name}) {
		t.Errorf("by its new banner: %q, want %q", got, public.Name)
	}
	if got := find(w, "jaz"); len(got) != 0 {
		t.Errorf("by its old banner: %q, want none", got)
	}
	if _, _, err := s.DeleteRoom(ctx, public.Name, alice); err != nil {
		t.Fatalf("DeleteRoom = %v", err)
	}
	if got := find(w); len(got) != 0 {
		t.Errorf("after its deletion: %q", got)
	}
}
