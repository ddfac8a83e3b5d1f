package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// someAttachments returns n attachments: an image, then other files.
func someAttachments(n int) []store.Attachment {
	as := make([]store.Attachment, n)
	for i := range as {
		as[i] = store.Attachment{ID: store.NewMessageID(), Name: "report é.pdf", ContentType: "application/pdf", Size: int64(1000 + i)}
	}
	if n > 0 {
		as[0] = store.Attachment{ID: as[0].ID, Name: "cat.png", ContentType: "image/png", Size: 4096, Width: 640, Height: 480, Blurhash: `LEHV6nWB2yk8pyo0adR*.7kCMdnj`}
	}
	return as
}

// somePreview returns the preview of a page.
func somePreview(url string) store.LinkPreview {
	return store.LinkPreview{URL: url, Title: "A \"page\"", Description: "Of things.", SiteName: "Example", ImageURL: url + "/og.png"}
}

// withFiles returns m carrying n attachments.
func withFiles(m store.Message, n int) store.Message {
	m.Attachments = someAttachments(n)
	return m
}

// findEvent returns the event of the log with id, failing if there is none.
func findEvent(t *testing.T, what string, log []store.Event, id store.MessageID) store.Event {
	t.Helper()
	for _, ev := range log {
		if ev.ID == id {
			return ev
		}
	}
	t.Fatalf("%s: no event %v in %s", what, id, fmtEvents(log))
	return store.Event{}
}

// testAttachmentsEveryReadPath: a message's attachments (in order) come
// back from every read of it: its stream, by id, by author, a thread, the
// room's and the inboxes' logs, and the inbox entries' last message; in a
// room, a group and a direct conversation.
func testAttachmentsEveryReadPath(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice, bob, dm := dmUsers(t, ctx, s)
	room := mustCreateRoom(t, ctx, s, "files", alice)
	g := mustCreateGroup(t, ctx, s, "filegroup", alice)
	members := mustAddMember(t, ctx, s, g.Name, alice.Login, bob, time.Now()).Participants

	root := withFiles(store.Message{Room: room.Name, ID: store.NewMessageID(), Author: alice, Content: "two files"}, 2)
	if err := s.PostMessage(ctx, root); err != nil {
		t.Fatalf("PostMessage = %v", err)
	}
	replyTo := withFiles(store.Message{Room: room.Name, ID: store.NewMessageID(), Author: bob, Content: "", ReplyTo: root.ID}, 4)
	if err := s.PostMessage(ctx, replyTo); err != nil {
		t.Fatalf("PostMessage(reply) = %v", err)
	}
	checkCopies(t, ctx, s, root)
	checkCopies(t, ctx, s, replyTo)
	replies, err := s.ThreadReplies(ctx, root, store.MessageID{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	checkMessages(t, "ThreadReplies", replies, []store.Message{replyTo})
	log := roomLog(t, s, room.Name, store.MessageID{})
	checkEvent(t, "the room's post", findEvent(t, "RoomEvents", log, root.ID), store.PostedEvent(root))
	checkEvent(t, "the room's reply", findEvent(t, "RoomEvents", log, replyTo.ID), store.PostedEvent(replyTo))

	direct := withFiles(directMessage(alice, bob, store.NewMessageID(), "a file for you"), 1)
	if err := s.SendDirect(ctx, direct, bob); err != nil {
		t.Fatalf("SendDirect = %v", err)
	}
	checkCopies(t, ctx, s, direct, alice.Login, bob.Login)
	ev := findEvent(t, "InboxEvents", inboxLog(t, s, bob.Login, store.MessageID{}), direct.ID)
	if ev.Message == nil || !sameMessage(*ev.Message, direct) {
		t.Errorf("bob's inbox event = %s, want its message %s", fmtEvent(ev), fmtMessage(direct))
	}
	dmReply := withFiles(directMessage(bob, alice, store.NewMessageID(), "back"), 2)
	dmReply.ReplyTo = direct.ID
	if err := s.SendDirect(ctx, dmReply, alice); err != nil {
		t.Fatalf("SendDirect(reply) = %v", err)
	}
	checkCopies(t, ctx, s, dmReply, alice.Login, bob.Login)
	filesOnly := withFiles(directMessage(alice, bob, store.NewMessageID(), ""), 1)
	if err := s.SendDirect(ctx, filesOnly, bob); err != nil {
		t.Fatalf("SendDirect(attachments alone) = %v", err)
	}
	checkCopies(t, ctx, s, filesOnly, alice.Login, bob.Login)
	if _, err := s.DeleteMessage(ctx, filesOnly, alice); err != nil {
		t.Fatal(err)
	}
	checkCopies(t, ctx, s, deleted(filesOnly), alice.Login, bob.Login)
	if dm != direct.Room {
		t.Fatalf("conversation %q, want %q", direct.Room, dm)
	}

	grouped := withFiles(store.Message{Room: g.Name, ID: store.NewMessageID(), Author: bob, Content: "to all"}, 3)
	if err := s.PostGroupMessage(ctx, grouped, members); err != nil {
		t.Fatalf("PostGroupMessage = %v", err)
	}
	checkCopies(t, ctx, s, grouped, alice.Login, bob.Login)
	entry := mustConversation(t, ctx, s, alice.Login, g.Name)
	checkMessages(t, "GroupMessages", mustGroupMessages(t, ctx, s, g.Name, entry.Windows, store.MessageID{}, 10), []store.Message{grouped})
	checkEvent(t, "the group's post", findEvent(t, "RoomEvents", roomLog(t, s, g.Name, store.MessageID{}), grouped.ID), store.PostedEvent(grouped))
}

// previewed returns m with preview p.
func previewed(m store.Message, p store.LinkPreview) store.Message {
	m.Preview = &p
	return m
}

// mustSetPreview sets p as m's preview and checks the event it logs.
func mustSetPreview(t *testing.T, ctx context.Context, s ConversationStore, m store.Message, p store.LinkPreview) store.Event {
	t.Helper()
	ev, err := s.SetPreview(ctx, m, p)
	if err != nil {
		t.Fatalf("SetPreview(%s) = %v", fmtMessage(m), err)
	}
	want := previewed(m, p)
	checkFresh(t, "SetPreview", ev, m.ID)
	checkEvent(t, "SetPreview", ev, store.Event{ID: ev.ID, Kind: store.MessagePreviewed, Room: m.Room, User: m.Author, Message: &want})
	return ev
}

// checkNoPreview checks that SetPreview of m changes nothing.
func checkNoPreview(t *testing.T, ctx context.Context, s ConversationStore, what string, m store.Message) {
	t.Helper()
	ev, err := s.SetPreview(ctx, m, somePreview("https://stale.example"))
	if err != nil {
		t.Fatalf("SetPreview %s = %v, want nil", what, err)
	}
	checkNoEvent(t, "SetPreview "+what, ev)
}

// testSetPreview: a preview reaches every copy and the room's log; an
// edit clears it and keeps the attachments, and a preview of the content
// before the edit is refused; a hide keeps both; a delete clears both and
// refuses previews.
func testSetPreview(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	author, room := chatRoom(t, ctx, s, "preview")
	m := withFiles(store.Message{Room: room.Name, ID: store.NewMessageID(), Author: author.UserRef, Content: "see https://a.example"}, 1)
	if err := s.PostMessage(ctx, m); err != nil {
		t.Fatal(err)
	}
	_, err := s.SetPreview(ctx, store.Message{Room: room.Name, ID: store.NewMessageID(), Author: author.UserRef}, somePreview("https://x.example"))
	wantErr(t, "SetPreview of no message", err, store.ErrNotFound)

	ev := mustSetPreview(t, ctx, s, m, somePreview("https://a.example"))
	m = previewed(m, somePreview("https://a.example"))
	checkCopies(t, ctx, s, m)
	checkEvent(t, "the logged preview", findEvent(t, "RoomEvents", roomLog(t, s, room.Name, m.ID), ev.ID), ev)

	stale := m
	at := time.Now()
	if _, err := s.EditMessage(ctx, m, author.UserRef, "see https://b.example", at); err != nil {
		t.Fatal(err)
	}
	m = edited(m, "see https://b.example", at)
	checkCopies(t, ctx, s, m)
	checkNoPreview(t, ctx, s, "of the content before the edit", stale)
	checkCopies(t, ctx, s, m)

	mustSetPreview(t, ctx, s, m, somePreview("https://b.example"))
	m = previewed(m, somePreview("https://b.example"))
	checkCopies(t, ctx, s, m)

	if _, err := s.HideMessage(ctx, m, author.UserRef); err != nil {
		t.Fatal(err)
	}
	m = hidden(m)
	checkCopies(t, ctx, s, m)

	if _, err := s.DeleteMessage(ctx, m, author.UserRef); err != nil {
		t.Fatal(err)
	}
	m = deleted(m)
	checkCopies(t, ctx, s, m)
	checkNoPreview(t, ctx, s, "of a deleted message", m)
	checkCopies(t, ctx, s, m)
}

// testSetPreviewDirect: a direct message's preview reaches both inbox
// entries and both inbox logs; an edit clears it there too; a delete
// clears the attachments there.
func testSetPreviewDirect(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice, bob, _ := dmUsers(t, ctx, s)
	m := withFiles(directMessage(alice, bob, store.NewMessageID(), "https://c.example"), 2)
	if err := s.SendDirect(ctx, m, bob); err != nil {
		t.Fatal(err)
	}
	ev := mustSetPreview(t, ctx, s, m, somePreview("https://c.example"))
	m = previewed(m, somePreview("https://c.example"))
	checkCopies(t, ctx, s, m, alice.Login, bob.Login)
	for _, login := range []string{alice.Login, bob.Login} {
		checkEvent(t, login+"'s logged preview", findEvent(t, "InboxEvents", inboxLog(t, s, login, m.ID), ev.ID), ev)
	}
	at := time.Now()
	if _, err := s.EditMessage(ctx, m, alice, "no link", at); err != nil {
		t.Fatal(err)
	}
	checkNoPreview(t, ctx, s, "of a direct message before its edit", m)
	m = edited(m, "no link", at)
	checkCopies(t, ctx, s, m, alice.Login, bob.Login)
	if _, err := s.DeleteMessage(ctx, m, alice); err != nil {
		t.Fatal(err)
	}
	checkCopies(t, ctx, s, deleted(m), alice.Login, bob.Login)
}

// testSetPreviewGroup: a group message's preview reaches every member's
// entry; a newer message's entry keeps its own.
func testSetPreviewGroup(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice, bob, _ := dmUsers(t, ctx, s)
	g := mustCreateGroup(t, ctx, s, "previews", alice)
	members := mustAddMember(t, ctx, s, g.Name, alice.Login, bob, time.Now()).Participants
	first := mustPostGroup(t, ctx, s, g.Name, store.NewMessageID(), bob, "https://d.example", members)
	mustSetPreview(t, ctx, s, first, somePreview("https://d.example"))
	first = previewed(first, somePreview("https://d.example"))
	checkCopies(t, ctx, s, first, alice.Login, bob.Login)

	last := withFiles(store.Message{Room: g.Name, ID: store.NewMessageID(), Author: alice, Content: "https://e.example"}, 1)
	if err := s.PostGroupMessage(ctx, last, members); err != nil {
		t.Fatal(err)
	}
	mustSetPreview(t, ctx, s, last, somePreview("https://e.example"))
	last = previewed(last, somePreview("https://e.example"))
	// A late preview of the older message leaves the entries' last alone.
	if _, err := s.SetPreview(ctx, first, somePreview("https://d2.example")); err != nil {
		t.Fatal(err)
	}
	checkCopies(t, ctx, s, last, alice.Login, bob.Login)
	if got := mustMessage(t, ctx, s, first.ID); !sameMessage(got, previewed(first, somePreview("https://d2.example"))) {
		t.Errorf("Message(first) after its second preview = %s", fmtMessage(got))
	}
}

// testSetPreviewRacingEdit: a preview of the content an edit racing it
// replaces never shows, whichever lands first: the edit clears it, or
// SetPreview finds the message edited, or (on a backend that checks
// before it writes) the copies ignore a preview of an older edit.
func testSetPreviewRacingEdit(t *testing.T, s ConversationStore) {
	ctx := newContext(t)
	alice, bob, _ := dmUsers(t, ctx, s)
	room := mustCreateRoom(t, ctx, s, "previewrace", alice)
	for i := range 4 {
		m := withFiles(store.Message{Room: room.Name, ID: store.NewMessageID(), Author: alice, Content: "https://f.example"}, 1)
		direct := i%2 == 1
		if direct {
			m = withFiles(directMessage(alice, bob, store.NewMessageID(), "https://f.example"), 1)
			if err := s.SendDirect(ctx, m, bob); err != nil {
				t.Fatal(err)
			}
		} else if err := s.PostMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
		at := time.Now()
		var wg sync.WaitGroup
		wg.Go(func() {
			if _, err := s.EditMessage(ctx, m, alice, "https://g.example", at); err != nil {
				t.Errorf("EditMessage = %v", err)
			}
		})
		wg.Go(func() {
			if _, err := s.SetPreview(ctx, m, somePreview("https://f.example")); err != nil {
				t.Errorf("SetPreview = %v", err)
			}
		})
		wg.Wait()
		want := edited(m, "https://g.example", at)
		if direct {
			checkCopies(t, ctx, s, want, alice.Login, bob.Login)
		} else {
			checkCopies(t, ctx, s, want)
		}
	}
}
