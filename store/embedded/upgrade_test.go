package embedded

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/killrchat/chatql/store"
)

// toPreLogStore turns the store in dir into one as the versions before the
// event logs wrote it: no room_events, inbox_events or inbox_buckets, no
// former members in the groups' rows, and no marker saying they were
// recorded. It leaves the rows stale that those versions' DeleteRoom left:
// the entry of a member who left a deleted group, here for each of
// staleEntries (login, then group).
func toPreLogStore(t *testing.T, dir string, staleEntries ...[2]string) {
	t.Helper()
	db := open(t, dir)
	for _, table := range []string{tableRoomEvents, tableInboxEvents, tableInboxBuckets} {
		if err := db.pdb.DeleteRange(tuple(table), tuple(table).end(), pebble.Sync); err != nil {
			t.Fatal(err)
		}
	}
	b := db.batch()
	b.delete(formerMembersBuilt())
	table := tuple(tableChatRooms)
	err := db.scan(t.Context(), table, table.end(), false, func(k, v []byte) (bool, error) {
		row, err := decode[roomRow](v)
		row.Former = nil
		b.set(k, row)
		return err == nil, err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range staleEntries {
		entry := conversationRow{Kind: string(store.GroupConversation), Windows: []windowRow{{From: time.Now().Add(-time.Hour), To: time.Now()}}}
		entry.setLast(store.Message{Room: e[1], ID: store.NewMessageID(), Author: store.UserRef{Login: "someone"}, Content: "a deleted group's secret"})
		b.set(conversationKey(e[0], e[1]), entry)
		b.setEmpty(unreadKey(e[0], e[1], entry.Last.ID))
	}
	if err := b.commit(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestOpenPreLogStore opens a store written before the event logs: it
// reads as before; each log holds what happened since the upgrade; the
// groups' former members are recorded from the inboxes, and the entries
// that deleted groups left behind are gone.
func TestOpenPreLogStore(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	db := open(t, dir)
	users := map[string]store.UserRef{}
	for _, login := range []string{"alice", "bob", "carol"} {
		u := store.UserRef{Login: login, Firstname: login, Lastname: "L"}
		users[login] = u
		if err := db.CreateUser(ctx, store.Account{User: store.User{UserRef: u}}); err != nil {
			t.Fatal(err)
		}
	}
	alice, bob, carol := users["alice"], users["bob"], users["carol"]
	now := time.Now()
	room := store.Room{Name: "tea-party", Creator: alice, CreatedAt: now.Add(-48 * time.Hour)}
	group := store.Room{Name: "croquet", Kind: store.PrivateGroup, Creator: alice, CreatedAt: now.Add(-48 * time.Hour)}
	hall := store.Room{Name: "hall", Creator: alice, CreatedAt: now}
	for _, r := range []store.Room{room, group, hall} {
		if err := db.CreateRoom(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := db.JoinRoom(ctx, room.Name, bob); err != nil {
		t.Fatal(err)
	}
	old := store.Message{Room: room.Name, ID: store.MessageIDAt(now.Add(-25 * time.Hour)), Author: bob, Content: "before the upgrade"}
	if err := db.PostMessage(ctx, old); err != nil {
		t.Fatal(err)
	}
	for _, u := range []store.UserRef{bob, carol} {
		if _, _, err := db.AddGroupMember(ctx, group.Name, alice, u, now.Add(-47*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	secret := store.Message{Room: group.Name, ID: store.MessageIDAt(now.Add(-46 * time.Hour)), Author: alice, Content: "the group's last word"}
	if err := db.PostGroupMessage(ctx, secret, []store.UserRef{alice, bob, carol}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.LeaveGroup(ctx, group.Name, carol, now.Add(-45*time.Hour)); err != nil {
		t.Fatal(err)
	}
	dm := store.Message{Room: store.DirectConversationID("alice", "bob"), ID: store.MessageIDAt(now.Add(-44 * time.Hour)), Author: alice, Content: "psst"}
	if err := db.SendDirect(ctx, dm, bob); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// bob left a group "chess" that was deleted, and one that became the
	// public room "hall".
	toPreLogStore(t, dir, [2]string{"bob", "chess"}, [2]string{"bob", hall.Name})

	db = open(t, dir)
	defer db.Close()
	if built, err := db.has(formerMembersBuilt()); err != nil || !built {
		t.Errorf("after Open, former members recorded = %v, %v; want true", built, err)
	}
	g, err := db.room(group.Name)
	if err != nil || !slices.Equal(g.Former, []string{"carol"}) {
		t.Errorf("the group's former members after Open = %q, %v; want carol, who left", g.Former, err)
	}
	for _, id := range []string{"chess", hall.Name} {
		if c, err := db.Conversation(ctx, "bob", id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("bob's entry of %q, a group deleted before the upgrade = %+v, %v; want ErrNotFound", id, c, err)
		}
	}
	if inbox, err := db.Inbox(ctx, "bob"); err != nil || len(inbox) != 2 {
		t.Errorf("bob's inbox = %+v, %v; want the group and the direct conversation", inbox, err)
	}

	// The history reads as before; the logs start empty.
	msgs, err := db.Messages(ctx, room.Name, store.MessageID{}, 10)
	if err != nil || len(msgs) != 2 || !msgs[0].System || !reflect.DeepEqual(msgs[1], old) {
		t.Errorf("Messages after the upgrade = %+v, %v; want the post and the join", msgs, err)
	}
	for _, r := range []string{room.Name, group.Name} {
		if evs, err := db.RoomEvents(ctx, r, store.MessageID{}, 10); err != nil || len(evs) != 0 {
			t.Errorf("RoomEvents(%q) of a room made before the logs = %+v, %v; want none", r, evs, err)
		}
	}
	if evs, err := db.InboxEvents(ctx, "bob", store.MessageID{}, 10); err != nil || len(evs) != 0 {
		t.Errorf("bob's inbox log before the upgrade = %+v, %v; want none", evs, err)
	}

	// From here on, everything is logged; a cursor from before the upgrade
	// resumes with it.
	fresh := store.Message{Room: room.Name, ID: store.NewMessageID(), Author: alice, Content: "after the upgrade"}
	if err := db.PostMessage(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	for _, after := range []store.MessageID{{}, old.ID} {
		evs, err := db.RoomEvents(ctx, room.Name, after, 10)
		if err != nil || len(evs) != 1 || evs[0].ID != fresh.ID || evs[0].Kind != store.MessagePosted || !reflect.DeepEqual(*evs[0].Message, fresh) {
			t.Errorf("RoomEvents(%v) after a post = %+v, %v; want its MessagePosted alone", after, evs, err)
		}
	}
	reply := store.Message{Room: dm.Room, ID: store.NewMessageID(), Author: bob, Content: "hm?"}
	if err := db.SendDirect(ctx, reply, alice); err != nil {
		t.Fatal(err)
	}
	if evs, err := db.InboxEvents(ctx, "alice", dm.ID, 10); err != nil || len(evs) != 1 || evs[0].ID != reply.ID || evs[0].Kind != store.DirectMessage {
		t.Errorf("alice's inbox log after a reply = %+v, %v; want its DirectMessage alone", evs, err)
	}

	// carol, who left before the upgrade, is a former member: a hide
	// reaches her entry, and deleting the group deletes it.
	if _, err := db.HideMessage(ctx, secret, alice); err != nil {
		t.Fatal(err)
	}
	if c, err := db.Conversation(ctx, "carol", group.Name); err != nil || !c.LastMessage.Hidden {
		t.Errorf("carol's entry after the hide = %+v, %v; want its last message hidden", c, err)
	}
	if _, _, err := db.DeleteRoom(ctx, group.Name, alice); err != nil {
		t.Fatal(err)
	}
	for _, login := range []string{"alice", "bob", "carol"} {
		if c, err := db.Conversation(ctx, login, group.Name); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s's entry of the deleted group = %+v, %v; want ErrNotFound", login, c, err)
		}
	}

	// Recorded once: a later Open leaves the rows as they are.
	if err := db.pdb.Set(conversationKey("bob", "chess"), must(encode(conversationRow{Kind: string(store.GroupConversation)})), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = open(t, dir)
	defer db.Close()
	if _, err := db.Conversation(ctx, "bob", "chess"); err != nil {
		t.Errorf("a row written after the upgrade, at the next Open = %v; want it kept (the upgrade runs once)", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestOpenPreReadMarkStore opens a store whose inboxes have a row per
// unread message, as the versions before read marks kept them: Open
// converts them into read marks, just before the oldest unread message,
// or at the last message where none is unread; the unread rows are gone,
// a stray one too, and the counts read as before.
func TestOpenPreReadMarkStore(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	db := open(t, dir)
	alice, bob := store.UserRef{Login: "alice"}, store.UserRef{Login: "bob"}
	id := store.DirectConversationID(alice.Login, bob.Login)
	var msgs []store.Message
	for i := range 3 {
		m := store.Message{Room: id, ID: store.MessageIDAt(time.Now().Add(time.Duration(i-3) * time.Minute)), Author: alice, Content: "hello"}
		if err := db.SendDirect(ctx, m, bob); err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	last := msgs[2]

	// As the versions before wrote it: no marks, bob's unread rows for the
	// last two, and alice's for a deleted group she has no entry of.
	b := db.batch()
	for _, login := range []string{alice.Login, bob.Login} {
		k := conversationKey(login, id)
		row, _, err := getRow[conversationRow](db, k)
		if err != nil {
			t.Fatal(err)
		}
		row.Read = store.MessageID{}
		b.set(k, row)
	}
	for _, m := range msgs[1:] {
		b.setEmpty(unreadKey(bob.Login, id, m.ID))
	}
	b.setEmpty(unreadKey(alice.Login, "zz-deleted-group", last.ID))
	b.delete(readMarksBuilt())
	if err := b.commit(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = open(t, dir)
	defer db.Close()
	check := func(login string, unread int, readFrom, readTo store.MessageID) {
		t.Helper()
		c, err := db.Conversation(ctx, login, id)
		if err != nil {
			t.Fatalf("Conversation(%s, %s) = %v", login, id, err)
		}
		if c.Unread != unread || c.ReadUpTo.Compare(readFrom) < 0 || c.ReadUpTo.Compare(readTo) > 0 {
			t.Errorf("Conversation(%s) = %d unread, read up to %v; want %d unread, read up to between %v and %v", login, c.Unread, c.ReadUpTo, unread, readFrom, readTo)
		}
	}
	check(alice.Login, 0, last.ID, last.ID)
	check(bob.Login, 2, msgs[0].ID, store.MinMessageID(msgs[1].ID.Time()))
	var rows []string
	p := tuple(tableConversations)
	err := db.scan(ctx, p, p.end(), false, func(k, _ []byte) (bool, error) {
		rows = append(rows, fmt.Sprintf("%q", k))
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{fmt.Sprintf("%q", conversationKey(alice.Login, id)), fmt.Sprintf("%q", conversationKey(bob.Login, id))}; !slices.Equal(rows, want) {
		t.Errorf("inbox rows after Open = %s, want the two entries' alone: %s", rows, want)
	}
	if built, err := db.has(readMarksBuilt()); err != nil || !built {
		t.Errorf("after Open, read marks built = %v, %v; want true", built, err)
	}
}
