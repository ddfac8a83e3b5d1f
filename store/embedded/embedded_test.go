package embedded

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/store/storetest"
)

func open(t testing.TB, dir string) *DB {
	t.Helper()
	db, err := Open(dir)
	if err != nil {
		t.Fatalf("Open(%s) = %v", dir, err)
	}
	return db
}

func TestConformance(t *testing.T) {
	db := open(t, t.TempDir())
	storetest.RunTests(t, db)
	if err := db.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
}

func TestConversationConformance(t *testing.T) {
	db := open(t, t.TempDir())
	storetest.RunConversationTests(t, db)
	if err := db.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
}

func TestSessionConformance(t *testing.T) {
	db := open(t, t.TempDir())
	storetest.RunSessionTests(t, db)
	if err := db.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
}

// TestRestart writes users, a room and messages over two days, a hidden
// message, a direct conversation and a private group, closes the store and
// opens its directory again: everything reads back the same.
func TestRestart(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	db := open(t, dir)

	alice := store.Account{
		User:     store.User{UserRef: store.UserRef{Login: "alice", Firstname: "Alice", Lastname: "Liddell"}, Email: "alice@example.com", Bio: "curious"},
		PassHash: []byte{0x00, 0xff, 0x10},
	}
	bob := store.Account{
		User:     store.User{UserRef: store.UserRef{Login: "bob", Firstname: "Bob", Lastname: "Builder"}},
		PassHash: []byte("hash"),
	}
	for _, a := range []store.Account{alice, bob} {
		if err := db.CreateUser(ctx, a); err != nil {
			t.Fatalf("CreateUser(%q) = %v", a.Login, err)
		}
	}
	room := store.Room{Name: "tea-party", Creator: alice.UserRef, CreatedAt: time.Now(), Banner: "Why is a raven like a writing-desk?"}
	if err := db.CreateRoom(ctx, room); err != nil {
		t.Fatalf("CreateRoom = %v", err)
	}
	_, joined, err := db.JoinRoom(ctx, room.Name, bob.UserRef)
	if err != nil {
		t.Fatalf("JoinRoom = %v", err)
	}
	yesterday := time.Now().Add(-24 * time.Hour)
	var posted []store.Message
	for i, id := range []store.MessageID{
		store.MessageIDAt(yesterday), store.MessageIDAt(yesterday.Add(time.Second)),
		store.NewMessageID(), store.NewMessageID(),
	} {
		m := store.Message{Room: room.Name, ID: id, Author: bob.UserRef, Content: fmt.Sprintf("message %d", i), System: i == 0}
		if err := db.PostMessage(ctx, m); err != nil {
			t.Fatalf("PostMessage = %v", err)
		}
		posted = append([]store.Message{m}, posted...) // newest first
		if i == 1 {
			posted = append([]store.Message{*joined.Message}, posted...) // the join came after yesterday's
		}
	}

	// A hidden message, a direct conversation with an unread message, and
	// a private group bob joined and left.
	if _, err := db.HideMessage(ctx, posted[1], store.UserRef{}); err != nil {
		t.Fatalf("HideMessage = %v", err)
	}
	posted[1].Hidden = true
	dm := store.Message{Room: store.DirectConversationID("alice", "bob"), ID: store.NewMessageID(), Author: alice.UserRef, Content: "psst"}
	if err := db.SendDirect(ctx, dm, bob.UserRef); err != nil {
		t.Fatalf("SendDirect = %v", err)
	}
	group := store.Room{Name: "croquet", Kind: store.PrivateGroup, Creator: alice.UserRef, CreatedAt: yesterday}
	if err := db.CreateRoom(ctx, group); err != nil {
		t.Fatalf("CreateRoom(private) = %v", err)
	}
	if _, _, err := db.AddGroupMember(ctx, group.Name, store.UserRef{Login: "alice"}, bob.UserRef, yesterday.Add(time.Hour)); err != nil {
		t.Fatalf("AddGroupMember = %v", err)
	}
	if _, err := db.LeaveGroup(ctx, group.Name, bob.UserRef, yesterday.Add(2*time.Hour)); err != nil {
		t.Fatalf("LeaveGroup = %v", err)
	}

	type snapshot struct {
		Alice, Bob   store.Account
		Room         store.Room
		Rooms        []store.Room
		Newest       []store.Message
		Oldest       []store.Event
		SecondPage   []store.Message
		AfterFirsts  []store.Event
		Hidden       store.Message
		ByBob        []store.Message
		InboxAlice   []store.Conversation
		InboxBob     []store.Conversation
		GroupOfBob   store.Conversation
		DirectOfBob  store.Conversation
		DirectThread []store.Message
	}
	read := func(db *DB) (s snapshot) {
		t.Helper()
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		var err error
		s.Alice, err = db.Account(ctx, "alice")
		must(err)
		s.Bob, err = db.Account(ctx, "bob")
		must(err)
		s.Room, err = db.Room(ctx, room.Name)
		must(err)
		s.Rooms, err = db.Rooms(ctx, "", 10)
		must(err)
		s.Newest, err = db.Messages(ctx, room.Name, store.MessageID{}, 10)
		must(err)
		s.SecondPage, err = db.Messages(ctx, room.Name, posted[1].ID, 10)
		must(err)
		s.Oldest, err = db.RoomEvents(ctx, room.Name, store.MessageIDAt(yesterday.Add(-time.Hour)), 10)
		must(err)
		s.AfterFirsts, err = db.RoomEvents(ctx, room.Name, posted[3].ID, 2)
		must(err)
		s.Hidden, err = db.Message(ctx, posted[1].ID)
		must(err)
		s.ByBob, err = db.MessagesByAuthor(ctx, "bob", store.MessageID{}, 10)
		must(err)
		s.InboxAlice, err = db.Inbox(ctx, "alice")
		must(err)
		s.InboxBob, err = db.Inbox(ctx, "bob")
		must(err)
		s.GroupOfBob, err = db.Conversation(ctx, "bob", group.Name)
		must(err)
		s.DirectOfBob, err = db.Conversation(ctx, "bob", dm.Room)
		must(err)
		s.DirectThread, err = db.Messages(ctx, dm.Room, store.MessageID{}, 10)
		must(err)
		return s
	}
	before := read(db)
	if !reflect.DeepEqual(before.Newest, posted) {
		t.Errorf("Messages before the restart = %v, want %v", before.Newest, posted)
	}
	inRoom := func(ms []store.Message) []store.Message {
		return slices.DeleteFunc(slices.Clone(ms), func(m store.Message) bool { return m.Room != room.Name })
	}
	if !before.Hidden.Hidden || !reflect.DeepEqual(inRoom(before.ByBob), posted) {
		t.Errorf("before the restart: Message(hidden) = %+v, MessagesByAuthor(bob) = %v; want it hidden, and %v", before.Hidden, before.ByBob, posted)
	}
	if c := before.DirectOfBob; c.Unread != 1 || !reflect.DeepEqual(c.LastMessage, dm) || c.Peer != alice.UserRef {
		t.Errorf("bob's direct conversation = %+v, want 1 unread, last message %+v from alice", c, dm)
	}
	if w := before.GroupOfBob.Windows; len(w) != 1 || w[0].To.IsZero() {
		t.Errorf("bob's windows in the group = %v, want one, closed", w)
	}
	if len(before.InboxAlice) != 2 || len(before.InboxBob) != 2 {
		t.Errorf("inboxes = %+v and %+v, want two entries each", before.InboxAlice, before.InboxBob)
	}
	if want := []string{room.Name}; !reflect.DeepEqual(before.Bob.ChatRooms, want) {
		t.Errorf("bob's rooms = %q, want %q", before.Bob.ChatRooms, want)
	}
	if want := []store.UserRef{alice.UserRef, bob.UserRef}; !reflect.DeepEqual(before.Room.Participants, want) {
		t.Errorf("participants = %v, want %v", before.Room.Participants, want)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}

	db = open(t, dir)
	defer db.Close()
	after := read(db)
	if !reflect.DeepEqual(after, before) {
		t.Errorf("after the restart the store reads\n%+v\nwant\n%+v", after, before)
	}
}

// TestClosed checks that operations after Close fail instead of panicking,
// and that closing again is harmless.
func TestClosed(t *testing.T) {
	db := open(t, t.TempDir())
	if err := db.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if err := db.Close(); err != nil {
		t.Errorf("second Close() = %v, want nil", err)
	}
	if _, err := db.Room(t.Context(), "games"); !errors.Is(err, errClosed) {
		t.Errorf("Room after Close = %v, want %v", err, errClosed)
	}
}

// TestCanceled checks that a done context stops an operation before it
// writes.
func TestCanceled(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	a := store.Account{User: store.User{UserRef: store.UserRef{Login: "carol"}}}
	if err := db.CreateUser(ctx, a); !errors.Is(err, context.Canceled) {
		t.Errorf("CreateUser with a canceled context = %v, want context.Canceled", err)
	}
	if _, err := db.User(t.Context(), "carol"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("User after a canceled CreateUser = %v, want ErrNotFound", err)
	}
}

// TestUnknownMembers checks that rooms are never tied to logins without a
// user row, which would leave a user row made of a room list alone.
func TestUnknownMembers(t *testing.T) {
	ctx := t.Context()
	db := open(t, t.TempDir())
	defer db.Close()
	ghost := store.UserRef{Login: "ghost", Firstname: "G", Lastname: "Host"}
	err := db.CreateRoom(ctx, store.Room{Name: "haunted", Creator: ghost, CreatedAt: time.Now()})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("CreateRoom by an unknown user = %v, want ErrNotFound", err)
	}
	if _, err := db.Room(ctx, "haunted"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Room after the failed CreateRoom = %v, want ErrNotFound", err)
	}
	if _, err := db.User(ctx, "ghost"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("User(ghost) = %v, want ErrNotFound", err)
	}
}

func benchStore(b *testing.B) (*DB, string, store.UserRef) {
	ctx := b.Context()
	db := open(b, b.TempDir())
	b.Cleanup(func() { db.Close() })
	u := store.Account{User: store.User{UserRef: store.UserRef{Login: "bench", Firstname: "Ben", Lastname: "Ch"}}}
	if err := db.CreateUser(ctx, u); err != nil {
		b.Fatal(err)
	}
	if err := db.CreateRoom(ctx, store.Room{Name: "bench", Creator: u.UserRef, CreatedAt: time.Now()}); err != nil {
		b.Fatal(err)
	}
	return db, "bench", u.UserRef
}

// BenchmarkPostMessage is the write of postMessage, from one poster and
// from several at once, as the server makes it for concurrent requests.
// Every post returns once it is on disk; concurrent posts share their
// fsyncs (see batch.commit), so throughput grows with the posters in
// flight. posters=GOMAXPROCS is the benchmark's default parallelism.
func BenchmarkPostMessage(b *testing.B) {
	db, room, author := benchStore(b)
	ctx := b.Context()
	post := func(b *testing.B) bool {
		m := store.Message{Room: room, ID: store.NewMessageID(), Author: author, Content: "The quick brown fox jumps over the lazy dog."}
		if err := db.PostMessage(ctx, m); err != nil {
			b.Error(err)
			return false
		}
		return true
	}
	b.Run("posters=1", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !post(b) {
				return
			}
		}
	})
	for _, perCPU := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("posters=%d", perCPU*runtime.GOMAXPROCS(0)), func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(perCPU)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() && post(b) {
				}
			})
		})
	}
}

// BenchmarkMessagesPage reads the newest page of 50 from a room with
// messages in two days.
func BenchmarkMessagesPage(b *testing.B) {
	db, room, author := benchStore(b)
	ctx := b.Context()
	yesterday := time.Now().Add(-24 * time.Hour)
	for i := range 1000 {
		id := store.NewMessageID()
		if i%2 == 0 {
			id = store.MessageIDAt(yesterday.Add(time.Duration(i) * time.Millisecond))
		}
		if err := db.PostMessage(ctx, store.Message{Room: room, ID: id, Author: author, Content: fmt.Sprint("message ", i)}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		page, err := db.Messages(ctx, room, store.MessageID{}, 50)
		if err != nil || len(page) != 50 {
			b.Fatalf("Messages = %d messages, %v", len(page), err)
		}
	}
}

// TestDeleteRoomIndex checks that deleting a room deletes its messages'
// copies by id and by author too, and a group's inbox entries, while the
// author's other messages stay.
func TestDeleteRoomIndex(t *testing.T) {
	ctx := t.Context()
	db := open(t, t.TempDir())
	defer db.Close()
	alice := store.UserRef{Login: "alice", Firstname: "Alice", Lastname: "Liddell"}
	if err := db.CreateUser(ctx, store.Account{User: store.User{UserRef: alice}}); err != nil {
		t.Fatal(err)
	}
	var kept store.Message
	var gone []store.Message
	for _, r := range []store.Room{
		{Name: "kept", Creator: alice, CreatedAt: time.Now()},
		{Name: "gone", Kind: store.PrivateGroup, Creator: alice, CreatedAt: time.Now()},
	} {
		if err := db.CreateRoom(ctx, r); err != nil {
			t.Fatal(err)
		}
		for _, id := range []store.MessageID{store.MessageIDAt(time.Now().Add(-48 * time.Hour)), store.NewMessageID()} {
			m := store.Message{Room: r.Name, ID: id, Author: alice, Content: "in " + r.Name}
			post := func() error { return db.PostGroupMessage(ctx, m, []store.UserRef{alice}) }
			if r.Kind == store.PublicRoom {
				post = func() error { return db.PostMessage(ctx, m) }
			}
			if err := post(); err != nil {
				t.Fatal(err)
			}
			if r.Name == "kept" {
				kept = m
			} else {
				gone = append(gone, m)
			}
		}
	}
	if _, _, err := db.DeleteRoom(ctx, "gone", store.UserRef{Login: "alice"}); err != nil {
		t.Fatal(err)
	}
	for _, m := range gone {
		if got, err := db.Message(ctx, m.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Message(%v) of a deleted room = %+v, %v; want ErrNotFound", m.ID, got, err)
		}
	}
	byAlice, err := db.MessagesByAuthor(ctx, "alice", store.MessageID{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(byAlice) != 2 || !reflect.DeepEqual(byAlice[0], kept) {
		t.Errorf("MessagesByAuthor(alice) after DeleteRoom = %+v, want the two messages of kept, newest %+v", byAlice, kept)
	}
	if c, err := db.Conversation(ctx, "alice", "gone"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Conversation(alice, gone) after DeleteRoom = %+v, %v; want ErrNotFound", c, err)
	}
	// No row of the room is left, its log and day listing included (a
	// log's rows whose messages are gone read as nothing: only the keys
	// show them).
	for _, p := range []key{roomKey("gone"), membersPartition("gone"), roomMessages("gone"), bucketPartition("gone"), roomEvents("gone"), conversationKey("alice", "gone")} {
		err := db.scan(ctx, p, p.end(), false, func(k, _ []byte) (bool, error) {
			return false, fmt.Errorf("row %q is left", k)
		})
		if err != nil {
			t.Errorf("after DeleteRoom: %v", err)
		}
	}
}

// TestUnreadBurst sends a burst of direct messages to one user
// (storetest.UnreadBurst, 100,000 without the race detector): their inbox
// reads with the count capped, and its partition holds one row, the
// conversation's.
func TestUnreadBurst(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	victim := storetest.RunUnreadBurst(t, db)
	rows := 0
	p := inboxPartition(victim)
	if err := db.scan(t.Context(), p, p.end(), false, func(_, _ []byte) (bool, error) {
		rows++
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	if rows != 1 {
		t.Errorf("the inbox partition of %q holds %d rows after the burst, want 1", victim, rows)
	}
}

// A second store on a directory in use is refused with the process using
// it; once the first closes, the directory opens again.
func TestDataDirectoryInUse(t *testing.T) {
	dir := t.TempDir()
	first, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir)
	if want := fmt.Sprintf("in use by process %d", os.Getpid()); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("a second Open = %v, want an error saying %q", err, want)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := Open(dir)
	if err != nil {
		t.Fatalf("Open after the first closed = %v", err)
	}
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestSearchConformance(t *testing.T) {
	db := open(t, t.TempDir())
	storetest.RunSearchTests(t, db)
	if err := db.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
}
