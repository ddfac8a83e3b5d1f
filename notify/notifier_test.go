package notify

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/killrchat/chatql/notify/webpush"
	"github.com/killrchat/chatql/notify/webpush/pushtest"
	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/store/embedded"
)

// TestRecordedSendIsPushedAgain plays the notifier's restart after a
// SIGKILL that struck between recording a notification (RecordPushSends)
// and marking its notices done: the next notifier pushes that very
// notification again, the same bytes with the conversation's Topic, and
// then the notices the killed one had not read, in a notification of
// their own; no notice is in two notifications, and the send is
// forgotten once its notices are done.
func TestRecordedSendIsPushedAgain(t *testing.T) {
	ctx := t.Context()
	db, err := embedded.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	service := pushtest.New(t)
	key, err := webpush.GenerateVAPIDKey()
	if err != nil {
		t.Fatal(err)
	}
	sender, err := webpush.NewSender(webpush.Config{Key: key, Contact: "mailto:ops@example.com", AllowLoopback: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sender.Close)
	author := store.Account{User: store.User{UserRef: store.UserRef{Login: "author"}}, PassHash: []byte("x")}
	if err := db.CreateUser(ctx, author); err != nil {
		t.Fatal(err)
	}
	room := store.Room{Name: "tea", Creator: author.UserRef, CreatedAt: time.Now(), Banner: "tea"}
	if err := db.CreateRoom(ctx, room); err != nil {
		t.Fatal(err)
	}
	sub, err := service.Subscribe(key.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	if err := db.AddPushSubscription(ctx, "bob", store.PushSubscription{Endpoint: sub.Endpoint, P256dh: sub.P256dh, Auth: sub.Auth}); err != nil {
		t.Fatal(err)
	}
	var notices []store.Notice
	at := time.Now().Add(-time.Hour)
	for i := range 3 {
		m := store.Message{Room: room.Name, ID: store.MessageIDAt(at.Add(time.Duration(i) * time.Millisecond)), Author: author.UserRef, Content: "@bob tea?"}
		n := store.Notice{ID: m.ID, Recipient: "bob", Kind: store.NoticeMention, Room: room.Name, From: author.UserRef}
		if err := db.PostMessage(ctx, m, n); err != nil {
			t.Fatal(err)
		}
		notices = append(notices, n)
	}
	// The killed notifier read the first two, recorded their
	// notification, and may or may not have pushed it.
	killed, _, _ := composeCount(ctx, notices[:2])
	killed.Body = "worded by the killed notifier"
	payload, err := json.Marshal(killed)
	if err != nil {
		t.Fatal(err)
	}
	shard := store.NoticeShard("bob")
	if err := db.RecordPushSends(ctx, shard, []store.PushSend{{Recipient: "bob", Room: room.Name, Notices: []store.MessageID{notices[0].ID, notices[1].ID}, Payload: payload}}); err != nil {
		t.Fatal(err)
	}

	n := &Notifier{
		Outbox: db, Subscriptions: db, Push: sender, Compose: composeCount, Holder: "restarted",
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Lag: time.Second, Poll: 5 * time.Millisecond,
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.Run(runCtx)
	}()
	deadline := time.After(30 * time.Second)
	for n.Handled() < 3 {
		select {
		case <-deadline:
			t.Fatalf("the notifier handled %d notices of 3", n.Handled())
		case <-time.After(5 * time.Millisecond):
		}
	}
	stop()
	<-done

	got := service.Messages(sub.Endpoint)
	if len(got) != 2 {
		t.Fatalf("%d pushes, want the recorded one and one of the third notice: %q", len(got), got)
	}
	if string(got[0].Plaintext) != string(payload) || got[0].Topic != topic(room.Name) {
		t.Errorf("the first push is %s (topic %q), want the recorded %s (topic %q)", got[0].Plaintext, got[0].Topic, payload, topic(room.Name))
	}
	var third Notification
	if err := json.Unmarshal(got[1].Plaintext, &third); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(third.Notices, []string{notices[2].ID.String()}) || got[1].Topic != topic(room.Name) {
		t.Errorf("the second push is %s, want one of the third notice alone", got[1].Plaintext)
	}
	if sends, err := db.PushSends(ctx, shard, []string{"bob"}); err != nil || len(sends) != 0 {
		t.Errorf("the sends after the notices are done: %+v, %v; want none", sends, err)
	}
	if pending, err := db.PendingNotices(ctx, shard, store.MessageID{}, 10); err != nil || len(pending) != 0 {
		t.Errorf("pending notices after the restart: %v, %v; want none", pending, err)
	}
}

// cursorMoves records a shard's cursor moves.
type cursorMoves struct {
	store.Outbox
	moves []store.MessageID
}

func (c *cursorMoves) SetNoticeCursor(_ context.Context, _ int, upTo store.MessageID) error {
	c.moves = append(c.moves, upTo)
	return nil
}

// TestCursorMovesAQuarterOfLagAtATime: polled every second with nothing
// to tell, a shard's cursor moves once a quarter of Lag, not once a poll
// (each move is a durable write), and never stays further behind.
func TestCursorMovesAQuarterOfLagAtATime(t *testing.T) {
	t0 := time.Now()
	now := t0
	out := &cursorMoves{}
	n := &Notifier{Outbox: out, Lag: time.Minute, Now: func() time.Time { return now }}
	var cursor store.MessageID
	for s := range 121 {
		now = t0.Add(time.Duration(s) * time.Second)
		moved, err := n.advance(context.Background(), 0, cursor, store.MessageID{})
		if err != nil {
			t.Fatal(err)
		}
		if k := len(out.moves); k > 0 && moved != out.moves[k-1] {
			t.Fatalf("advance returned %v, not its last move %v", moved, out.moves[k-1])
		}
		cursor = moved
		if behind := now.Add(-time.Minute).Sub(cursor.Time()); behind >= time.Minute/4 {
			t.Fatalf("at %ds the cursor is %v behind Lag ago, want less than a quarter of Lag", s, behind)
		}
	}
	if len(out.moves) != 9 {
		t.Fatalf("two minutes of polls moved the cursor %d times, want 9 (the first poll, then every 15 s)", len(out.moves))
	}
}

// cursorReads counts the notifier's reads of the cursors and its drains.
type cursorReads struct {
	store.Outbox
	reads, drains atomic.Int64
}

func (c *cursorReads) NoticeCursor(ctx context.Context, shard int) (store.MessageID, error) {
	c.reads.Add(1)
	return c.Outbox.NoticeCursor(ctx, shard)
}

// TestCursorReadOnceAHold: a holder reads a shard's cursor when it takes
// or renews the lease (a serial read on Cassandra), not at every poll.
func TestCursorReadOnceAHold(t *testing.T) {
	db, err := embedded.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := &cursorReads{Outbox: db}
	n := &Notifier{Outbox: out, Holder: "one", Poll: time.Millisecond, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		drained: func(int) { out.drains.Add(1) }}
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.Run(ctx)
	}()
	for out.drains.Load() < 10*store.NoticeShards {
		select {
		case <-done:
			t.Fatal("the notifier stopped")
		case <-time.After(10 * time.Millisecond):
		}
	}
	stop()
	<-done
	// Every hold here is the first (the lease lasts 15 s).
	if reads, drains := out.reads.Load(), out.drains.Load(); reads > store.NoticeShards {
		t.Fatalf("%d drains read the cursors %d times, want once a shard (%d)", drains, reads, store.NoticeShards)
	}
}
