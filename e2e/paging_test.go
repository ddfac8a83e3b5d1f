package e2e

// Paging a history both ways: first/after toward older messages, last/before
// toward newer ones, and around a message, with pageInfo read from the
// store in both directions.

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/server"
)

const (
	pageArgs    = `$first: Int, $after: String, $last: Int, $before: String, $around: ID`
	pageSlicing = `first: $first, after: $after, last: $last, before: $before, around: $around`
	pageFields  = `{ edges { cursor node { id content system } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } }`
	roomPageQ   = `query($r: String!, ` + pageArgs + `) { page: messages(room: $r, ` + pageSlicing + `) ` + pageFields + ` }`
	directPageQ = `query($with: String!, ` + pageArgs + `) { page: directMessages(with: $with, ` + pageSlicing + `) ` + pageFields + ` }`
	threadPageQ = `query($id: ID!, ` + pageArgs + `) { page: thread(messageId: $id, ` + pageSlicing + `) ` + pageFields + ` }`
)

// historyPage is a page of roomPageQ, directPageQ or threadPageQ.
type historyPage struct {
	Page struct {
		Edges []struct {
			Cursor string
			Node   struct {
				ID, Content string
				System      bool
			}
		}
		PageInfo struct {
			HasNextPage, HasPreviousPage bool
			StartCursor, EndCursor       *string
		}
	}
}

// ids are the page's message ids, newest first as the page lists them.
func (p historyPage) ids() []string {
	var ids []string
	for _, e := range p.Page.Edges {
		if e.Cursor != e.Node.ID {
			panic(fmt.Sprintf("edge cursor %s is not its message's id %s", e.Cursor, e.Node.ID))
		}
		ids = append(ids, e.Node.ID)
	}
	return ids
}

// contents are the page's user messages (no system message), newest first.
func (p historyPage) contents() string {
	var got []string
	for _, e := range p.Page.Edges {
		if !e.Node.System {
			got = append(got, e.Node.Content)
		}
	}
	return strings.Join(got, "|")
}

// readPage asks query with vars and the slicing arguments args.
func readPage(t *testing.T, c *chatclient.Client, query string, vars, args map[string]any) historyPage {
	t.Helper()
	all := map[string]any{}
	for k, v := range vars {
		all[k] = v
	}
	for k, v := range args {
		all[k] = v
	}
	var p historyPage
	mustDo(t, c, query, all, &p)
	return p
}

// checkPage checks a page's messages (newest first) and flags, and that its
// start and end cursors are its first and last edges'.
func checkPage(t *testing.T, what string, p historyPage, want []string, hasNext, hasPrevious bool) {
	t.Helper()
	if got := p.ids(); !slices.Equal(got, want) {
		t.Errorf("%s: ids %v, want %v", what, got, want)
	}
	info := p.Page.PageInfo
	if info.HasNextPage != hasNext || info.HasPreviousPage != hasPrevious {
		t.Errorf("%s: hasNextPage %v, hasPreviousPage %v; want %v, %v", what, info.HasNextPage, info.HasPreviousPage, hasNext, hasPrevious)
	}
	if len(want) > 0 && (info.StartCursor == nil || *info.StartCursor != want[0] || info.EndCursor == nil || *info.EndCursor != want[len(want)-1]) {
		t.Errorf("%s: cursors %v..%v, want %s..%s", what, info.StartCursor, info.EndCursor, want[0], want[len(want)-1])
	}
	if len(want) == 0 && (info.StartCursor != nil || info.EndCursor != nil) {
		t.Errorf("%s: an empty page has cursors %v..%v", what, info.StartCursor, info.EndCursor)
	}
}

func TestHistoryPagesBothWays(t *testing.T) { forEachStore(t, testHistoryPagesBothWays) }

func testHistoryPagesBothWays(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice, bob := ts.user(t, "alice"), ts.user(t, "bob")
	mustDo(t, alice, createRoom, map[string]any{"n": "lobby"}, nil)
	mustDo(t, alice, createRoom, map[string]any{"n": "elsewhere"}, nil)
	for i := range 10 {
		mustDo(t, alice, postMessage, map[string]any{"r": "lobby", "c": fmt.Sprintf("m%d", i)}, nil)
	}
	var other struct{ PostMessage struct{ ID string } }
	mustDo(t, alice, postMessage, map[string]any{"r": "elsewhere", "c": "not in the lobby"}, &other)
	room := map[string]any{"r": "lobby"}
	read := func(args map[string]any) historyPage { t.Helper(); return readPage(t, alice, roomPageQ, room, args) }

	all := read(map[string]any{"first": 100}).ids() // newest first, with any system message
	n := len(all)
	if n < 10 {
		t.Fatalf("the room's history has %d messages, want at least 10", n)
	}
	checkPage(t, "first 100", read(map[string]any{"first": 100}), all, false, false)
	checkPage(t, "the default page", read(nil), all, false, false)

	t.Run("FirstAfter", func(t *testing.T) {
		checkPage(t, "first 3", read(map[string]any{"first": 3}), all[:3], true, false)
		checkPage(t, "first 3 after the 3rd", read(map[string]any{"first": 3, "after": all[2]}), all[3:6], true, true)
		checkPage(t, "first 3 after the 3rd oldest", read(map[string]any{"first": 3, "after": all[n-3]}), all[n-2:], false, true)
		checkPage(t, "first 3 after the oldest", read(map[string]any{"first": 3, "after": all[n-1]}), nil, false, true)
	})

	t.Run("LastBefore", func(t *testing.T) {
		checkPage(t, "last 3 before the 7th", read(map[string]any{"last": 3, "before": all[6]}), all[3:6], true, true)
		checkPage(t, "last 3 before the 3rd", read(map[string]any{"last": 3, "before": all[2]}), all[:2], true, false)
		checkPage(t, "last 3 before the newest", read(map[string]any{"last": 3, "before": all[0]}), nil, true, false)
		checkPage(t, "last 3: the oldest", read(map[string]any{"last": 3}), all[n-3:], false, true)
		checkPage(t, "before alone: the default size", read(map[string]any{"before": all[n-1]}), all[:n-1], false, false)

		// Up from the oldest by startCursor, the pages meet the pages down
		// from the newest: together, the whole history, in order.
		var up []string
		p := read(map[string]any{"last": 4})
		for pages := 0; ; pages++ {
			up = append(p.ids(), up...)
			if !p.Page.PageInfo.HasPreviousPage || pages > n {
				break
			}
			p = read(map[string]any{"last": 4, "before": *p.Page.PageInfo.StartCursor})
		}
		if !slices.Equal(up, all) {
			t.Errorf("paged up by 4: %v, want %v", up, all)
		}
		// A page up and the page down from its start cursor are contiguous.
		above := read(map[string]any{"last": 2, "before": all[5]})
		below := read(map[string]any{"first": 2, "after": *above.Page.PageInfo.EndCursor})
		if got := append(above.ids(), below.ids()...); !slices.Equal(got, []string{all[3], all[4], all[5], all[6]}) {
			t.Errorf("last 2 before the 6th, then first 2 after its end: %v, want %v", got, all[3:7])
		}
	})

	t.Run("Around", func(t *testing.T) {
		checkPage(t, "5 around the 6th", read(map[string]any{"first": 5, "around": all[5]}), all[3:8], true, true)
		checkPage(t, "4 around the 6th", read(map[string]any{"last": 4, "around": all[5]}), all[3:7], true, true)
		checkPage(t, "4 around the newest", read(map[string]any{"last": 4, "around": all[0]}), all[:4], true, false)
		checkPage(t, "4 around the 2nd", read(map[string]any{"first": 4, "around": all[1]}), all[:4], true, false)
		checkPage(t, "4 around the oldest", read(map[string]any{"first": 4, "around": all[n-1]}), all[n-3:], false, true)
		checkPage(t, "1 around the 6th", read(map[string]any{"first": 1, "around": all[5]}), all[5:6], true, true)
		checkPage(t, "the default page around the 6th", read(map[string]any{"around": all[5]}), all, false, false)
	})

	t.Run("Invalid", func(t *testing.T) {
		for what, args := range map[string]map[string]any{
			"first and last":     {"first": 3, "last": 3},
			"around and after":   {"around": all[5], "after": all[2]},
			"around and before":  {"around": all[5], "before": all[8]},
			"after and before":   {"after": all[2], "before": all[8]},
			"first and before":   {"first": 3, "before": all[8]},
			"last and after":     {"last": 3, "after": all[2]},
			"last 0":             {"last": 0},
			"last 101":           {"last": 101},
			"first -1":           {"first": -1},
			"before not an id":   {"last": 3, "before": "yesterday"},
			"around not an id":   {"around": "the first unread"},
			"first 101, around":  {"first": 101, "around": all[5]},
			"last -3 before one": {"last": -3, "before": all[5]},
		} {
			t.Run(what, func(t *testing.T) {
				vars := map[string]any{"r": "lobby"}
				for k, v := range args {
					vars[k] = v
				}
				wantCode(t, alice, "BAD_USER_INPUT", roomPageQ, vars)
			})
		}
		wantCode(t, alice, "NOT_FOUND", roomPageQ, map[string]any{"r": "lobby", "around": other.PostMessage.ID})
		wantCode(t, bob, "FORBIDDEN", roomPageQ, map[string]any{"r": "lobby", "around": all[5]})
	})

	t.Run("Direct", func(t *testing.T) {
		for i := range 5 {
			mustDo(t, []*chatclient.Client{alice, bob}[i%2], sendDirect, map[string]any{"to": []string{"bob", "alice"}[i%2], "c": fmt.Sprintf("d%d", i)}, nil)
		}
		with := map[string]any{"with": "bob"}
		dms := readPage(t, alice, directPageQ, with, nil).ids()
		if len(dms) != 5 {
			t.Fatalf("direct messages: %v, want 5", dms)
		}
		checkPage(t, "last 2 before the 4th", readPage(t, alice, directPageQ, with, map[string]any{"last": 2, "before": dms[3]}), dms[1:3], true, true)
		checkPage(t, "bob's 3 around the 3rd", readPage(t, bob, directPageQ, map[string]any{"with": "alice"}, map[string]any{"first": 3, "around": dms[2]}), dms[1:4], true, true)
		wantCode(t, alice, "NOT_FOUND", directPageQ, map[string]any{"with": "bob", "around": all[5]})
	})

	t.Run("Thread", func(t *testing.T) {
		const replyQ = `mutation($r: String!, $c: String!, $to: ID) { postMessage(room: $r, content: $c, replyTo: $to) { id } }`
		for i := range 5 {
			mustDo(t, alice, replyQ, map[string]any{"r": "lobby", "c": fmt.Sprintf("r%d", i), "to": all[n-1]}, nil)
		}
		root := map[string]any{"id": all[n-1]}
		replies := readPage(t, alice, threadPageQ, root, nil).ids()
		if len(replies) != 5 {
			t.Fatalf("replies: %v, want 5", replies)
		}
		checkPage(t, "the 2 oldest replies", readPage(t, alice, threadPageQ, root, map[string]any{"last": 2}), replies[3:], false, true)
		checkPage(t, "last 2 before the 4th reply", readPage(t, alice, threadPageQ, root, map[string]any{"last": 2, "before": replies[3]}), replies[1:3], true, true)
		checkPage(t, "3 around the newest reply", readPage(t, alice, threadPageQ, root, map[string]any{"first": 3, "around": replies[0]}), replies[:3], true, false)
		wantCode(t, alice, "NOT_FOUND", threadPageQ, map[string]any{"id": all[n-1], "around": all[5]})
	})
}

func TestFormerMemberPagesBothWays(t *testing.T) { forEachStore(t, testFormerMemberPagesBothWays) }

// testFormerMemberPagesBothWays: a member who left a group reads, toward
// the newest as toward the oldest, only the messages of their window.
func testFormerMemberPagesBothWays(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice, bob := ts.user(t, "alice"), ts.user(t, "bob")
	mustDo(t, alice, createKind, map[string]any{"n": "den", "k": "PRIVATE_GROUP"}, nil)
	ids := map[string]string{}
	reply := func(content, to string) {
		t.Helper()
		const replyQ = `mutation($r: String!, $c: String!, $to: ID) { postMessage(room: $r, content: $c, replyTo: $to) { id } }`
		vars := map[string]any{"r": "den", "c": content}
		if to != "" {
			vars["to"] = ids[to]
		}
		var out struct{ PostMessage struct{ ID string } }
		mustDo(t, alice, replyQ, vars, &out)
		ids[content] = out.PostMessage.ID
	}
	post := func(content string) { t.Helper(); reply(content, "") }
	post("before bob")
	mustDo(t, alice, addMember, map[string]any{"g": "den", "l": "bob"}, nil)
	post("in 1")
	post("in 2")
	post("in 3")
	reply("reply in", "in 1")
	mustDo(t, bob, leaveRoom, map[string]any{"r": "den"}, nil)
	post("after 1")
	post("after 2")
	reply("reply after", "in 1")
	den := map[string]any{"r": "den"}

	p := readPage(t, bob, roomPageQ, den, map[string]any{"last": 10, "before": ids["in 1"]})
	if got := p.contents(); got != "reply in|in 3|in 2" || p.Page.PageInfo.HasPreviousPage || !p.Page.PageInfo.HasNextPage {
		t.Errorf("bob's last 10 before in 1: %q, hasPreviousPage %v, hasNextPage %v; want reply in|in 3|in 2, false, true", got, p.Page.PageInfo.HasPreviousPage, p.Page.PageInfo.HasNextPage)
	}
	p = readPage(t, bob, roomPageQ, den, map[string]any{"first": 10, "around": ids["in 2"]})
	if got := p.contents(); got != "reply in|in 3|in 2|in 1" || p.Page.PageInfo.HasPreviousPage {
		t.Errorf("bob's 10 around in 2: %q, hasPreviousPage %v; want reply in|in 3|in 2|in 1, false", got, p.Page.PageInfo.HasPreviousPage)
	}
	p = readPage(t, bob, roomPageQ, den, map[string]any{"first": 1, "after": ids["reply in"]})
	if p.Page.PageInfo.HasPreviousPage {
		t.Errorf("bob's page after reply in says newer messages precede it: %+v", p.Page)
	}
	thread := map[string]any{"id": ids["in 1"]}
	p = readPage(t, bob, threadPageQ, thread, map[string]any{"last": 10})
	if got := p.contents(); got != "reply in" || p.Page.PageInfo.HasPreviousPage || p.Page.PageInfo.HasNextPage {
		t.Errorf("bob's thread, last 10: %q, %+v; want reply in alone", got, p.Page.PageInfo)
	}
	p = readPage(t, bob, threadPageQ, thread, map[string]any{"last": 10, "around": ids["reply in"]})
	if got := p.contents(); got != "reply in" || p.Page.PageInfo.HasPreviousPage {
		t.Errorf("bob's thread around reply in: %q, %+v; want reply in alone", got, p.Page.PageInfo)
	}
	if got := readPage(t, alice, threadPageQ, thread, map[string]any{"last": 10}).contents(); got != "reply after|reply in" {
		t.Errorf("alice's thread, last 10: %q, want reply after|reply in", got)
	}
	p = readPage(t, bob, roomPageQ, den, map[string]any{"last": 10, "before": ids["after 1"]})
	if got := p.contents(); got != "" || p.Page.PageInfo.HasPreviousPage {
		t.Errorf("bob's last 10 before after 1: %q, hasPreviousPage %v; want nothing", got, p.Page.PageInfo.HasPreviousPage)
	}
	if got := readPage(t, bob, roomPageQ, den, map[string]any{"last": 10}).contents(); got != "reply in|in 3|in 2|in 1" {
		t.Errorf("bob's 10 oldest: %q, want reply in|in 3|in 2|in 1", got)
	}
	wantCode(t, bob, "NOT_FOUND", roomPageQ, map[string]any{"r": "den", "around": ids["after 1"]})
	wantCode(t, bob, "NOT_FOUND", roomPageQ, map[string]any{"r": "den", "around": ids["before bob"]})
	// Alice, a member all along, reads bob's leaving and what followed.
	if got := readPage(t, alice, roomPageQ, den, map[string]any{"last": 3, "before": ids["in 3"]}).contents(); got != "after 1|reply in" {
		t.Errorf("alice's last 3 before in 3: %q, want reply in, bob's leaving and after 1", got)
	}
}
