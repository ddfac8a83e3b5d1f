package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/server"
	"github.com/killrchat/chatql/store"
)

// TestReaders is the conformance test of the reader's view: every read
// path, for every kind of viewer, against one expectation table written
// from the documented rules (README: rooms, private groups, moderation,
// hidden and deleted messages, blocks, threads, reactions; schema/*.graphqls).
//
// One server per store is set up once (buildReaders) with a public room
// (plaza), a private group (den) and a direct conversation (ava:mel), each
// holding messages in every state: normal, hidden, deleted, edited, and the
// replies of a thread posted before, inside, between and after viewers'
// membership windows.
//
// The table has three parts:
//
//   - who reads which message: the grids plazaReads and denReads (the
//     membership windows of the timeline of roomMessages) and directReads;
//   - what a reader sees of a message they read: wantView, from the
//     message's state (hidden: empty content for all but its author;
//     deleted: a tombstone for everyone; edited: the current text) and the
//     viewer (authorBlocked, reactedByMe, the replies of a thread they read);
//   - the columns: readPaths, what each read path must, may or must not
//     show each viewer of each message, or the code it refuses the viewer
//     with; and readerActions, the code each action refuses them with.
//
// A new read path is one more entry of readPaths.
//
// Real defects this test found, each failing at the commit that added it
// and fixed since: group members' room events about messages outside their
// windows (stream.Room now filters them); a hidden message's mentions
// (read from its content, now blank with it: chat.Content); roomEvents
// telling a never-member that a group exists (now NOT_FOUND); a banned
// member's inbox entry and inbox replay showing the group's messages (now
// nothing of it); and, on Cassandra, an inbox entry's last message losing
// its thread (conversations_by_user.last_reply, schema version 14). A
// failure here names the store, conversation, path and viewer, what was
// shown and what the rules say.
//
// Rules read one way where the documentation allows two, each noted where
// it is used:
//
//   - hidden content is shown to its author only (README: "its content is
//     empty for everyone but its author"; schema Message.hidden;
//     chat.SeesHiddenContent), not to the room's creator or
//     moderators, who may hide and delete but are not said to read what
//     they hid;
//   - Message.mentions is read from the content: who sees a message's
//     content empty (hidden, deleted) sees no mentions;
//   - myMessages lists all the caller's own messages (schema: "across all
//     conversations"), shown as to their author, also in a room they no
//     longer read (left, banned), where message(id:) of the same message is
//     null: the schema states no exception;
//   - an inbox entry's lastMessage is the newest message its owner reads of
//     the conversation: for a former member, the newest of their window
//     (not their own leave, which ends it);
//   - a group member's roomEvents(after:) replays what they read from their
//     current window on; what they read of an earlier window may come (as
//     events about those messages) but need not;
//   - thread(messageId:) of a root the viewer may not read is NOT_FOUND
//     (README says nothing; NOT_FOUND as the actions on it, so that ids
//     reveal nothing), and roomEvents of a private group by someone never
//     in it is NOT_FOUND (the group is invisible to them, as
//     messages(room:) and room(name:) make it);
//   - editMessage of a deleted message is NOT_FOUND whoever asks ("a deleted
//     one, NOT_FOUND"), before FORBIDDEN for someone else's;
//   - the actions are checked where they refuse; where they are allowed
//     they are run only when that changes nothing the table shows (an edit
//     to the current text, deleting a tombstone, hiding a hidden message, a
//     reaction added and removed), after every read path was read; a
//     reaction to a tombstone and hiding a tombstone are not run (the rules
//     say nothing of them).
func TestReaders(t *testing.T) { forEachStore(t, testReaders) }

func testReaders(t *testing.T, cfg server.Config) {
	began := time.Now()
	ts := startServer(t, cfg)
	started := time.Now()
	fx := buildReaders(t, ts)
	built := time.Now()
	reads := fx.readAll()
	read := time.Now()
	acts := fx.actAll()
	ran := time.Now()
	t.Logf("server started in %v; table set up in %v; read in %v; acted in %v",
		started.Sub(began).Round(time.Millisecond), built.Sub(started).Round(time.Millisecond),
		read.Sub(built).Round(time.Millisecond), ran.Sub(read).Round(time.Millisecond))
	for _, c := range fx.convs {
		t.Run(c.name, func(t *testing.T) {
			for _, p := range readPaths {
				if !p.reads(c) {
					continue
				}
				t.Run(p.name, func(t *testing.T) {
					for _, v := range readerLogins {
						t.Run(v, func(t *testing.T) { checkPath(t, c, p, v, reads[cellKey{c.name, p.name, v}]) })
					}
				})
			}
			for _, a := range readerActions {
				t.Run(a.name, func(t *testing.T) {
					for _, v := range readerLogins {
						t.Run(v, func(t *testing.T) { checkAction(t, c, a, v, acts[cellKey{c.name, a.name, v}]) })
					}
				})
			}
		})
	}
}

// The viewers, each one kind of reader of the rooms (the direct
// conversation is ava's and mel's: everyone else is a third user of it).
var readerLogins = []string{"ava", "mel", "lat", "ret", "lea", "rex", "ban", "nev", "blk", "bld", "mod", "cora"}

// readerRoles says what each viewer is, for the failure messages.
var readerRoles = map[string]string{
	"ava":  "the author",
	"mel":  "a member",
	"lat":  "a member since after the first posts",
	"ret":  "a member who left and came back",
	"lea":  "a former member who left",
	"rex":  "a former member removed by a moderator",
	"ban":  "a former member banned by a moderator",
	"nev":  "never a member",
	"blk":  "a member who blocked ava",
	"bld":  "a member ava blocked",
	"mod":  "a moderator",
	"cora": "the creator",
}

// readerBlocks: who blocked whom.
var readerBlocks = map[string]string{"blk": "ava", "ava": "bld"}

// convKind is a conversation's kind, one letter, as readPath.kinds lists
// them.
type convKind string

const (
	publicRoom   convKind = "p"
	privateGroup convKind = "g"
	directConv   convKind = "d"
)

// msgSpec is one message of the table: how it was posted and what became
// of it.
type msgSpec struct {
	key      string // its name in the table
	author   string
	text     string // the current text: as posted, or as last edited
	replyTo  string // the key of its thread's root
	hidden   bool
	deleted  bool
	edited   bool
	reacted  string   // the emoji mel reacted with, if any
	mentions []string // the logins its text mentions
	id       string
}

// conv is one conversation of the table.
type conv struct {
	name string // the room's name, or the direct conversation's id
	kind convKind
	msgs []*msgSpec
	// reads is the grid: for each viewer, a letter per message of msgs,
	// in order (spaces aside): R reads it, . may not.
	reads map[string]string
	// access is each viewer's standing in a room: participant (a current
	// member), former, banned or never.
	access map[string]string
	// since is, for a group member, the first message of their current
	// membership window (unlisted: the first message).
	since map[string]string
	// last is the message each viewer's inbox entry of it shows, per the
	// rules: the newest message they read ("": none, or no entry).
	last map[string]string
	// replayEnds is, for a viewer whose own leave is among the events a
	// replay from the first message delivers, the first message after it:
	// the stream ends with their leave (README: "A stream ends after your
	// own PARTICIPANT_LEFT").
	replayEnds map[string]string
}

func (c *conv) msg(key string) *msgSpec {
	for _, m := range c.msgs {
		if m.key == key {
			return m
		}
	}
	panic("no message " + key)
}

// before reports whether m was posted before the message key.
func (c *conv) before(m *msgSpec, key string) bool {
	return slices.Index(c.msgs, m) < slices.Index(c.msgs, c.msg(key))
}

func (c *conv) readable(v string, m *msgSpec) bool {
	row := strings.ReplaceAll(c.reads[v], " ", "")
	if len(row) != len(c.msgs) {
		panic(fmt.Sprintf("%s: %s's row has %d letters for %d messages", c.name, v, len(row), len(c.msgs)))
	}
	return row[slices.Index(c.msgs, m)] == 'R'
}

// moderates reports whether v may hide and delete others' messages of c:
// a room's creator and moderators.
func (c *conv) moderates(v string) bool {
	return c.kind != directConv && (v == "cora" || v == "mod")
}

// The rooms' messages, in the order they are posted (buildRoom), each room
// made by cora, moderated by mod, with every viewer but lat and nev in it
// from the start:
//
//	open  cora  opening words
//	root  ava   the thread's root
//	r1    lea   a reply, inside every first window, before lat's
//	bnm   ban   a post of the user banned later
//	norm  ava   a normal message, which mel reacts to
//	hid   ava   mentions @mel; hidden by the moderator
//	edt   ava   edited by ava
//	del   ava   deleted by the creator
//	            (ret leaves; lat joins, or is added)
//	r2    bld   a reply, while ret is away and lat is in
//	            (the moderator removes rex)
//	mid   mel   after rex's removal
//	            (lea leaves; the moderator bans ban; ret comes back)
//	r3    cora  a reply, after lea, rex and ban left
//	late  ava   the last message, a reply too
//
// then hid is hidden, edt edited, del deleted, and mel reacts to norm, r2
// and late.
var roomMessages = []*msgSpec{
	{key: "open", author: "cora", text: "opening words"},
	{key: "root", author: "ava", text: "the thread's root"},
	{key: "r1", author: "lea", text: "lea replies", replyTo: "root"},
	{key: "bnm", author: "ban", text: "ban's words"},
	{key: "norm", author: "ava", text: "plain words", reacted: "👍"},
	{key: "hid", author: "ava", text: "secret words for @mel", hidden: true, mentions: []string{"mel"}},
	{key: "edt", author: "ava", text: "final draft", edited: true},
	{key: "del", author: "ava", text: "", deleted: true},
	{key: "r2", author: "bld", text: "bld replies", replyTo: "root", reacted: "👍"},
	{key: "mid", author: "mel", text: "mid words"},
	{key: "r3", author: "cora", text: "cora replies", replyTo: "root"},
	{key: "late", author: "ava", text: "late words", replyTo: "root", reacted: "👍"},
}

// The public room: its participants read its whole history, whenever they
// joined; nobody else reads any of it (schema: "Only participants may
// read"; README: a ban keeps the login out).
var plazaReads = map[string]string{
	//      open root r1 bnm norm hid edt del r2 mid r3 late
	"ava":  "R    R    R  R   R    R   R   R   R  R   R  R",
	"mel":  "R    R    R  R   R    R   R   R   R  R   R  R",
	"lat":  "R    R    R  R   R    R   R   R   R  R   R  R",
	"ret":  "R    R    R  R   R    R   R   R   R  R   R  R",
	"lea":  ".    .    .  .   .    .   .   .   .  .   .  .",
	"rex":  ".    .    .  .   .    .   .   .   .  .   .  .",
	"ban":  ".    .    .  .   .    .   .   .   .  .   .  .",
	"nev":  ".    .    .  .   .    .   .   .   .  .   .  .",
	"blk":  "R    R    R  R   R    R   R   R   R  R   R  R",
	"bld":  "R    R    R  R   R    R   R   R   R  R   R  R",
	"mod":  "R    R    R  R   R    R   R   R   R  R   R  R",
	"cora": "R    R    R  R   R    R   R   R   R  R   R  R",
}

// The private group: each member reads the messages posted while they were
// in it (README: "each member reads only the messages posted while they
// were in it (leaving and being added again opens a second window)"); a
// removed member keeps their window (schema removeParticipant); a banned
// one reads nothing until unbanned; a non-member nothing.
var denReads = map[string]string{
	//      open root r1 bnm norm hid edt del r2 mid r3 late
	"ava":  "R    R    R  R   R    R   R   R   R  R   R  R",
	"mel":  "R    R    R  R   R    R   R   R   R  R   R  R",
	"lat":  ".    .    .  .   .    .   .   .   R  R   R  R",
	"ret":  "R    R    R  R   R    R   R   R   .  .   R  R",
	"lea":  "R    R    R  R   R    R   R   R   R  R   .  .",
	"rex":  "R    R    R  R   R    R   R   R   R  .   .  .",
	"ban":  ".    .    .  .   .    .   .   .   .  .   .  .",
	"nev":  ".    .    .  .   .    .   .   .   .  .   .  .",
	"blk":  "R    R    R  R   R    R   R   R   R  R   R  R",
	"bld":  "R    R    R  R   R    R   R   R   R  R   R  R",
	"mod":  "R    R    R  R   R    R   R   R   R  R   R  R",
	"cora": "R    R    R  R   R    R   R   R   R  R   R  R",
}

var roomAccess = map[string]string{
	"ava": "participant", "mel": "participant", "lat": "participant", "ret": "participant",
	"lea": "former", "rex": "former", "ban": "banned", "nev": "never",
	"blk": "participant", "bld": "participant", "mod": "participant", "cora": "participant",
}

// The direct conversation between ava and mel (buildDirect):
//
//	d1  ava  hello, which mel reacts to
//	d2  mel  a reply to d1
//	d3  ava  edited by ava
//	d4  ava  hidden by ava
//	d5  ava  deleted by ava
//	d6  mel  the last message, a reply to d1 too
var directMessages = []*msgSpec{
	{key: "d1", author: "ava", text: "hello mel", reacted: "👍"},
	{key: "d2", author: "mel", text: "hi ava", replyTo: "d1"},
	{key: "d3", author: "ava", text: "dm final", edited: true},
	{key: "d4", author: "ava", text: "dm secret", hidden: true},
	{key: "d5", author: "ava", text: "", deleted: true},
	{key: "d6", author: "mel", text: "dm last", replyTo: "d1"},
}

// directReads: a direct conversation is its two parties' (README: "A
// direct conversation's id is the two logins in order").
func directReads() map[string]string {
	reads := map[string]string{}
	for _, v := range readerLogins {
		reads[v] = strings.Repeat(".", len(directMessages))
		if v == "ava" || v == "mel" {
			reads[v] = strings.Repeat("R", len(directMessages))
		}
	}
	return reads
}

func cloneMsgs(msgs []*msgSpec) []*msgSpec {
	out := make([]*msgSpec, len(msgs))
	for i, m := range msgs {
		cp := *m
		out[i] = &cp
	}
	return out
}

// readersFixture is the server and the conversations of the table.
type readersFixture struct {
	ts      *testServer
	clients map[string]*chatclient.Client
	convs   []*conv
	byID    map[string]*msgSpec
	convOf  map[string]*conv
	// early is a cursor older than every message of the table.
	early string

	mu    sync.Mutex
	memos map[string]*memo
}

// buildReaders signs the viewers up and writes the conversations of the
// table.
func buildReaders(t *testing.T, ts *testServer) *readersFixture {
	t.Helper()
	fx := &readersFixture{ts: ts, clients: map[string]*chatclient.Client{}, byID: map[string]*msgSpec{}, convOf: map[string]*conv{}, memos: map[string]*memo{}}
	for _, l := range append(slices.Clone(readerLogins), "zed") {
		fx.clients[l] = ts.user(t, l)
	}
	fx.early = store.MinMessageID(time.Now().Add(-time.Second)).String()
	for blocker, blocked := range readerBlocks {
		mustDo(t, fx.clients[blocker], blockQ, map[string]any{"l": blocked}, nil)
	}
	plaza := &conv{name: "plaza", kind: publicRoom, msgs: cloneMsgs(roomMessages), reads: plazaReads, access: roomAccess,
		last:       map[string]string{"lea": "", "rex": "", "ban": "", "nev": ""},
		replayEnds: map[string]string{"ret": "r2"}}
	den := &conv{name: "den", kind: privateGroup, msgs: cloneMsgs(roomMessages), reads: denReads, access: roomAccess,
		since: map[string]string{"lat": "r2", "ret": "r3"},
		last:  map[string]string{"lea": "mid", "rex": "r2", "ban": "", "nev": ""}}
	for _, c := range []*conv{plaza, den} {
		for _, v := range readerLogins {
			if _, ok := c.last[v]; !ok {
				c.last[v] = "late"
			}
		}
	}
	direct := &conv{name: "ava:mel", kind: directConv, msgs: cloneMsgs(directMessages), reads: directReads(), access: map[string]string{}, last: map[string]string{"ava": "d6", "mel": "d6"}}
	fx.convs = []*conv{plaza, den, direct}
	fx.buildRoom(t, plaza)
	fx.buildRoom(t, den)
	fx.buildDirect(t, direct)
	for _, c := range fx.convs {
		for _, m := range c.msgs {
			fx.byID[m.id] = m
			fx.convOf[m.id] = c
		}
	}
	return fx
}

// post posts the message key of c as its author, with this content.
func (fx *readersFixture) post(t *testing.T, c *conv, key string, content string) {
	t.Helper()
	m := c.msg(key)
	vars := map[string]any{"r": c.name, "c": content}
	if m.replyTo != "" {
		vars["to"] = c.msg(m.replyTo).id
	}
	var out struct{ PostMessage struct{ ID string } }
	mustDo(t, fx.clients[m.author], replyQ, vars, &out)
	m.id = out.PostMessage.ID
}

// buildRoom writes the room c (a public room or a private group) as the
// comment of roomMessages tells.
func (fx *readersFixture) buildRoom(t *testing.T, c *conv) {
	t.Helper()
	u := fx.clients
	group := c.kind == privateGroup
	kind := "PUBLIC"
	if group {
		kind = "PRIVATE_GROUP"
	}
	mustDo(t, u["cora"], createKind, map[string]any{"n": c.name, "k": kind}, nil)
	enter := func(l string) {
		if group {
			mustDo(t, u["cora"], addMember, map[string]any{"g": c.name, "l": l}, nil)
		} else {
			mustDo(t, u[l], joinRoom, map[string]any{"r": c.name}, nil)
		}
	}
	for _, l := range []string{"mod", "ava", "mel", "lea", "rex", "ban", "blk", "bld", "ret"} {
		enter(l)
	}
	on := func(l string) map[string]any { return map[string]any{"r": c.name, "l": l} }
	mustDo(t, u["cora"], appointQ, on("mod"), nil)
	for _, k := range []string{"open", "root", "r1", "bnm", "norm"} {
		fx.post(t, c, k, c.msg(k).text)
	}
	fx.post(t, c, "hid", "secret words for @mel")
	fx.post(t, c, "edt", "first draft")
	fx.post(t, c, "del", "doomed words")
	mustDo(t, u["ret"], leaveRoom, map[string]any{"r": c.name}, nil)
	enter("lat")
	fx.post(t, c, "r2", c.msg("r2").text)
	mustDo(t, u["mod"], removeQ, on("rex"), nil)
	fx.post(t, c, "mid", c.msg("mid").text)
	mustDo(t, u["lea"], leaveRoom, map[string]any{"r": c.name}, nil)
	mustDo(t, u["mod"], banQ, on("ban"), nil)
	enter("ret")
	fx.post(t, c, "r3", c.msg("r3").text)
	fx.post(t, c, "late", c.msg("late").text)

	mustDo(t, u["mod"], hideQ, map[string]any{"id": c.msg("hid").id}, nil)
	mustDo(t, u["ava"], editQ, map[string]any{"id": c.msg("edt").id, "c": c.msg("edt").text}, nil)
	mustDo(t, u["cora"], deleteQ, map[string]any{"id": c.msg("del").id}, nil)
	for _, m := range c.msgs {
		if m.reacted != "" {
			mustDo(t, u["mel"], addReactionQ, map[string]any{"id": m.id, "e": m.reacted}, nil)
		}
	}
}

// buildDirect writes the direct conversation between ava and mel, as the
// comment of directMessages tells.
func (fx *readersFixture) buildDirect(t *testing.T, c *conv) {
	t.Helper()
	u := fx.clients
	send := func(key, content string) {
		m := c.msg(key)
		to := "mel"
		if m.author == "mel" {
			to = "ava"
		}
		vars := map[string]any{"to": to, "c": content}
		if m.replyTo != "" {
			vars["re"] = c.msg(m.replyTo).id
		}
		var out struct{ SendDirectMessage struct{ ID string } }
		mustDo(t, u[m.author], directReplyQ, vars, &out)
		m.id = out.SendDirectMessage.ID
	}
	send("d1", "hello mel")
	send("d2", "hi ava")
	send("d3", "dm draft")
	send("d4", "dm secret")
	send("d5", "dm doomed")
	send("d6", "dm last")
	mustDo(t, u["ava"], editQ, map[string]any{"id": c.msg("d3").id, "c": c.msg("d3").text}, nil)
	mustDo(t, u["ava"], hideQ, map[string]any{"id": c.msg("d4").id}, nil)
	mustDo(t, u["ava"], deleteQ, map[string]any{"id": c.msg("d5").id}, nil)
	mustDo(t, u["mel"], addReactionQ, map[string]any{"id": c.msg("d1").id, "e": "👍"}, nil)
}

// view is what a reader sees of a message: the fields the rules decide.
type view struct {
	Content       string
	Hidden        bool
	Deleted       bool
	Edited        bool
	AuthorBlocked bool
	Mentions      string
	Reactions     string // emoji and count, * when the viewer's own
	ReplyTo       string // the key of the thread's root
	ReplyCount    int
	Repliers      string // latestRepliers, newest first
}

func (w view) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "content %q", w.Content)
	for _, f := range []struct {
		on   bool
		name string
	}{{w.Hidden, "hidden"}, {w.Deleted, "deleted"}, {w.Edited, "edited"}, {w.AuthorBlocked, "authorBlocked"}} {
		if f.on {
			b.WriteString(", " + f.name)
		}
	}
	if w.Mentions != "" {
		fmt.Fprintf(&b, ", mentions %s", w.Mentions)
	}
	if w.Reactions != "" {
		fmt.Fprintf(&b, ", reactions %s", w.Reactions)
	}
	if w.ReplyTo != "" {
		fmt.Fprintf(&b, ", replying to %s", w.ReplyTo)
	}
	if w.ReplyCount != 0 || w.Repliers != "" {
		fmt.Fprintf(&b, ", %d replies by %s", w.ReplyCount, w.Repliers)
	}
	return b.String()
}

// wantView is what the rules show viewer v of m, when v sees it at all.
func wantView(c *conv, v string, m *msgSpec) view {
	w := view{ReplyTo: m.replyTo, AuthorBlocked: readerBlocks[v] == m.author, Edited: m.edited && !m.deleted}
	switch {
	case m.deleted: // a tombstone, for everyone: no content, no editedAt
		w.Deleted = true
	case m.hidden: // empty content for everyone but the author
		w.Hidden = true
		if v == m.author {
			w.Content, w.Mentions = m.text, strings.Join(m.mentions, ",")
		}
	default:
		w.Content, w.Mentions = m.text, strings.Join(m.mentions, ",")
	}
	if m.reacted != "" {
		w.Reactions = m.reacted + "1"
		if v == "mel" {
			w.Reactions += "*"
		}
	}
	// A thread shows its reader the replies they may read: replyCount, and
	// latestRepliers, newest first, at most 3.
	var repliers []string
	for i := len(c.msgs) - 1; i >= 0; i-- {
		r := c.msgs[i]
		if r.replyTo != m.key || !c.readable(v, r) {
			continue
		}
		w.ReplyCount++
		if !slices.Contains(repliers, r.author) && len(repliers) < 3 {
			repliers = append(repliers, r.author)
		}
	}
	w.Repliers = strings.Join(repliers, ",")
	return w
}

// showing is what a path must show of a message.
type showing int

const (
	mustNot showing = iota // the viewer may not read it here
	may                    // the viewer reads it; the path need not carry it
	must
)

// readPath is one read path: one column of the table.
type readPath struct {
	name  string
	kinds string // the kinds of conversations it reads (convKind letters)
	// code is the code the path refuses viewer v with as a whole ("": it
	// answers).
	code func(c *conv, v string) string
	// want is what the path must show of m to v, when it answers. What it
	// shows, it shows as wantView says.
	want func(c *conv, v string, m *msgSpec) showing
	// read is what the path shows v of c, or the code it refused v with.
	read func(ctx context.Context, fx *readersFixture, c *conv, v string) (observed, string, error)
	// exact: the path shows no message of c but what want says it must
	// (the one last message of an inbox entry).
	exact bool
	// stream: the path is a stream, read up to a sentinel, which must not
	// end on its own; endsOnLeave: but where c.replayEnds says.
	stream, endsOnLeave bool
}

func (p readPath) reads(c *conv) bool { return strings.Contains(p.kinds, string(c.kind)) }

// observed is what a path showed a viewer.
type observed struct {
	views  map[string][]view // the table's messages, by key
	others []string          // ids of the other messages of the conversation (system messages)
	ended  bool              // the stream ended on its own
}

func readableOnly(c *conv, v string, m *msgSpec) showing {
	if c.readable(v, m) {
		return must
	}
	return mustNot
}

// historyCode: a public room's participants read its history; a group's
// members and former members read their windows' (a banned one nothing:
// FORBIDDEN); a group is invisible to who never was in it (NOT_FOUND, as if
// there were none). A direct conversation's history is read with the other
// user: everyone reads their own.
func historyCode(c *conv, v string) string {
	switch a := c.access[v]; {
	case c.kind == directConv || a == "participant":
		return ""
	case c.kind == privateGroup && a == "former":
		return ""
	case c.kind == privateGroup && a == "never":
		return "NOT_FOUND"
	}
	return "FORBIDDEN"
}

// subscribeCode: only participants follow a room (a banned user:
// FORBIDDEN); a group is invisible to who never was in it.
func subscribeCode(c *conv, v string) string {
	switch a := c.access[v]; {
	case a == "participant":
		return ""
	case c.kind == privateGroup && a == "never":
		return "NOT_FOUND"
	}
	return "FORBIDDEN"
}

func answers(*conv, string) string { return "" }

// rootOf is the root of the conversation's thread.
func rootOf(c *conv) *msgSpec {
	if c.kind == directConv {
		return c.msg("d1")
	}
	return c.msg("root")
}

var readPaths = []readPath{
	{
		// messages(room:), or directMessages(with:) the other user.
		name: "history", kinds: "pgd", code: historyCode, read: readHistory,
		want: readableOnly,
	},
	{
		// message(id:): null for what the viewer may not read.
		name: "message(id)", kinds: "pgd", code: answers, read: readByID,
		want: readableOnly,
	},
	{
		// node(id:), the global id of a message (its id): null for what
		// the viewer may not read, as message(id:).
		name: "node(id)", kinds: "pgd", code: answers, read: readByNodeID,
		want: readableOnly,
	},
	{
		// thread(messageId:) of the root: its replies the viewer reads; a
		// root they may not read is NOT_FOUND (ids reveal nothing).
		name: "thread", kinds: "pgd", read: readThread,
		code: func(c *conv, v string) string {
			if c.readable(v, rootOf(c)) {
				return ""
			}
			return "NOT_FOUND"
		},
		want: func(c *conv, v string, m *msgSpec) showing {
			if m.replyTo == rootOf(c).key {
				return readableOnly(c, v, m)
			}
			return mustNot
		},
	},
	{
		// searchMessages, over every conversation of the caller, for words
		// that together cover every message's current text (and the old
		// text of the edited ones, which nothing may match any more): the
		// messages the viewer reads, but deleted ones and others' hidden
		// ones, whose content they see blank.
		name: "searchMessages", kinds: "pgd", code: answers, read: readSearch,
		want: func(c *conv, v string, m *msgSpec) showing {
			if c.readable(v, m) && !m.deleted && (!m.hidden || m.author == v) {
				return must
			}
			return mustNot
		},
	},
	{
		// myMessages: the caller's own messages, all of them.
		name: "myMessages", kinds: "pgd", code: answers, read: readMine,
		want: func(c *conv, v string, m *msgSpec) showing {
			if m.author == v {
				return must
			}
			return mustNot
		},
	},
	{
		// The inbox entry's lastMessage: the newest message the viewer
		// reads of the conversation (none for who has no entry).
		name: "inbox lastMessage", kinds: "pgd", code: answers, read: readInboxLast, exact: true,
		want: func(c *conv, v string, m *msgSpec) showing {
			if c.last[v] == m.key {
				return must
			}
			return mustNot
		},
	},
	{
		// roomEvents(after: a cursor older than everything): the events
		// logged since, each message as it is now, up to the viewer's own
		// leave. A group's member replays what they read from their
		// current window on.
		name: "roomEvents replay", kinds: "pg", code: subscribeCode, read: readRoomReplay, stream: true, endsOnLeave: true,
		want: func(c *conv, v string, m *msgSpec) showing {
			if !c.readable(v, m) {
				return mustNot
			}
			if end, ok := c.replayEnds[v]; ok && !c.before(m, end) {
				return mustNot
			}
			if from, ok := c.since[v]; ok && c.before(m, from) {
				return may
			}
			return must
		},
	},
	{
		// inboxEvents(after: a cursor older than everything): a direct
		// conversation's messages and changes to both its users; a group's
		// posts to its other members (UNREAD_CHANGED); a mention to the
		// mentioned participant (MENTIONED). Each message as it is now,
		// and only what the viewer reads.
		name: "inboxEvents replay", kinds: "pgd", code: answers, read: readInboxReplay, stream: true,
		want: func(c *conv, v string, m *msgSpec) showing {
			switch {
			case !c.readable(v, m):
				return mustNot
			case c.kind == directConv, c.kind == privateGroup && m.author != v, slices.Contains(m.mentions, v):
				return must
			}
			return may
		},
	},
}

// cellKey names a column's cell: a conversation, a path or action, a viewer.
type cellKey struct{ conv, column, viewer string }

type readResult struct {
	seen observed
	code string
	err  error
}

// readersConcurrency is how many reads or actions run at once: each is a
// request or a subscription, mostly waiting on the store.
const readersConcurrency = 24

// each runs f for every key at once, at most readersConcurrency at a
// time, each with its own deadline.
func each[T any](keys []cellKey, f func(ctx context.Context, k cellKey) T) map[cellKey]T {
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := make(map[cellKey]T, len(keys))
	slots := make(chan struct{}, readersConcurrency)
	for _, k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r := f(ctx, k)
			mu.Lock()
			out[k] = r
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// readAll reads every path of every conversation as every viewer.
func (fx *readersFixture) readAll() map[cellKey]readResult {
	var keys []cellKey
	paths := map[string]readPath{}
	convs := map[string]*conv{}
	for _, c := range fx.convs {
		convs[c.name] = c
		for _, p := range readPaths {
			paths[p.name] = p
			if p.reads(c) {
				for _, v := range readerLogins {
					keys = append(keys, cellKey{c.name, p.name, v})
				}
			}
		}
	}
	return each(keys, func(ctx context.Context, k cellKey) readResult {
		seen, code, err := paths[k.column].read(ctx, fx, convs[k.conv], k.viewer)
		return readResult{seen, code, err}
	})
}

// checkPath compares what path p showed viewer v of conversation c with
// the table.
func checkPath(t *testing.T, c *conv, p readPath, v string, got readResult) {
	if got.err != nil {
		t.Fatalf("%s of %s as %s: %v", p.name, c.name, v, got.err)
	}
	who := fmt.Sprintf("%s (%s)", v, readerRoles[v])
	if want := p.code(c, v); got.code != want {
		t.Errorf("%s, %s of %s: refused with %q, want %s", who, p.name, c.name, got.code, orAnswer(want))
		return
	}
	if got.code != "" {
		return
	}
	if _, ends := c.replayEnds[v]; p.stream && got.seen.ended != (ends && p.endsOnLeave) {
		t.Errorf("%s, %s of %s: the stream ended on its own: %v; want %v", who, p.name, c.name, got.seen.ended, !got.seen.ended)
	}
	for _, m := range c.msgs {
		views := got.seen.views[m.key]
		switch p.want(c, v, m) {
		case mustNot:
			if len(views) > 0 {
				t.Errorf("%s, %s of %s: shows %s (%s), which the rules keep from them%s", who, p.name, c.name, m.key, views[0], whyNot(c, v, m))
				continue
			}
		case must:
			if len(views) == 0 {
				t.Errorf("%s, %s of %s: lacks %s, which the rules show them as %s", who, p.name, c.name, m.key, wantView(c, v, m))
			}
		}
		want := wantView(c, v, m)
		for _, w := range views {
			if w != want {
				t.Errorf("%s, %s of %s: shows %s as\n\t%s; the rules show it as\n\t%s", who, p.name, c.name, m.key, w, want)
				break
			}
		}
	}
	if p.exact && len(got.seen.others) > 0 {
		t.Errorf("%s, %s of %s: shows message %s, want %s", who, p.name, c.name, got.seen.others[0], orNone(c.last[v]))
	}
}

func orAnswer(code string) string {
	if code == "" {
		return "an answer"
	}
	return code
}

func orNone(key string) string {
	if key == "" {
		return "none"
	}
	return key
}

// whyNot says why v may not read m, if they may not.
func whyNot(c *conv, v string, m *msgSpec) string {
	if c.readable(v, m) {
		return ""
	}
	switch a := c.access[v]; {
	case c.kind == directConv:
		return ": not a party of the conversation"
	case a == "banned":
		return ": banned"
	case a == "never":
		return ": never a member"
	case c.kind == publicRoom:
		return ": no longer a participant"
	}
	return ": posted outside their membership windows"
}

// readerFields are the fields of a message every path reads.
const readerFields = `fragment M on Message { id content hidden deleted editedAt authorBlocked mentions replyToId replyCount latestRepliers { login } reactions { emoji count reactedByMe } }`

type gqlMessage struct {
	ID             string
	Content        string
	Hidden         bool
	Deleted        bool
	EditedAt       *string
	AuthorBlocked  *bool
	Mentions       []string
	ReplyToID      *string
	ReplyCount     int
	LatestRepliers []struct{ Login string }
	Reactions      []struct {
		Emoji       string
		Count       int
		ReactedByMe *bool
	}
}

// record adds m to o, as a view if it is a message of the table's
// conversation c, as another message of c if its conversation (conv, for
// what does not say) is c; the others' are left out.
func (fx *readersFixture) record(o *observed, c *conv, conversation string, m *gqlMessage) {
	if m == nil {
		return
	}
	spec, ok := fx.byID[m.ID]
	if !ok {
		if conversation == c.name {
			o.others = append(o.others, m.ID)
		}
		return
	}
	if fx.convOf[m.ID] != c {
		return
	}
	w := view{Content: m.Content, Hidden: m.Hidden, Deleted: m.Deleted, Edited: m.EditedAt != nil,
		AuthorBlocked: m.AuthorBlocked != nil && *m.AuthorBlocked, Mentions: strings.Join(m.Mentions, ","), ReplyCount: m.ReplyCount}
	if m.ReplyToID != nil {
		if root, ok := fx.byID[*m.ReplyToID]; ok {
			w.ReplyTo = root.key
		} else {
			w.ReplyTo = *m.ReplyToID
		}
	}
	var logins []string
	for _, u := range m.LatestRepliers {
		logins = append(logins, u.Login)
	}
	w.Repliers = strings.Join(logins, ",")
	for _, r := range m.Reactions {
		w.Reactions += fmt.Sprintf("%s%d", r.Emoji, r.Count)
		if r.ReactedByMe != nil && *r.ReactedByMe {
			w.Reactions += "*"
		}
	}
	if o.views == nil {
		o.views = map[string][]view{}
	}
	o.views[spec.key] = append(o.views[spec.key], w)
}

// refusal splits err into the code of a refusal (a GraphQL error) and
// any other failure.
func refusal(err error) (string, error) {
	var errs chatclient.Errors
	if errors.As(err, &errs) {
		return errs.Code(), nil
	}
	return "", err
}

// memo is one read shared by the paths that need it, made once.
type memo struct {
	once sync.Once
	val  any
	err  error
}

// shared returns the result of read under key, made by the first caller.
func shared[T any](fx *readersFixture, key string, read func() (T, error)) (T, error) {
	fx.mu.Lock()
	m := fx.memos[key]
	if m == nil {
		m = &memo{}
		fx.memos[key] = m
	}
	fx.mu.Unlock()
	m.once.Do(func() { m.val, m.err = read() })
	v, _ := m.val.(T)
	return v, m.err
}

type messageConnection struct {
	Edges    []struct{ Node gqlMessage }
	PageInfo struct {
		HasNextPage bool
		EndCursor   *string
	}
}

// readerPage is the size of the pages the paths read: as many messages
// with all their fields as a query may cost.
const readerPage = 40

// readPages reads every page of a message connection, the field field of
// query (which takes $n and $after besides vars), as v.
func (fx *readersFixture) readPages(ctx context.Context, v, query, field string, vars map[string]any) ([]gqlMessage, error) {
	var msgs []gqlMessage
	var after any
	for pages := 0; ; pages++ {
		vs := map[string]any{"after": after, "n": readerPage}
		for k, x := range vars {
			vs[k] = x
		}
		var out map[string]messageConnection
		if err := fx.clients[v].Do(ctx, query+readerFields, vs, &out); err != nil {
			return nil, err
		}
		page := out[field]
		for _, e := range page.Edges {
			msgs = append(msgs, e.Node)
		}
		if !page.PageInfo.HasNextPage {
			return msgs, nil
		}
		if pages > 20 {
			return nil, fmt.Errorf("%s: paging does not end", field)
		}
		after = *page.PageInfo.EndCursor
	}
}

// pagesOf is readPages as a path reads it: what it shows of c, or its
// refusal.
func (fx *readersFixture) pagesOf(ctx context.Context, c *conv, v, query, field string, vars map[string]any) (observed, string, error) {
	var o observed
	msgs, err := fx.readPages(ctx, v, query, field, vars)
	if err != nil {
		code, err := refusal(err)
		return o, code, err
	}
	for _, m := range msgs {
		fx.record(&o, c, c.name, &m)
	}
	return o, "", nil
}

func readHistory(ctx context.Context, fx *readersFixture, c *conv, v string) (observed, string, error) {
	if c.kind == directConv {
		with := "ava"
		if v == "ava" {
			with = "mel"
		}
		return fx.pagesOf(ctx, c, v, `query($with: String!, $n: Int, $after: String) { directMessages(with: $with, first: $n, after: $after) { edges { node { ...M } } pageInfo { hasNextPage endCursor } } }`,
			"directMessages", map[string]any{"with": with})
	}
	return fx.pagesOf(ctx, c, v, `query($r: String!, $n: Int, $after: String) { messages(room: $r, first: $n, after: $after) { edges { node { ...M } } pageInfo { hasNextPage endCursor } } }`,
		"messages", map[string]any{"r": c.name})
}

func readByID(ctx context.Context, fx *readersFixture, c *conv, v string) (observed, string, error) {
	var q strings.Builder
	q.WriteString("query {")
	for i, m := range c.msgs {
		fmt.Fprintf(&q, " m%d: message(id: %q) { ...M }", i, m.id)
	}
	q.WriteString(" }")
	var out map[string]*gqlMessage
	var o observed
	if err := fx.clients[v].Do(ctx, q.String()+readerFields, nil, &out); err != nil {
		code, err := refusal(err)
		return o, code, err
	}
	for i := range c.msgs {
		fx.record(&o, c, c.name, out[fmt.Sprintf("m%d", i)])
	}
	return o, "", nil
}

func readByNodeID(ctx context.Context, fx *readersFixture, c *conv, v string) (observed, string, error) {
	var q strings.Builder
	q.WriteString("query {")
	for i, m := range c.msgs {
		fmt.Fprintf(&q, " m%d: node(id: %q) { ... on Message { ...M } }", i, m.id)
	}
	q.WriteString(" }")
	var out map[string]*gqlMessage
	var o observed
	if err := fx.clients[v].Do(ctx, q.String()+readerFields, nil, &out); err != nil {
		code, err := refusal(err)
		return o, code, err
	}
	for i := range c.msgs {
		fx.record(&o, c, c.name, out[fmt.Sprintf("m%d", i)])
	}
	return o, "", nil
}

func readThread(ctx context.Context, fx *readersFixture, c *conv, v string) (observed, string, error) {
	return fx.pagesOf(ctx, c, v, `query($id: ID!, $n: Int, $after: String) { thread(messageId: $id, first: $n, after: $after) { edges { node { ...M } } pageInfo { hasNextPage endCursor } } }`,
		"thread", map[string]any{"id": rootOf(c).id})
}

func readMine(ctx context.Context, fx *readersFixture, c *conv, v string) (observed, string, error) {
	// One read per viewer, for every conversation.
	msgs, err := shared(fx, "myMessages "+v, func() ([]gqlMessage, error) {
		return fx.readPages(ctx, v, `query($n: Int, $after: String) { myMessages(first: $n, after: $after) { edges { node { ...M } } pageInfo { hasNextPage endCursor } } }`, "myMessages", nil)
	})
	var o observed
	if err != nil {
		code, err := refusal(err)
		return o, code, err
	}
	for _, m := range msgs {
		fx.record(&o, c, "", &m)
	}
	return o, "", nil
}

// searchedWords are the queries of the searchMessages path: their
// matches are every message's current text; "first" and "draft" were
// edited away ("first draft" is now "final draft", "dm draft" "dm final").
var searchedWords = []string{"words", "REPLIES", "root", "final", "dm", "hello", "hi", "first", "\"dm draft\""}

func readSearch(ctx context.Context, fx *readersFixture, c *conv, v string) (observed, string, error) {
	// One search per viewer and word, for every conversation.
	msgs, err := shared(fx, "search "+v, func() ([]gqlMessage, error) {
		var all []gqlMessage
		for _, w := range searchedWords {
			found, err := fx.readPages(ctx, v, `query($q: String!, $n: Int, $after: String) { searchMessages(query: $q, first: $n, after: $after) { edges { node { ...M } } pageInfo { hasNextPage endCursor } } }`,
				"searchMessages", map[string]any{"q": w, "n": 20})
			if err != nil {
				return nil, err
			}
			// What a search finds, the viewer reads with the words in it.
			want := store.Terms(w)
			for _, m := range found {
				if !(store.MessageQuery{Phrases: [][]string{want}}).Matches(m.Content) {
					return nil, fmt.Errorf("search %s found message %s, whose content %q as %s reads it lacks the words", w, m.ID, m.Content, v)
				}
			}
			all = append(all, found...)
		}
		return all, nil
	})
	var o observed
	if err != nil {
		code, err := refusal(err)
		return o, code, err
	}
	for _, m := range msgs {
		fx.record(&o, c, "", &m)
	}
	return o, "", nil
}

type inboxRow struct {
	ID          string
	LastMessage *gqlMessage
}

func readInboxLast(ctx context.Context, fx *readersFixture, c *conv, v string) (observed, string, error) {
	rows, err := shared(fx, "inbox "+v, func() ([]inboxRow, error) {
		var out struct{ Inbox []inboxRow }
		err := fx.clients[v].Do(ctx, `{ inbox { id lastMessage { ...M } } }`+readerFields, nil, &out)
		return out.Inbox, err
	})
	var o observed
	if err != nil {
		code, err := refusal(err)
		return o, code, err
	}
	for _, e := range rows {
		if e.ID == c.name {
			fx.record(&o, c, c.name, e.LastMessage)
		}
	}
	return o, "", nil
}

// readerEvent is a room or inbox event as the replays read it.
type readerEvent struct {
	Kind           string
	ConversationID string
	User           struct{ Login string }
	Message        *gqlMessage
}

// replayed is what a replay delivered up to its sentinel.
type replayed struct {
	events []readerEvent
	ended  bool   // the stream ended on its own first
	code   string // the subscription was refused
}

func readRoomReplay(ctx context.Context, fx *readersFixture, c *conv, v string) (observed, string, error) {
	const q = `subscription($r: String!, $after: String) { roomEvents(room: $r, after: $after) { kind user { login } message { ...M } } }`
	// The viewer's own typing, which no log keeps, comes after the replay.
	typing := func(ctx context.Context, on bool) {
		_ = fx.clients[v].Do(ctx, typingQ, map[string]any{"c": c.name, "on": on}, nil)
	}
	r, err := fx.replay(ctx, v, q+readerFields, map[string]any{"r": c.name, "after": fx.early}, typing, v)
	var o observed
	if err != nil || r.code != "" {
		return o, r.code, err
	}
	for _, ev := range r.events {
		fx.record(&o, c, c.name, ev.Message)
	}
	o.ended = r.ended
	return o, "", nil
}

func readInboxReplay(ctx context.Context, fx *readersFixture, c *conv, v string) (observed, string, error) {
	r, err := shared(fx, "inboxEvents "+v, func() (replayed, error) {
		const q = `subscription($after: String) { inboxEvents(after: $after) { kind conversationId user { login } message { ...M } } }`
		// zed's typing to the viewer, which no log keeps, comes after the
		// replay.
		dm := store.DirectConversationID("zed", v)
		typing := func(ctx context.Context, on bool) {
			_ = fx.clients["zed"].Do(ctx, typingQ, map[string]any{"c": dm, "on": on}, nil)
		}
		return fx.replay(ctx, v, q+readerFields, map[string]any{"after": fx.early}, typing, "zed")
	})
	var o observed
	if err != nil || r.code != "" {
		return o, r.code, err
	}
	for _, ev := range r.events {
		if ev.ConversationID == c.name {
			fx.record(&o, c, c.name, ev.Message)
		}
	}
	o.ended = r.ended
	return o, "", nil
}

type nextResult struct {
	resp chatclient.Response
	err  error
}

// replay subscribes v with query and reads what the stream delivers up to
// the TYPING_STARTED of typist that typing(true) sets off: the server
// says nothing when a stream starts, so the typing (which no log keeps,
// and which comes after the replay) is set off again, after a stop, less
// and less often, until one arrives.
func (fx *readersFixture) replay(ctx context.Context, v, query string, vars map[string]any, typing func(context.Context, bool), typist string) (replayed, error) {
	var r replayed
	sub, err := fx.clients[v].Subscribe(ctx, chatclient.GraphQLTransportWS, query, vars)
	if err != nil {
		return r, err
	}
	defer sub.Close()
	defer typing(ctx, false)
	results := make(chan nextResult, 1)
	next := func() {
		resp, err := sub.Next(ctx)
		results <- nextResult{resp, err}
	}
	go next()
	typing(ctx, true)
	wait := 10 * time.Millisecond // doubled at each try: a stream starts within milliseconds
	again := time.NewTimer(wait)
	defer again.Stop()
	for {
		select {
		case <-again.C:
			typing(ctx, false)
			typing(ctx, true)
			wait = min(2*wait, time.Second)
			again.Reset(wait)
			continue
		case <-ctx.Done():
			return r, fmt.Errorf("no TYPING_STARTED of %s after %d events: %w", typist, len(r.events), ctx.Err())
		case res := <-results:
			if errors.Is(res.err, chatclient.ErrComplete) {
				r.ended = true
				return r, nil
			}
			if res.err != nil {
				r.code, err = refusal(res.err)
				return r, err
			}
			var out struct{ RoomEvents, InboxEvents *readerEvent }
			if err := json.Unmarshal(res.resp.Data, &out); err != nil {
				return r, err
			}
			ev := out.RoomEvents
			if ev == nil {
				ev = out.InboxEvents
			}
			if ev == nil {
				return r, fmt.Errorf("an event of neither roomEvents nor inboxEvents: %s", res.resp.Data)
			}
			if ev.Kind == "TYPING_STARTED" && ev.User.Login == typist {
				return r, nil
			}
			r.events = append(r.events, *ev)
			go next()
		}
	}
}

// readerAction is one action on a message: a column whose cells are the
// code it refuses the viewer with.
type readerAction struct {
	name string
	// want is the code the action refuses v with on m ("": allowed), and
	// whether an allowed action is run: only where it changes nothing the
	// table shows.
	want func(c *conv, v string, m *msgSpec) (code string, run bool)
	// field is the mutation on m, aliased; allowed: the action is allowed
	// (and run).
	field func(alias string, m *msgSpec, allowed bool) string
}

var readerActions = []readerAction{
	{
		// addReaction: on any message the caller can read. Run as an
		// added and removed reaction of its own emoji; not on a tombstone
		// (the rules say nothing of it).
		name: "addReaction",
		want: func(c *conv, v string, m *msgSpec) (string, bool) {
			if !c.readable(v, m) {
				return "NOT_FOUND", false
			}
			return "", !m.deleted
		},
		field: func(alias string, m *msgSpec, allowed bool) string {
			f := fmt.Sprintf(`%s: addReaction(messageId: %q, emoji: "🧪") { id }`, alias, m.id)
			if allowed {
				f += fmt.Sprintf(` %s_undo: removeReaction(messageId: %q, emoji: "🧪") { id }`, alias, m.id)
			}
			return f
		},
	},
	{
		// editMessage: only its author; a deleted one is NOT_FOUND. Run as
		// an edit to the current text.
		name: "editMessage",
		want: func(c *conv, v string, m *msgSpec) (string, bool) {
			switch {
			case !c.readable(v, m), m.deleted:
				return "NOT_FOUND", false
			case m.author != v:
				return "FORBIDDEN", false
			}
			return "", true
		},
		field: func(alias string, m *msgSpec, _ bool) string {
			content := m.text
			if content == "" {
				content = "back again" // a tombstone's: any content (blank is bad input)
			}
			return fmt.Sprintf(`%s: editMessage(id: %q, content: %q) { id }`, alias, m.id, content)
		},
	},
	{
		// deleteMessage: its author, and in a room or group its creator
		// and moderators. Run on the tombstone only.
		name: "deleteMessage",
		want: func(c *conv, v string, m *msgSpec) (string, bool) {
			switch {
			case !c.readable(v, m):
				return "NOT_FOUND", false
			case m.author != v && !c.moderates(v):
				return "FORBIDDEN", false
			}
			return "", m.deleted
		},
		field: func(alias string, m *msgSpec, _ bool) string {
			return fmt.Sprintf(`%s: deleteMessage(id: %q) { id }`, alias, m.id)
		},
	},
	{
		// hideMessage: its author, or the creator or a moderator of its
		// room. Run on the hidden message only.
		name: "hideMessage",
		want: func(c *conv, v string, m *msgSpec) (string, bool) {
			switch {
			case !c.readable(v, m):
				return "NOT_FOUND", false
			case m.author != v && !c.moderates(v):
				return "FORBIDDEN", false
			}
			return "", m.hidden && !m.deleted
		},
		field: func(alias string, m *msgSpec, _ bool) string {
			return fmt.Sprintf(`%s: hideMessage(id: %q) { id }`, alias, m.id)
		},
	},
}

// actResult is what an action did as a viewer, by message key: the code
// it refused with, "" if it was allowed; for the messages it was tried on.
type actResult struct {
	got map[string]string
	err error
}

// actAll tries every action of every conversation as every viewer, each
// on every message it refuses, or allows and may run, in one request (each
// field fails on its own, and a response carries at most 20 errors).
func (fx *readersFixture) actAll() map[cellKey]actResult {
	var keys []cellKey
	actions := map[string]readerAction{}
	convs := map[string]*conv{}
	for _, c := range fx.convs {
		convs[c.name] = c
		for _, a := range readerActions {
			actions[a.name] = a
			for _, v := range readerLogins {
				keys = append(keys, cellKey{c.name, a.name, v})
			}
		}
	}
	return each(keys, func(ctx context.Context, k cellKey) actResult {
		c, a := convs[k.conv], actions[k.column]
		var q strings.Builder
		tried := map[string]string{} // alias: key
		q.WriteString("mutation {")
		for i, m := range c.msgs {
			code, run := a.want(c, k.viewer, m)
			if code == "" && !run {
				continue
			}
			alias := fmt.Sprintf("m%d", i)
			tried[alias] = m.key
			q.WriteString(" " + a.field(alias, m, code == ""))
		}
		q.WriteString(" }")
		got := map[string]string{}
		if len(tried) == 0 {
			return actResult{got: got}
		}
		for _, key := range tried {
			got[key] = ""
		}
		err := fx.clients[k.viewer].Do(ctx, q.String(), nil, nil)
		var errs chatclient.Errors
		if err != nil && !errors.As(err, &errs) {
			return actResult{err: err}
		}
		for _, e := range errs {
			alias := ""
			if len(e.Path) > 0 {
				alias, _ = e.Path[0].(string)
			}
			key, ok := tried[strings.TrimSuffix(alias, "_undo")]
			if !ok {
				return actResult{err: fmt.Errorf("an error of no field tried: %v", e)}
			}
			if got[key] == "" {
				got[key] = e.Code()
			}
		}
		return actResult{got: got}
	})
}

// checkAction compares what action a did as v on c's messages with the
// table.
func checkAction(t *testing.T, c *conv, a readerAction, v string, r actResult) {
	if r.err != nil {
		t.Fatalf("%s in %s as %s: %v", a.name, c.name, v, r.err)
	}
	who := fmt.Sprintf("%s (%s)", v, readerRoles[v])
	for _, m := range c.msgs {
		got, tried := r.got[m.key]
		if !tried {
			continue
		}
		if want, _ := a.want(c, v, m); got != want {
			t.Errorf("%s, %s of %s in %s: %s, want %s%s", who, a.name, m.key, c.name, orAnswer(got), orAnswer(want), whyNot(c, v, m))
		}
	}
}
