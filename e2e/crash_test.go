package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/internal/testenv"
	"github.com/killrchat/chatql/store"
)

// TestKilledServerKeepsAcknowledgedMessages runs the real server binary on
// the embedded store, has users post to a public room, send direct messages
// and post to a private group concurrently, kills the process with SIGKILL
// while posts are in flight, starts it again on the same data directory and
// reads everything back through the API: every message the server
// acknowledged is in its room's history, by id, among its author's
// messages, and in the inboxes, which agree with the histories. Several
// rounds on one data directory.
//
// A killed process loses what it had not handed to the kernel: with posts
// committed without a sync, pebble kept the last ones in its log writer's
// in-memory block (up to 32 KiB, written out when full or when some write
// asks for a sync), so every round lost its last acknowledged messages.
// (What only an fsync protects against, a crash of the machine, the store's
// crash tests on a simulated disk check.)
func TestKilledServerKeepsAcknowledgedMessages(t *testing.T) {
	bin := buildChatql(t)
	dir := t.TempDir()
	secret := randomHex(32)
	users := []string{"ann", "ben", "cat", "dan", "eve", "fay"}
	members := users[:4] // of the private group
	tokens := map[string]string{}
	var acked []sentMessage

	const rounds = 4
	for round := 1; round <= rounds+1; round++ {
		srv := startBinary(t, bin, dir, secret)
		if round == 1 {
			setUpCrashRooms(t, srv, users, members, tokens)
		} else {
			checkAcknowledged(t, srv, tokens, users, acked, fmt.Sprintf("after kill %d", round-1))
		}
		if round <= rounds {
			acked = append(acked, postUntilKilled(t, srv, tokens, users, members, round)...)
		}
		srv.kill()
	}
}

// crashServer is the server binary, run by startChatql, and one HTTP
// client for all its users, closed with the process.
type crashServer struct {
	*chatqlProcess
	http *http.Client
}

// startBinary starts the server on a free loopback port with the data
// directory dir (rate limits off: the posters post as fast as they can),
// and waits until it serves.
func startBinary(t *testing.T, bin, dir, secret string) *crashServer {
	t.Helper()
	cfg := testConfig(t)
	cfg.DataDir, cfg.JWTSecret, cfg.BcryptCost = dir, secret, 4
	return &crashServer{chatqlProcess: startChatql(t, bin, cfg),
		http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}}
}

// as returns a client of the server acting with token.
func (s *crashServer) as(token string) *chatclient.Client {
	return &chatclient.Client{URL: s.URL, HTTP: s.http, Token: token}
}

// kill sends SIGKILL and waits for the process to end.
func (s *crashServer) kill() {
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.http.CloseIdleConnections()
}

// setUpCrashRooms signs the users up and logs them in (tokens), creates
// the public room "lobby", which all join, and the private group "den" of
// members.
func setUpCrashRooms(t *testing.T, srv *crashServer, users, members []string, tokens map[string]string) {
	t.Helper()
	anon := srv.as("")
	for _, u := range users {
		mustDo(t, anon, `mutation($in: SignupInput!) { signup(input: $in) { login } }`,
			map[string]any{"in": map[string]any{"login": u, "password": "password-" + u, "firstname": u, "lastname": "Tester"}}, nil)
		var out struct{ Login struct{ Token string } }
		mustDo(t, anon, `mutation($l: String!, $p: String!) { login(login: $l, password: $p) { token } }`,
			map[string]any{"l": u, "p": "password-" + u}, &out)
		tokens[u] = out.Login.Token
	}
	owner := srv.as(tokens[users[0]])
	mustDo(t, owner, createRoom, map[string]any{"n": "lobby"}, nil)
	mustDo(t, owner, createKind, map[string]any{"n": "den", "k": "PRIVATE_GROUP"}, nil)
	for _, u := range users[1:] {
		mustDo(t, srv.as(tokens[u]), joinRoom, map[string]any{"r": "lobby"}, nil)
	}
	for _, u := range members[1:] {
		mustDo(t, owner, addMember, map[string]any{"g": "den", "l": u}, nil)
	}
}

// sentMessage is a message the server acknowledged.
type sentMessage struct{ ID, Room, Author, Content string }

const (
	postTo     = `mutation($r: String!, $c: String!) { postMessage(room: $r, content: $c) { id room } }`
	sendTo     = `mutation($to: String!, $c: String!) { sendDirectMessage(to: $to, content: $c) { id room } }`
	messageQ   = `query($id: ID!) { message(id: $id) { id room content author { login } } }`
	historyQ   = `query($r: String!, $after: String) { messages(room: $r, first: 100, after: $after) { edges { node { id content system author { login } } } pageInfo { hasNextPage endCursor } } }`
	directAllQ = `query($with: String!, $after: String) { directMessages(with: $with, first: 100, after: $after) { edges { node { id content system author { login } } } pageInfo { hasNextPage endCursor } } }`
	myAllQ     = `query($after: String) { myMessages(first: 100, after: $after) { edges { node { id } } pageInfo { hasNextPage endCursor } } }`
)

// postUntilKilled has two posters per user cycle through a post to the
// lobby, a direct message and, for members, a post to the group, and kills
// the server when a random number of posts have been acknowledged, with
// the others in flight. It returns the acknowledged posts, those that
// landed during the kill included.
func postUntilKilled(t *testing.T, srv *crashServer, tokens map[string]string, users, members []string, round int) []sentMessage {
	t.Helper()
	var killed atomic.Bool
	acked := testenv.NewAcks[sentMessage](40 + rand.IntN(120))
	var wg sync.WaitGroup
	for w := range 2 * len(users) {
		u := users[w%len(users)]
		c := srv.as(tokens[u])
		wg.Go(func() {
			for i := 0; ; i++ {
				content := fmt.Sprintf("round %d poster %d message %d", round, w, i)
				var out map[string]struct{ ID, Room string }
				var err error
				switch peer := users[(w+1+i)%len(users)]; {
				case i%3 == 1 && peer != u:
					err = c.Do(context.Background(), sendTo, map[string]any{"to": peer, "c": content}, &out)
				case i%3 == 2 && slices.Contains(members, u):
					err = c.Do(context.Background(), postTo, map[string]any{"r": "den", "c": content}, &out)
				default:
					err = c.Do(context.Background(), postTo, map[string]any{"r": "lobby", "c": content}, &out)
				}
				if err != nil {
					if !killed.Load() {
						t.Errorf("%s: %q: %v", u, content, err)
					}
					return
				}
				for _, m := range out {
					acked.Add(sentMessage{ID: m.ID, Room: m.Room, Author: u, Content: content})
				}
			}
		})
	}
	if !acked.Wait(&wg) {
		t.Fatalf("round %d: every poster stopped before the kill", round)
	}
	killed.Store(true)
	srv.kill()
	wg.Wait()
	all := acked.List()
	t.Logf("round %d: killed after %d acknowledged posts", round, len(all))
	return all
}

// checkAcknowledged reads every acknowledged message back from the
// restarted server, and checks that the indexes agree with the histories.
func checkAcknowledged(t *testing.T, srv *crashServer, tokens map[string]string, users []string, acked []sentMessage, when string) {
	t.Helper()
	// The histories: the lobby and the group as their creator reads them,
	// every direct conversation as its first user does.
	histories := map[string][]msgNode{
		"lobby": readConnection(t, srv.as(tokens[users[0]]), historyQ, map[string]any{"r": "lobby"}),
		"den":   readConnection(t, srv.as(tokens[users[0]]), historyQ, map[string]any{"r": "den"}),
	}
	for i, a := range users {
		for _, b := range users[i+1:] {
			histories[store.DirectConversationID(a, b)] = readConnection(t, srv.as(tokens[a]), directAllQ, map[string]any{"with": b})
		}
	}

	lost := 0
	for _, m := range acked {
		inHistory := slices.ContainsFunc(histories[m.Room], func(h msgNode) bool {
			return h.ID == m.ID && h.Content == m.Content && h.Author.Login == m.Author
		})
		var byID struct{ Message *msgNode }
		err := srv.as(tokens[m.Author]).Do(testContext(t), messageQ, map[string]any{"id": m.ID}, &byID)
		if !inHistory || err != nil || byID.Message == nil || byID.Message.Content != m.Content || byID.Message.Room != m.Room {
			if lost++; lost <= 3 {
				t.Errorf("%s: acknowledged %q in %s: in its history: %v; message(id) = %+v, %v", when, m.Content, m.Room, inHistory, byID.Message, err)
			}
		}
	}
	if lost > 0 {
		t.Errorf("%s: %d of the %d acknowledged messages are lost", when, lost, len(acked))
	}

	for _, u := range users {
		c := srv.as(tokens[u])
		var want, got []string
		for _, h := range histories {
			for _, m := range h {
				if m.Author.Login == u {
					want = append(want, m.ID)
				}
			}
		}
		for _, m := range readConnection(t, c, myAllQ, nil) {
			got = append(got, m.ID)
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: myMessages of %s has %d messages; the histories hold %d of theirs", when, u, len(got), len(want))
		}

		// The system messages of the group's joins are not the inbox's.
		// Posting marks a group or direct conversation read: the unread are
		// the others' messages after the user's own newest, up to the cap.
		// A public room (ROOM) is read only by markRead, which no one did.
		for id, e := range inbox(t, c) {
			newest, unread, own := "", 0, false
			for _, m := range histories[id] { // newest first
				if m.System {
					continue
				}
				if newest == "" {
					newest = m.ID
				}
				mine := m.Author.Login == u
				own = own || mine && e.Kind != "ROOM"
				if !mine && !own && unread < store.UnreadCap {
					unread++
				}
			}
			last := ""
			if e.LastMessage != nil {
				last = e.LastMessage.ID
			}
			if last != newest || e.Unread != unread {
				t.Errorf("%s: %s's inbox entry of %s: last message %s, %d unread; its history: newest %s, %d by others", when, u, id, last, e.Unread, newest, unread)
			}
		}
	}
}

type msgNode struct {
	ID, Room, Content string
	System            bool
	Author            struct{ Login string }
}

// readConnection reads every page of a message connection: the query's
// one field, with $after.
func readConnection(t *testing.T, c *chatclient.Client, query string, vars map[string]any) []msgNode {
	t.Helper()
	var all []msgNode
	page := map[string]any{}
	for k, v := range vars {
		page[k] = v
	}
	for {
		var out map[string]struct {
			Edges    []struct{ Node msgNode }
			PageInfo struct {
				HasNextPage bool
				EndCursor   *string
			}
		}
		mustDo(t, c, query, page, &out)
		if len(out) != 1 {
			t.Fatalf("%s: got fields %v, want one connection", firstLine(query), out)
		}
		for _, conn := range out {
			for _, e := range conn.Edges {
				all = append(all, e.Node)
			}
			if !conn.PageInfo.HasNextPage || conn.PageInfo.EndCursor == nil {
				return all
			}
			page["after"] = *conn.PageInfo.EndCursor
		}
	}
}
