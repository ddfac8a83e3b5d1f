package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/notify"
	"github.com/killrchat/chatql/notify/webpush"
	"github.com/killrchat/chatql/notify/webpush/pushtest"
	"github.com/killrchat/chatql/server"
)

func TestPushNotifications(t *testing.T) { forEachStore(t, testPushNotifications) }

// The notifier's poll and longest backoff in the push tests.
const (
	pushPoll   = 20 * time.Millisecond
	maxBackoff = 500 * time.Millisecond
)

// pushConfig lets the server push to the test's push service, on loopback,
// and read the outbox often, with a VAPID key of its own (the embedded
// store would make one; Cassandra needs one given).
func pushConfig(cfg server.Config) server.Config {
	key, err := webpush.GenerateVAPIDKey()
	if err != nil {
		panic(err)
	}
	cfg.VAPIDPrivateKey = key.PrivateKeyBase64()
	cfg.PushAllowLoopback = true
	cfg.NotifyPoll = pushPoll
	cfg.NotifyMaxBackoff = maxBackoff
	cfg.PresenceGrace = 0
	return cfg
}

// subscribePush has c's browser subscribe at the push service with the
// server's key and register the subscription.
func subscribePush(t *testing.T, c *chatclient.Client, service *pushtest.Service, device string) pushtest.Subscription {
	t.Helper()
	var key struct{ VapidPublicKey *string }
	mustDo(t, c, `{ vapidPublicKey }`, nil, &key)
	if key.VapidPublicKey == nil {
		t.Fatal("the server has no VAPID key")
	}
	sub, err := service.Subscribe(*key.VapidPublicKey)
	if err != nil {
		t.Fatal(err)
	}
	mustDo(t, c, `mutation($e: String!, $p: String!, $a: String!, $d: String) { registerPushSubscription(endpoint: $e, p256dh: $p, auth: $a, device: $d) { endpoint } }`,
		map[string]any{"e": sub.Endpoint, "p": sub.P256dh, "a": sub.Auth, "d": device}, nil)
	return sub
}

// pushed waits for the push service to hold n notifications for sub, and
// decodes them.
func pushed(t *testing.T, service *pushtest.Service, sub pushtest.Subscription, n int) []notify.Notification {
	t.Helper()
	var notes []notify.Notification
	eventually(t, 10*time.Second, "the pushes arrive", func() (bool, any) {
		msgs := service.Messages(sub.Endpoint)
		notes = notes[:0]
		for _, m := range msgs {
			var note notify.Notification
			if err := json.Unmarshal(m.Plaintext, &note); err != nil {
				t.Fatalf("a push that is no notification: %q", m.Plaintext)
			}
			notes = append(notes, note)
		}
		return len(notes) >= n, notes
	})
	if len(notes) != n {
		t.Fatalf("%d pushes, want %d: %+v", len(notes), n, notes)
	}
	return notes
}

// testPushNotifications: an offline user is pushed a direct message, a
// mention and being added to a group, decrypted by the test's push service
// as a browser would; nothing while they are online, nothing of a muted
// conversation; a subscription the push service says is gone is dropped.
func testPushNotifications(t *testing.T, cfg server.Config) {
	service := pushtest.New(t)
	ts, alice, bob, _ := teaParty(t, pushConfig(cfg))
	phone := subscribePush(t, bob, service, "phone")

	mustDo(t, alice, `mutation { sendDirectMessage(to: "bob", content: "are you there?") { id } }`, nil, nil)
	note := pushed(t, service, phone, 1)[0]
	if note.Kind != "DIRECT_MESSAGE" || note.Title != "Alice Tester" || note.Body != "New message" || note.Count != 1 {
		t.Fatalf("the direct message's notification: %+v", note)
	}

	// With previews the text shows; a mention in a room is told too.
	mustDo(t, bob, `mutation { setPushPreviews(previews: true) }`, nil, nil)
	mustDo(t, alice, `mutation { postMessage(room: "tea-party", content: "@bob more tea?") { id } }`, nil, nil)
	note = pushed(t, service, phone, 2)[1]
	if note.Kind != "MENTION" || note.Conversation != "tea-party" || note.Body != "@bob more tea?" {
		t.Fatalf("the mention's notification: %+v", note)
	}

	// A muted conversation tells nothing; the next message elsewhere is
	// the next push.
	mustDo(t, bob, `mutation { muteConversation(conversation: "tea-party") }`, nil, nil)
	mustDo(t, alice, `mutation { postMessage(room: "tea-party", content: "@bob hello?") { id } }`, nil, nil)
	mustDo(t, alice, `mutation { sendDirectMessage(to: "bob", content: "second") { id } }`, nil, nil)
	if note = pushed(t, service, phone, 3)[2]; note.Kind != "DIRECT_MESSAGE" || note.Body != "second" {
		t.Fatalf("after the muted mention, the next push: %+v", note)
	}

	// Online, bob is told nothing: he sees it live.
	live := ts.live(t, bob, `subscription { inboxEvents { kind } }`, nil)
	waitOnline(t, alice, "bob", true)
	handled := ts.NoticesHandled()
	mustDo(t, alice, `mutation { sendDirectMessage(to: "bob", content: "online now") { id } }`, nil, nil)
	waitFor(t, func() bool { return ts.NoticesHandled() > handled })
	live.Close()
	waitOnline(t, alice, "bob", false)

	// Offline again: being added to a group is told, and nothing of the
	// message sent while he was online.
	mustDo(t, alice, `mutation { createRoom(input: {name: "den", kind: PRIVATE_GROUP}) { name } }`, nil, nil)
	mustDo(t, alice, `mutation { addGroupMember(group: "den", login: "bob") { name } }`, nil, nil)
	if note = pushed(t, service, phone, 4)[3]; note.Kind != "ADDED_TO_GROUP" || note.Conversation != "den" {
		t.Fatalf("the group addition's notification: %+v", note)
	}

	// A subscription the push service says is gone is dropped.
	service.Unsubscribe(phone.Endpoint)
	mustDo(t, alice, `mutation { sendDirectMessage(to: "bob", content: "still there?") { id } }`, nil, nil)
	eventually(t, 10*time.Second, "the gone subscription is dropped", func() (bool, any) {
		var subs struct{ PushSubscriptions []struct{ Endpoint string } }
		mustDo(t, bob, `{ pushSubscriptions { endpoint } }`, nil, &subs)
		return len(subs.PushSubscriptions) == 0, subs
	})
}

// waitOnline waits until c sees login online (or offline).
func waitOnline(t *testing.T, c *chatclient.Client, login string, online bool) {
	t.Helper()
	eventually(t, 10*time.Second, "presence", func() (bool, any) {
		var p struct{ Presence []struct{ Online *bool } }
		mustDo(t, c, `query($l: String!) { presence(logins: [$l]) { online } }`, map[string]any{"l": login}, &p)
		return len(p.Presence) == 1 && p.Presence[0].Online != nil && *p.Presence[0].Online == online, p
	})
}

// TestClusterPushesOnce runs two instances on one store and Redis, each
// with its notifier: every direct message to an offline user is pushed
// once, whichever instance took it and whichever reads its notice.
func TestClusterPushesOnce(t *testing.T) {
	service := pushtest.New(t)
	key := pushConfig(testConfig(t)).VAPIDPrivateKey // the instances share it
	cl := startClusterWith(t, 2, redisURL(t), func(_ int, c *server.Config) {
		*c = pushConfig(*c)
		c.VAPIDPrivateKey = key
	})
	first := cl.instances[0]
	alice, bob := first.user(t, "alice"), first.user(t, "bob")
	phone := subscribePush(t, bob, service, "phone")
	const sends = 6
	for i := range sends {
		handled := cl.instances[0].NoticesHandled() + cl.instances[1].NoticesHandled()
		mustDo(t, cl.on(i%2, alice), `mutation($c: String!) { sendDirectMessage(to: "bob", content: $c) { id } }`, map[string]any{"c": fmt.Sprint("message ", i)}, nil)
		pushed(t, service, phone, i+1)
		waitFor(t, func() bool { return cl.instances[0].NoticesHandled()+cl.instances[1].NoticesHandled() > handled })
	}
	notes := pushed(t, service, phone, sends)
	seen := map[string]bool{}
	for _, n := range notes {
		for _, id := range n.Notices {
			if seen[id] {
				t.Fatalf("notice %s pushed twice: %+v", id, notes)
			}
			seen[id] = true
		}
	}
	if len(seen) != sends {
		t.Fatalf("%d notices pushed, want %d", len(seen), sends)
	}
}

func TestPushBacklogBehindDeadService(t *testing.T) {
	forEachStore(t, testPushBacklogBehindDeadService)
}

// testPushBacklogBehindDeadService: while one push service is down, the
// notices of its subscribers wait in the outbox, tried once per backoff
// rather than once per notice and poll, and they do not hold up the
// notices of another service's subscribers; when it is back, each of its
// subscribers gets one notification of all they missed.
func testPushBacklogBehindDeadService(t *testing.T, cfg server.Config) {
	dead, up := pushtest.New(t), pushtest.New(t)
	dead.FailFor(time.Hour, 503, "")
	ts, alice, _, carol := teaParty(t, pushConfig(cfg))
	carolPhone := subscribePush(t, carol, up, "phone")
	const away, sends = 8, 3
	phones := make([]pushtest.Subscription, away)
	for i := range phones {
		phones[i] = subscribePush(t, ts.user(t, fmt.Sprint("away", i)), dead, "phone")
	}
	for i := range away * sends {
		mustDo(t, alice, `mutation($to: String!, $c: String!) { sendDirectMessage(to: $to, content: $c) { id } }`,
			map[string]any{"to": fmt.Sprint("away", i%away), "c": fmt.Sprint("message ", i)}, nil)
	}
	eventually(t, 10*time.Second, "the dead service is tried", func() (bool, any) { return dead.Attempts() > 0, dead.Attempts() })

	// The backlog does not hold up carol's notifications, each read by a
	// poll of its own; without the backoff, each of those polls would try
	// the dead service for each of the backlog's conversations.
	outage, attempts := time.Now(), dead.Attempts()
	const told = 30
	for i := range told {
		mustDo(t, alice, `mutation($c: String!) { sendDirectMessage(to: "carol", content: $c) { id } }`, map[string]any{"c": fmt.Sprint("tea ", i)}, nil)
		if note := pushed(t, up, carolPhone, i+1)[i]; note.Body != "New message" {
			t.Fatalf("carol's notification: %+v", note)
		}
	}
	// Resting 20 ms, then twice as long each time up to maxBackoff: a
	// few attempts to reach the cap, then about one a cap.
	tried, doubling := dead.Attempts()-attempts, int(math.Log2(float64(maxBackoff/pushPoll)))+1
	if allowed := doubling + 2*int(time.Since(outage)/maxBackoff) + 2; tried > allowed {
		t.Fatalf("the dead service was tried %d times during %d polls over %v, more than once a backoff (%d)", tried, told, time.Since(outage), allowed)
	}

	// Back, it is told every notice once: in one notification when one
	// drain reads them all, else in a few, each replacing the last.
	dead.FailFor(0, 0, "")
	for i, phone := range phones {
		eventually(t, 10*time.Second, "the backlog is pushed", func() (bool, any) {
			told := map[string]int{}
			for _, m := range dead.Messages(phone.Endpoint) {
				var note notify.Notification
				if err := json.Unmarshal(m.Plaintext, &note); err != nil {
					t.Fatalf("a push that is no notification: %q", m.Plaintext)
				}
				for _, id := range note.Notices {
					if told[id]++; told[id] > 1 {
						t.Fatalf("away%d was told of notice %s twice", i, id)
					}
				}
			}
			return len(told) == sends, told
		})
	}
}

func TestPushSubscriptionsEndWithTheirSession(t *testing.T) {
	forEachStore(t, testPushSubscriptionsEndWithTheirSession)
}

// testPushSubscriptionsEndWithTheirSession: a push subscription belongs to
// the session that registered it: a logout drops it, and so does a
// password change that ends the session, after which nothing is pushed to
// it.
func testPushSubscriptionsEndWithTheirSession(t *testing.T, cfg server.Config) {
	service := pushtest.New(t)
	ts, alice, bob, _ := teaParty(t, pushConfig(cfg))
	login := func() *chatclient.Client {
		var out struct{ Login struct{ Token string } }
		mustDo(t, ts.Client, `mutation { login(login: "bob", password: "password-bob") { token } }`, nil, &out)
		return ts.Client.WithToken(out.Login.Token)
	}
	subscriptions := func(c *chatclient.Client) int {
		var out struct{ PushSubscriptions []struct{ Endpoint string } }
		mustDo(t, c, `{ pushSubscriptions { endpoint } }`, nil, &out)
		return len(out.PushSubscriptions)
	}
	laptop := login()
	subscribePush(t, bob, service, "phone")
	tablet := subscribePush(t, laptop, service, "laptop")
	if n := subscriptions(laptop); n != 2 {
		t.Fatalf("%d subscriptions, want 2", n)
	}
	mustDo(t, bob, `mutation { logout }`, nil, nil)
	if n := subscriptions(laptop); n != 1 {
		t.Fatalf("after the phone's logout: %d subscriptions, want the laptop's", n)
	}

	// A password change from a third session ends the laptop's, and with
	// it its subscription: the next direct message pushes nothing.
	third := login()
	mustDo(t, third, `mutation { changePassword(oldPassword: "password-bob", newPassword: "password-bob-2") }`, nil, nil)
	handled := ts.NoticesHandled()
	mustDo(t, alice, `mutation { sendDirectMessage(to: "bob", content: "anyone?") { id } }`, nil, nil)
	waitFor(t, func() bool { return ts.NoticesHandled() > handled })
	if msgs := service.Messages(tablet.Endpoint); len(msgs) != 0 {
		t.Fatalf("%d pushes to the subscription of an ended session", len(msgs))
	}
	if n := subscriptions(third); n != 0 {
		t.Fatalf("after the password change: %d subscriptions, want none", n)
	}
}
