package chat

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/store/embedded"
)

// TestMembershipChecks runs the access checks that read Store.Membership
// (participant, postAudience, visibleMembership, mayRead) on the embedded
// store, against rooms and groups in every state a caller can meet.
func TestMembershipChecks(t *testing.T) {
	ctx := t.Context()
	db, err := embedded.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r := &Service{Store: db}

	users := map[string]store.UserRef{}
	for _, login := range []string{"alice", "bob", "carol", "dave"} {
		users[login] = store.UserRef{Login: login, Firstname: login, Lastname: "L"}
		if err := db.CreateUser(ctx, store.Account{User: store.User{UserRef: users[login]}}); err != nil {
			t.Fatal(err)
		}
	}
	alice, bob, carol, dave := users["alice"], users["bob"], users["carol"], users["dave"]
	start := time.Now().Add(-time.Hour).Truncate(time.Second)
	public := store.Room{Name: "tea-party", Creator: alice, CreatedAt: start}
	group := store.Room{Name: "croquet", Kind: store.PrivateGroup, Creator: alice, CreatedAt: start}
	for _, room := range []store.Room{public, group} {
		if err := db.CreateRoom(ctx, room); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := db.JoinRoom(ctx, public.Name, bob); err != nil {
		t.Fatal(err)
	}
	// bob is in the group for one minute, and posts in it; dave joins it
	// later and stays.
	if _, _, err := db.AddGroupMember(ctx, group.Name, alice, bob, start.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	inWindow := store.Message{Room: group.Name, ID: store.MessageIDAt(start.Add(90 * time.Second)), Author: bob, Content: "while bob was in"}
	if err := db.PostGroupMessage(ctx, inWindow, []store.UserRef{alice, bob}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.LeaveGroup(ctx, group.Name, bob, start.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.AddGroupMember(ctx, group.Name, alice, dave, start.Add(3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	posted := store.Message{Room: public.Name, ID: store.NewMessageID(), Author: bob, Content: "hello"}
	if err := db.PostMessage(ctx, posted); err != nil {
		t.Fatal(err)
	}

	// participant and postAudience: participants only; a group's post
	// goes to its current members.
	for _, c := range []struct {
		room    string
		u       store.UserRef
		wantErr error
		members []string
	}{
		{public.Name, alice, nil, nil},
		{public.Name, bob, nil, nil},
		{public.Name, carol, store.ErrForbidden, nil},
		{group.Name, alice, nil, []string{"alice", "dave"}},
		{group.Name, dave, nil, []string{"alice", "dave"}},
		{group.Name, bob, store.ErrForbidden, nil}, // left
		{group.Name, carol, store.ErrForbidden, nil},
		{"nowhere", alice, store.ErrNotFound, nil},
	} {
		m, err := r.participant(ctx, c.room, c.u)
		if !errors.Is(err, c.wantErr) || err == nil && (!m.Participant || m.Creator != alice) {
			t.Errorf("participant(%q, %q) = %+v, %v; want error %v", c.room, c.u.Login, m, err, c.wantErr)
		}
		kind, members, _, err := r.postAudience(ctx, c.room, c.u)
		var logins []string
		for _, p := range members {
			logins = append(logins, p.Login)
		}
		if !errors.Is(err, c.wantErr) || !slices.Equal(logins, c.members) {
			t.Errorf("postAudience(%q, %q) = %q, %q, %v; want members %q, error %v", c.room, c.u.Login, kind, logins, err, c.members, c.wantErr)
		}
	}

	// visibleMembership: a group is NOT_FOUND to whoever never was in it;
	// a public room and a former member's group are visible, not joined.
	for _, c := range []struct {
		room        string
		u           store.UserRef
		wantErr     error
		participant bool
	}{
		{public.Name, bob, nil, true},
		{public.Name, carol, nil, false},
		{group.Name, dave, nil, true},
		{group.Name, bob, nil, false},
		{group.Name, carol, store.ErrNotFound, false},
		{"nowhere", carol, store.ErrNotFound, false},
	} {
		m, err := r.visibleMembership(ctx, c.room, c.u)
		if !errors.Is(err, c.wantErr) || m.Participant != c.participant {
			t.Errorf("visibleMembership(%q, %q) = %+v, %v; want participant %v, error %v", c.room, c.u.Login, m, err, c.participant, c.wantErr)
		}
	}

	// mayRead: a public room's participants; a group's members at the time
	// of the message, former ones included.
	for _, c := range []struct {
		msg     store.Message
		u       store.UserRef
		wantErr error
	}{
		{posted, bob, nil},
		{posted, alice, nil},
		{posted, carol, store.ErrForbidden},
		{inWindow, bob, nil},
		{inWindow, alice, nil},
		{inWindow, dave, store.ErrForbidden}, // posted before dave came
		{inWindow, carol, store.ErrNotFound}, // never a member: the group is not hers to know
	} {
		if err := r.mayRead(ctx, c.msg, c.u); !errors.Is(err, c.wantErr) {
			t.Errorf("mayRead(%q, %q) = %v, want %v", c.msg.Content, c.u.Login, err, c.wantErr)
		}
	}
	if _, err := db.LeaveRoom(ctx, public.Name, bob); err != nil {
		t.Fatal(err)
	}
	if err := r.mayRead(ctx, posted, bob); !errors.Is(err, store.ErrForbidden) {
		t.Errorf("mayRead after leaving = %v, want ErrForbidden", err)
	}
	if _, _, err := db.DeleteRoom(ctx, public.Name, alice); err != nil {
		t.Fatal(err)
	}
	if err := r.mayRead(ctx, posted, alice); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("mayRead after the delete = %v, want ErrNotFound", err)
	}
}
