package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/server"
	"github.com/killrchat/chatql/store"
)

const searchQ = `query($q: String!, $in: String, $from: String, $n: Int, $after: String) {
  searchMessages(query: $q, conversation: $in, from: $from, first: $n, after: $after) {
    edges { cursor node { id room content author { login } } snippet { text match } }
    pageInfo { hasNextPage endCursor }
  }
}`

type searchEdge struct {
	Cursor string
	Node   struct {
		ID, Room, Content string
		Author            struct{ Login string }
	}
	Snippet []struct {
		Text  string
		Match bool
	}
}

// searchAll reads every page of a search, first at a time.
func searchAll(t *testing.T, c *chatclient.Client, vars map[string]any) []searchEdge {
	t.Helper()
	var all []searchEdge
	vs := map[string]any{"n": 2}
	for k, v := range vars {
		vs[k] = v
	}
	for range 50 {
		var out struct {
			SearchMessages struct {
				Edges    []searchEdge
				PageInfo struct {
					HasNextPage bool
					EndCursor   *string
				}
			}
		}
		mustDo(t, c, searchQ, vs, &out)
		all = append(all, out.SearchMessages.Edges...)
		if !out.SearchMessages.PageInfo.HasNextPage {
			return all
		}
		vs["after"] = *out.SearchMessages.PageInfo.EndCursor
	}
	t.Fatalf("search %v: paging does not end", vars)
	return nil
}

// foundContents are the contents of the messages found, newest first.
func foundContents(edges []searchEdge) []string {
	out := make([]string, len(edges))
	for i, e := range edges {
		out[i] = e.Node.Content
	}
	return out
}

func wantContents(t *testing.T, what string, got []searchEdge, want ...string) {
	t.Helper()
	if g := foundContents(got); !slices.Equal(g, want) {
		t.Errorf("%s: found %q, want %q", what, g, want)
	}
}

// TestSearch: searchMessages through the API on each store: words in any
// case and accents, phrases, the filters as syntax and as arguments,
// newest first across pages, snippets, and edits and deletes in effect
// when their mutation answers.
func TestSearch(t *testing.T) { forEachStore(t, testSearch) }

func testSearch(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	ana, bo := ts.user(t, "ana"), ts.user(t, "bob")
	mustDo(t, ana, createRoom, map[string]any{"n": "cafes"}, nil)
	mustDo(t, bo, joinRoom, map[string]any{"r": "cafes"}, nil)
	mustDo(t, ana, createRoom, map[string]any{"n": "other"}, nil)
	post := func(c *chatclient.Client, room, content string) string {
		var out struct{ PostMessage struct{ ID string } }
		mustDo(t, c, postTo, map[string]any{"r": room, "c": content}, &out)
		return out.PostMessage.ID
	}
	post(ana, "cafes", "Rendez-vous au CAFÉ de Flore, à midi")
	post(bo, "cafes", "the cafe is closed today")
	post(ana, "other", "a cafe in the other room")
	post(bo, "cafes", "closed? which cafe")
	direct := func() string {
		var out struct{ SendDirectMessage struct{ ID string } }
		mustDo(t, ana, sendTo, map[string]any{"to": "bob", "c": "meet me at the café, bo"}, &out)
		return out.SendDirectMessage.ID
	}()

	t.Run("WordsAnyCaseAndAccents", func(t *testing.T) {
		got := searchAll(t, bo, map[string]any{"q": "Cafe"})
		wantContents(t, "bo: Cafe", got, "meet me at the café, bo", "closed? which cafe", "the cafe is closed today", "Rendez-vous au CAFÉ de Flore, à midi")
		got = searchAll(t, ana, map[string]any{"q": "café"})
		wantContents(t, "ana: café (in two rooms)", got, "meet me at the café, bo", "closed? which cafe", "a cafe in the other room", "the cafe is closed today", "Rendez-vous au CAFÉ de Flore, à midi")
		if e := got[len(got)-1]; !slices.ContainsFunc(e.Snippet, func(p struct {
			Text  string
			Match bool
		}) bool {
			return p.Match && p.Text == "CAFÉ"
		}) {
			t.Errorf("snippet %+v: want CAFÉ marked", e.Snippet)
		}
		wantContents(t, "a for à", searchAll(t, ana, map[string]any{"q": "a midi"}), "Rendez-vous au CAFÉ de Flore, à midi")
	})
	t.Run("Phrases", func(t *testing.T) {
		wantContents(t, `"cafe is closed"`, searchAll(t, bo, map[string]any{"q": `"cafe is closed"`}), "the cafe is closed today")
		wantContents(t, `closed cafe`, searchAll(t, bo, map[string]any{"q": `closed cafe`}), "closed? which cafe", "the cafe is closed today")
	})
	t.Run("Filters", func(t *testing.T) {
		wantContents(t, "from:bo", searchAll(t, ana, map[string]any{"q": "cafe from:bob"}), "closed? which cafe", "the cafe is closed today")
		wantContents(t, "from argument", searchAll(t, ana, map[string]any{"q": "cafe", "from": "bob"}), "closed? which cafe", "the cafe is closed today")
		wantContents(t, "in:other", searchAll(t, ana, map[string]any{"q": "in:other cafe"}), "a cafe in the other room")
		wantContents(t, "conversation argument", searchAll(t, ana, map[string]any{"q": "cafe", "in": "other"}), "a cafe in the other room")
		wantContents(t, "a direct conversation", searchAll(t, bo, map[string]any{"q": "cafe", "in": store.DirectConversationID("ana", "bob")}), "meet me at the café, bo")
		wantCode(t, ana, "BAD_USER_INPUT", searchQ, map[string]any{"q": "in:other cafe", "in": "cafes"})
		wantCode(t, bo, "FORBIDDEN", searchQ, map[string]any{"q": "in:other cafe"})
	})
	t.Run("EditAndDeleteAtOnce", func(t *testing.T) {
		id := post(ana, "cafes", "tea at noon")
		wantContents(t, "tea", searchAll(t, bo, map[string]any{"q": "tea"}), "tea at noon")
		mustDo(t, ana, editQ, map[string]any{"id": id, "c": "coffee at noon"}, nil)
		wantContents(t, "tea after the edit", searchAll(t, bo, map[string]any{"q": "tea"}))
		wantContents(t, "coffee after the edit", searchAll(t, bo, map[string]any{"q": "coffee"}), "coffee at noon")
		mustDo(t, ana, deleteQ, map[string]any{"id": id}, nil)
		wantContents(t, "coffee after the delete", searchAll(t, bo, map[string]any{"q": "coffee"}))
		mustDo(t, ana, deleteQ, map[string]any{"id": direct}, nil)
		wantContents(t, "a deleted direct message", searchAll(t, bo, map[string]any{"q": "meet"}))
	})
	t.Run("BadQueries", func(t *testing.T) {
		for _, q := range []string{"caf*", "caf?", "cafe~2", "   ", `"unclosed`, "from:", strings.Repeat("word ", 60), "a b c d e f g h i", "from:a from:b cafe"} {
			wantCode(t, ana, "BAD_USER_INPUT", searchQ, map[string]any{"q": q})
		}
		for _, n := range []int{0, 51} {
			wantCode(t, ana, "BAD_USER_INPUT", searchQ, map[string]any{"q": "cafe", "n": n})
		}
		wantCode(t, ana, "BAD_USER_INPUT", searchQ, map[string]any{"q": "cafe", "after": "not-a-cursor"})
		wantCode(t, ts.Client, "UNAUTHENTICATED", searchQ, map[string]any{"q": "cafe"})
	})
}

// TestSearchRateLimit: searches count against their own per-user limit.
func TestSearchRateLimit(t *testing.T) {
	cfg := testConfig(t)
	cfg.RateLimits[ratelimit.Search] = ratelimit.Limit{Rate: 1, Period: time.Hour, Burst: 3}
	ts := startServer(t, cfg)
	ana, bo := ts.user(t, "ana"), ts.user(t, "bob")
	for range 3 {
		mustDo(t, ana, searchQ, map[string]any{"q": "anything"}, nil)
	}
	e := wantCode(t, ana, "RATE_LIMITED", searchQ, map[string]any{"q": "anything"})
	if e.Extensions["retryAfter"] == nil {
		t.Errorf("RATE_LIMITED without retryAfter: %+v", e)
	}
	mustDo(t, bo, searchQ, map[string]any{"q": "anything"}, nil) // another user's limit
}

// TestKilledServerSearchAgrees runs the real server binary on the embedded
// store, kills it with SIGKILL while posts are in flight, and starts it
// again: the search index must then hold exactly what the store holds,
// found by search as in the histories: every post that reached the store
// (acknowledged or not) and nothing else. The index catches up from its
// queue (store/embedded/search.go), not by rebuilding.
func TestKilledServerSearchAgrees(t *testing.T) {
	bin := buildChatql(t)
	dir := t.TempDir()
	secret := randomHex(32)
	users := []string{"ann", "ben", "cat", "dan"}
	members := users[:3]
	tokens := map[string]string{}
	const rounds = 3
	for round := 1; round <= rounds+1; round++ {
		srv := startBinary(t, bin, dir, secret)
		if round == 1 {
			setUpCrashRooms(t, srv, users, members, tokens)
		} else {
			checkSearchAgrees(t, srv, tokens, users, round-1)
		}
		if round <= rounds {
			postUntilKilled(t, srv, tokens, users, members, round)
		}
		srv.kill()
	}
}

// checkSearchAgrees compares, as the first user reads them, the messages
// of the round in the histories with those a search of the round finds.
func checkSearchAgrees(t *testing.T, srv *crashServer, tokens map[string]string, users []string, round int) {
	t.Helper()
	me := srv.as(tokens[users[0]])
	prefix := fmt.Sprintf("round %d poster ", round)
	var want []string
	add := func(msgs []msgNode) {
		for _, m := range msgs {
			if strings.HasPrefix(m.Content, prefix) {
				want = append(want, m.ID)
			}
		}
	}
	add(readConnection(t, me, historyQ, map[string]any{"r": "lobby"}))
	add(readConnection(t, me, historyQ, map[string]any{"r": "den"}))
	for _, u := range users[1:] {
		add(readConnection(t, me, directAllQ, map[string]any{"with": u}))
	}
	var got []string
	for _, m := range readConnection(t, me, `query($q: String!, $after: String) { searchMessages(query: $q, first: 50, after: $after) { edges { node { id content } } pageInfo { hasNextPage endCursor } } }`,
		map[string]any{"q": fmt.Sprintf(`"round %d poster"`, round)}) {
		got = append(got, m.ID)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		missing, extra := 0, 0
		for _, id := range want {
			if !slices.Contains(got, id) {
				missing++
			}
		}
		for _, id := range got {
			if !slices.Contains(want, id) {
				extra++
			}
		}
		t.Errorf("after kill %d: search finds %d messages of the round, the histories hold %d: %d missing, %d not in the store", round, len(got), len(want), missing, extra)
	}
	t.Logf("after kill %d: search agrees on %d messages", round, len(want))
}

// TestSearchDirectory: searchUsers finds people by the start of their
// login and names, never who blocked the caller; searchRooms finds public
// rooms by name and banner, never a private group.
func TestSearchDirectory(t *testing.T) { forEachStore(t, testSearchDirectory) }

func testSearchDirectory(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	zed := ts.user(t, "zed")
	emile := ts.user(t, "emile.z")
	ts.user(t, "emma")
	mustDo(t, emile, `mutation { updateProfile(input: {firstname: "Émile", lastname: "Zola"}) { login } }`, nil, nil)
	users := func(c *chatclient.Client, prefix string) []string {
		t.Helper()
		var out struct{ SearchUsers []struct{ Login string } }
		mustDo(t, c, `query($p: String!) { searchUsers(prefix: $p) { login firstname } }`, map[string]any{"p": prefix}, &out)
		logins := []string{}
		for _, u := range out.SearchUsers {
			logins = append(logins, u.Login)
		}
		return logins
	}
	check := func(what string, got []string, want ...string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s: found %q, want %q", what, got, want)
		}
	}
	check("em", users(zed, "em"), "emile.z", "emma")
	check("EMI zo", users(zed, "EMI zo"), "emile.z")
	check("emile.z", users(zed, "emile.z"), "emile.z")
	mustDo(t, emile, `mutation { blockUser(login: "zed") { login } }`, nil, nil)
	check("em, by someone emile blocked", users(zed, "em"), "emma")
	check("em, by another", users(ts.user(t, "yann"), "em"), "emile.z", "emma")
	for _, q := range []string{"", "  ", "em*", strings.Repeat("e", 65), "a b c d e"} {
		wantCode(t, zed, "BAD_USER_INPUT", `query($p: String!) { searchUsers(prefix: $p) { login } }`, map[string]any{"p": q})
	}
	wantCode(t, zed, "BAD_USER_INPUT", `query { searchUsers(prefix: "em", first: 51) { login } }`, nil)

	mustDo(t, zed, `mutation { createRoom(input: {name: "jazz-club", banner: "Late night café jazz"}) { name } }`, nil, nil)
	mustDo(t, zed, `mutation { createRoom(input: {name: "jazz-secret", kind: PRIVATE_GROUP}) { name } }`, nil, nil)
	mustDo(t, zed, `mutation { createRoom(input: {name: "chess", banner: "openings"}) { name } }`, nil, nil)
	rooms := func(q string) []string {
		t.Helper()
		var out struct{ SearchRooms []struct{ Name string } }
		mustDo(t, emile, `query($q: String!) { searchRooms(query: $q) { name banner } }`, map[string]any{"q": q}, &out)
		names := []string{}
		for _, r := range out.SearchRooms {
			names = append(names, r.Name)
		}
		return names
	}
	check("jazz", rooms("jazz"), "jazz-club")
	check("cafe (the banner)", rooms("cafe"), "jazz-club")
	check("open", rooms("open"), "chess")
	check("nothing", rooms("tennis"), []string{}...)
}
