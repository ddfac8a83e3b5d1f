package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/killrchat/chatql/notify/webpush"
	"github.com/killrchat/chatql/notify/webpush/pushtest"
	"github.com/killrchat/chatql/store"
)

// BenchmarkSendWithNotices is the cost of the outbox on the post path: a
// direct message to an offline user through the API on the embedded store,
// with push notifications and email digests off (no notice is written)
// and push on (its notice is
// written with the message, and the notifier reads it and decides: the
// recipient has no subscription, so nothing is sent).
func BenchmarkSendWithNotices(b *testing.B) {
	for _, push := range []bool{false, true} {
		b.Run(fmt.Sprint("push=", push), func(b *testing.B) {
			cfg := testConfig(b)
			cfg.Push = push
			if !push {
				cfg.EmailDigestAfter = 0
			}
			ts := startServer(b, cfg)
			alice := ts.user(b, "alice")
			ts.user(b, "bob")
			for b.Loop() {
				mustDo(b, alice, `mutation { sendDirectMessage(to: "bob", content: "hello") { id } }`, nil, nil)
			}
		})
	}
}

// BenchmarkSendBehindPushBacklog is a post's latency while the outbox
// holds a backlog of notices for a push service that is down, and
// without: a direct message to an offline user through the API on the
// embedded store, push on, with no backlog and with one of 100,000
// notices (CHAT_OUTBOX_BACKLOG's) to 64 users mentioned in a room, all
// subscribed at the dead service. The backlog is written through the
// store of a server with push off (no notifier), two minutes back; then
// the server restarts on the same data with push on, its notifier polling
// every 20 ms and resting the dead service 500 ms at most, as the push
// tests do, to make its work on the backlog as frequent as it gets.
func BenchmarkSendBehindPushBacklog(b *testing.B) {
	size := 100_000
	if v := os.Getenv("CHAT_OUTBOX_BACKLOG"); v != "" {
		var err error
		if size, err = strconv.Atoi(v); err != nil {
			b.Fatalf("CHAT_OUTBOX_BACKLOG=%q: want a number of notices", v)
		}
	}
	for _, backlog := range []int{0, size} {
		b.Run(fmt.Sprint("backlog=", backlog), func(b *testing.B) {
			dead := pushtest.New(b)
			dead.FailFor(time.Hour, 503, "")
			cfg := pushConfig(testConfig(b))
			quiet := cfg
			quiet.Push, quiet.EmailDigestAfter = false, 0
			ts := startServer(b, quiet)
			alice := ts.user(b, "alice")
			ts.user(b, "bob")
			fillPushBacklog(b, ts, cfg.VAPIDPrivateKey, dead, backlog)
			if err := ts.Server.Close(context.Background()); err != nil {
				b.Fatal(err)
			}
			ts = startServer(b, cfg)
			var login struct{ Login struct{ Token string } }
			mustDo(b, ts.Client, `mutation { login(login: "alice", password: "password-alice") { token } }`, nil, &login)
			alice = ts.Client.WithToken(login.Login.Token)
			for b.Loop() {
				mustDo(b, alice, `mutation { sendDirectMessage(to: "bob", content: "hello") { id } }`, nil, nil)
			}
		})
	}
}

// fillPushBacklog writes size notices through the server's store: posts
// by host to a room, two minutes back, each mentioning the room's 64 other
// members, who are subscribed at the dead service for the VAPID key.
func fillPushBacklog(b *testing.B, ts *testServer, vapidKey string, dead *pushtest.Service, size int) {
	b.Helper()
	ctx := context.Background()
	key, err := webpush.ParseVAPIDKey(vapidKey)
	if err != nil {
		b.Fatal(err)
	}
	const members = 64
	mustDo(b, ts.user(b, "host"), createRoom, map[string]any{"n": "busy"}, nil)
	logins := make([]string, members)
	for i := range logins {
		logins[i] = fmt.Sprint("away", i)
		mustDo(b, ts.user(b, logins[i]), joinRoom, map[string]any{"r": "busy"}, nil)
		sub, err := dead.Subscribe(key.PublicKey())
		if err != nil {
			b.Fatal(err)
		}
		if err := ts.Store().AddPushSubscription(ctx, logins[i], store.PushSubscription{Endpoint: sub.Endpoint, P256dh: sub.P256dh, Auth: sub.Auth, Device: "phone"}); err != nil {
			b.Fatal(err)
		}
	}
	host := store.UserRef{Login: "host"}
	posts := size / members
	start := time.Now().Add(-2 * time.Minute)
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for range 8 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < posts; i = int(next.Add(1) - 1) {
				m := store.Message{Room: "busy", ID: store.MessageIDAt(start.Add(time.Duration(i) * time.Microsecond)), Author: host, Content: fmt.Sprint("all hands ", i)}
				notices := make([]store.Notice, members)
				for j, login := range logins {
					notices[j] = store.Notice{Recipient: login, Kind: store.NoticeMention}
				}
				if err := ts.Store().PostMessage(ctx, m, notices...); err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		b.Fatal(err)
	}
}
