package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// newAccount returns a valid account for a fresh login starting with prefix.
func newAccount(t *testing.T, prefix string) store.Account {
	t.Helper()
	return accountFor(newLogin(t, prefix), 0)
}

// accountFor returns a valid account of login whose fields depend on n, so
// accounts made with different n differ in every field but the login.
func accountFor(login string, n int) store.Account {
	hash := make([]byte, 60)
	rand.Read(hash)
	hash[0], hash[1] = 0x00, 0xff // not text: the hash is bytes
	return store.Account{
		User: store.User{
			UserRef: store.UserRef{
				Login:     login,
				Firstname: fmt.Sprintf("Zoë %d", n),
				Lastname:  fmt.Sprintf("O'Brien-Łukasz %d", n),
			},
			Email: fmt.Sprintf("%s+%d@example.com", login, n),
			Bio:   fmt.Sprintf("bio #%d of %s: likes ☕ and\nnewlines", n, login),
		},
		PassHash: hash,
	}
}

// mustCreateUser creates a fresh user whose login starts with prefix.
func mustCreateUser(t *testing.T, ctx context.Context, s store.Store, prefix string) store.Account {
	t.Helper()
	a := newAccount(t, prefix)
	if err := s.CreateUser(ctx, a); err != nil {
		t.Fatalf("CreateUser(%q) = %v, want nil", a.Login, err)
	}
	return a
}

// newRoom returns a valid room called name created by creator, as
// CreateRoom takes it.
func newRoom(name string, creator store.UserRef) store.Room {
	return store.Room{
		Name:         name,
		Creator:      creator,
		CreatedAt:    time.Now(),
		Banner:       "Welcome to " + name + " ✨",
		Participants: []store.UserRef{creator},
	}
}

// mustCreateRoom creates a fresh room whose name starts with prefix.
func mustCreateRoom(t *testing.T, ctx context.Context, s store.Store, prefix string, creator store.UserRef) store.Room {
	t.Helper()
	r := newRoom(newRoomName(t, prefix), creator)
	if err := s.CreateRoom(ctx, r); err != nil {
		t.Fatalf("CreateRoom(%q) = %v, want nil", r.Name, err)
	}
	return r
}

// mustJoinRoom joins u to the room and returns the room after the join.
func mustJoinRoom(t *testing.T, ctx context.Context, s store.Store, room string, u store.UserRef) store.Room {
	t.Helper()
	r, _, err := s.JoinRoom(ctx, room, u)
	if err != nil {
		t.Fatalf("JoinRoom(%q, %q) = %v, want nil", room, u.Login, err)
	}
	return r
}

// mustRoom reads a room that must exist.
func mustRoom(t *testing.T, ctx context.Context, s store.Store, name string) store.Room {
	t.Helper()
	r, err := s.Room(ctx, name)
	if err != nil {
		t.Fatalf("Room(%q) = %v, want nil", name, err)
	}
	return r
}

// mustUser reads a user that must exist.
func mustUser(t *testing.T, ctx context.Context, s store.Store, login string) store.User {
	t.Helper()
	u, err := s.User(ctx, login)
	if err != nil {
		t.Fatalf("User(%q) = %v, want nil", login, err)
	}
	return u
}

// mustPost posts a message of content by author to room, with the given id.
func mustPost(t *testing.T, ctx context.Context, s store.Store, room string, id store.MessageID, author store.UserRef, content string) store.Message {
	t.Helper()
	m := store.Message{Room: room, ID: id, Author: author, Content: content}
	if err := s.PostMessage(ctx, m); err != nil {
		t.Fatalf("PostMessage(%q, %v) = %v, want nil", room, id, err)
	}
	return m
}

// wantErr fails the test unless err wraps want.
func wantErr(t *testing.T, call string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s = %v, want an error wrapping %q", call, err, want)
	}
}

// wantRoomNotFound checks that the room does not exist.
func wantRoomNotFound(t *testing.T, ctx context.Context, s store.Store, name string) {
	t.Helper()
	r, err := s.Room(ctx, name)
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Room(%q) = %+v, %v; want ErrNotFound", name, r, err)
	}
}

// wantChatRooms checks whether login's rooms list room, exactly once if so,
// and that they are sorted.
func wantChatRooms(t *testing.T, ctx context.Context, s store.Store, login, room string, want bool) {
	t.Helper()
	u := mustUser(t, ctx, s, login)
	n := 0
	for _, r := range u.ChatRooms {
		if r == room {
			n++
		}
	}
	switch {
	case want && n != 1:
		t.Errorf("User(%q).ChatRooms = %q, want %q listed once", login, u.ChatRooms, room)
	case !want && n != 0:
		t.Errorf("User(%q).ChatRooms = %q, want no %q", login, u.ChatRooms, room)
	}
	if !slices.IsSorted(u.ChatRooms) {
		t.Errorf("User(%q).ChatRooms = %q, want sorted", login, u.ChatRooms)
	}
}

// checkUserRef fails the test unless got equals want.
func checkUserRef(t *testing.T, what string, got, want store.UserRef) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %+v, want %+v", what, got, want)
	}
}

// checkUser compares profiles, rooms included.
func checkUser(t *testing.T, what string, got, want store.User) {
	t.Helper()
	checkUserRef(t, what+".UserRef", got.UserRef, want.UserRef)
	if got.Email != want.Email {
		t.Errorf("%s.Email = %q, want %q", what, got.Email, want.Email)
	}
	if got.Bio != want.Bio {
		t.Errorf("%s.Bio = %q, want %q", what, got.Bio, want.Bio)
	}
	if !slices.Equal(got.ChatRooms, want.ChatRooms) {
		t.Errorf("%s.ChatRooms = %q, want %q", what, got.ChatRooms, want.ChatRooms)
	}
	if got.Bot != want.Bot || got.Owner != want.Owner {
		t.Errorf("%s bot, owner = %v, %q; want %v, %q", what, got.Bot, got.Owner, want.Bot, want.Owner)
	}
}

// checkAccount compares accounts, password hash included.
func checkAccount(t *testing.T, what string, got, want store.Account) {
	t.Helper()
	checkUser(t, what, got.User, want.User)
	if !bytes.Equal(got.PassHash, want.PassHash) {
		t.Errorf("%s.PassHash = %x, want %x", what, got.PassHash, want.PassHash)
	}
}

// sameInstant compares times to the millisecond, the precision of
// Cassandra's timestamps.
func sameInstant(a, b time.Time) bool {
	return a.Truncate(time.Millisecond).Equal(b.Truncate(time.Millisecond))
}

// checkRoom compares rooms, participants included; want.Participants
// need not be sorted.
func checkRoom(t *testing.T, what string, got, want store.Room) {
	t.Helper()
	checkRoomHeader(t, what, got, want)
	wantParts := slices.Clone(want.Participants)
	slices.SortFunc(wantParts, func(a, b store.UserRef) int { return strings.Compare(a.Login, b.Login) })
	if !slices.Equal(got.Participants, wantParts) {
		t.Errorf("%s.Participants = %+v, want %+v (sorted by login)", what, got.Participants, wantParts)
	}
}

// checkRoomHeader compares rooms but for their participants.
func checkRoomHeader(t *testing.T, what string, got, want store.Room) {
	t.Helper()
	if got.Name != want.Name {
		t.Errorf("%s.Name = %q, want %q", what, got.Name, want.Name)
	}
	if got.Kind != want.Kind {
		t.Errorf("%s.Kind = %q, want %q", what, got.Kind, want.Kind)
	}
	checkUserRef(t, what+".Creator", got.Creator, want.Creator)
	if !sameInstant(got.CreatedAt, want.CreatedAt) {
		t.Errorf("%s.CreatedAt = %v, want %v (to the millisecond)", what, got.CreatedAt, want.CreatedAt)
	}
	if got.Banner != want.Banner {
		t.Errorf("%s.Banner = %q, want %q", what, got.Banner, want.Banner)
	}
}

// checkMessages compares message lists in order, every field included
// (Hidden too: messages posted visible must read back visible).
//
// The store writes the system messages of joins, leaves and additions
// itself; unless want has a system message, those of got are left out of
// the comparison, so that tests of paging and windows need not predict
// them (the event log tests check them).
func checkMessages(t *testing.T, what string, got, want []store.Message) {
	t.Helper()
	if !slices.ContainsFunc(want, func(m store.Message) bool { return m.System }) {
		got = slices.DeleteFunc(slices.Clone(got), func(m store.Message) bool { return m.System })
	}
	if len(got) != len(want) {
		t.Errorf("%s returned %d messages, want %d\n got: %s\nwant: %s", what, len(got), len(want), fmtMessages(got), fmtMessages(want))
		return
	}
	for i := range got {
		if !sameMessage(got[i], want[i]) {
			t.Errorf("%s[%d] = %s, want %s\n got: %s\nwant: %s", what, i, fmtMessage(got[i]), fmtMessage(want[i]), fmtMessages(got), fmtMessages(want))
			return
		}
	}
}

func fmtMessage(m store.Message) string {
	return fmt.Sprintf("{Room:%s ID:%v (%s) Author:%+v Content:%q System:%v Hidden:%v EditedAt:%s Deleted:%v ReplyTo:%v Attachments:%+v Preview:%+v}",
		m.Room, m.ID, m.ID.Time().Format(time.RFC3339Nano), m.Author, m.Content, m.System, m.Hidden, m.EditedAt.Format(time.RFC3339Nano), m.Deleted, m.ReplyTo, m.Attachments, m.Preview)
}

// fmtMessages lists messages briefly: content and id time.
func fmtMessages(ms []store.Message) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = fmt.Sprintf("%q@%s", m.Content, m.ID.Time().Format("01-02T15:04:05.0000000"))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// newestFirst returns msgs sorted newest first by id.
func newestFirst(msgs []store.Message) []store.Message {
	out := slices.Clone(msgs)
	slices.SortFunc(out, func(a, b store.Message) int { return b.ID.Compare(a.ID) })
	return out
}

// oldestFirst returns msgs sorted oldest first by id.
func oldestFirst(msgs []store.Message) []store.Message {
	out := slices.Clone(msgs)
	slices.SortFunc(out, func(a, b store.Message) int { return a.ID.Compare(b.ID) })
	return out
}

// sameMessage reports whether a and b are the same message, field by field
// (no attachments and an empty list of them are the same).
func sameMessage(a, b store.Message) bool {
	if len(a.Attachments) == 0 && len(b.Attachments) == 0 {
		a.Attachments, b.Attachments = nil, nil
	}
	return reflect.DeepEqual(a, b)
}
