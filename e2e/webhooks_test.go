package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/chat"
	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/notify/webhook"
	"github.com/killrchat/chatql/server"
	"github.com/killrchat/chatql/store"
)

const (
	createWebhookQ = `mutation($r: String!, $u: String!) { createWebhook(room: $r, url: $u) { id room url secret createdBy state } }`
	webhooksQ      = `query($r: String!) { webhooks(room: $r) { id url secret state failedAttempts lastError lastDeliveredAt lastEventId nextAttemptAt deadEventId } }`
	reviveWebhookQ = `mutation($id: ID!) { reviveWebhook(id: $id) { id state failedAttempts deadEventId } }`
	deleteWebhookQ = `mutation($id: ID!) { deleteWebhook(id: $id) }`
)

// webhookConfig lets the server deliver to the test's receivers, on
// loopback, read the webhooks often and retry after a short delay.
func webhookConfig(cfg server.Config) server.Config {
	cfg.WebhooksAllowLoopback = true
	cfg.WebhookPoll = 50 * time.Millisecond
	cfg.WebhookRetryDelay = 100 * time.Millisecond
	return cfg
}

// webhookView is a webhook as webhooksQ reads it.
type webhookView struct {
	ID, URL, State  string
	Secret          *string
	FailedAttempts  int
	LastError       *string
	LastDeliveredAt *time.Time
	LastEventID     *string
	NextAttemptAt   *time.Time
	DeadEventID     *string
}

// delivery is one request a receiver got, verified.
type delivery struct {
	ID     string // the webhook-id header
	Status int    // what the receiver answered
	Event  chat.WebhookEvent
}

// receiver is a webhook endpoint on loopback that verifies every request
// with the webhook's secret and answers with the status its answer func
// gives, 204 by default.
type receiver struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	secret   webhook.Secret
	answer   func(attempt int) int
	requests []delivery
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{t: t}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

// serve verifies a delivery, records it and answers.
func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := webhook.Verify(r.secret, req.Header, body, time.Now()); err != nil {
		r.t.Errorf("a delivery that does not verify: %v (%s)", err, body)
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	d := delivery{ID: req.Header.Get(webhook.HeaderID), Status: http.StatusNoContent}
	if err := json.Unmarshal(body, &d.Event); err != nil {
		r.t.Errorf("a delivery that is no event: %s", body)
	}
	if d.Event.ID != d.ID {
		r.t.Errorf("webhook-id %s, body's id %s", d.ID, d.Event.ID)
	}
	if r.answer != nil {
		d.Status = r.answer(len(r.requests))
	}
	r.requests = append(r.requests, d)
	w.WriteHeader(d.Status)
}

// setSecret sets the secret deliveries are verified with.
func (r *receiver) setSecret(text string) {
	secret, err := webhook.ParseSecret(text)
	if err != nil {
		r.t.Fatalf("createWebhook's secret %q: %v", text, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secret = secret
}

// setAnswer sets how the receiver answers the request of each attempt (0
// for the first it gets).
func (r *receiver) setAnswer(answer func(attempt int) int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answer = answer
}

// all returns the requests so far.
func (r *receiver) all() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.requests)
}

// accepted returns the deliveries answered 2xx, in order.
func (r *receiver) accepted() []delivery {
	return slices.DeleteFunc(r.all(), func(d delivery) bool { return d.Status >= 300 })
}

// waitAccepted waits for n accepted deliveries, and returns them.
func (r *receiver) waitAccepted(t *testing.T, n int) []delivery {
	t.Helper()
	eventually(t, 20*time.Second, fmt.Sprintf("%d deliveries", n), func() (bool, any) {
		got := r.accepted()
		return len(got) >= n, kinds(got)
	})
	got := r.accepted()
	if len(got) != n {
		t.Fatalf("%d deliveries, want %d: %v", len(got), n, kinds(got))
	}
	return got
}

// kinds summarizes deliveries.
func kinds(ds []delivery) []string {
	var out []string
	for _, d := range ds {
		out = append(out, fmt.Sprintf("%s %s %d", d.Event.Kind, d.ID, d.Status))
	}
	return out
}

// createWebhook registers r's URL for the room as c, and gives r the
// secret.
func createWebhook(t *testing.T, c *chatclient.Client, room string, r *receiver) string {
	t.Helper()
	var out struct {
		CreateWebhook struct {
			ID, Room, URL, CreatedBy, State string
			Secret                          *string
		}
	}
	mustDo(t, c, createWebhookQ, map[string]any{"r": room, "u": r.srv.URL + "/hooks"}, &out)
	w := out.CreateWebhook
	if w.Secret == nil || !strings.HasPrefix(*w.Secret, webhook.SecretPrefix) || w.State != "ACTIVE" || w.Room != room || !strings.HasPrefix(w.ID, chat.WebhookIDPrefix) {
		t.Fatalf("createWebhook = %+v", w)
	}
	r.setSecret(*w.Secret)
	return w.ID
}

// roomWebhooks reads the room's webhooks as c.
func roomWebhooks(t *testing.T, c *chatclient.Client, room string) []webhookView {
	t.Helper()
	var out struct{ Webhooks []webhookView }
	mustDo(t, c, webhooksQ, map[string]any{"r": room}, &out)
	for _, w := range out.Webhooks {
		if w.Secret != nil {
			t.Fatalf("webhooks shows a secret: %+v", w)
		}
	}
	return out.Webhooks
}

// post posts content to the room as c and returns the message's id.
func post(t *testing.T, c *chatclient.Client, room, content string) string {
	t.Helper()
	var out struct{ PostMessage struct{ ID string } }
	mustDo(t, c, postMessage, map[string]any{"r": room, "c": content}, &out)
	return out.PostMessage.ID
}

// checkInOrder checks that the deliveries are of the given kinds, with
// increasing ids, each once.
func checkInOrder(t *testing.T, got []delivery, want ...string) {
	t.Helper()
	var gotKinds []string
	for i, d := range got {
		gotKinds = append(gotKinds, string(d.Event.Kind))
		if i > 0 && !idBefore(got[i-1].ID, d.ID) {
			t.Fatalf("delivery %d, %s, does not come after %s: %v", i, d.ID, got[i-1].ID, kinds(got))
		}
	}
	if !slices.Equal(gotKinds, want) {
		t.Fatalf("deliveries %v, want kinds %v", kinds(got), want)
	}
}

// idBefore reports whether the event id a comes before b in a log.
func idBefore(a, b string) bool {
	ia, errA := store.ParseMessageID(a)
	ib, errB := store.ParseMessageID(b)
	return errA == nil && errB == nil && ia.Compare(ib) < 0
}

func TestWebhooks(t *testing.T) { forEachStore(t, testWebhooks) }

// testWebhooks: a join, a post, an edit, a delete and a hidden message
// arrive in order, signed, with the events' ids, as a participant who
// moderates nothing sees them; the listing tells of the last delivery.
func testWebhooks(t *testing.T, cfg server.Config) {
	ts, alice, bob, carol := teaParty(t, webhookConfig(cfg))
	r := newReceiver(t)
	id := createWebhook(t, alice, "tea-party", r)

	mustDo(t, carol, joinRoom, map[string]any{"r": "tea-party"}, nil)
	kept := post(t, alice, "tea-party", "more tea?")
	gone := post(t, bob, "tea-party", "a typo")
	mustDo(t, bob, editQ, map[string]any{"id": gone, "c": "a fix"}, nil)
	mustDo(t, bob, deleteQ, map[string]any{"id": gone}, nil)
	hidden := post(t, carol, "tea-party", "psst")
	mustDo(t, alice, `mutation($id: ID!) { hideMessage(id: $id) { id } }`, map[string]any{"id": hidden}, nil)

	got := r.waitAccepted(t, 7)
	checkInOrder(t, got, "PARTICIPANT_JOINED", "MESSAGE_POSTED", "MESSAGE_POSTED", "MESSAGE_EDITED", "MESSAGE_DELETED", "MESSAGE_POSTED", "MESSAGE_HIDDEN")
	if e := got[0].Event; e.User != "carol" || e.Room != "tea-party" || e.Message == nil || !e.Message.System {
		t.Fatalf("the join: %+v", e)
	}
	if e := got[1].Event; e.ID != kept || e.User != "alice" || e.Message.ID != kept || e.Message.Content != "more tea?" || e.Message.Author != "alice" || e.Message.Deleted {
		t.Fatalf("the post: %+v %+v", e, e.Message)
	}
	for _, d := range got[2:5] {
		if m := d.Event.Message; m == nil || m.ID != gone || !m.Deleted || m.Content != "" || d.Event.User != "bob" {
			t.Fatalf("the deleted message's %s: %+v %+v", d.Event.Kind, d.Event, m)
		}
	}
	if got[2].ID != gone {
		t.Fatalf("the post's event id %s, want the message's %s", got[2].ID, gone)
	}
	for _, d := range got[5:] {
		if m := d.Event.Message; m == nil || m.ID != hidden || !m.Hidden || m.Content != "" {
			t.Fatalf("the hidden message's %s shows %+v", d.Event.Kind, m)
		}
	}
	if len(r.all()) != 7 {
		t.Fatalf("%d requests for 7 deliveries: %v", len(r.all()), kinds(r.all()))
	}
	// The receiver has the last request before the deliverer has its
	// answer and records it.
	eventually(t, 10*time.Second, "the last delivery is recorded", func() (bool, any) {
		ws := roomWebhooks(t, alice, "tea-party")
		return len(ws) == 1 && ws[0].LastEventID != nil && *ws[0].LastEventID == got[6].ID && ts.WebhookEventsDelivered() == 7, ws
	})
	ws := roomWebhooks(t, alice, "tea-party")
	if len(ws) != 1 || ws[0].ID != id || ws[0].State != "ACTIVE" || ws[0].FailedAttempts != 0 || ws[0].LastError != nil ||
		ws[0].LastDeliveredAt == nil || ws[0].DeadEventID != nil {
		t.Fatalf("webhooks = %+v", ws)
	}
	if ts.WebhookEventsDelivered() != 7 {
		t.Fatalf("the server counts %d deliveries, want 7", ts.WebhookEventsDelivered())
	}
	mustDo(t, alice, deleteWebhookQ, map[string]any{"id": id}, nil)
	post(t, alice, "tea-party", "anyone?")
	time.Sleep(3 * time.Second) // past the deliverer's settling and a few polls
	if n := len(r.all()); n != 7 {
		t.Fatalf("a deleted webhook got %d requests, want 7", n)
	}
	if ws := roomWebhooks(t, alice, "tea-party"); len(ws) != 0 {
		t.Fatalf("webhooks after deleteWebhook = %+v", ws)
	}
}

func TestWebhookRetries(t *testing.T) { forEachStore(t, testWebhookRetries) }

// testWebhookRetries: a receiver answering 503 gets the same event (the
// same webhook-id) again until it answers 2xx, then the rest in order; one
// that always fails makes the webhook DEAD on that event, which stops the
// deliveries until reviveWebhook resumes them with it.
func testWebhookRetries(t *testing.T, cfg server.Config) {
	_, alice, bob, _ := teaParty(t, webhookConfig(cfg))
	r := newReceiver(t)
	r.setAnswer(func(attempt int) int {
		if attempt < 3 {
			return http.StatusServiceUnavailable
		}
		return http.StatusNoContent
	})
	id := createWebhook(t, alice, "tea-party", r)
	first := post(t, alice, "tea-party", "one")
	second := post(t, bob, "tea-party", "two")
	got := r.waitAccepted(t, 2)
	if got[0].ID != first || got[1].ID != second {
		t.Fatalf("deliveries %v, want %s then %s", kinds(got), first, second)
	}
	all := r.all()
	if len(all) != 5 || all[0].ID != first || all[1].ID != first || all[2].ID != first || all[0].Status != http.StatusServiceUnavailable {
		t.Fatalf("requests %v, want the first event thrice (503, 503, 503), then 204s", kinds(all))
	}

	// A receiver that always fails.
	r.setAnswer(func(int) int { return http.StatusInternalServerError })
	third := post(t, alice, "tea-party", "three")
	var dead webhookView
	eventually(t, 30*time.Second, "the webhook dies", func() (bool, any) {
		ws := roomWebhooks(t, alice, "tea-party")
		dead = ws[0]
		return dead.State == "DEAD", dead
	})
	if dead.ID != id || dead.DeadEventID == nil || *dead.DeadEventID != third || dead.FailedAttempts != webhook.MaxAttempts ||
		dead.LastError == nil || !strings.Contains(*dead.LastError, "500") || *dead.LastEventID != second || dead.NextAttemptAt != nil {
		t.Fatalf("the dead webhook: %+v", dead)
	}
	fourth := post(t, bob, "tea-party", "four")
	tries := len(r.all())
	if tries != 5+webhook.MaxAttempts {
		t.Fatalf("%d requests, want %d: %v", tries, 5+webhook.MaxAttempts, kinds(r.all()))
	}
	time.Sleep(3 * time.Second) // past the settling of the fourth, and polls
	if n := len(r.all()); n != tries {
		t.Fatalf("a dead webhook got %d more requests", n-tries)
	}

	r.setAnswer(nil)
	var revived struct{ ReviveWebhook webhookView }
	mustDo(t, alice, reviveWebhookQ, map[string]any{"id": id}, &revived)
	if revived.ReviveWebhook.State != "ACTIVE" || revived.ReviveWebhook.FailedAttempts != 0 {
		t.Fatalf("reviveWebhook = %+v", revived.ReviveWebhook)
	}
	got = r.waitAccepted(t, 4)
	if got[2].ID != third || got[3].ID != fourth {
		t.Fatalf("after the revival %v, want %s then %s", kinds(got), third, fourth)
	}
	ws := roomWebhooks(t, alice, "tea-party")
	if ws[0].State != "ACTIVE" || ws[0].DeadEventID != nil || ws[0].LastError != nil || *ws[0].LastEventID != fourth {
		t.Fatalf("the revived webhook: %+v", ws[0])
	}
}

func TestWebhookRefusals(t *testing.T) { forEachStore(t, testWebhookRefusals) }

// testWebhookRefusals: private and plain-http URLs, a plain participant,
// someone outside the room, and an 11th webhook are refused; a moderator
// may register one, and a private group's creator, not its plain members;
// deleting the room deletes its webhooks.
func testWebhookRefusals(t *testing.T, cfg server.Config) {
	_, alice, bob, carol := teaParty(t, webhookConfig(cfg))
	r := newReceiver(t)
	url := func(u string) map[string]any { return map[string]any{"r": "tea-party", "u": u} }
	wantCode(t, alice, "BAD_USER_INPUT", createWebhookQ, url("https://10.0.0.1/hooks"))
	wantCode(t, alice, "BAD_USER_INPUT", createWebhookQ, url("http://hooks.example.com/hooks"))
	wantCode(t, alice, "BAD_USER_INPUT", createWebhookQ, url("https://169.254.169.254/latest"))
	wantCode(t, bob, "FORBIDDEN", createWebhookQ, url(r.srv.URL))
	wantCode(t, carol, "FORBIDDEN", createWebhookQ, url(r.srv.URL))
	wantCode(t, bob, "FORBIDDEN", webhooksQ, map[string]any{"r": "tea-party"})

	id := createWebhook(t, alice, "tea-party", r)
	wantCode(t, bob, "FORBIDDEN", deleteWebhookQ, map[string]any{"id": id})
	wantCode(t, bob, "FORBIDDEN", reviveWebhookQ, map[string]any{"id": id})
	wantCode(t, alice, "NOT_FOUND", deleteWebhookQ, map[string]any{"id": "wh_nonesuch"})

	mustDo(t, alice, `mutation { appointModerator(room: "tea-party", login: "bob") { name } }`, nil, nil)
	createWebhook(t, bob, "tea-party", r)
	for range 8 {
		mustDo(t, alice, createWebhookQ, url(r.srv.URL+"/more"), nil)
	}
	wantCode(t, alice, "BAD_USER_INPUT", createWebhookQ, url(r.srv.URL+"/eleventh"))
	if ws := roomWebhooks(t, bob, "tea-party"); len(ws) != 10 {
		t.Fatalf("%d webhooks, want 10", len(ws))
	}
	mustDo(t, bob, deleteWebhookQ, map[string]any{"id": id}, nil)
	mustDo(t, alice, createWebhookQ, url(r.srv.URL+"/tenth"), nil)

	// In a private group, its creator may; a plain member may not, and
	// someone outside learns nothing of it.
	mustDo(t, alice, createKind, map[string]any{"n": "den", "k": "PRIVATE_GROUP"}, nil)
	mustDo(t, alice, addMember, map[string]any{"g": "den", "l": "bob"}, nil)
	createWebhook(t, alice, "den", r)
	wantCode(t, bob, "FORBIDDEN", createWebhookQ, map[string]any{"r": "den", "u": r.srv.URL})
	wantCode(t, carol, "NOT_FOUND", webhooksQ, map[string]any{"r": "den"})

	// A room made again under a deleted one's name has none of its webhooks.
	mustDo(t, alice, deleteRoom, map[string]any{"r": "tea-party"}, nil)
	mustDo(t, alice, createRoom, map[string]any{"n": "tea-party"}, nil)
	if ws := roomWebhooks(t, alice, "tea-party"); len(ws) != 0 {
		t.Fatalf("the new room has the deleted one's webhooks: %+v", ws)
	}
}

// TestClusterWebhooksOnce runs two instances on one store and Redis, each
// with its deliverer: every event is delivered once, in order, whichever
// instance took the post.
func TestClusterWebhooksOnce(t *testing.T) {
	cl := startClusterWith(t, 2, redisURL(t), func(_ int, c *server.Config) { *c = webhookConfig(*c) })
	first := cl.instances[0]
	alice := first.user(t, "alice")
	mustDo(t, alice, createRoom, map[string]any{"n": "both"}, nil)
	r := newReceiver(t)
	createWebhook(t, alice, "both", r)
	const posts = 8
	var ids []string
	for i := range posts {
		ids = append(ids, post(t, cl.on(i%2, alice), "both", fmt.Sprint("message ", i)))
	}
	got := r.waitAccepted(t, posts)
	for i, d := range got {
		if d.ID != ids[i] {
			t.Fatalf("delivery %d is %s, want %s: %v", i, d.ID, ids[i], kinds(got))
		}
	}
	time.Sleep(3 * time.Second)
	if all := r.all(); len(all) != posts {
		t.Fatalf("%d requests for %d events: %v", len(all), posts, kinds(all))
	}
	if n := cl.instances[0].WebhookEventsDelivered() + cl.instances[1].WebhookEventsDelivered(); n != posts {
		t.Fatalf("the instances count %d deliveries, want %d", n, posts)
	}
}
