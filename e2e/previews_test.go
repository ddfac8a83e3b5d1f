package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/killrchat/chatql/server"
)

func TestLinkPreviews(t *testing.T) { forEachStore(t, testLinkPreviews) }

// previewEvent is what the tests read of an event about a message's
// preview.
type previewEvent struct {
	Kind    string
	Message struct {
		ID, Content string
		Preview     *struct {
			URL, Title, Description, SiteName string
			ImageURL                          *string
		}
	}
}

const previewFields = `kind message { id content preview { url title description siteName imageUrl } }`

// testLinkPreviews posts links to a page on loopback (which only a test
// configuration lets the server fetch): the preview arrives live, in a
// room and in a direct conversation, is stored with the message, and an
// edit replaces it with the new link's.
func testLinkPreviews(t *testing.T, cfg server.Config) {
	var fetches atomic.Int32
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<html><head><title>plain</title>
<meta property="og:title" content="The %s page">
<meta property="og:description" content="All about &quot;%s&quot;.">
<meta property="og:site_name" content="Wonderland">
<meta property="og:image" content="/img/%s.png">
</head><body>...</body></html>`, r.URL.Path[1:], r.URL.Path[1:], r.URL.Path[1:])
	}))
	t.Cleanup(site.Close)
	cfg.LinkPreviewsAllowLoopback = true
	ts, alice, bob, _ := teaParty(t, cfg)

	sub := ts.live(t, bob, `subscription { roomEvents(room: "tea-party") { `+previewFields+` } }`, nil)
	var posted struct{ PostMessage struct{ ID string } }
	mustDo(t, alice, `mutation($c: String!) { postMessage(room: "tea-party", content: $c) { id } }`,
		map[string]any{"c": "have you seen " + site.URL + "/rabbit?"}, &posted)
	ev := nextOf[previewEvent](t, sub)
	if ev.Kind != "MESSAGE_POSTED" || ev.Message.Preview != nil {
		t.Fatalf("first event %+v, want the post without a preview", ev)
	}
	ev = nextOf[previewEvent](t, sub)
	p := ev.Message.Preview
	if ev.Kind != "MESSAGE_PREVIEWED" || ev.Message.ID != posted.PostMessage.ID || p == nil ||
		p.Title != "The rabbit page" || p.Description != `All about "rabbit".` || p.SiteName != "Wonderland" ||
		p.ImageURL == nil || *p.ImageURL != site.URL+"/img/rabbit.png" || p.URL != site.URL+"/rabbit" {
		t.Fatalf("preview event %+v (preview %+v)", ev, p)
	}
	var read previewEvent
	mustDo(t, bob, `query($id: ID!) { message(id: $id) { id content preview { url title description siteName imageUrl } } }`, map[string]any{"id": posted.PostMessage.ID}, &read)
	if read.Message.Preview == nil || read.Message.Preview.Title != "The rabbit page" {
		t.Fatalf("the stored message's preview: %+v", read.Message.Preview)
	}

	// An edit drops the preview and brings the new link's.
	mustDo(t, alice, `mutation($id: ID!, $c: String!) { editMessage(id: $id, content: $c) { id } }`,
		map[string]any{"id": posted.PostMessage.ID, "c": "no, this one: " + site.URL + "/hatter"}, nil)
	if ev = nextOf[previewEvent](t, sub); ev.Kind != "MESSAGE_EDITED" || ev.Message.Preview != nil {
		t.Fatalf("edit event %+v, want no preview", ev)
	}
	if ev = nextOf[previewEvent](t, sub); ev.Kind != "MESSAGE_PREVIEWED" || ev.Message.Preview == nil || ev.Message.Preview.Title != "The hatter page" {
		t.Fatalf("preview after the edit %+v", ev)
	}

	// A direct message's preview reaches both inboxes.
	inbox := ts.live(t, bob, `subscription { inboxEvents { `+previewFields+` } }`, nil)
	mustDo(t, alice, `mutation($c: String!) { sendDirectMessage(to: "bob", content: $c) { id } }`,
		map[string]any{"c": site.URL + "/cat"}, nil)
	for {
		ev = nextOf[previewEvent](t, inbox)
		if ev.Kind == "MESSAGE_PREVIEWED" {
			break
		}
	}
	if ev.Message.Preview == nil || ev.Message.Preview.Title != "The cat page" {
		t.Fatalf("direct message's preview event %+v", ev)
	}
	if n := fetches.Load(); n != 3 {
		t.Errorf("the page server was asked %d times, want 3 (one per link)", n)
	}
}
