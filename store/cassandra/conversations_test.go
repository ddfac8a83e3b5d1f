package cassandra

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/store/storetest"
)

func TestSentinel(t *testing.T) {
	epoch := time.Date(1582, time.October, 15, 0, 0, 0, 0, time.UTC)
	if want := gocql.UUID(store.MinMessageID(epoch)); sentinelID != want {
		t.Errorf("sentinelID = %v, want MinMessageID(UUID epoch) = %v", sentinelID, want)
	}
	for _, at := range []time.Time{epoch.Add(100 * time.Nanosecond), time.Unix(0, 0), time.Now()} {
		for _, id := range []store.MessageID{store.MinMessageID(at), store.MessageIDAt(at)} {
			if store.MessageID(sentinelID).Compare(id) >= 0 {
				t.Errorf("sentinel does not sort before %v", id)
			}
		}
	}
}

func TestWindowsOf(t *testing.T) {
	at := func(h int) time.Time { return time.Date(2025, 1, 1, h, 0, 0, 0, time.UTC) }
	w := func(from, to int) store.Window {
		if to < 0 {
			return store.Window{From: at(from)}
		}
		return store.Window{From: at(from), To: at(to)}
	}
	ts := func(hs ...int) []time.Time {
		var out []time.Time
		for _, h := range hs {
			out = append(out, at(h))
		}
		return out
	}
	tests := []struct {
		name         string
		joined, left []time.Time
		want         []store.Window
	}{
		{"None", nil, nil, nil},
		{"Open", ts(1), nil, []store.Window{w(1, -1)}},
		{"Closed", ts(1), ts(2), []store.Window{w(1, 2)}},
		{"Back", ts(5, 1), ts(2), []store.Window{w(1, 2), w(5, -1)}},
		{"TwoClosed", ts(1, 3), ts(4, 2), []store.Window{w(1, 2), w(3, 4)}},
		// Two adds at once, then a leave: not a member after it.
		{"DoubleJoin", ts(1, 2), ts(3), []store.Window{w(1, 3)}},
		// A leave retried after its removal failed: the first one counts.
		{"DoubleLeave", ts(1), ts(2, 3), []store.Window{w(1, 2)}},
		{"StrayLeave", ts(2), ts(1), []store.Window{w(2, -1)}},
		// Left and back in the same millisecond: still a member, one window.
		{"LeaveJoinSameInstant", ts(1, 2), ts(2), []store.Window{w(1, -1)}},
		// Added and gone in the same millisecond: no window.
		{"JoinLeaveSameInstant", ts(1, 3), ts(2, 3), []store.Window{w(1, 2)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := windowsOf(tt.joined, tt.left)
			if !slices.Equal(got, tt.want) {
				t.Errorf("windowsOf(%v, %v) = %v, want %v", tt.joined, tt.left, got, tt.want)
			}
		})
	}
}

// convFixture makes two users of a direct conversation.
func convFixture(t *testing.T) (db *DB, ctx context.Context, alice, bob store.UserRef, id string) {
	t.Helper()
	db = mustOpen(t, testConfig(t))
	ctx = t.Context()
	alice = store.UserRef{Login: unique("alice"), Firstname: "A", Lastname: "L"}
	bob = store.UserRef{Login: unique("bob"), Firstname: "B", Lastname: "O"}
	return db, ctx, alice, bob, store.DirectConversationID(alice.Login, bob.Login)
}

func mustConv(t *testing.T, db *DB, ctx context.Context, login, id string) store.Conversation {
	t.Helper()
	c, err := db.Conversation(ctx, login, id)
	if err != nil {
		t.Fatalf("Conversation(%q, %q) = %v", login, id, err)
	}
	return c
}

// TestMarkReadSkew marks read a message written by a server whose clock
// runs ten minutes ahead: the mark is written at that message's time, not
// at the reader's "now", so a mark-read of an older message made after it
// does not move it back, and the message is read. And a send of an older
// message arriving after the mark-read (delayed, retried) is read.
func TestMarkReadSkew(t *testing.T) {
	db, ctx, alice, bob, id := convFixture(t)
	ahead := store.Message{Room: id, ID: store.MessageIDAt(time.Now().Add(10 * time.Minute)), Author: alice, Content: "from the future"}
	if err := db.SendDirect(ctx, ahead, bob); err != nil {
		t.Fatal(err)
	}
	if c := mustConv(t, db, ctx, bob.Login, id); c.Unread != 1 {
		t.Fatalf("Unread = %d, want 1", c.Unread)
	}
	if _, err := db.MarkRead(ctx, bob.Login, id, ahead.ID); err != nil {
		t.Fatal(err)
	}
	if c := mustConv(t, db, ctx, bob.Login, id); c.Unread != 0 {
		t.Errorf("Unread after marking read a message from a clock ahead = %d, want 0", c.Unread)
	}

	if _, err := db.MarkRead(ctx, bob.Login, id, store.NewMessageID()); err != nil {
		t.Fatal(err)
	}
	if c := mustConv(t, db, ctx, bob.Login, id); c.Unread != 0 || c.ReadUpTo != ahead.ID {
		t.Errorf("after marking read an older id: Unread = %d, ReadUpTo = %v; want 0 and %v", c.Unread, c.ReadUpTo, ahead.ID)
	}

	late := store.Message{Room: id, ID: store.MessageIDAt(time.Now().Add(-time.Minute)), Author: alice, Content: "delayed"}
	if err := db.SendDirect(ctx, late, bob); err != nil {
		t.Fatal(err)
	}
	c := mustConv(t, db, ctx, bob.Login, id)
	if c.Unread != 0 || c.LastMessage.ID != ahead.ID {
		t.Errorf("after a delayed older send: Unread = %d, last = %v; want 0 and the newest, %v", c.Unread, c.LastMessage.ID, ahead.ID)
	}
}

// insertUnreadRow is how the versions before read marks recorded an unread
// message: a row of its own after the conversation's.
const insertUnreadRow = `INSERT INTO conversations_by_user (login, conversation_id, message_id) VALUES (?, ?, ?) USING TIMESTAMP ?`

// TestInboxStrayRows writes what races and older versions leave behind: an
// unread row without a conversation row, rows with only last_hidden_id,
// left_at or read_upto. None is an entry. And a burst of messages adds no
// row to the recipient's inbox partition, whose count stops at UnreadCap.
func TestInboxStrayRows(t *testing.T) {
	db, ctx, alice, bob, id := convFixture(t)
	stray := []struct {
		stmt string
		args []any
	}{
		{insertUnreadRow, []any{alice.Login, "deleted-group", gocql.UUID(store.NewMessageID()), time.Now().UnixMicro()}},
		{hideLast + summaryRow, []any{time.Now().UnixMicro(), gocql.UUID(store.NewMessageID()), alice.Login, "hidden-only", sentinelID}},
		{closeWindowStmt, []any{[]time.Time{time.Now()}, alice.Login, "left-only", sentinelID}},
		{setReadMark, []any{time.Now().UnixMicro(), gocql.UUID(store.NewMessageID()), alice.Login, "marked-only", sentinelID}},
	}
	for _, s := range stray {
		if err := db.query(ctx, s.stmt, s.args...).Exec(); err != nil {
			t.Fatal(err)
		}
	}
	const many = 250
	var last store.Message
	for i := range many {
		last = store.Message{Room: id, ID: store.MessageIDAt(time.Now().Add(time.Duration(i-many) * time.Second)), Author: bob, Content: fmt.Sprint(i)}
		if err := db.SendDirect(ctx, last, alice); err != nil {
			t.Fatal(err)
		}
	}
	inbox, err := db.Inbox(ctx, alice.Login)
	if err != nil {
		t.Fatal(err)
	}
	if len(inbox) != 1 || inbox[0].ID != id || inbox[0].Unread != store.UnreadCap || !reflect.DeepEqual(inbox[0].LastMessage, last) {
		t.Errorf("Inbox = %+v, want only %q with %d unread (the cap) and last message %+v", inbox, id, store.UnreadCap, last)
	}
	for _, other := range []string{"deleted-group", "hidden-only", "left-only", "marked-only"} {
		if c, err := db.Conversation(ctx, alice.Login, other); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Conversation(%q) = %+v, %v; want ErrNotFound", other, c, err)
		}
	}
	var rows int
	if err := db.query(ctx, `SELECT count(*) FROM conversations_by_user WHERE login = ?`, alice.Login).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if want := 1 + len(stray); rows != want {
		t.Errorf("alice's inbox partition has %d rows after %d messages, want %d: one per conversation and stray row", rows, many, want)
	}
}

// TestHideLastMessage hides the last message of a direct conversation and
// of a group: the entries show it hidden; hiding an older one does not hide
// the last; a newer message is not hidden.
func TestHideLastMessage(t *testing.T) {
	db, ctx, alice, bob, id := convFixture(t)
	send := func(content string) store.Message {
		t.Helper()
		m := store.Message{Room: id, ID: store.NewMessageID(), Author: alice, Content: content}
		if err := db.SendDirect(ctx, m, bob); err != nil {
			t.Fatal(err)
		}
		return m
	}
	hide := func(m store.Message) {
		t.Helper()
		if _, err := db.HideMessage(ctx, m, m.Author); err != nil {
			t.Fatal(err)
		}
	}
	wantLast := func(what string, want store.Message) {
		t.Helper()
		for _, login := range []string{alice.Login, bob.Login} {
			if got := mustConv(t, db, ctx, login, id).LastMessage; !reflect.DeepEqual(got, want) {
				t.Errorf("%s: last message of %q = %+v, want %+v", what, login, got, want)
			}
		}
	}
	first := send("first")
	second := send("second")
	hide(first)
	wantLast("older hidden", second)
	hide(second)
	second.Hidden = true
	wantLast("last hidden", second)
	hide(first) // an older hide arriving late changes nothing
	wantLast("older hidden again", second)
	third := send("third")
	wantLast("newer message", third)

	// A group: its members' entries.
	g := store.Room{Name: unique("hide"), Kind: store.PrivateGroup, Creator: alice, CreatedAt: time.Now()}
	if err := db.CreateRoom(ctx, g); err != nil {
		t.Fatal(err)
	}
	r, _, err := db.AddGroupMember(ctx, g.Name, alice, bob, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	m := store.Message{Room: g.Name, ID: store.NewMessageID(), Author: bob, Content: "oops"}
	if err := db.PostGroupMessage(ctx, m, r.Participants); err != nil {
		t.Fatal(err)
	}
	hide(m)
	m.Hidden = true
	for _, login := range []string{alice.Login, bob.Login} {
		if got := mustConv(t, db, ctx, login, g.Name).LastMessage; !reflect.DeepEqual(got, m) {
			t.Errorf("group: last message of %q = %+v, want %+v", login, got, m)
		}
	}

	// An unknown message: ErrNotFound, and no row is made.
	ghost := store.Message{Room: id, ID: store.NewMessageID(), Author: alice, Content: "never sent"}
	if _, err := db.HideMessage(ctx, ghost, alice); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("HideMessage of no message = %v, want ErrNotFound", err)
	}
}

// TestGhostRows plants what a HideMessage racing a DeleteRoom leaves: rows
// holding only visible = false, among real messages. Readers skip them and
// still fill their pages.
func TestGhostRows(t *testing.T) {
	db, ctx, alice, _, _ := convFixture(t)
	room := unique("ghosts")
	var want []store.Message
	for i := range 6 {
		m := store.Message{Room: room, ID: store.NewMessageID(), Author: alice, Content: fmt.Sprint(i)}
		if err := db.PostMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
		want = append([]store.Message{m}, want...)
		ghost := store.Message{Room: room, ID: store.NewMessageID(), Author: alice}
		for _, c := range messageCopies {
			if err := db.query(ctx, fmt.Sprintf(`UPDATE %s SET visible = false WHERE %s`, c.table, c.where), c.key(ghost)...).Exec(); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.Message(ctx, ghost.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Message(ghost) = %v, want ErrNotFound", err)
		}
	}
	pages := map[string]func(before store.MessageID) ([]store.Message, error){
		"Messages": func(before store.MessageID) ([]store.Message, error) {
			return db.Messages(ctx, room, before, 2)
		},
		"MessagesByAuthor": func(before store.MessageID) ([]store.Message, error) {
			return db.MessagesByAuthor(ctx, alice.Login, before, 2)
		},
		"GroupMessages": func(before store.MessageID) ([]store.Message, error) {
			return db.GroupMessages(ctx, room, []store.Window{{From: time.Now().Add(-time.Hour)}}, before, 2)
		},
	}
	for name, page := range pages {
		var got []store.Message
		for before := (store.MessageID{}); ; {
			msgs, err := page(before)
			if err != nil {
				t.Fatalf("%s = %v", name, err)
			}
			if len(msgs) == 0 {
				break
			}
			if len(msgs) != 2 {
				t.Errorf("%s page of %d, want full pages of 2", name, len(msgs))
			}
			got = append(got, msgs...)
			before = msgs[len(msgs)-1].ID
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s read %d messages %v, want %d", name, len(got), got, len(want))
		}
	}
	// The log has no event of a ghost (no hide logged it), and its
	// messages are the real ones.
	evs, err := db.RoomEvents(ctx, room, store.MessageID{}, 100)
	if err != nil || len(evs) != len(want) {
		t.Errorf("RoomEvents = %d events, %v; want %d", len(evs), err, len(want))
	}
}

// TestDeleteGroupIndex deletes a group: its messages leave the index, and
// the members' entries go.
func TestDeleteGroupIndex(t *testing.T) {
	db, ctx, alice, bob, _ := convFixture(t)
	g := store.Room{Name: unique("gone"), Kind: store.PrivateGroup, Creator: alice, CreatedAt: time.Now()}
	if err := db.CreateRoom(ctx, g); err != nil {
		t.Fatal(err)
	}
	r, _, err := db.AddGroupMember(ctx, g.Name, alice, bob, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var ids []store.MessageID
	for _, at := range []time.Time{time.Now().Add(-50 * time.Hour), time.Now()} {
		m := store.Message{Room: g.Name, ID: store.MessageIDAt(at), Author: bob, Content: "x"}
		if err := db.PostGroupMessage(ctx, m, r.Participants); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	if _, _, err := db.DeleteRoom(ctx, g.Name, alice); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if m, err := db.Message(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Message(%v) after DeleteRoom = %+v, %v; want ErrNotFound", id, m, err)
		}
	}
	if msgs, err := db.MessagesByAuthor(ctx, bob.Login, store.MessageID{}, 10); err != nil || len(msgs) != 0 {
		t.Errorf("MessagesByAuthor(bob) after DeleteRoom = %+v, %v; want none", msgs, err)
	}
	for _, login := range []string{alice.Login, bob.Login} {
		if inbox, err := db.Inbox(ctx, login); err != nil || len(inbox) != 0 {
			t.Errorf("Inbox(%q) after DeleteRoom = %+v, %v; want empty", login, inbox, err)
		}
	}
}

// TestAddGroupMemberRepairs: a creator whose entry CreateRoom failed to
// write gets a window when added again; a participant with a window does
// not get a second.
func TestAddGroupMemberRepairs(t *testing.T) {
	db, ctx, alice, _, _ := convFixture(t)
	g := store.Room{Name: unique("repair"), Kind: store.PrivateGroup, Creator: alice, CreatedAt: time.Now().Add(-time.Hour)}
	if err := db.CreateRoom(ctx, g); err != nil {
		t.Fatal(err)
	}
	if err := db.query(ctx, deleteConversation, time.Now().UnixMicro(), alice.Login, g.Name).Exec(); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Truncate(time.Second)
	if _, _, err := db.AddGroupMember(ctx, g.Name, alice, alice, at); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.AddGroupMember(ctx, g.Name, alice, alice, at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if ws := mustConv(t, db, ctx, alice.Login, g.Name).Windows; len(ws) != 1 || !ws[0].From.Equal(at) || !ws[0].To.IsZero() {
		t.Errorf("Windows after the repair = %v, want one from %v", ws, at)
	}
}

// TestUnreadBurst sends a burst of direct messages to one user
// (storetest.UnreadBurst, 100,000 without the race detector): their inbox
// reads with the count capped, and its partition holds one row, the
// conversation's.
func TestUnreadBurst(t *testing.T) {
	db := mustOpen(t, testConfig(t))
	victim := storetest.RunUnreadBurst(t, db)
	var rows int
	if err := db.query(t.Context(), `SELECT count(*) FROM conversations_by_user WHERE login = ?`, victim).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 1 {
		t.Errorf("the inbox partition of %q holds %d rows after the burst, want 1", victim, rows)
	}
}
