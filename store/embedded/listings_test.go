package embedded

import (
	"bytes"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// TestListedDaysStamps checks the rules of listedDays: what a deletion
// overtook is not remembered, and a scan keeps the days remembered while it
// ran, unless some were let go meanwhile.
func TestListedDaysStamps(t *testing.T) {
	var l listedDays
	p, other := bucketPartition("room"), bucketPartition("other")
	l.remember(p, 20261126, l.stamp())
	if !l.has(p, 20261126) {
		t.Fatalf("has(20261126) = false after remember")
	}
	if _, ok := l.all(p); ok {
		t.Errorf("all() known before any scan")
	}
	// A scan that started before a day was remembered keeps that day.
	scan := l.stamp()
	l.remember(p, 20261127, scan)
	l.fill(p, []store.Bucket{20261120, 20261126}, scan)
	if days, ok := l.all(p); !ok || !slices.Equal(days, []store.Bucket{20261120, 20261126, 20261127}) {
		t.Errorf("all() = %v, %v; want the scan's days and the one remembered meanwhile", days, ok)
	}
	// A deletion forgets, and overtakes what was read or written before it.
	stale := l.stamp()
	l.forget(p)
	if l.has(p, 20261126) {
		t.Errorf("has(20261126) after forget")
	}
	l.remember(p, 20261128, stale)
	l.fill(p, []store.Bucket{20261120}, stale)
	if l.has(p, 20261128) {
		t.Errorf("a listing written before the deletion was remembered after it")
	}
	if days, ok := l.all(p); ok {
		t.Errorf("all() = %v after a scan the deletion overtook", days)
	}
	// A listing written before another partition's deletion is not
	// remembered either: so its partition's complete list, which would
	// lack it, goes, and so does a scan's that started before.
	l.fill(p, []store.Bucket{20261120}, l.stamp())
	written, scanning := l.stamp(), l.stamp()
	l.forget(other)
	l.remember(p, 20261129, written)
	if days, ok := l.all(p); ok {
		t.Errorf("all() = %v, complete without the day written before a deletion elsewhere", days)
	}
	l.fill(p, []store.Bucket{20261120}, scanning)
	if days, ok := l.all(p); ok {
		t.Errorf("all() = %v from a scan that started before a day was let go", days)
	}
}

// TestListedDaysBounded checks that the remembered partitions stay within
// maxListedPartitions, and that a scan from before they were let go is not
// kept.
func TestListedDaysBounded(t *testing.T) {
	var l listedDays
	p := bucketPartition("room")
	scanning := l.stamp()
	for i := range maxListedPartitions + 10 {
		l.remember(bucketPartition(fmt.Sprint("room", i)), 20261126, l.stamp())
		if n := len(l.parts); n > maxListedPartitions {
			t.Fatalf("%d partitions remembered, want at most %d", n, maxListedPartitions)
		}
	}
	if !l.has(bucketPartition(fmt.Sprint("room", maxListedPartitions+9)), 20261126) {
		t.Errorf("the last partition remembered is not")
	}
	l.fill(p, nil, scanning)
	if days, ok := l.all(p); ok {
		t.Errorf("all() = %v from a scan that started before the partitions were let go", days)
	}
}

// TestListedDaysFollowWrites checks that a page read after a post to a day
// the room had not listed yet finds it, though an earlier page read made
// the room's days known; and that the days are on disk, as a store opened
// again reads them.
func TestListedDaysFollowWrites(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	db := open(t, dir)
	alice := createListingRoom(t, db, "room")
	today := post(t, db, "room", alice, store.NewMessageID())
	if page, err := db.Messages(ctx, "room", store.MessageID{}, 10); err != nil || len(page) != 1 {
		t.Fatalf("Messages = %d, %v; want today's message", len(page), err)
	}
	older := post(t, db, "room", alice, store.MessageIDAt(time.Now().Add(-72*time.Hour)))
	want := []store.MessageID{today, older}
	checkPage(t, db, "room", want)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = open(t, dir)
	defer db.Close()
	checkPage(t, db, "room", want)
}

// TestListedDaysForgetDeletedRoom checks that a room deleted and created
// again lists the days of its new messages, on disk: remembering the old
// room's days would leave them unlisted, unread by a store opened again.
func TestListedDaysForgetDeletedRoom(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	db := open(t, dir)
	alice := createListingRoom(t, db, "room")
	post(t, db, "room", alice, store.NewMessageID())
	if _, err := db.MessagesByAuthor(ctx, alice.Login, store.MessageID{}, 10); err != nil {
		t.Fatal(err)
	}
	checkPage(t, db, "room", nil)
	if _, _, err := db.DeleteRoom(ctx, "room", alice); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateRoom(ctx, store.Room{Name: "room", Creator: alice, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	again := post(t, db, "room", alice, store.NewMessageID())
	checkPage(t, db, "room", []store.MessageID{again})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = open(t, dir)
	defer db.Close()
	checkPage(t, db, "room", []store.MessageID{again})
}

// TestListedDaysConcurrent posts over many days while pages are read and
// other rooms are created and deleted, and checks that the store, and the
// store opened again, read every message.
func TestListedDaysConcurrent(t *testing.T) {
	dir := t.TempDir()
	db := open(t, dir)
	alice := createListingRoom(t, db, "room")
	// Each post in a day of its own: a day whose listing the store
	// forgot would stay unread.
	const writers, perWriter = 4, 25
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		ids   []store.MessageID
		done  = make(chan struct{})
		start = time.Now()
	)
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				age := time.Duration(w*perWriter+i) * 24 * time.Hour
				id := post(t, db, "room", alice, store.MessageIDAt(start.Add(-age)))
				mu.Lock()
				ids = append(ids, id)
				mu.Unlock()
			}
		})
	}
	var readers sync.WaitGroup
	readers.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			other := fmt.Sprint("other", i)
			if err := db.CreateRoom(t.Context(), store.Room{Name: other, Creator: alice, CreatedAt: time.Now()}); err != nil {
				t.Error(err)
				return
			}
			if _, _, err := db.DeleteRoom(t.Context(), other, alice); err != nil {
				t.Error(err)
				return
			}
		}
	})
	pages := readUntil(t, done, 2, func() error {
		_, err := db.Messages(t.Context(), "room", store.MessageID{}, writers*perWriter)
		return err
	})
	wg.Wait()
	close(done)
	readers.Wait()
	pages.Wait()
	slices.SortFunc(ids, func(a, b store.MessageID) int { return b.Compare(a) })
	checkPage(t, db, "room", ids)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = open(t, dir)
	defer db.Close()
	checkPage(t, db, "room", ids)
}

func createListingRoom(t *testing.T, db *DB, room string) store.UserRef {
	t.Helper()
	alice := store.UserRef{Login: "alice", Firstname: "Alice", Lastname: "Liddell"}
	if err := db.CreateUser(t.Context(), store.Account{User: store.User{UserRef: alice}}); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateRoom(t.Context(), store.Room{Name: room, Creator: alice, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	return alice
}

func post(t *testing.T, db *DB, room string, author store.UserRef, id store.MessageID) store.MessageID {
	t.Helper()
	if err := db.PostMessage(t.Context(), store.Message{Room: room, ID: id, Author: author, Content: "hello"}); err != nil {
		t.Error(err)
	}
	return id
}

// checkPage checks that a page of the room's messages has want, newest
// first (nil: checks only that the read succeeds).
func checkPage(t *testing.T, db *DB, room string, want []store.MessageID) {
	t.Helper()
	page, err := db.Messages(t.Context(), room, store.MessageID{}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if want == nil {
		return
	}
	got := make([]store.MessageID, len(page))
	for i, m := range page {
		got[i] = m.ID
	}
	if !slices.Equal(got, want) {
		t.Errorf("Messages(%s) = %d messages %v, want %d %v", room, len(got), got, len(want), want)
	}
}

// TestPostListsItsDayOnce: a post to a day its room has not listed yet
// lists it once in its batch, though both its message and its event list
// their day.
func TestPostListsItsDayOnce(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	alice := createListingRoom(t, db, "room")
	m := store.Message{Room: "room", ID: store.NewMessageID(), Author: alice, Content: "hello"}
	b := db.batch()
	defer b.Close()
	if err := db.addLoggedMessage(b, store.PostedEvent(m)); err != nil {
		t.Fatal(err)
	}
	want := bucketKey("room", store.BucketOf(m.ID.Time()))
	n := 0
	for r := b.Reader(); ; {
		_, k, _, ok, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if bytes.Equal(k, want) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the batch of a post lists its room's day %d times, want 1", n)
	}
}
