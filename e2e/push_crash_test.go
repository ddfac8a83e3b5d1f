package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/killrchat/chatql/internal/testenv"
	"github.com/killrchat/chatql/notify"
	"github.com/killrchat/chatql/notify/webpush/pushtest"
)

// TestKilledServerLosesNoNotice runs the real server binary with push on,
// has senders burst direct messages to an offline user, kills the server
// with SIGKILL, restarts it, and waits: every acknowledged message is in a
// notification the test's push service accepted, for each of the user's
// two subscriptions, and no notice is in two different notifications to
// one subscription. A notification the killed server recorded (and may
// have pushed) but had not marked done is pushed again after the restart,
// the same bytes with the same Topic: the phone, whose browser is
// connected, may receive it twice, the same notification (the test counts
// those); the tablet, whose browser is away until the end, has the push
// service replace it (RFC 8030 section 5.4).
func TestKilledServerLosesNoNotice(t *testing.T) {
	bin := buildChatql(t)
	dir := t.TempDir()
	secret := randomHex(32)
	service := pushtest.New(t)
	start := func() *crashServer {
		cfg := testConfig(t)
		cfg.DataDir, cfg.JWTSecret, cfg.BcryptCost = dir, secret, 4
		cfg.PushAllowLoopback = true
		return &crashServer{chatqlProcess: startChatql(t, bin, cfg),
			http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}}
	}
	srv := start()
	users := []string{"ann", "ben", "cat", "dan"}
	tokens := map[string]string{}
	setUpCrashRooms(t, srv, users, users, tokens)
	sub := subscribePush(t, srv.as(tokens["dan"]), service, "phone")
	tablet := subscribePush(t, srv.as(tokens["dan"]), service, "tablet")
	service.Away(tablet.Endpoint, true)

	var killed atomic.Bool
	acked := testenv.NewAcks[string](20 + rand.IntN(40))
	var wg sync.WaitGroup
	for w, sender := range users[:3] {
		c := srv.as(tokens[sender])
		wg.Go(func() {
			for i := 0; ; i++ {
				var out struct{ SendDirectMessage struct{ ID string } }
				err := c.Do(context.Background(), `mutation($c: String!) { sendDirectMessage(to: "dan", content: $c) { id } }`,
					map[string]any{"c": fmt.Sprintf("sender %d message %d", w, i)}, &out)
				if err != nil {
					if !killed.Load() {
						t.Errorf("%s: %v", sender, err)
					}
					return
				}
				acked.Add(out.SendDirectMessage.ID)
			}
		})
	}
	if !acked.Wait(&wg) {
		t.Fatal("every sender stopped before the kill")
	}
	killed.Store(true)
	srv.kill()
	wg.Wait()
	want := acked.List()

	start()
	for _, device := range []pushtest.Subscription{sub, tablet} {
		eventually(t, 30*time.Second, "every acknowledged message's notice is pushed", func() (bool, any) {
			told := map[string]bool{}
			for _, m := range service.Accepted(device.Endpoint) {
				for _, id := range notification(t, m).Notices {
					told[id] = true
				}
			}
			var missing []string
			for _, id := range want {
				if !told[id] {
					missing = append(missing, id)
				}
			}
			return len(missing) == 0, missing
		})
	}
	service.Away(tablet.Endpoint, false)

	// No notice is in two different notifications to one subscription;
	// the same notification may come again.
	for _, device := range []pushtest.Subscription{sub, tablet} {
		in := map[string]pushtest.Message{} // by notice: the first notification of it
		again := 0
		received := service.Messages(device.Endpoint)
		for _, m := range received {
			repeated := false
			for _, id := range notification(t, m).Notices {
				first, ok := in[id]
				switch {
				case !ok:
					in[id] = m
				case first.Topic != m.Topic || string(first.Plaintext) != string(m.Plaintext):
					t.Errorf("notice %s was in two notifications to one subscription:\n%s\n%s", id, first.Plaintext, m.Plaintext)
				default:
					repeated = true
				}
			}
			if repeated {
				again++
			}
		}
		t.Logf("%d acknowledged messages; %d notifications accepted for a subscription, %d received, %d of them again after the kill",
			len(want), len(service.Accepted(device.Endpoint)), len(received), again)
	}
}

// notification decodes a push.
func notification(t *testing.T, m pushtest.Message) notify.Notification {
	t.Helper()
	var note notify.Notification
	if err := json.Unmarshal(m.Plaintext, &note); err != nil {
		t.Fatalf("a push that is no notification: %q", m.Plaintext)
	}
	return note
}
