package embedded

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// TestSearchQueueReplayed: changes that reached the store but not the
// search index (the process died between the two) are in the index once
// the store opens again, taken from the search queue, and the index is
// not rebuilt for it; a missing index is rebuilt from the messages.
func TestSearchQueueReplayed(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := open(t, dir)
	alice := store.UserRef{Login: "alice"}
	if err := db.CreateUser(ctx, store.Account{User: store.User{UserRef: alice}}); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateRoom(ctx, store.Room{Name: "lobby", Creator: alice, CreatedAt: time.Now(), Participants: []store.UserRef{alice}}); err != nil {
		t.Fatal(err)
	}
	post := func(content string) store.Message {
		m := store.Message{Room: "lobby", ID: store.NewMessageID(), Author: alice, Content: content}
		if err := db.PostMessage(ctx, m); err != nil {
			t.Fatalf("PostMessage = %v", err)
		}
		return m
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
	edited, deleted := post("before the crash, draft"), post("before the crash, doomed")

	// The crash: writes reach the store, their reindexing never runs.
	idx := db.search
	db.search = nil
	lost := post("posted unindexed")
	if _, err := db.EditMessage(ctx, edited, alice, "before the crash, final", time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := db.DeleteMessage(ctx, deleted, alice); err != nil {
		t.Fatal(err)
	}
	db.search = idx
	if got := find("unindexed"); len(got) != 0 {
		t.Fatalf("the index has a post it never took: %v", got)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	stat := func() os.FileInfo {
		fi, err := os.Stat(searchDir(dir))
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	before := stat()

	db = open(t, dir)
	check := func(when string) {
		t.Helper()
		for word, want := range map[string][]store.MessageID{
			"unindexed": {lost.ID},
			"final":     {edited.ID},
			"draft":     nil,
			"doomed":    nil,
			"crash":     {edited.ID},
		} {
			if got := find(word); !slices.Equal(got, want) {
				t.Errorf("%s: search %s = %v, want %v", when, word, got, want)
			}
		}
	}
	check("reopened")
	if after := stat(); !os.SameFile(before, after) {
		t.Errorf("the index directory was made again")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	if err := os.RemoveAll(searchDir(dir)); err != nil {
		t.Fatal(err)
	}
	db = open(t, dir)
	check("index rebuilt")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}
