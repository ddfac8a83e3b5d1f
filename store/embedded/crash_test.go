package embedded

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/killrchat/chatql/internal/testenv"
	"github.com/killrchat/chatql/store"
)

// The store runs on pebble's crashable memory file system: CrashClone copies
// it as a crash of the machine at that moment would leave the disk, with
// what was fsynced and nothing else. A write the store acknowledged must be
// in the copy.

const crashDir = "/chat"

// openCrashable opens a store on a fresh crashable file system.
func openCrashable(t *testing.T) (*DB, *vfs.MemFS) {
	t.Helper()
	fs := vfs.NewCrashableMem()
	db, err := openFS(crashDir, fs)
	if err != nil {
		t.Fatalf("openFS = %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db, fs
}

// afterCrash opens the store as a crash of the machine now would leave it.
func afterCrash(t *testing.T, fs *vfs.MemFS) *DB {
	t.Helper()
	db, err := openFS(crashDir, fs.CrashClone(vfs.CrashCloneCfg{}))
	if err != nil {
		t.Fatalf("opening the store after a crash = %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestEveryWriteIsOnDiskWhenItReturns makes each kind of write in turn and,
// after each, crashes a copy of the disk and reads the write back from it.
func TestEveryWriteIsOnDiskWhenItReturns(t *testing.T) {
	ctx := t.Context()
	db, fs := openCrashable(t)
	alice := store.UserRef{Login: "alice", Firstname: "Alice", Lastname: "Liddell"}
	bob := store.UserRef{Login: "bob", Firstname: "Bob", Lastname: "Builder"}
	carol := store.UserRef{Login: "carol", Firstname: "Carol", Lastname: "Singer"}
	now := time.Now().UTC().Truncate(time.Millisecond)
	lobby := store.Room{Name: "lobby", Creator: alice, CreatedAt: now}
	group := store.Room{Name: "croquet", Kind: store.PrivateGroup, Creator: alice, CreatedAt: now}
	direct := store.DirectConversationID(alice.Login, bob.Login)
	post := store.Message{Room: lobby.Name, ID: store.NewMessageID(), Author: bob, Content: "posted"}
	dm := store.Message{Room: direct, ID: store.NewMessageID(), Author: alice, Content: "sent directly"}
	groupPost := store.Message{Room: group.Name, ID: store.NewMessageID(), Author: alice, Content: "sent to the group"}

	participant := func(db *DB, room, login string, want bool) error {
		m, err := db.Membership(ctx, room, login)
		if err == nil && m.Participant != want {
			err = fmt.Errorf("%s takes part in %s: %v, want %v", login, room, m.Participant, want)
		}
		return err
	}
	stored := func(db *DB, m store.Message) error {
		got, err := db.Message(ctx, m.ID)
		if err == nil && (got.Content != m.Content || got.Room != m.Room) {
			err = fmt.Errorf("message %v = %q in %q, want %q in %q", m.ID, got.Content, got.Room, m.Content, m.Room)
		}
		if err != nil {
			return err
		}
		page, err := db.Messages(ctx, m.Room, store.MessageID{}, 10)
		if err == nil && !slices.ContainsFunc(page, func(p store.Message) bool { return p.ID == m.ID }) {
			err = fmt.Errorf("message %v is missing from the history of %q", m.ID, m.Room)
		}
		if err != nil {
			return err
		}
		mine, err := db.MessagesByAuthor(ctx, m.Author.Login, store.MessageID{}, 10)
		if err == nil && !slices.ContainsFunc(mine, func(p store.Message) bool { return p.ID == m.ID }) {
			err = fmt.Errorf("message %v is missing from the messages of %q", m.ID, m.Author.Login)
		}
		return err
	}
	entry := func(db *DB, login, id string, last store.MessageID, unread int) error {
		c, err := db.Conversation(ctx, login, id)
		if err == nil && (c.LastMessage.ID != last || c.Unread != unread) {
			err = fmt.Errorf("%s's entry of %s: last %v, %d unread; want %v, %d", login, id, c.LastMessage.ID, c.Unread, last, unread)
		}
		return err
	}

	for _, step := range []struct {
		name  string
		write func() error
		check func(db *DB) error
	}{
		{"CreateUser", func() error {
			return errors.Join(db.CreateUser(ctx, store.Account{User: store.User{UserRef: alice}}),
				db.CreateUser(ctx, store.Account{User: store.User{UserRef: bob}}),
				db.CreateUser(ctx, store.Account{User: store.User{UserRef: carol}}))
		}, func(db *DB) error {
			_, err := db.Account(ctx, carol.Login)
			return err
		}},
		{"CreateRoom", func() error { return db.CreateRoom(ctx, lobby) },
			func(db *DB) error { return participant(db, lobby.Name, alice.Login, true) }},
		{"JoinRoom", func() error {
			_, _, err := db.JoinRoom(ctx, lobby.Name, bob)
			return errors.Join(err, db.CreateRoom(ctx, store.Room{Name: "hall", Creator: alice, CreatedAt: now}))
		}, func(db *DB) error { return participant(db, lobby.Name, bob.Login, true) }},
		{"LeaveRoom", func() error {
			_, _, err := db.JoinRoom(ctx, "hall", carol)
			return errors.Join(err, second(db.LeaveRoom(ctx, "hall", carol)))
		}, func(db *DB) error { return participant(db, "hall", carol.Login, false) }},
		{"PostMessage", func() error { return db.PostMessage(ctx, post) },
			func(db *DB) error { return stored(db, post) }},
		{"SendDirect", func() error { return db.SendDirect(ctx, dm, bob) },
			func(db *DB) error { return errors.Join(stored(db, dm), entry(db, bob.Login, direct, dm.ID, 1)) }},
		{"MarkRead", func() error { return second(db.MarkRead(ctx, bob.Login, direct, dm.ID)) },
			func(db *DB) error { return entry(db, bob.Login, direct, dm.ID, 0) }},
		{"CreateRoom private", func() error { return db.CreateRoom(ctx, group) },
			func(db *DB) error { return participant(db, group.Name, alice.Login, true) }},
		{"AddGroupMember", func() error {
			_, _, err := db.AddGroupMember(ctx, group.Name, store.UserRef{Login: alice.Login}, carol, now)
			return err
		}, func(db *DB) error {
			return errors.Join(participant(db, group.Name, carol.Login, true), entry(db, carol.Login, group.Name, store.MessageID{}, 0))
		}},
		{"PostGroupMessage", func() error { return db.PostGroupMessage(ctx, groupPost, []store.UserRef{alice, carol}) },
			func(db *DB) error {
				return errors.Join(stored(db, groupPost), entry(db, carol.Login, group.Name, groupPost.ID, 1))
			}},
		{"HideMessage", func() error { return second(db.HideMessage(ctx, post, alice)) },
			func(db *DB) error {
				m, err := db.Message(ctx, post.ID)
				if err == nil && !m.Hidden {
					err = errors.New("the hidden message is visible")
				}
				return err
			}},
		{"LeaveGroup", func() error { return second(db.LeaveGroup(ctx, group.Name, carol, now.Add(time.Minute))) },
			func(db *DB) error { return participant(db, group.Name, carol.Login, false) }},
		{"DeleteRoom", func() error {
			_, _, err := db.DeleteRoom(ctx, lobby.Name, store.UserRef{Login: alice.Login})
			return err
		}, func(db *DB) error {
			if _, err := db.Room(ctx, lobby.Name); !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("the deleted room reads back: %v", err)
			}
			return nil
		}},
	} {
		if err := step.write(); err != nil {
			t.Fatalf("%s = %v", step.name, err)
		}
		crashed := afterCrash(t, fs)
		if err := step.check(crashed); err != nil {
			t.Errorf("after %s and a crash: %v", step.name, err)
		}
		if err := crashed.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestConcurrentWritesSurviveACrash has users post to a public room, send
// direct messages and post to a private group, all at once, crashes a copy
// of the disk at a random moment, and reads the copy: every message
// acknowledged before the crash is in every index, and the indexes agree
// with one another (the inbox with the histories, the messages by author
// with the rooms').
func TestConcurrentWritesSurviveACrash(t *testing.T) {
	ctx := t.Context()
	db, fs := openCrashable(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	var users []store.UserRef
	for i := range 6 {
		u := store.UserRef{Login: fmt.Sprintf("user%d", i), Firstname: "User", Lastname: fmt.Sprint(i)}
		if err := db.CreateUser(ctx, store.Account{User: store.User{UserRef: u}}); err != nil {
			t.Fatal(err)
		}
		users = append(users, u)
	}
	lobby := store.Room{Name: "lobby", Creator: users[0], CreatedAt: now}
	group := store.Room{Name: "den", Kind: store.PrivateGroup, Creator: users[0], CreatedAt: now}
	members := users[:4]
	for _, r := range []store.Room{lobby, group} {
		if err := db.CreateRoom(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range users[1:] {
		if _, _, err := db.JoinRoom(ctx, lobby.Name, u); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range members[1:] {
		if _, _, err := db.AddGroupMember(ctx, group.Name, users[0], u, now); err != nil {
			t.Fatal(err)
		}
	}

	// Two writers per user, each cycling through a post to the lobby, a
	// direct message to the next user and, for members, a group post.
	acked := testenv.NewAcks[store.Message](30 + rand.IntN(150))
	writing, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	for w := range 2 * len(users) {
		u := users[w%len(users)]
		wg.Go(func() {
			for i := 0; writing.Err() == nil; i++ {
				m := store.Message{ID: store.NewMessageID(), Author: u, Content: fmt.Sprintf("writer %d message %d", w, i)}
				var err error
				switch peer := users[(w+1+i)%len(users)]; {
				case i%3 == 1 && peer != u:
					m.Room = store.DirectConversationID(u.Login, peer.Login)
					err = db.SendDirect(writing, m, peer)
				case i%3 == 2 && slices.Contains(members, u):
					m.Room = group.Name
					err = db.PostGroupMessage(writing, m, members)
				default:
					m.Room = lobby.Name
					err = db.PostMessage(writing, m)
				}
				if err != nil {
					if writing.Err() == nil {
						t.Errorf("writing %q to %q = %v", m.Content, m.Room, err)
					}
					return
				}
				acked.Add(m)
			}
		})
	}
	if !acked.Wait(&wg) {
		t.Fatal("every writer stopped before the crash")
	}
	// Whatever was acknowledged before the copy is taken must be in it;
	// the writes still under way may or may not be.
	before := acked.List()
	crashed := afterCrash(t, fs)
	stop()
	wg.Wait()

	convs := []string{lobby.Name, group.Name}
	for i, a := range users {
		for _, b := range users[i+1:] {
			convs = append(convs, store.DirectConversationID(a.Login, b.Login))
		}
	}
	histories := map[string][]store.Message{}
	for _, c := range convs {
		histories[c] = readAll(t, func(before store.MessageID) ([]store.Message, error) {
			if c == group.Name {
				return crashed.GroupMessages(ctx, c, []store.Window{{From: now}}, before, 50)
			}
			return crashed.Messages(ctx, c, before, 50)
		})
	}
	lost := 0
	for _, m := range before {
		got, err := crashed.Message(ctx, m.ID)
		inHistory := slices.ContainsFunc(histories[m.Room], func(h store.Message) bool { return h.ID == m.ID })
		if err != nil || got.Content != m.Content || got.Room != m.Room || !inHistory {
			if lost++; lost <= 3 {
				t.Errorf("acknowledged %q in %q: after the crash Message = %q in %q, %v; in the history: %v", m.Content, m.Room, got.Content, got.Room, err, inHistory)
			}
		}
	}
	if lost > 0 {
		t.Errorf("the crash lost %d of the %d acknowledged messages", lost, len(before))
	}
	checkIndexesAgree(t, crashed, users, histories)
}

// readAll pages through a history, newest first.
func readAll(t *testing.T, page func(before store.MessageID) ([]store.Message, error)) []store.Message {
	t.Helper()
	var all []store.Message
	for before := (store.MessageID{}); ; {
		p, err := page(before)
		if err != nil {
			t.Fatal(err)
		}
		if len(p) == 0 {
			return all
		}
		all = append(all, p...)
		before = p[len(p)-1].ID
	}
}

// checkIndexesAgree checks that the messages of each user by author are
// theirs in the histories, and that each user's inbox shows the newest
// message of each conversation and counts the others' messages as unread
// (nothing was marked read).
func checkIndexesAgree(t *testing.T, db *DB, users []store.UserRef, histories map[string][]store.Message) {
	t.Helper()
	ctx := t.Context()
	for _, u := range users {
		var want []store.MessageID
		for _, h := range histories {
			for _, m := range h {
				if m.Author.Login == u.Login {
					want = append(want, m.ID)
				}
			}
		}
		var got []store.MessageID
		for _, m := range readAll(t, func(before store.MessageID) ([]store.Message, error) {
			return db.MessagesByAuthor(ctx, u.Login, before, 50)
		}) {
			got = append(got, m.ID)
		}
		slices.SortFunc(want, store.MessageID.Compare)
		slices.SortFunc(got, store.MessageID.Compare)
		if !slices.Equal(got, want) {
			t.Errorf("messages by %s: %d, the histories hold %d of theirs", u.Login, len(got), len(want))
		}

		inbox, err := db.Inbox(ctx, u.Login)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range inbox {
			// System messages (a member added) are the group's, not its
			// members' inbox's.
			h := slices.DeleteFunc(slices.Clone(histories[c.ID]), func(m store.Message) bool { return m.System })
			var newest store.MessageID
			if len(h) > 0 {
				newest = h[0].ID
			}
			unread := 0
			for _, m := range h {
				if m.Author.Login != u.Login {
					unread++
				}
			}
			if c.LastMessage.ID != newest || c.Unread != unread {
				t.Errorf("%s's inbox entry of %s: last %v, %d unread; its history: newest %v, %d by others", u.Login, c.ID, c.LastMessage.ID, c.Unread, newest, unread)
			}
		}
	}
}

// second is the error of a call that returns a value and an error.
func second[T any](_ T, err error) error { return err }
