package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// mustMembership reads the membership of login in room, which must exist.
func mustMembership(t *testing.T, ctx context.Context, s store.Store, room, login string) store.RoomMembership {
	t.Helper()
	m, err := s.Membership(ctx, room, login)
	if err != nil {
		t.Fatalf("Membership(%q, %q) = %v, want nil", room, login, err)
	}
	return m
}

// wantMembership checks the membership of login in r: the room's name,
// kind and creator, the login, and whether it takes part (the moderation
// tests check the rest).
func wantMembership(t *testing.T, ctx context.Context, s store.Store, r store.Room, login string, participant bool) {
	t.Helper()
	got := mustMembership(t, ctx, s, r.Name, login)
	want := store.RoomMembership{Room: r.Name, Kind: r.Kind, Creator: r.Creator, Login: login, Participant: participant,
		Moderator: got.Moderator, Banned: got.Banned}
	if got != want {
		t.Errorf("Membership(%q, %q) = %+v, want %+v", r.Name, login, got, want)
	}
}

// wantMembershipNotFound checks that Membership finds no room.
func wantMembershipNotFound(t *testing.T, ctx context.Context, s store.Store, room, login string) {
	t.Helper()
	m, err := s.Membership(ctx, room, login)
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Membership(%q, %q) = %+v, %v; want ErrNotFound", room, login, m, err)
	}
}

// wantAgreesWithRoom checks that Membership and Room agree on whether each
// login takes part in the room.
func wantAgreesWithRoom(t *testing.T, ctx context.Context, s store.Store, room string, logins ...string) {
	t.Helper()
	r := mustRoom(t, ctx, s, room)
	for _, login := range logins {
		m := mustMembership(t, ctx, s, room, login)
		if m.Participant != r.HasParticipant(login) {
			t.Errorf("Membership(%q, %q).Participant = %v, but Room lists participants %s", room, login, m.Participant, loginsOf(r.Participants))
		}
	}
}

func testMembershipParticipants(t *testing.T, s store.Store) {
	ctx := newContext(t)
	creator := mustCreateUser(t, ctx, s, "creator")
	joiner := mustCreateUser(t, ctx, s, "joiner")
	stranger := mustCreateUser(t, ctx, s, "stranger")
	r := mustCreateRoom(t, ctx, s, "member", creator.UserRef)

	wantMembership(t, ctx, s, r, creator.Login, true)
	wantMembership(t, ctx, s, r, joiner.Login, false)
	mustJoinRoom(t, ctx, s, r.Name, joiner.UserRef)
	wantMembership(t, ctx, s, r, joiner.Login, true)
	mustJoinRoom(t, ctx, s, r.Name, joiner.UserRef) // twice is harmless
	wantMembership(t, ctx, s, r, joiner.Login, true)
	wantMembership(t, ctx, s, r, creator.Login, true)
	wantMembership(t, ctx, s, r, stranger.Login, false)
	// A login that is no user at all is no participant either.
	wantMembership(t, ctx, s, r, newLogin(t, "ghost"), false)
	wantAgreesWithRoom(t, ctx, s, r.Name, creator.Login, joiner.Login, stranger.Login)
}

func testMembershipLeave(t *testing.T, s store.Store) {
	ctx := newContext(t)
	creator := mustCreateUser(t, ctx, s, "creator")
	stayer := mustCreateUser(t, ctx, s, "stayer")
	leaver := mustCreateUser(t, ctx, s, "leaver")
	r := mustCreateRoom(t, ctx, s, "leave", creator.UserRef)
	mustJoinRoom(t, ctx, s, r.Name, stayer.UserRef)
	mustJoinRoom(t, ctx, s, r.Name, leaver.UserRef)

	if _, err := s.LeaveRoom(ctx, r.Name, leaver.UserRef); err != nil {
		t.Fatalf("LeaveRoom(%q, %q) = %v, want nil", r.Name, leaver.Login, err)
	}
	wantMembership(t, ctx, s, r, leaver.Login, false)
	wantMembership(t, ctx, s, r, stayer.Login, true)

	// The creator may leave too: the room keeps its creator and kind.
	if _, err := s.LeaveRoom(ctx, r.Name, creator.UserRef); err != nil {
		t.Fatalf("LeaveRoom(%q, %q) by the creator = %v, want nil", r.Name, creator.Login, err)
	}
	wantMembership(t, ctx, s, r, creator.Login, false)
	wantMembership(t, ctx, s, r, stayer.Login, true)

	// And come back.
	mustJoinRoom(t, ctx, s, r.Name, leaver.UserRef)
	wantMembership(t, ctx, s, r, leaver.Login, true)
	wantAgreesWithRoom(t, ctx, s, r.Name, creator.Login, stayer.Login, leaver.Login)
}

func testMembershipDelete(t *testing.T, s store.Store) {
	ctx := newContext(t)
	creator := mustCreateUser(t, ctx, s, "creator")
	member := mustCreateUser(t, ctx, s, "member")
	heir := mustCreateUser(t, ctx, s, "heir")
	r := mustCreateRoom(t, ctx, s, "doomed", creator.UserRef)
	mustJoinRoom(t, ctx, s, r.Name, member.UserRef)

	if _, _, err := s.DeleteRoom(ctx, r.Name, store.UserRef{Login: creator.Login}); err != nil {
		t.Fatalf("DeleteRoom(%q) = %v, want nil", r.Name, err)
	}
	for _, u := range []store.Account{creator, member, heir} {
		wantMembershipNotFound(t, ctx, s, r.Name, u.Login)
	}

	// The name taken again, by another creator and as a private group: no
	// participant of the deleted room is one of the new, nor is its creator
	// or kind.
	reborn := newRoom(r.Name, heir.UserRef)
	reborn.Kind = store.PrivateGroup
	if err := s.CreateRoom(ctx, reborn); err != nil {
		t.Fatalf("CreateRoom(%q) after DeleteRoom = %v, want nil", r.Name, err)
	}
	wantMembership(t, ctx, s, reborn, heir.Login, true)
	wantMembership(t, ctx, s, reborn, creator.Login, false)
	wantMembership(t, ctx, s, reborn, member.Login, false)
}

func testMembershipNotFound(t *testing.T, s store.Store) {
	ctx := newContext(t)
	u := mustCreateUser(t, ctx, s, "lost")
	wantMembershipNotFound(t, ctx, s, newRoomName(t, "nowhere"), u.Login)
}

func testMembershipGroup(t *testing.T, s store.Store) {
	ctx := newContext(t)
	owner := mustCreateUser(t, ctx, s, "owner")
	guest := mustCreateUser(t, ctx, s, "guest")
	outsider := mustCreateUser(t, ctx, s, "outsider")
	g := newRoom(newRoomName(t, "group"), owner.UserRef)
	g.Kind = store.PrivateGroup
	if err := s.CreateRoom(ctx, g); err != nil {
		t.Fatalf("CreateRoom(%q, private) = %v, want nil", g.Name, err)
	}
	wantMembership(t, ctx, s, g, owner.Login, true)
	wantMembership(t, ctx, s, g, guest.Login, false)

	at := time.Now().Truncate(time.Second)
	if _, _, err := s.AddGroupMember(ctx, g.Name, store.UserRef{Login: owner.Login}, guest.UserRef, at); err != nil {
		t.Fatalf("AddGroupMember(%q, %q) = %v, want nil", g.Name, guest.Login, err)
	}
	wantMembership(t, ctx, s, g, guest.Login, true)
	wantMembership(t, ctx, s, g, outsider.Login, false)

	if _, err := s.LeaveGroup(ctx, g.Name, guest.UserRef, at.Add(time.Second)); err != nil {
		t.Fatalf("LeaveGroup(%q, %q) = %v, want nil", g.Name, guest.Login, err)
	}
	wantMembership(t, ctx, s, g, guest.Login, false)
	wantMembership(t, ctx, s, g, owner.Login, true)
	wantAgreesWithRoom(t, ctx, s, g.Name, owner.Login, guest.Login, outsider.Login)

	// A public room reads as public.
	pub := mustCreateRoom(t, ctx, s, "public", owner.UserRef)
	if m := mustMembership(t, ctx, s, pub.Name, owner.Login); m.Kind != store.PublicRoom {
		t.Errorf("Membership(%q).Kind = %q, want public (%q)", pub.Name, m.Kind, store.PublicRoom)
	}
}

// testMembershipLoginPrefixes takes logins that extend one another: each
// answers for itself only, whoever else takes part.
func testMembershipLoginPrefixes(t *testing.T, s store.Store) {
	ctx := newContext(t)
	creator := mustCreateUser(t, ctx, s, "creator")
	base := newLogin(t, "pfx")
	var users []store.Account
	for i, login := range []string{base, base + "x", base + ".y", base + "-", base[:len(base)-1]} {
		a := accountFor(login, i)
		if err := s.CreateUser(ctx, a); err != nil {
			t.Fatalf("CreateUser(%q) = %v, want nil", login, err)
		}
		users = append(users, a)
	}
	r := mustCreateRoom(t, ctx, s, "prefix", creator.UserRef)
	logins := []string{creator.Login}
	for _, u := range users {
		logins = append(logins, u.Login)
	}

	// Every other one in, then the others in and the first ones out.
	for step := range 2 {
		for i, u := range users {
			switch {
			case i%2 == step:
				mustJoinRoom(t, ctx, s, r.Name, u.UserRef)
			case step == 1:
				if _, err := s.LeaveRoom(ctx, r.Name, u.UserRef); err != nil {
					t.Fatalf("LeaveRoom(%q, %q) = %v, want nil", r.Name, u.Login, err)
				}
			}
		}
		for i, u := range users {
			wantMembership(t, ctx, s, r, u.Login, i%2 == step)
		}
		wantAgreesWithRoom(t, ctx, s, r.Name, logins...)
	}
}

// testMembershipConcurrent has users join and leave the room over and over,
// all at once, while readers check the participants that do not move: the
// creator is in throughout, an outsider out. Afterwards Membership says of
// each user what its last call did, and what Room says.
func testMembershipConcurrent(t *testing.T, s store.Store) {
	const users, cycles = 6, 4
	ctx, cancel := context.WithTimeout(t.Context(), 2*subtestTimeout)
	defer cancel()
	creator := mustCreateUser(t, ctx, s, "creator")
	outsider := mustCreateUser(t, ctx, s, "outsider")
	r := mustCreateRoom(t, ctx, s, "churn", creator.UserRef)
	movers := make([]store.Account, users)
	for i := range movers {
		movers[i] = mustCreateUser(t, ctx, s, fmt.Sprintf("mover%d", i))
	}

	done := make(chan struct{})
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if m, err := s.Membership(ctx, r.Name, creator.Login); err != nil || !m.Participant {
					t.Errorf("Membership(%q, creator %q) during the churn = %+v, %v; want a participant", r.Name, creator.Login, m, err)
					return
				}
				if m, err := s.Membership(ctx, r.Name, outsider.Login); err != nil || m.Participant {
					t.Errorf("Membership(%q, outsider %q) during the churn = %+v, %v; want no participant", r.Name, outsider.Login, m, err)
					return
				}
			}
		})
	}
	var moving sync.WaitGroup
	for i, u := range movers {
		moving.Go(func() {
			// The odd ones end in the room, the even ones out of it.
			for c := range cycles {
				if _, _, err := s.JoinRoom(ctx, r.Name, u.UserRef); err != nil {
					t.Errorf("JoinRoom(%q, %q) = %v, want nil", r.Name, u.Login, err)
					return
				}
				if c == cycles-1 && i%2 == 1 {
					return
				}
				if _, err := s.LeaveRoom(ctx, r.Name, u.UserRef); err != nil {
					t.Errorf("LeaveRoom(%q, %q) = %v, want nil", r.Name, u.Login, err)
					return
				}
			}
		})
	}
	moving.Wait()
	close(done)
	readers.Wait()
	if t.Failed() {
		return
	}

	logins := []string{creator.Login, outsider.Login}
	for i, u := range movers {
		wantMembership(t, ctx, s, r, u.Login, i%2 == 1)
		logins = append(logins, u.Login)
	}
	wantAgreesWithRoom(t, ctx, s, r.Name, logins...)
}

// testMembershipRacingDelete races joins with the deletion of the room, then
// creates a room of the same name: Membership answers each racer with a
// membership or ErrNotFound while they run, ErrNotFound once the room is
// gone, and no racer takes part in the new room.
func testMembershipRacingDelete(t *testing.T, s store.Store) {
	const racers = 6
	ctx, cancel := context.WithTimeout(t.Context(), 2*subtestTimeout)
	defer cancel()
	creator := mustCreateUser(t, ctx, s, "creator")
	heir := mustCreateUser(t, ctx, s, "heir")
	users := make([]store.Account, racers)
	for i := range users {
		users[i] = mustCreateUser(t, ctx, s, fmt.Sprintf("racer%d", i))
	}
	r := mustCreateRoom(t, ctx, s, "race", creator.UserRef)

	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, u := range users {
		wg.Go(func() {
			<-start
			if _, _, err := s.JoinRoom(ctx, r.Name, u.UserRef); err != nil && !errors.Is(err, store.ErrNotFound) {
				t.Errorf("JoinRoom(%q, %q) racing the delete = %v, want nil or ErrNotFound", r.Name, u.Login, err)
			}
			m, err := s.Membership(ctx, r.Name, u.Login)
			switch {
			case errors.Is(err, store.ErrNotFound):
			case err != nil:
				t.Errorf("Membership(%q, %q) racing the delete = %v, want nil or ErrNotFound", r.Name, u.Login, err)
			case m.Creator != creator.UserRef || m.Kind != r.Kind:
				t.Errorf("Membership(%q, %q) racing the delete = %+v, want the room of %q", r.Name, u.Login, m, creator.Login)
			}
		})
		if i == racers/2 {
			wg.Go(func() {
				<-start
				if _, _, err := s.DeleteRoom(ctx, r.Name, store.UserRef{Login: creator.Login}); err != nil {
					t.Errorf("DeleteRoom(%q) racing joins = %v, want nil", r.Name, err)
				}
			})
		}
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}

	wantMembershipNotFound(t, ctx, s, r.Name, creator.Login)
	for _, u := range users {
		wantMembershipNotFound(t, ctx, s, r.Name, u.Login)
	}
	reborn := newRoom(r.Name, heir.UserRef)
	if err := s.CreateRoom(ctx, reborn); err != nil {
		t.Fatalf("CreateRoom(%q) after DeleteRoom = %v, want nil", r.Name, err)
	}
	wantMembership(t, ctx, s, reborn, heir.Login, true)
	wantMembership(t, ctx, s, reborn, creator.Login, false)
	for _, u := range users {
		wantMembership(t, ctx, s, reborn, u.Login, false)
	}
}
