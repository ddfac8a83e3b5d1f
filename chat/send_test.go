package chat

import (
	"errors"
	"strings"
	"testing"

	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/store/embedded"
)

// TestSendOnce runs sendOnce on the embedded store: a name claimed by a
// send that never stored its message (the server died between) is
// finished by the retry under the claimed id; a later retry returns that
// message, sends nothing and announces the message again; a name is one
// conversation's; a malformed name changes nothing.
func TestSendOnce(t *testing.T) {
	ctx := t.Context()
	db, err := embedded.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r := &Service{Store: db}
	alice := store.UserRef{Login: "alice", Firstname: "A", Lastname: "L"}
	sends := 0
	post := func(m *store.Message) error {
		sends++
		return db.PostMessage(ctx, *m)
	}
	var announced []store.MessageID
	announce := func(m store.Message) { announced = append(announced, m.ID) }
	name := "0193f6c2-7d7e-7c4a-9b1e-3f0f1b2c3d4e"
	unfinished := store.NewMessageID()
	if _, claimed, err := db.ClaimClientMessage(ctx, alice.Login, name, store.ClientMessage{Room: "tea-party", ID: unfinished}); err != nil || !claimed {
		t.Fatalf("ClaimClientMessage = %v, %v", claimed, err)
	}

	retry := store.Message{Room: "tea-party", ID: store.NewMessageID(), Author: alice, Content: "queued offline"}
	got, err := r.sendOnce(ctx, &name, retry, post, announce)
	if err != nil || got.ID != unfinished || sends != 1 {
		t.Fatalf("retry of an unfinished send = %+v, %v after %d sends; want the claimed id %v, sent once", got, err, sends, unfinished)
	}
	again := store.Message{Room: "tea-party", ID: store.NewMessageID(), Author: alice, Content: "queued offline"}
	got, err = r.sendOnce(ctx, &name, again, post, announce)
	if err != nil || got.ID != unfinished || got.Content != "queued offline" || sends != 1 {
		t.Fatalf("retry of a finished send = %+v, %v after %d sends; want the stored message, nothing sent", got, err, sends)
	}
	if len(announced) != 1 || announced[0] != unfinished {
		t.Fatalf("announced %v; want the stored message once, by the retry of the finished send", announced)
	}
	msgs, err := db.Messages(ctx, "tea-party", store.MessageID{}, 10)
	if err != nil || len(msgs) != 1 || msgs[0].ID != unfinished {
		t.Fatalf("history = %+v, %v; want the one message", msgs, err)
	}

	elsewhere := store.Message{Room: "croquet", ID: store.NewMessageID(), Author: alice, Content: "hi"}
	for _, bad := range []string{name, "", "has space", strings.Repeat("x", store.MaxClientMessageIDLength+1), "naïve"} {
		if _, err := r.sendOnce(ctx, &bad, elsewhere, post, announce); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("sendOnce with clientMessageId %q = %v, want ErrInvalid", bad, err)
		}
	}
	if sends != 1 || len(announced) != 1 {
		t.Errorf("%d sends and %d announcements after the refused ones, want 1 and 1", sends, len(announced))
	}
}
