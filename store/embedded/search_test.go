package embedded

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
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

// searchFixture is a store with alice and the room lobby, and helpers to
// post and search there.
type searchFixture struct {
	t     *testing.T
	db    *DB
	alice store.UserRef
}

func newSearchFixture(t *testing.T) *searchFixture {
	ctx := context.Background()
	db := open(t, t.TempDir())
	t.Cleanup(func() { db.Close() })
	alice := store.UserRef{Login: "alice"}
	if err := db.CreateUser(ctx, store.Account{User: store.User{UserRef: alice}}); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateRoom(ctx, store.Room{Name: "lobby", Creator: alice, CreatedAt: time.Now(), Participants: []store.UserRef{alice}}); err != nil {
		t.Fatal(err)
	}
	if err := db.search.caughtUp(ctx); err != nil {
		t.Fatal(err)
	}
	return &searchFixture{t: t, db: db, alice: alice}
}

func (f *searchFixture) post(content string) (store.Message, error) {
	m := store.Message{Room: "lobby", ID: store.NewMessageID(), Author: f.alice, Content: content}
	return m, f.db.PostMessage(context.Background(), m)
}

func (f *searchFixture) find(word string) ([]store.MessageID, error) {
	page, err := f.db.SearchMessages(context.Background(), store.MessageQuery{Conversations: []string{"lobby"}, Terms: []string{word}, Limit: 50})
	var ids []store.MessageID
	for _, m := range page.Messages {
		ids = append(ids, m.ID)
	}
	return ids, err
}

// hold stops the indexer between batches and reports who starts waiting
// for it; release starts it again.
func (f *searchFixture) hold() (waits chan string, release func()) {
	waits = make(chan string, 16)
	f.db.search.waiting = func(what string) { waits <- what }
	f.db.search.hold.Lock()
	return waits, f.db.search.hold.Unlock
}

// TestSearchSeesAnsweredWrites: the indexer applies the search queue in
// the background, and a search waits for it to apply every write that
// answered before the search began, however far behind it is: a post, an
// edit and a delete made while the indexer is stopped are all in effect
// for the next search, which waits for them rather than answering from the
// index as it was.
func TestSearchSeesAnsweredWrites(t *testing.T) {
	ctx := context.Background()
	f := newSearchFixture(t)
	draft, err := f.post("the draft wording")
	if err != nil {
		t.Fatal(err)
	}
	doomed, err := f.post("a doomed remark")
	if err != nil {
		t.Fatal(err)
	}

	waits, release := f.hold()
	fresh, err := f.post("a fresh post")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.EditMessage(ctx, draft, f.alice, "the final wording", time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.DeleteMessage(ctx, doomed, f.alice); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		ids []store.MessageID
		err error
	}
	answers := make(chan answer, 1)
	go func() {
		ids, err := f.find("fresh")
		answers <- answer{ids, err}
	}()
	select {
	case what := <-waits:
		if what != "search" {
			t.Fatalf("%s waits for the indexer, want the search", what)
		}
	case a := <-answers:
		release()
		t.Fatalf("the search answered %v, %v while the indexer held three answered writes", a.ids, a.err)
	}
	release()
	if a := <-answers; a.err != nil || !slices.Equal(a.ids, []store.MessageID{fresh.ID}) {
		t.Errorf("search fresh = %v, %v; want the post %v", a.ids, a.err, fresh.ID)
	}
	for word, want := range map[string][]store.MessageID{"final": {draft.ID}, "draft": nil, "doomed": nil, "wording": {draft.ID}} {
		if got, err := f.find(word); err != nil || !slices.Equal(got, want) {
			t.Errorf("search %s = %v, %v; want %v", word, got, err, want)
		}
	}
}

// TestSearchReadYourWritesConcurrently: posters each post, edit and delete
// their own messages and search after each write, with the indexer
// running: every search sees the writer's last write.
func TestSearchReadYourWritesConcurrently(t *testing.T) {
	ctx := context.Background()
	f := newSearchFixture(t)
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Go(func() {
			check := func(word string, want []store.MessageID) bool {
				got, err := f.find(word)
				if err != nil || !slices.Equal(got, want) {
					t.Errorf("search %s = %v, %v; want %v", word, got, err, want)
					return false
				}
				return true
			}
			for i := range 20 {
				first, second := fmt.Sprintf("p%dfirst%d", p, i), fmt.Sprintf("p%dsecond%d", p, i)
				m, err := f.post("say " + first)
				if err != nil {
					t.Error(err)
					return
				}
				if !check(first, []store.MessageID{m.ID}) {
					return
				}
				if _, err := f.db.EditMessage(ctx, m, f.alice, "say "+second, time.Now()); err != nil {
					t.Error(err)
					return
				}
				if !check(first, nil) || !check(second, []store.MessageID{m.ID}) {
					return
				}
				if _, err := f.db.DeleteMessage(ctx, m, f.alice); err != nil {
					t.Error(err)
					return
				}
				if !check(second, nil) {
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestSearchLagBounded: the index is never more than its bound of rows
// behind the writes that answered: with the indexer stopped, writes answer
// until the bound is reached, and the next one waits for the indexer.
func TestSearchLagBounded(t *testing.T) {
	f := newSearchFixture(t)
	const bound = 4
	f.db.search.maxLag = bound
	waits, release := f.hold()
	var posted []store.MessageID
	for range bound {
		m, err := f.post("within the bound")
		if err != nil {
			release()
			t.Fatal(err)
		}
		posted = append(posted, m.ID)
	}
	answered := make(chan error, 1)
	var last store.Message
	go func() {
		var err error
		last, err = f.post("past the bound")
		answered <- err
	}()
	select {
	case what := <-waits:
		if what != "write" {
			release()
			t.Fatalf("%s waits for the indexer, want the post past the bound", what)
		}
	case err := <-answered:
		release()
		t.Fatalf("a post answered (%v) with the index %d rows behind, past the bound of %d", err, bound+1, bound)
	}
	f.db.search.mu.Lock()
	lag := f.db.search.queued - f.db.search.applied
	f.db.search.mu.Unlock()
	if lag != bound+1 {
		t.Errorf("the index is %d rows behind, want %d (the bound, and the post waiting)", lag, bound+1)
	}
	release()
	if err := <-answered; err != nil {
		t.Fatal(err)
	}
	got, err := f.find("bound")
	slices.Reverse(got)
	if want := append(posted, last.ID); err != nil || !slices.Equal(got, want) {
		t.Errorf("search bound = %v, %v; want %v", got, err, want)
	}
}
