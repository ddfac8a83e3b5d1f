package embedded

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// TestSearchIndexBuiltForOlderStore: a store written before the index was
// kept in its own keys (no index rows, the old bleve queue's rows and
// directory beside it) gets its index built from its messages, users and
// rooms when it opens, and the old queue and directory go.
func TestSearchIndexBuiltForOlderStore(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "store")
	db := open(t, dir)
	alice := store.UserRef{Login: "alice", Firstname: "Alice", Lastname: "Liddell"}
	if err := db.CreateUser(ctx, store.Account{User: store.User{UserRef: alice}}); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateRoom(ctx, store.Room{Name: "lobby", Banner: "tea party", Creator: alice, CreatedAt: time.Now(), Participants: []store.UserRef{alice}}); err != nil {
		t.Fatal(err)
	}
	post := func(content string) store.Message {
		m := store.Message{Room: "lobby", ID: store.NewMessageID(), Author: alice, Content: content}
		if err := db.PostMessage(ctx, m); err != nil {
			t.Fatalf("PostMessage = %v", err)
		}
		return m
	}
	kept, edited, deleted := post("the march hare"), post("a draft of the riddle"), post("doomed words")
	if _, err := db.EditMessage(ctx, edited, alice, "the final riddle", time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := db.DeleteMessage(ctx, deleted, alice); err != nil {
		t.Fatal(err)
	}

	// Make it a store from before: no index, the old queue and directory.
	b := db.batch()
	for _, table := range []string{tableSearchWords, tableSearchNames, tableSearchNameDocs} {
		b.deleteRange(tuple(table))
	}
	b.delete(searchIndexBuilt())
	b.set(tuple(tableSearchQueue).asc(store.NewMessageID()), map[string]string{"u": "alice"})
	if err := b.commit(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir+"-search", "store"), 0o755); err != nil {
		t.Fatal(err)
	}
	find := func(word string) []store.MessageID {
		t.Helper()
		page, err := db.SearchMessages(ctx, store.MessageQuery{Conversations: []string{"lobby"}, Terms: []string{word}, Limit: 10})
		if err != nil {
			t.Fatalf("SearchMessages(%s) = %v", word, err)
		}
		var ids []store.MessageID
		for _, m := range page.Messages {
			ids = append(ids, m.ID)
		}
		return ids
	}
	if got := find("hare"); len(got) != 0 {
		t.Fatalf("the store without its index still finds %v", got)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = open(t, dir)
	defer db.Close()
	for word, want := range map[string][]store.MessageID{
		"hare":   {kept.ID},
		"riddle": {edited.ID},
		"draft":  nil,
		"doomed": nil,
		"the":    {edited.ID, kept.ID},
	} {
		if got := find(word); !slices.Equal(got, want) {
			t.Errorf("search %s = %v, want %v", word, got, want)
		}
	}
	if users, err := db.SearchUsers(ctx, []string{"lid"}, 10); err != nil || len(users) != 1 || users[0].Login != "alice" {
		t.Errorf("SearchUsers(lid) = %v, %v; want alice", users, err)
	}
	if rooms, err := db.SearchRooms(ctx, []string{"tea"}, 10); err != nil || len(rooms) != 1 || rooms[0].Name != "lobby" {
		t.Errorf("SearchRooms(tea) = %v, %v; want lobby", rooms, err)
	}
	if n := countRows(t, db, tuple(tableSearchQueue)); n != 0 {
		t.Errorf("the old search queue keeps %d rows", n)
	}
	if _, err := os.Stat(dir + "-search"); !os.IsNotExist(err) {
		t.Errorf("the old index directory is still there: %v", err)
	}
}

func countRows(t *testing.T, db *DB, p key) int {
	t.Helper()
	n := 0
	if err := db.scan(context.Background(), p, p.end(), false, func(_, _ []byte) (bool, error) {
		n++
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSearchResumes: a search that reaches its bound of seeks says where
// to go on (SearchPage.Resume), and going on from there, page after page,
// finds every match once, newest first, across conversations.
func TestSearchResumes(t *testing.T) {
	defer func(was int) { maxSearchSeeks = was }(maxSearchSeeks)
	maxSearchSeeks = 6
	ctx := context.Background()
	db := open(t, t.TempDir())
	defer db.Close()
	alice := store.UserRef{Login: "alice"}
	rooms := []string{"north", "south", "west"}
	var want []store.MessageID
	for i := range 90 {
		m := store.Message{Room: rooms[i%len(rooms)], ID: store.NewMessageID(), Author: alice, Content: "apple"}
		if i%4 == 0 {
			m.Content = "apple and pear"
			want = append(want, m.ID)
		}
		if err := db.PostMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	slices.Reverse(want)
	var got []store.MessageID
	q := store.MessageQuery{Conversations: rooms, Terms: []string{"pear", "apple"}, Limit: 5}
	resumed := 0
	for range len(want) * 2 {
		page, err := db.SearchMessages(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range page.Messages {
			got = append(got, m.ID)
		}
		switch {
		case !page.Resume.IsZero():
			resumed++
			q.Before = page.Resume
		case len(page.Messages) == q.Limit:
			q.Before = page.Messages[len(page.Messages)-1].ID
		default:
			if !slices.Equal(got, want) {
				t.Fatalf("pages found %d messages %v, want %d %v", len(got), got, len(want), want)
			}
			if resumed == 0 {
				t.Fatal("no search reached its bound")
			}
			return
		}
	}
	t.Fatalf("the search never ended: found %d of %d", len(got), len(want))
}
