package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/server"
)

const (
	createBotQ = `mutation($l: String!, $f: String!, $last: String) {
		createBot(login: $l, firstname: $f, lastname: $last) { apiKey bot { login firstname lastname createdAt keyPrefix } } }`
	rotateBotQ = `mutation($l: String!) { rotateBotKey(login: $l) { apiKey bot { login keyPrefix } } }`
	deleteBotQ = `mutation($l: String!) { deleteBot(login: $l) }`
	botsQ      = `{ bots { login firstname lastname createdAt keyPrefix } }`
	meBotQ     = `{ me { login bot } }`
	authorsQ   = `query($r: String!) { messages(room: $r, first: 20) { edges { node { content author { login bot deleted } } } } }`
)

type botInfo struct {
	Login, Firstname, Lastname, KeyPrefix string
	CreatedAt                             time.Time
}

type botCreated struct {
	APIKey string
	Bot    botInfo
}

// createBot makes owner create the bot login and returns its API key.
func createBot(t *testing.T, owner *chatclient.Client, login string) string {
	t.Helper()
	var out struct{ CreateBot botCreated }
	mustDo(t, owner, createBotQ, map[string]any{"l": login, "f": "Bot " + login}, &out)
	if out.CreateBot.Bot.Login != login || !strings.HasPrefix(out.CreateBot.APIKey, "chatql_bot_") ||
		!strings.HasPrefix(out.CreateBot.APIKey, out.CreateBot.Bot.KeyPrefix) || len(out.CreateBot.Bot.KeyPrefix) >= len(out.CreateBot.APIKey) {
		t.Fatalf("createBot(%s) = %+v; want the bot and a chatql_bot_ key it shows the start of", login, out.CreateBot)
	}
	return out.CreateBot.APIKey
}

// wantMeBot checks who c's token authenticates as.
func wantMeBot(t *testing.T, c *chatclient.Client, login string, bot bool) {
	t.Helper()
	var out struct {
		Me struct {
			Login string
			Bot   bool
		}
	}
	mustDo(t, c, meBotQ, nil, &out)
	if out.Me.Login != login || out.Me.Bot != bot {
		t.Fatalf("me = %+v, want %s (bot %v)", out.Me, login, bot)
	}
}

// authors returns the room's messages, by content, with their authors.
func authors(t *testing.T, c *chatclient.Client, room string) map[string]struct {
	Login        string
	Bot, Deleted bool
} {
	t.Helper()
	var out struct {
		Messages struct {
			Edges []struct {
				Node struct {
					Content string
					Author  struct {
						Login        string
						Bot, Deleted bool
					}
				}
			}
		}
	}
	mustDo(t, c, authorsQ, map[string]any{"r": room}, &out)
	got := map[string]struct {
		Login        string
		Bot, Deleted bool
	}{}
	for _, e := range out.Messages.Edges {
		got[e.Node.Content] = e.Node.Author
	}
	return got
}

// TestBots: alice creates a bot, which joins a room, follows it over a
// websocket and posts over HTTP with its API key, and sends a direct
// message; bob sees it as a bot. A rotated key stops working at once, on
// this instance and on another, and the websockets it opened are closed
// 4401; so is a deleted bot's, whose messages remain, from a deleted user.
// A bot cannot create bots nor log in with a password; a taken login is a
// CONFLICT, the 21st bot of an owner is refused, and nobody but the owner
// rotates or deletes a bot.
func TestBots(t *testing.T) { forEachStore(t, testBots) }

func testBots(t *testing.T, cfg server.Config) {
	cfg.JWTSecret = strings.Repeat("b", 32)
	cfg.SessionCheck = 100 * time.Millisecond
	ts := startServer(t, cfg)
	alice, bob := ts.user(t, "alice"), ts.user(t, "bob")
	mustDo(t, alice, createRoom, map[string]any{"n": "lobby"}, nil)
	mustDo(t, bob, joinRoom, map[string]any{"r": "lobby"}, nil)

	key := createBot(t, alice, "helper")
	var listed struct{ Bots []botInfo }
	mustDo(t, alice, botsQ, nil, &listed)
	if len(listed.Bots) != 1 || listed.Bots[0].Login != "helper" || !strings.HasPrefix(key, listed.Bots[0].KeyPrefix) || time.Since(listed.Bots[0].CreatedAt) > time.Minute {
		t.Fatalf("bots = %+v, want helper with its key's prefix", listed.Bots)
	}
	mustDo(t, bob, botsQ, nil, &listed)
	if len(listed.Bots) != 0 {
		t.Fatalf("bob's bots = %+v, want none", listed.Bots)
	}

	helper := ts.Client.WithToken(key)
	wantMeBot(t, helper, "helper", true)
	wantMeBot(t, alice, "alice", false)
	mustDo(t, helper, joinRoom, map[string]any{"r": "lobby"}, nil)
	sub := ts.subscribe(t, helper, chatclient.GraphQLTransportWS, "lobby", nil)
	var posted struct{ PostMessage struct{ ID string } }
	mustDo(t, bob, postMessage, map[string]any{"r": "lobby", "c": "hello bot"}, &posted)
	if ev := nextAfterJoins(t, sub); ev.Message == nil || ev.Message.Content != "hello bot" {
		t.Fatalf("the bot's websocket got %+v, want bob's message", ev)
	}
	var reacted struct {
		AddReaction struct {
			Reactions []struct {
				Emoji       string
				Count       int
				ReactedByMe *bool
			}
		}
	}
	mustDo(t, helper, `mutation($m: ID!) { addReaction(messageId: $m, emoji: "👍") { reactions { emoji count reactedByMe } } }`,
		map[string]any{"m": posted.PostMessage.ID}, &reacted)
	if r := reacted.AddReaction.Reactions; len(r) != 1 || r[0].Count != 1 || r[0].ReactedByMe == nil || !*r[0].ReactedByMe {
		t.Fatalf("the bot's reaction: %+v, want its 👍", r)
	}
	if ev := nextAfterJoins(t, sub); ev.Kind != "REACTION_CHANGED" || ev.User.Login != "helper" {
		t.Fatalf("the bot's websocket got %+v, want its reaction", ev)
	}
	mustDo(t, helper, postMessage, map[string]any{"r": "lobby", "c": "beep"}, nil)
	if ev := nextAfterJoins(t, sub); ev.Message == nil || ev.Message.Content != "beep" || ev.User.Login != "helper" {
		t.Fatalf("the bot's websocket got %+v, want its own message", ev)
	}
	if a := authors(t, bob, "lobby")["beep"]; a.Login != "helper" || !a.Bot || a.Deleted {
		t.Fatalf("bob sees the bot's message by %+v, want helper shown as a bot", a)
	}
	if a := authors(t, bob, "lobby")["hello bot"]; a.Bot {
		t.Fatalf("bob sees his own message by %+v, want no bot", a)
	}
	mustDo(t, helper, sendDirect, map[string]any{"to": "bob", "c": "a direct beep"}, nil)

	t.Run("NoBotsOfBots", func(t *testing.T) {
		wantCode(t, helper, "FORBIDDEN", createBotQ, map[string]any{"l": "minion", "f": "Minion"})
	})
	t.Run("NoPassword", func(t *testing.T) {
		for _, password := range []string{"", "password-helper", key} {
			wantCode(t, ts.Client, "UNAUTHENTICATED", loginQ, map[string]any{"l": "helper", "p": password})
		}
	})
	t.Run("Conflict", func(t *testing.T) {
		wantCode(t, alice, "CONFLICT", createBotQ, map[string]any{"l": "bob", "f": "Not Bob"})
		wantCode(t, ts.Client, "CONFLICT", signupQ, signupVars("helper"))
	})
	t.Run("OwnerOnly", func(t *testing.T) {
		wantCode(t, bob, "NOT_FOUND", rotateBotQ, map[string]any{"l": "helper"})
		wantCode(t, bob, "NOT_FOUND", deleteBotQ, map[string]any{"l": "helper"})
		wantCode(t, helper, "NOT_FOUND", deleteBotQ, map[string]any{"l": "helper"})
		wantMeBot(t, helper, "helper", true)
	})
	t.Run("BadKey", func(t *testing.T) {
		wantCode(t, ts.Client.WithToken(key+"x"), "UNAUTHENTICATED", meBotQ, nil)
		wantCode(t, ts.Client.WithToken("chatql_bot_"), "UNAUTHENTICATED", postMessage, map[string]any{"r": "lobby", "c": "boo"})
	})

	t.Run("Rotate", func(t *testing.T) {
		other, err := server.NewOnStore(context.Background(), cfg, testLogger(), ts.Store())
		if err != nil {
			t.Fatal(err)
		}
		ots := serve(t, other)
		wantMeBot(t, ots.Client.WithToken(key), "helper", true) // the other instance caches the key
		here := ts.subscribe(t, helper, chatclient.GraphQLTransportWS, "lobby", nil)
		there := ots.subscribe(t, ots.Client.WithToken(key), chatclient.GraphQLWS, "lobby", nil)
		var out struct{ RotateBotKey botCreated }
		mustDo(t, alice, rotateBotQ, map[string]any{"l": "helper"}, &out)
		fresh := out.RotateBotKey.APIKey
		if fresh == key || !strings.HasPrefix(fresh, out.RotateBotKey.Bot.KeyPrefix) {
			t.Fatalf("rotateBotKey = %+v, want a new key", out.RotateBotKey)
		}
		wantCode(t, helper, "UNAUTHENTICATED", meBotQ, nil)
		wantClosed4401(t, here)
		wantClosed4401(t, there)
		eventually(t, 5*time.Second, "the other instance refuses the old key", func() (bool, any) {
			err := ots.Client.WithToken(key).Do(testContext(t), meBotQ, nil, nil)
			return isCode(err, "UNAUTHENTICATED"), err
		})
		wantMeBot(t, ts.Client.WithToken(fresh), "helper", true)
		wantMeBot(t, ots.Client.WithToken(fresh), "helper", true)
		key, helper = fresh, ts.Client.WithToken(fresh)
	})

	t.Run("Delete", func(t *testing.T) {
		live := ts.subscribe(t, helper, chatclient.GraphQLTransportWS, "lobby", nil)
		sse := ts.openSSE(t, key, `subscription { roomEvents(room: \"lobby\") { kind } }`)
		mustDo(t, alice, deleteBotQ, map[string]any{"l": "helper"}, nil)
		var buf []byte
		chunk := make([]byte, 1024)
		for !strings.Contains(string(buf), "event: complete") {
			n, err := sse.Body.Read(chunk)
			buf = append(buf, chunk[:n]...)
			if err != nil {
				break
			}
		}
		if !strings.Contains(string(buf), `"UNAUTHENTICATED"`) || !strings.Contains(string(buf), "event: complete") {
			t.Fatalf("the bot's SSE stream after deleteBot = %q, want an UNAUTHENTICATED error, then complete", buf)
		}
		wantCode(t, helper, "UNAUTHENTICATED", meBotQ, nil)
		wantCode(t, helper, "UNAUTHENTICATED", postMessage, map[string]any{"r": "lobby", "c": "still here?"})
		wantClosed4401(t, live)
		if a := authors(t, bob, "lobby")["beep"]; a.Login != "helper" || !a.Deleted {
			t.Fatalf("bob sees the deleted bot's message by %+v, want a deleted user", a)
		}
		mustDo(t, alice, botsQ, nil, &listed)
		if len(listed.Bots) != 0 {
			t.Fatalf("bots after deleteBot = %+v, want none", listed.Bots)
		}
		wantCode(t, alice, "CONFLICT", createBotQ, map[string]any{"l": "helper", "f": "Again"})
	})

	t.Run("OwnerDeleted", func(t *testing.T) {
		dave := ts.user(t, "dave")
		daves := ts.Client.WithToken(createBot(t, dave, "dave-bot"))
		wantMeBot(t, daves, "dave-bot", true)
		mustDo(t, dave, `mutation { deleteAccount(password: "password-dave") }`, nil, nil)
		wantCode(t, daves, "UNAUTHENTICATED", meBotQ, nil)
		wantCode(t, ts.Client, "CONFLICT", signupQ, signupVars("dave-bot"))
	})

	t.Run("AtMost20", func(t *testing.T) {
		carol := ts.user(t, "carol")
		for i := range 20 {
			createBot(t, carol, fmt.Sprintf("carol-bot-%d", i))
		}
		wantCode(t, carol, "BAD_USER_INPUT", createBotQ, map[string]any{"l": "carol-bot-20", "f": "One Too Many"})
		wantCode(t, ts.Client, "UNAUTHENTICATED", loginQ, map[string]any{"l": "carol-bot-20", "p": "whatever-it-is"})
	})
}

// TestBotKeysRateLimited: bad API keys count against their client
// address's login attempts, so that keys cannot be tried fast: past the
// limit they are answered RATE_LIMITED, on HTTP and on a websocket. Other
// addresses are unaffected; a good key still works from the address.
func TestBotKeysRateLimited(t *testing.T) {
	ts := serverLimiting(t, ratelimit.LoginAddress, ratelimit.Limit{Rate: 3, Period: time.Hour, Burst: 3})
	alice := ts.Client.WithToken(login(t, ts, "alice", "password-alice").Token) // one login attempt of 127.0.0.1
	key := createBot(t, alice, "helper")
	guesser := "203.0.113.5"
	for i := range 3 {
		wantCode(t, fromAddress(ts.Client.WithToken(fmt.Sprintf("chatql_bot_guess%d", i)), guesser), "UNAUTHENTICATED", meBotQ, nil)
	}
	wantRateLimited(t, fromAddress(ts.Client.WithToken("chatql_bot_guess3"), guesser), meBotQ, nil)
	wantCode(t, fromAddress(ts.Client.WithToken("chatql_bot_guess4"), "203.0.113.6"), "UNAUTHENTICATED", meBotQ, nil)
	wantMeBot(t, fromAddress(ts.Client.WithToken(key), guesser), "helper", true)
	// A websocket's bad key counts too: the loopback address has one
	// attempt (alice's login) and two guesses left, then it is refused.
	for i := range 3 {
		sub, err := ts.Client.WithToken(fmt.Sprintf("chatql_bot_ws%d", i)).Subscribe(testContext(t), chatclient.GraphQLTransportWS, roomEvents, map[string]any{"r": "any"})
		if err == nil {
			sub.Close()
			t.Fatal("a websocket with a bad key was accepted")
		}
		if i == 2 && !strings.Contains(err.Error(), "login attempts from this address") {
			t.Fatalf("the third bad key of a websocket: %v, want refused over the address's limit", err)
		}
	}
}

// TestBotKeyRevokedAtOnce: with sessions trusted for an hour, a rotated
// key still stops working at once on the instance that rotated it, and
// its websocket is closed there: the instance does not wait for its cache
// to expire. With Redis (CHAT_REDIS_URL), another instance hears of it and
// does the same.
func TestBotKeyRevokedAtOnce(t *testing.T) {
	cfg := testConfig(t)
	cfg.JWTSecret = strings.Repeat("r", 32)
	cfg.SessionCheck = time.Hour
	ts := startServer(t, cfg)
	alice := ts.user(t, "alice")
	mustDo(t, alice, createRoom, map[string]any{"n": "lobby"}, nil)
	key := createBot(t, alice, "helper")
	helper := ts.Client.WithToken(key)
	mustDo(t, helper, joinRoom, map[string]any{"r": "lobby"}, nil)
	wantMeBot(t, helper, "helper", true) // cached for the hour
	sub := ts.subscribe(t, helper, chatclient.GraphQLTransportWS, "lobby", nil)
	mustDo(t, alice, rotateBotQ, map[string]any{"l": "helper"}, nil)
	wantCode(t, helper, "UNAUTHENTICATED", meBotQ, nil)
	wantClosed4401(t, sub)
}

// TestBotKeyRevokedAcrossCluster: with sessions trusted for an hour, a key
// rotated on one instance stops working at once on the other, which hears
// the revocation through Redis, and the bot's websocket there is closed
// 4401.
func TestBotKeyRevokedAcrossCluster(t *testing.T) {
	cl := startClusterWith(t, 2, redisURL(t), func(_ int, c *server.Config) { c.SessionCheck = time.Hour })
	first, second := cl.instances[0], cl.instances[1]
	alice := first.user(t, "alice")
	mustDo(t, alice, createRoom, map[string]any{"n": "lobby"}, nil)
	key := createBot(t, alice, "helper")
	there := second.Client.WithToken(key)
	mustDo(t, there, joinRoom, map[string]any{"r": "lobby"}, nil)
	wantMeBot(t, there, "helper", true) // cached for the hour
	sub := second.subscribe(t, there, chatclient.GraphQLTransportWS, "lobby", nil)
	mustDo(t, alice, rotateBotQ, map[string]any{"l": "helper"}, nil)
	wantClosed4401(t, sub)
	wantCode(t, there, "UNAUTHENTICATED", meBotQ, nil)
}
