package notify

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/killrchat/chatql/notify/webpush"
	"github.com/killrchat/chatql/notify/webpush/pushtest"
	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/store/embedded"
)

// The backlog of TestBacklogBehindDeadService: backlogSize notices, or
// CHAT_OUTBOX_BACKLOG's (1000000 for the million: see
// BENCHMARKS.md), each message mentioning noticesPerPost of
// backlogRecipients, every one subscribed at the dead push service.
const (
	backlogSize       = 100_000
	backlogRecipients = 512
	noticesPerPost    = 64
	backlogRooms      = 8
)

// TestBacklogBehindDeadService fills the outbox of an embedded store with
// a backlog of notices (100,000, or CHAT_OUTBOX_BACKLOG's) whose
// recipients' push service is down, and runs the notifier until it has
// read the backlog twice over: its heap grows by a bounded amount, and a
// poll of a shard reads a bounded number of notices and subscriptions
// (maxIdle left by each of its two reads, and a page past it), not a
// number that grows with the backlog; the dead service is tried about once
// a backoff, however many notices wait for it.
func TestBacklogBehindDeadService(t *testing.T) {
	size := backlogSize
	if v := os.Getenv("CHAT_OUTBOX_BACKLOG"); v != "" {
		var err error
		if size, err = strconv.Atoi(v); err != nil || size < noticesPerPost {
			t.Fatalf("CHAT_OUTBOX_BACKLOG=%q: want a number of notices", v)
		}
	}
	if testing.Short() {
		size = 10_000
	}
	ctx := t.Context()
	db, err := embedded.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	dead := pushtest.New(t)
	dead.FailFor(time.Hour, 503, "")
	key, err := webpush.GenerateVAPIDKey()
	if err != nil {
		t.Fatal(err)
	}
	sender, err := webpush.NewSender(webpush.Config{Key: key, Contact: "mailto:ops@example.com", AllowLoopback: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sender.Close)

	began := time.Now()
	fillBacklog(t, ctx, db, dead, key, size)
	t.Logf("%d notices written in %v", size, time.Since(began).Round(time.Millisecond))

	counted := &countingOutbox{Outbox: db}
	n := &Notifier{
		Outbox: counted, Subscriptions: countingSubscriptions{db, counted},
		Push: sender, Compose: composeCount, Holder: "backlog", Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Lag: time.Second, Poll: 5 * time.Millisecond, MaxBackoff: 100 * time.Millisecond,
		drained: counted.drainBegins,
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	ctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	began = time.Now()
	go func() {
		defer close(done)
		n.Run(ctx)
	}()
	for counted.notices.Load() < 2*int64(size) {
		select {
		case <-done:
			t.Fatal("the notifier stopped")
		case <-time.After(10 * time.Millisecond):
		}
	}
	ran := time.Since(began)
	var during runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&during)
	stop()
	<-done

	// Resting Poll at first, then twice as long each time up to
	// MaxBackoff: a few tries to reach the cap, then about one a cap, by
	// each of the shards that meets its rest's end.
	tries, doubling := dead.Attempts(), 6
	allowed := store.NoticeShards * (doubling + 2*int(ran/n.MaxBackoff) + 2)
	growth := int64(during.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("backlog %d: the notifier read %d notices in %v (%d polls of a shard), at most %d notices, %d subscriptions and %d pages a poll; %d tries of the dead service; heap %d MiB before, %+d MiB after",
		size, counted.notices.Load(), ran.Round(time.Millisecond), counted.polls.Load(), counted.maxNotices.Load(), counted.maxSubscriptions.Load(), counted.maxPages.Load(), tries,
		before.HeapAlloc>>20, growth>>20)
	if tries > allowed {
		t.Errorf("the dead service was tried %d times in %v, more than about once a backoff (%d)", tries, ran, allowed)
	}
	if max := int64(2 * (maxIdle + pageSize)); counted.maxNotices.Load() > max {
		t.Errorf("a poll read %d notices, more than %d", counted.maxNotices.Load(), max)
	}
	if max := int64(2 * (maxIdle + pageSize)); counted.maxSubscriptions.Load() > max {
		t.Errorf("a poll read the subscriptions of %d recipients, more than %d", counted.maxSubscriptions.Load(), max)
	}
	// What is live while it runs: the pages and store iterators of the
	// 16 shards' readers in flight, and the bounded maps.
	if growth > 128<<20 {
		t.Errorf("the heap grew by %d MiB while the notifier read the backlog", growth>>20)
	}
	if pending, err := db.PendingNotices(context.Background(), 0, store.MessageID{}, 1); err != nil || len(pending) == 0 {
		t.Errorf("shard 0 has no notice pending (%v): the backlog was not kept for the service's return", err)
	}
}

// fillBacklog writes size notices to the store, a message mentioning
// noticesPerPost recipients at a time, an hour ago and before, from a few
// writers, and subscribes each recipient at the dead service.
func fillBacklog(t *testing.T, ctx context.Context, db *embedded.DB, dead *pushtest.Service, key *webpush.VAPIDKey, size int) {
	t.Helper()
	author := store.Account{User: store.User{UserRef: store.UserRef{Login: "author", Firstname: "Ann", Lastname: "Author"}, Bio: "writes"}, PassHash: []byte("x")}
	if err := db.CreateUser(ctx, author); err != nil {
		t.Fatal(err)
	}
	var rooms []string
	for i := range backlogRooms {
		r := store.Room{Name: fmt.Sprint("backlog-", i), Creator: author.UserRef, CreatedAt: time.Now(), Banner: "busy", Kind: store.PublicRoom}
		if err := db.CreateRoom(ctx, r); err != nil {
			t.Fatal(err)
		}
		rooms = append(rooms, r.Name)
	}
	recipients := make([]string, backlogRecipients)
	for i := range recipients {
		recipients[i] = fmt.Sprint("away", i)
		sub, err := dead.Subscribe(key.PublicKey())
		if err != nil {
			t.Fatal(err)
		}
		if err := db.AddPushSubscription(ctx, recipients[i], store.PushSubscription{Endpoint: sub.Endpoint, P256dh: sub.P256dh, Auth: sub.Auth, Device: "phone"}); err != nil {
			t.Fatal(err)
		}
	}
	posts := size / noticesPerPost
	start := time.Now().Add(-time.Hour - time.Duration(posts)*time.Millisecond)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < posts; i = int(next.Add(1) - 1) {
				m := store.Message{Room: rooms[i%len(rooms)], ID: store.MessageIDAt(start.Add(time.Duration(i) * time.Millisecond)), Author: author.UserRef, Content: fmt.Sprint("@all message ", i)}
				notices := make([]store.Notice, noticesPerPost)
				for j := range notices {
					notices[j] = store.Notice{Recipient: recipients[(i*noticesPerPost+j)%len(recipients)], Kind: store.NoticeMention}
				}
				if err := db.PostMessage(ctx, m, notices...); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// composeCount words a notification of the notices' count: the chat's
// rules (chat.Service.ComposeNotification) are not this test's subject.
func composeCount(_ context.Context, notices []store.Notice) (Notification, bool, error) {
	note := Notification{Kind: notices[0].Kind, Conversation: notices[0].Room, Title: "Ann in " + notices[0].Room, Body: fmt.Sprintf("%d new messages", len(notices)), Count: len(notices)}
	for _, nt := range notices[max(len(notices)-50, 0):] {
		note.Notices = append(note.Notices, nt.ID.String())
	}
	return note, true, nil
}

// countingOutbox counts what the notifier reads of each shard in each
// poll (drainBegins), and keeps the most.
type countingOutbox struct {
	store.Outbox
	mu                                     sync.Mutex
	shards                                 [store.NoticeShards]struct{ notices, subscriptions, pages int64 }
	notices, polls                         atomic.Int64
	maxNotices, maxSubscriptions, maxPages atomic.Int64
}

// drainBegins is the notifier's drained: a poll of shard begins.
func (c *countingOutbox) drainBegins(shard int) {
	c.mu.Lock()
	c.shards[shard] = struct{ notices, subscriptions, pages int64 }{}
	c.mu.Unlock()
	c.polls.Add(1)
}

func (c *countingOutbox) PendingNotices(ctx context.Context, shard int, after store.MessageID, limit int) ([]store.Notice, error) {
	page, err := c.Outbox.PendingNotices(ctx, shard, after, limit)
	c.mu.Lock()
	s := &c.shards[shard]
	s.notices += int64(len(page))
	s.pages++
	raise(&c.maxNotices, s.notices)
	raise(&c.maxPages, s.pages)
	c.mu.Unlock()
	c.notices.Add(int64(len(page)))
	return page, err
}

func (c *countingOutbox) subscriptionsRead(login string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := &c.shards[store.NoticeShard(login)]
	s.subscriptions++
	raise(&c.maxSubscriptions, s.subscriptions)
}

func raise(m *atomic.Int64, v int64) {
	for old := m.Load(); v > old && !m.CompareAndSwap(old, v); old = m.Load() {
	}
}

// countingSubscriptions counts the reads of subscriptions in the poll of
// the recipient's shard.
type countingSubscriptions struct {
	*embedded.DB
	counted *countingOutbox
}

func (c countingSubscriptions) PushSubscriptions(ctx context.Context, login string) ([]store.PushSubscription, error) {
	c.counted.subscriptionsRead(login)
	return c.DB.PushSubscriptions(ctx, login)
}
