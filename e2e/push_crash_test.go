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
// notification the test's push service decrypted. A notice the killed
// server pushed but had not marked done is pushed again after the restart
// (at least once): the test counts those repeats.
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
	told := map[string]int{}
	eventually(t, 30*time.Second, "every acknowledged message's notice is pushed", func() (bool, any) {
		clear(told)
		for _, m := range service.Messages(sub.Endpoint) {
			var note notify.Notification
			if err := json.Unmarshal(m.Plaintext, &note); err != nil {
				t.Fatalf("a push that is no notification: %q", m.Plaintext)
			}
			for _, id := range note.Notices {
				told[id]++
			}
		}
		var missing []string
		for _, id := range want {
			if told[id] == 0 {
				missing = append(missing, id)
			}
		}
		return len(missing) == 0, missing
	})
	repeats := 0
	for _, n := range told {
		repeats += n - 1
	}
	t.Logf("%d acknowledged messages, %d notices pushed, %d repeated after the kill", len(want), len(told), repeats)
}
