package embedded

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
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
	// inRoomLog and inInboxLog check that the event the write returned (or
	// logs) is in the log, with its kind, user and message.
	inRoomLog := func(db *DB, ev store.Event) error {
		return logged(ctx, db.RoomEvents, ev.Room, ev)
	}
	inInboxLog := func(db *DB, login string, ev store.Event) error {
		return logged(ctx, db.InboxEvents, login, ev)
	}
	var joined, left, read, added, hid, groupLeft store.Event

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
			var err error
			_, joined, err = db.JoinRoom(ctx, lobby.Name, bob)
			return errors.Join(err, db.CreateRoom(ctx, store.Room{Name: "hall", Creator: alice, CreatedAt: now}))
		}, func(db *DB) error {
			return errors.Join(participant(db, lobby.Name, bob.Login, true), inRoomLog(db, joined))
		}},
		{"LeaveRoom", func() error {
			_, _, err := db.JoinRoom(ctx, "hall", carol)
			if err == nil {
				left, err = db.LeaveRoom(ctx, "hall", carol)
			}
			return err
		}, func(db *DB) error {
			return errors.Join(participant(db, "hall", carol.Login, false), inRoomLog(db, left))
		}},
		{"PostMessage", func() error { return db.PostMessage(ctx, post) },
			func(db *DB) error { return errors.Join(stored(db, post), inRoomLog(db, store.PostedEvent(post))) }},
		{"SendDirect", func() error { return db.SendDirect(ctx, dm, bob) },
			func(db *DB) error {
				ev := store.Event{ID: dm.ID, Kind: store.DirectMessage, Room: direct, User: alice, Message: &dm}
				return errors.Join(stored(db, dm), entry(db, bob.Login, direct, dm.ID, 1),
					inInboxLog(db, alice.Login, ev), inInboxLog(db, bob.Login, ev))
			}},
		{"MarkRead", func() (err error) {
			read, err = db.MarkRead(ctx, bob.Login, direct, dm.ID)
			return err
		}, func(db *DB) error {
			return errors.Join(entry(db, bob.Login, direct, dm.ID, 0), inInboxLog(db, bob.Login, read))
		}},
		{"CreateRoom private", func() error { return db.CreateRoom(ctx, group) },
			func(db *DB) error { return participant(db, group.Name, alice.Login, true) }},
		{"AddGroupMember", func() error {
			var err error
			_, added, err = db.AddGroupMember(ctx, group.Name, alice, carol, now)
			return err
		}, func(db *DB) error {
			inbox := added
			inbox.Kind, inbox.User = store.AddedToGroup, alice
			return errors.Join(participant(db, group.Name, carol.Login, true), entry(db, carol.Login, group.Name, store.MessageID{}, 0),
				inRoomLog(db, added), inInboxLog(db, carol.Login, inbox))
		}},
		{"PostGroupMessage", func() error { return db.PostGroupMessage(ctx, groupPost, []store.UserRef{alice, carol}) },
			func(db *DB) error {
				unread := store.Event{ID: groupPost.ID, Kind: store.UnreadChanged, Room: group.Name, User: alice, Message: &groupPost}
				return errors.Join(stored(db, groupPost), entry(db, carol.Login, group.Name, groupPost.ID, 1),
					inRoomLog(db, store.PostedEvent(groupPost)), inInboxLog(db, carol.Login, unread))
			}},
		{"HideMessage", func() (err error) {
			hid, err = db.HideMessage(ctx, post, alice)
			return err
		}, func(db *DB) error {
			m, err := db.Message(ctx, post.ID)
			if err == nil && !m.Hidden {
				err = errors.New("the hidden message is visible")
			}
			return errors.Join(err, inRoomLog(db, hid))
		}},
		{"LeaveGroup", func() (err error) {
			groupLeft, err = db.LeaveGroup(ctx, group.Name, carol, now.Add(time.Minute))
			return err
		}, func(db *DB) error {
			return errors.Join(participant(db, group.Name, carol.Login, false), inRoomLog(db, groupLeft))
		}},
		{"DeleteRoom", func() error {
			_, _, err := db.DeleteRoom(ctx, lobby.Name, store.UserRef{Login: alice.Login})
			return err
		}, func(db *DB) error {
			if _, err := db.Room(ctx, lobby.Name); !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("the deleted room reads back: %v", err)
			}
			if evs, err := db.RoomEvents(ctx, lobby.Name, store.MessageID{}, 10); err != nil || len(evs) != 0 {
				return fmt.Errorf("the deleted room's log reads back: %d events, %v", len(evs), err)
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

	// The logs hold an event for each message of the histories and no
	// other, so every acknowledged message has its events.
	logs := checkLogsAgree(t, crashed, lobby.Name, group.Name, users, members, histories)
	unlogged := 0
	for _, m := range before {
		owners := []string{m.Room} // a room's log
		switch {
		case store.IsDirectConversation(m.Room):
			a, b, _ := strings.Cut(m.Room, ":")
			owners = []string{"inbox " + a, "inbox " + b}
		case m.Room == group.Name:
			for _, u := range members {
				if u != m.Author {
					owners = append(owners, "inbox "+u.Login)
				}
			}
		}
		for _, owner := range owners {
			if !logs[owner][m.ID] {
				if unlogged++; unlogged <= 3 {
					t.Errorf("acknowledged %q in %q has no event in the log of %s after the crash", m.Content, m.Room, owner)
				}
			}
		}
	}
	if unlogged > 0 {
		t.Errorf("the crash lost %d events of acknowledged messages", unlogged)
	}
}

// checkLogsAgree checks, after a crash, that the room's and the group's
// logs hold one event per message of their histories (its id, of the kind
// the message says) and the inbox logs one per message the user was sent
// (direct messages either way, others' group posts, their addition to the
// group), oldest first, and nothing else. It returns the ids logged, by
// log: a room's name, or "inbox " and a login.
func checkLogsAgree(t *testing.T, db *DB, room, group string, users, members []store.UserRef, histories map[string][]store.Message) map[string]map[store.MessageID]bool {
	t.Helper()
	ctx := t.Context()
	want := map[string]map[store.MessageID]store.EventKind{}
	add := func(owner string, id store.MessageID, kind store.EventKind) {
		if want[owner] == nil {
			want[owner] = map[store.MessageID]store.EventKind{}
		}
		want[owner][id] = kind
	}
	for conv, h := range histories {
		for _, m := range h {
			switch {
			case store.IsDirectConversation(conv):
				a, b, _ := strings.Cut(conv, ":")
				add("inbox "+a, m.ID, store.DirectMessage)
				add("inbox "+b, m.ID, store.DirectMessage)
			case m.System && strings.HasSuffix(m.Content, " joined the room"):
				add(conv, m.ID, store.ParticipantJoined)
			case m.System && strings.HasSuffix(m.Content, " to the group"):
				add(conv, m.ID, store.ParticipantJoined)
				add("inbox "+m.Author.Login, m.ID, store.AddedToGroup)
			default:
				add(conv, m.ID, store.MessagePosted)
				if conv == group {
					for _, u := range members {
						if u != m.Author {
							add("inbox "+u.Login, m.ID, store.UnreadChanged)
						}
					}
				}
			}
		}
	}
	read := func(owner string) []store.Event {
		page := db.RoomEvents
		name := owner
		if login, ok := strings.CutPrefix(owner, "inbox "); ok {
			page, name = db.InboxEvents, login
		}
		var all []store.Event
		for after := (store.MessageID{}); ; {
			events, err := page(ctx, name, after, 100)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, events...)
			if len(events) < 100 {
				return all
			}
			after = events[len(events)-1].ID
		}
	}
	owners := []string{room, group}
	for _, u := range users {
		owners = append(owners, "inbox "+u.Login)
	}
	logged := map[string]map[store.MessageID]bool{}
	for _, owner := range owners {
		logged[owner] = map[store.MessageID]bool{}
		events := read(owner)
		for i, ev := range events {
			switch kind, ok := want[owner][ev.ID]; {
			case logged[owner][ev.ID]:
				t.Errorf("log of %s: event %v twice", owner, ev.ID)
			case !ok || ev.Kind != kind:
				t.Errorf("log of %s: %s event %v, want %q (\"\" for none: no such message)", owner, ev.Kind, ev.ID, kind)
			case ev.Message == nil || ev.Message.ID != ev.ID:
				t.Errorf("log of %s: %s event %v without its message", owner, ev.Kind, ev.ID)
			case i > 0 && events[i-1].ID.Compare(ev.ID) >= 0:
				t.Errorf("log of %s: event %v after %v, out of order", owner, ev.ID, events[i-1].ID)
			}
			logged[owner][ev.ID] = true
		}
		if len(logged[owner]) != len(want[owner]) {
			t.Errorf("log of %s: %d events, want %d (one per message)", owner, len(logged[owner]), len(want[owner]))
		}
	}
	return logged
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
// message of each conversation and counts as unread the others' messages
// after the user's own newest (nothing was marked read).
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
				if m.Author.Login == u.Login {
					break // newest first: writing read the conversation up to here
				}
				unread++
			}
			unread = min(unread, store.UnreadCap)
			if c.LastMessage.ID != newest || c.Unread != unread {
				t.Errorf("%s's inbox entry of %s: last %v, %d unread; its history: newest %v, %d by others since their own newest", u.Login, c.ID, c.LastMessage.ID, c.Unread, newest, unread)
			}
		}
	}
}

// logged checks that ev is in the log of owner that read reads: an event of
// its id, with its kind, room, user and message (id, content and whether
// hidden; the log joins the message as it is now).
func logged(ctx context.Context, read func(context.Context, string, store.MessageID, int) ([]store.Event, error), owner string, ev store.Event) error {
	if ev.ID.IsZero() {
		return fmt.Errorf("the write returned no event to look for in the log of %s", owner)
	}
	events, err := read(ctx, owner, store.MessageID{}, 1000)
	if err != nil {
		return err
	}
	for _, got := range events {
		if got.ID != ev.ID {
			continue
		}
		same := got.Kind == ev.Kind && got.Room == ev.Room && got.User == ev.User && (got.Message == nil) == (ev.Message == nil)
		if same && got.Message != nil {
			same = got.Message.ID == ev.Message.ID && got.Message.Content == ev.Message.Content
		}
		if !same {
			return fmt.Errorf("the log of %s holds %+v, want %+v", owner, got, ev)
		}
		return nil
	}
	return fmt.Errorf("%s event %v is missing from the log of %s", ev.Kind, ev.ID, owner)
}
