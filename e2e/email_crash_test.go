package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/killrchat/chatql/server"
)

// TestKilledServerKeepsDigest runs the real server binary, has alice send
// bob (away, with a verified address) a direct message, kills the server
// with SIGKILL right after it acknowledged the message (long before the
// digest is due), restarts it on the same data, and waits: the restarted
// server mails bob the digest, once. The kill lands either before the
// notifier kept the message for the digest (then the outbox's notice,
// not marked done, is read again) or after (then the kept digest is in
// the store): both must end in one digest.
func TestKilledServerKeepsDigest(t *testing.T) {
	bin := buildChatql(t)
	mb := startMailbox(t)
	dir, secret := t.TempDir(), randomHex(32)
	start := func() *crashServer {
		cfg := emailConfig(testConfig(t), mb)
		cfg.DataDir, cfg.JWTSecret, cfg.BcryptCost = dir, secret, 4
		cfg.EmailDigestAfter, cfg.EmailDigestEvery = 3*time.Second, time.Hour
		return &crashServer{chatqlProcess: startChatql(t, bin, cfg), http: &http.Client{}}
	}
	srv := start()
	tokens := map[string]string{}
	setUpCrashRooms(t, srv, []string{"alice", "bob"}, []string{"alice"}, tokens)
	bob := srv.as(tokens["bob"])
	verifiedEmail(t, bob, mb, "bob@example.com", 1)

	mustDo(t, srv.as(tokens["alice"]), sendTo, map[string]any{"to": "bob", "c": "are you there?"}, nil)
	srv.kill()
	if n := len(mb.to("bob@example.com")); n != 1 {
		t.Fatalf("%d mails to bob before the digest was due", n)
	}
	start()
	m := mb.wait(t, "bob@example.com", 2)
	if m.header.Get("Subject") != "1 unread message on chatql" {
		t.Fatalf("after the restart, bob got %q:\n%s", m.header.Get("Subject"), m.text)
	}
	if n := len(mb.to("bob@example.com")); n != 2 {
		t.Fatalf("%d mails to bob, want the verification and one digest", n)
	}
}

// TestTwoInstancesSendOneDigest runs two instances on one store, each
// with its notifier: every person away is mailed one digest, by whichever
// instance holds their outbox partition's lease.
func TestTwoInstancesSendOneDigest(t *testing.T) { forEachStore(t, testTwoInstancesSendOneDigest) }

func testTwoInstancesSendOneDigest(t *testing.T, cfg server.Config) {
	mb := startMailbox(t)
	cfg = emailConfig(cfg, mb)
	cfg.EmailDigestAfter, cfg.EmailDigestEvery = 100*time.Millisecond, time.Hour
	ts := startServer(t, cfg)
	other, err := server.NewOnStore(context.Background(), cfg, testLogger(), ts.Store())
	if err != nil {
		t.Fatal(err)
	}
	ots := serve(t, other)
	alice := ts.user(t, "alice")
	people := []string{"ann", "ben", "cat", "dan", "eve", "fay", "gus", "hal"}
	for _, login := range people {
		c := ts.user(t, login)
		verifiedEmail(t, c, mb, login+"@example.com", 1)
	}
	aliceThere := ots.Client.WithToken(alice.Token)
	for i, login := range people {
		sender := alice
		if i%2 == 1 {
			sender = aliceThere
		}
		mustDo(t, sender, sendTo, map[string]any{"to": login, "c": "hello " + login}, nil)
	}
	ctx := testContext(t)
	for _, login := range people {
		mb.wait(t, login+"@example.com", 2)
		eventually(t, 10*time.Second, login+"'s digest is cleared", func() (bool, any) {
			kept, err := ts.Store().DigestNotices(ctx, login)
			return err == nil && len(kept) == 0, kept
		})
	}
	for _, login := range people {
		if n := len(mb.to(login + "@example.com")); n != 2 {
			t.Errorf("%d mails to %s, want the verification and one digest", n, login)
		}
	}
}
