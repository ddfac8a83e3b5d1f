package embedded

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// TestNewestPagesRules checks newestPages alone: which reads a kept page
// answers, that a write overtaking a read keeps its page out, and that a
// caller's append to its page copies it.
func TestNewestPagesRules(t *testing.T) {
	var n newestPages
	room, other := roomMessages("room"), roomMessages("other")
	msgs := make([]store.Message, 51)
	for i := range msgs {
		msgs[i] = store.Message{Room: "room", ID: store.NewMessageID(), Content: strconv.Itoa(i)}
	}
	if _, kept, _ := n.page(room, 51); kept {
		t.Fatal("a page kept before any read")
	}
	_, _, gen := n.page(room, 51)
	n.keep(room, 51, gen, msgs)
	got, kept, _ := n.page(room, 10)
	if !kept || len(got) != 10 || got[9].ID != msgs[9].ID {
		t.Fatalf("page(10) = %d messages, kept %v; want the first 10 of the page of 51", len(got), kept)
	}
	_ = append(got, store.Message{Content: "appended by a caller"})
	if again, _, _ := n.page(room, 51); again[10].Content != "10" {
		t.Errorf("a caller's append reached the kept page: %q", again[10].Content)
	}
	if _, kept, _ := n.page(room, 52); kept {
		t.Error("a page of 51 answered a read of 52, with more in the room")
	}

	// A write overtaking a read: the read keeps nothing.
	_, _, gen = n.page(other, 5)
	n.forget([]string{string(other)}, false)
	n.keep(other, 5, gen, msgs[:2])
	if _, kept, _ := n.page(other, 5); kept {
		t.Error("a page read before a write of its room was kept after it")
	}
	// A short page holds the whole room, for any limit.
	_, _, gen = n.page(other, 5)
	n.keep(other, 5, gen, msgs[:2])
	if got, kept, _ := n.page(other, 100); !kept || len(got) != 2 {
		t.Errorf("page(100) = %d, kept %v after a page of 2 read with limit 5; want the 2", len(got), kept)
	}
	// A write of the room forgets its page; a write of every room, all.
	n.forget([]string{string(room)}, false)
	if _, kept, _ := n.page(room, 10); kept {
		t.Error("a page kept after a write of its room")
	}
	if _, kept, _ := n.page(other, 2); !kept {
		t.Error("a write of another room forgot this one's page")
	}
	n.forget(nil, true)
	if _, kept, _ := n.page(other, 2); kept {
		t.Error("a page kept after a write of every room")
	}
}

// TestNewestPagesBounded: the pages kept stay under the bound, and a read
// whose entry the bound took keeps nothing.
func TestNewestPagesBounded(t *testing.T) {
	var n newestPages
	first := roomMessages("room-0")
	_, _, gen := n.page(first, 1)
	// The bound lets any room go: read others until it let the first go.
	for i := 1; n.rooms[string(first)] != nil; i++ {
		n.page(roomMessages(fmt.Sprint("room-", i)), 1)
		if len(n.rooms) > maxNewestPages {
			t.Fatalf("%d rooms kept, the bound is %d", len(n.rooms), maxNewestPages)
		}
		if i > 1000*maxNewestPages {
			t.Fatal("the first room was never let go")
		}
	}
	n.keep(first, 1, gen, []store.Message{{Room: "room-0"}})
	if p := n.rooms[string(first)]; p != nil && p.limit > 0 {
		t.Error("a read whose entry was let go kept its page in a new one")
	}
	// A write of the room while it has no entry, then another read of it
	// makes one: the first read's page, from before the write, is not
	// kept in it.
	n.forget([]string{string(first)}, false)
	n.page(first, 1)
	n.keep(first, 1, gen, []store.Message{{Room: "room-0"}})
	if _, kept, _ := n.page(first, 1); kept {
		t.Error("a read from before a write of its room, whose entry was let go, kept its page in the entry another read made after the write")
	}
}

// TestNewestPagesBoundedBytes: pages of long messages are kept up to
// maxNewestBytes in all, letting others go, and the count of bytes kept
// follows every page kept, replaced, forgotten and let go.
func TestNewestPagesBoundedBytes(t *testing.T) {
	var n newestPages
	long := make([]store.Message, 101)
	for i := range long {
		long[i] = store.Message{ID: store.NewMessageID(), Content: strings.Repeat("é", store.MaxMessageLength)}
	}
	size := pageSize(long)
	if size < 101*8000 {
		t.Fatalf("pageSize = %d for 101 messages of 8,000 bytes", size)
	}
	check := func() {
		t.Helper()
		sum := 0
		for _, p := range n.rooms {
			sum += p.size
		}
		if sum != n.bytes || n.bytes > maxNewestBytes {
			t.Fatalf("%d bytes counted, %d kept, the bound is %d", n.bytes, sum, maxNewestBytes)
		}
	}
	for i := range 3 * maxNewestBytes / size {
		room := roomMessages(fmt.Sprint("room-", i))
		_, _, gen := n.page(room, 101)
		n.keep(room, 101, gen, long)
		if _, kept, _ := n.page(room, 101); !kept {
			t.Fatalf("room %d: its page was not kept", i)
		}
		check()
	}
	room := roomMessages("room-0")
	_, _, gen := n.page(room, 101)
	n.keep(room, 101, gen, long[:1]) // replaced by a smaller page
	check()
	n.forget([]string{string(room)}, false)
	check()
	n.forget(nil, true)
	check()
	if n.bytes != 0 {
		t.Errorf("%d bytes counted after every page was forgotten", n.bytes)
	}
	// A page over an eighth of the bound is not kept.
	huge := slices.Repeat(long, maxNewestBytes/8/size+1)
	_, _, gen = n.page(room, len(huge))
	n.keep(room, len(huge), gen, huge)
	if _, kept, _ := n.page(room, len(huge)); kept {
		t.Error("a page of more than an eighth of the bound was kept")
	}
	// Nor does its entry stay: it would take a kept page's place.
	rooms := len(n.rooms)
	other := roomMessages("room with long messages")
	_, _, gen = n.page(other, len(huge))
	n.keep(other, len(huge), gen, huge)
	if len(n.rooms) != rooms {
		t.Errorf("%d entries after a page too large to keep, %d before", len(n.rooms), rooms)
	}
}

// TestRoomPrefix: a batch tells the room of every key of its messages,
// whatever bytes the room's name holds, and a range over the whole table
// touches every room.
func TestRoomPrefix(t *testing.T) {
	id := store.NewMessageID()
	for _, room := range []string{"room", "", "a\x00b", "a\x00", "\x00\x01", "é 👍"} {
		for _, k := range []key{messageKey(room, id), messagePartition(room, 20261128), roomMessages(room)} {
			got, ok := roomPrefix(k)
			if !ok || got != string(roomMessages(room)) {
				t.Errorf("roomPrefix(%q) = %q, %v; want %q", k, got, ok, roomMessages(room))
			}
		}
	}
	if _, ok := roomPrefix(messagesTable); ok {
		t.Error("roomPrefix found a room in the table's prefix alone")
	}
	db := open(t, t.TempDir())
	defer db.Close()
	b := db.batch()
	defer b.Close()
	b.setEmpty(roomKey("room")) // another table
	b.delete(messageKey("a\x00b", id))
	b.delete(messageKey("a\x00b", store.NewMessageID()))
	if b.touchesAllRooms || len(b.roomsTouched) != 1 || b.roomsTouched[0] != string(roomMessages("a\x00b")) {
		t.Errorf("touched %q (all: %v), want the room a\\x00b once", b.roomsTouched, b.touchesAllRooms)
	}
	b.deleteRange(tuple(tableRoomMessages))
	if !b.touchesAllRooms {
		t.Error("a range over the whole table touched no room")
	}
}

// TestNewestPagesFollowWrites: on a real store, every write of a room's
// messages (a post, an edit, a deletion, the room's deletion) is on the
// next page read, though the page before it was kept.
func TestNewestPagesFollowWrites(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	ctx := t.Context()
	alice := createListingRoom(t, db, "room")
	first := post(t, db, "room", alice, store.NewMessageID())
	newest := func() []store.Message {
		t.Helper()
		page, err := db.Messages(ctx, "room", store.MessageID{}, 51)
		if err != nil {
			t.Fatal(err)
		}
		return page
	}
	newest()
	if p := db.newest.rooms[string(roomMessages("room"))]; p == nil || p.limit != 51 {
		t.Fatal("the room's newest page was not kept")
	}
	second := post(t, db, "room", alice, store.NewMessageID())
	if page := newest(); len(page) != 2 || page[0].ID != second {
		t.Fatalf("after a post: %d messages, want it first of 2", len(page))
	}
	m := newest()[1]
	if _, err := db.EditMessage(ctx, m, alice, "edited", time.Now()); err != nil {
		t.Fatal(err)
	}
	if page := newest(); page[1].ID != first || page[1].Content != "edited" {
		t.Errorf("after an edit: %q, want edited", page[1].Content)
	}
	if _, err := db.DeleteMessage(ctx, newest()[0], alice); err != nil {
		t.Fatal(err)
	}
	if page := newest(); !page[0].Deleted {
		t.Errorf("after a deletion: the message is not deleted on the page")
	}
	if _, _, err := db.DeleteRoom(ctx, "room", alice); err != nil {
		t.Fatal(err)
	}
	if page := newest(); len(page) != 0 {
		t.Errorf("after the room's deletion: %d messages", len(page))
	}
}

// TestNewestPagesReadYourWrites: while readers fill and refill the kept
// page, a post is on every page its poster reads once it returns (or the
// page is full of newer ones). Every post is in a day of its own, newer
// than the others: what the store knows of the room's days (listedDays)
// changes with every post too, and a page read from it must not be kept
// before it does.
func TestNewestPagesReadYourWrites(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	ctx := t.Context()
	alice := createListingRoom(t, db, "room")
	const posters, perPoster, size = 4, 40, 8
	var days atomic.Int64
	start := time.Now()
	done := make(chan struct{})
	readers := readUntil(t, done, 2, func() error {
		_, err := db.Messages(ctx, "room", store.MessageID{}, size)
		return err
	})
	var wg sync.WaitGroup
	for range posters {
		wg.Go(func() {
			for range perPoster {
				day := time.Duration(days.Add(1)) * 24 * time.Hour
				id := post(t, db, "room", alice, store.MessageIDAt(start.Add(day)))
				page, err := db.Messages(ctx, "room", store.MessageID{}, size)
				if err != nil {
					t.Error(err)
					return
				}
				found := len(page) == size && page[size-1].ID.Compare(id) > 0
				for _, m := range page {
					found = found || m.ID == id
				}
				if !found {
					t.Errorf("a post returned, then the newest page of %d left it out", len(page))
					return
				}
			}
		})
	}
	wg.Wait()
	close(done)
	readers.Wait()
}

// readUntil starts n readers calling read until done is closed or read
// fails, and returns their group to wait for.
func readUntil(t *testing.T, done <-chan struct{}, n int, read func() error) *sync.WaitGroup {
	var readers sync.WaitGroup
	for range n {
		readers.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if err := read(); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	return &readers
}
