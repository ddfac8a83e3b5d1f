package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

func roomSettingsTests() []storeTest {
	return []storeTest{
		{"Settings", testRoomSettings},
		{"SettingsErrors", testRoomSettingsErrors},
		{"PostTurns", testPostTurns},
		{"PostTurnsRacing", testPostTurnsRacing},
		{"Pins", testPins},
		{"PinsBound", testPinsBound},
		{"Invites", testInvites},
		{"InviteUsesRacing", testInviteUsesRacing},
		{"DeleteRoom", testRoomSettingsDeleted},
		{"ReadReceiptsChoice", testReadReceiptsChoice},
	}
}

func ptrTo[T any](v T) *T { return &v }

// lastRoomEvent is the newest event of the room's log.
func lastRoomEvent(t *testing.T, s store.Store, room string) store.Event {
	t.Helper()
	evs, err := s.RoomEvents(newContext(t), room, store.MessageID{}, 1000)
	if err != nil || len(evs) == 0 {
		t.Fatalf("RoomEvents(%s) = %d events, %v", room, len(evs), err)
	}
	return evs[len(evs)-1]
}

// testRoomSettings: a group's banner, title and slow mode change with one
// write that logs ROOM_SETTINGS_CHANGED and its system message; the room,
// and the members' Membership, show them; a change to the same values
// changes nothing and logs nothing.
func testRoomSettings(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	bob := mustCreateUser(t, ctx, s, "bob").UserRef
	g := mustCreateGroup(t, ctx, s, "settings", alice)
	if _, _, err := s.AddGroupMember(ctx, g.Name, alice, bob, time.Now()); err != nil {
		t.Fatal(err)
	}
	c := store.RoomSettingsChange{Room: g.Name, By: alice, Banner: ptr("release plans"), Title: ptr("Release crew"), SlowMode: ptrTo(30 * time.Second)}
	after, ev, err := s.SetRoomSettings(ctx, c)
	if err != nil {
		t.Fatalf("SetRoomSettings = %v", err)
	}
	if after.Banner != "release plans" || after.Title != "Release crew" || after.SlowMode != 30*time.Second {
		t.Errorf("SetRoomSettings returned %+v", after)
	}
	if ev.Kind != store.RoomSettingsChanged || ev.Message == nil || !ev.Message.System || ev.User.Login != alice.Login {
		t.Fatalf("SetRoomSettings event = %+v", ev)
	}
	r := mustRoom(t, ctx, s, g.Name)
	if r.Banner != "release plans" || r.Title != "Release crew" || r.SlowMode != 30*time.Second {
		t.Errorf("Room after SetRoomSettings = banner %q title %q slow mode %v", r.Banner, r.Title, r.SlowMode)
	}
	for _, login := range []string{alice.Login, bob.Login, "nobody.here"} {
		if m, err := s.Membership(ctx, g.Name, login); err != nil || m.SlowMode != 30*time.Second {
			t.Errorf("Membership(%s).SlowMode = %v, %v; want 30s", login, m.SlowMode, err)
		}
	}
	got := lastRoomEvent(t, s, g.Name)
	if got.ID != ev.ID || got.Kind != store.RoomSettingsChanged || got.Message == nil || got.Message.Content != ev.Message.Content {
		t.Errorf("the log's last event = %+v; want %+v", got, ev)
	}
	if _, again, err := s.SetRoomSettings(ctx, store.RoomSettingsChange{Room: g.Name, By: bob, Title: ptr("Release crew")}); err != nil || !again.ID.IsZero() {
		t.Errorf("SetRoomSettings to the same title = %+v, %v; want no event", again, err)
	}
	// Only the fields given change.
	if after, _, err := s.SetRoomSettings(ctx, store.RoomSettingsChange{Room: g.Name, By: bob, SlowMode: ptrTo(time.Duration(0))}); err != nil || after.SlowMode != 0 || after.Title != "Release crew" || after.Banner != "release plans" {
		t.Errorf("SetRoomSettings(slow mode off) = %+v, %v", after, err)
	}
	if m, err := s.Membership(ctx, g.Name, bob.Login); err != nil || m.SlowMode != 0 {
		t.Errorf("Membership after slow mode off = %v, %v", m.SlowMode, err)
	}
}

// testRoomSettingsErrors: no such room; a title for a public room; bad
// values.
func testRoomSettingsErrors(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	room := mustCreateRoom(t, ctx, s, "settings", alice)
	_, _, err := s.SetRoomSettings(ctx, store.RoomSettingsChange{Room: room.Name + "-none", By: alice, Banner: ptr("x")})
	wantErr(t, "SetRoomSettings(no room)", err, store.ErrNotFound)
	for name, c := range map[string]store.RoomSettingsChange{
		"title of a public room": {Title: ptr("A title")},
		"nothing":                {},
		"negative slow mode":     {SlowMode: ptrTo(-time.Second)},
		"too slow":               {SlowMode: ptrTo(store.MaxSlowMode + time.Second)},
		"fractional slow mode":   {SlowMode: ptrTo(1500 * time.Millisecond)},
		"two-line banner":        {Banner: ptr("a\nb")},
	} {
		c.Room, c.By = room.Name, alice
		_, _, err := s.SetRoomSettings(ctx, c)
		wantErr(t, "SetRoomSettings("+name+")", err, store.ErrInvalid)
	}
}

// testPostTurns: a turn, then one too soon (refused with the time left),
// then one after the interval.
func testPostTurns(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	room := mustCreateRoom(t, ctx, s, "turns", alice)
	at := time.Now().Truncate(time.Millisecond)
	if err := s.TakePostTurn(ctx, room.Name, alice.Login, at, 10*time.Second); err != nil {
		t.Fatalf("first TakePostTurn = %v", err)
	}
	err := s.TakePostTurn(ctx, room.Name, alice.Login, at.Add(4*time.Second), 10*time.Second)
	var soon *store.PostTooSoon
	if !errors.As(err, &soon) || soon.RetryAfter != 6*time.Second || soon.RetryAfterSeconds() != 6 {
		t.Fatalf("TakePostTurn 4s later = %v; want a PostTooSoon of 6s", err)
	}
	if err := s.TakePostTurn(ctx, room.Name, "other.member", at.Add(4*time.Second), 10*time.Second); err != nil {
		t.Errorf("another member's TakePostTurn = %v", err)
	}
	if err := s.TakePostTurn(ctx, room.Name, alice.Login, at.Add(10*time.Second), 10*time.Second); err != nil {
		t.Errorf("TakePostTurn after the interval = %v", err)
	}
	if err := s.TakePostTurn(ctx, room.Name, alice.Login, at.Add(11*time.Second), 10*time.Second); !store.IsPostTooSoon(err) {
		t.Errorf("TakePostTurn 1s after the second = %v; want PostTooSoon", err)
	}
}

// testPostTurnsRacing: of racing turns of one member, exactly one is taken.
func testPostTurnsRacing(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	room := mustCreateRoom(t, ctx, s, "turns", alice)
	at := time.Now().Truncate(time.Millisecond)
	const racers = 8
	var wg sync.WaitGroup
	errs := make([]error, racers)
	for i := range racers {
		wg.Go(func() {
			errs[i] = s.TakePostTurn(ctx, room.Name, alice.Login, at.Add(time.Duration(i)*time.Millisecond), time.Minute)
		})
	}
	wg.Wait()
	taken := 0
	for _, err := range errs {
		switch {
		case err == nil:
			taken++
		case !store.IsPostTooSoon(err):
			t.Errorf("racing TakePostTurn = %v", err)
		}
	}
	if taken != 1 {
		t.Errorf("%d racing turns taken, want 1", taken)
	}
}

// testPins: pin, pin again (no change), list newest first, unpin; events
// logged; a message of another room is not pinned.
func testPins(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	room := mustCreateRoom(t, ctx, s, "pins", alice)
	other := mustCreateRoom(t, ctx, s, "pins", alice)
	m1 := mustPost(t, ctx, s, room.Name, store.NewMessageID(), alice, "one")
	m2 := mustPost(t, ctx, s, room.Name, store.NewMessageID(), alice, "two")
	elsewhere := mustPost(t, ctx, s, other.Name, store.NewMessageID(), alice, "elsewhere")
	at := time.Now().Truncate(time.Millisecond)
	ev, err := s.PinMessage(ctx, room.Name, store.Pin{Message: m2.ID, By: alice, At: at})
	if err != nil || ev.Kind != store.MessagePinned || ev.Message == nil || ev.Message.ID != m2.ID || ev.ID.IsZero() {
		t.Fatalf("PinMessage = %+v, %v", ev, err)
	}
	if got := lastRoomEvent(t, s, room.Name); got.ID != ev.ID || got.Kind != store.MessagePinned || got.Message == nil || got.Message.ID != m2.ID {
		t.Errorf("the log's last event = %+v; want the pin", got)
	}
	if again, err := s.PinMessage(ctx, room.Name, store.Pin{Message: m2.ID, By: alice, At: at.Add(time.Second)}); err != nil || !again.ID.IsZero() {
		t.Errorf("PinMessage again = %+v, %v; want no event", again, err)
	}
	if _, err := s.PinMessage(ctx, room.Name, store.Pin{Message: m1.ID, By: alice, At: at.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	_, err = s.PinMessage(ctx, room.Name, store.Pin{Message: elsewhere.ID, By: alice, At: at})
	wantErr(t, "PinMessage(another room's message)", err, store.ErrNotFound)
	_, err = s.PinMessage(ctx, room.Name+"-none", store.Pin{Message: m1.ID, By: alice, At: at})
	wantErr(t, "PinMessage(no room)", err, store.ErrNotFound)
	pins, err := s.Pins(ctx, room.Name)
	if err != nil || len(pins) != 2 || pins[0].Message != m1.ID || pins[1].Message != m2.ID || pins[1].By.Login != alice.Login || !sameInstant(pins[1].At, at) {
		t.Fatalf("Pins = %+v, %v; want m1's then m2's", pins, err)
	}
	ev, err = s.UnpinMessage(ctx, room.Name, m2.ID, alice)
	if err != nil || ev.Kind != store.MessageUnpinned || ev.Message == nil || ev.Message.ID != m2.ID {
		t.Fatalf("UnpinMessage = %+v, %v", ev, err)
	}
	if again, err := s.UnpinMessage(ctx, room.Name, m2.ID, alice); err != nil || !again.ID.IsZero() {
		t.Errorf("UnpinMessage again = %+v, %v; want no event", again, err)
	}
	if pins, err := s.Pins(ctx, room.Name); err != nil || len(pins) != 1 || pins[0].Message != m1.ID {
		t.Errorf("Pins after unpinning = %+v, %v", pins, err)
	}
}

// testPinsBound: a room holds MaxPins pins.
func testPinsBound(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	room := mustCreateRoom(t, ctx, s, "pins", alice)
	for i := range store.MaxPins + 1 {
		m := mustPost(t, ctx, s, room.Name, store.NewMessageID(), alice, "pin me")
		_, err := s.PinMessage(ctx, room.Name, store.Pin{Message: m.ID, By: alice, At: time.Now()})
		if i < store.MaxPins && err != nil {
			t.Fatalf("pin %d = %v", i, err)
		}
		if i == store.MaxPins {
			wantErr(t, "the pin past MaxPins", err, store.ErrInvalid)
		}
	}
}

func newInvite(room string, by store.UserRef, token string, maxUses int, expires time.Duration) store.Invite {
	now := time.Now().UTC().Truncate(time.Millisecond)
	return store.Invite{Room: room, Hash: store.InviteHash(token), CreatedBy: by, CreatedAt: now, ExpiresAt: now.Add(expires), MaxUses: maxUses}
}

// testInvites: create, list, read and use an invite up to its limit;
// an expired one lets nobody in; a revoked one is gone.
func testInvites(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	g := mustCreateGroup(t, ctx, s, "invites", alice)
	inv := newInvite(g.Name, alice, "token-one-"+randomSuffix(), 2, time.Hour)
	if err := s.CreateInvite(ctx, inv); err != nil {
		t.Fatalf("CreateInvite = %v", err)
	}
	expired := newInvite(g.Name, alice, "token-two-"+randomSuffix(), 5, time.Millisecond)
	if err := s.CreateInvite(ctx, expired); err != nil {
		t.Fatal(err)
	}
	list, err := s.Invites(ctx, g.Name)
	if err != nil || len(list) != 2 {
		t.Fatalf("Invites = %+v, %v; want 2", list, err)
	}
	got, err := s.Invite(ctx, inv.Hash)
	if err != nil || got.Room != g.Name || got.MaxUses != 2 || got.Uses != 0 || got.CreatedBy.Login != alice.Login || !sameInstant(got.ExpiresAt, inv.ExpiresAt) {
		t.Errorf("Invite = %+v, %v", got, err)
	}
	now := time.Now()
	for i := 1; i <= 2; i++ {
		if used, err := s.UseInvite(ctx, inv.Hash, now); err != nil || used.Uses != i {
			t.Fatalf("use %d = %+v, %v", i, used, err)
		}
	}
	_, err = s.UseInvite(ctx, inv.Hash, now)
	wantErr(t, "UseInvite past its limit", err, store.ErrForbidden)
	_, err = s.UseInvite(ctx, expired.Hash, now.Add(time.Second))
	wantErr(t, "UseInvite(expired)", err, store.ErrForbidden)
	_, err = s.UseInvite(ctx, store.InviteHash("no such token"), now)
	wantErr(t, "UseInvite(unknown)", err, store.ErrNotFound)
	err = s.RevokeInvite(ctx, g.Name+"-other", inv.Hash)
	wantErr(t, "RevokeInvite(another room)", err, store.ErrNotFound)
	if err := s.RevokeInvite(ctx, g.Name, inv.Hash); err != nil {
		t.Fatalf("RevokeInvite = %v", err)
	}
	_, err = s.Invite(ctx, inv.Hash)
	wantErr(t, "Invite(revoked)", err, store.ErrNotFound)
	_, err = s.UseInvite(ctx, inv.Hash, now)
	wantErr(t, "UseInvite(revoked)", err, store.ErrNotFound)
	// A new invite drops those that let nobody in any more (the expired).
	if err := s.CreateInvite(ctx, newInvite(g.Name, alice, "token-three-"+randomSuffix(), 1, time.Hour)); err != nil {
		t.Fatal(err)
	}
	if list, err := s.Invites(ctx, g.Name); err != nil || len(list) != 1 {
		t.Errorf("Invites after a new one = %+v, %v; want only the new one", list, err)
	}
	_, err = s.Invites(ctx, g.Name+"-none")
	if err != nil {
		t.Errorf("Invites(no room) = %v; want none", err)
	}
	err = s.CreateInvite(ctx, newInvite(g.Name+"-none", alice, "token-four-"+randomSuffix(), 1, time.Hour))
	wantErr(t, "CreateInvite(no room)", err, store.ErrNotFound)
}

// testInviteUsesRacing: racing uses never pass the limit.
func testInviteUsesRacing(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	g := mustCreateGroup(t, ctx, s, "invites", alice)
	inv := newInvite(g.Name, alice, "racing-"+randomSuffix(), 3, time.Hour)
	if err := s.CreateInvite(ctx, inv); err != nil {
		t.Fatal(err)
	}
	const racers = 10
	var wg sync.WaitGroup
	errs := make([]error, racers)
	for i := range racers {
		wg.Go(func() { _, errs[i] = s.UseInvite(ctx, inv.Hash, time.Now()) })
	}
	wg.Wait()
	used := 0
	for _, err := range errs {
		switch {
		case err == nil:
			used++
		case !errors.Is(err, store.ErrForbidden):
			t.Errorf("racing UseInvite = %v", err)
		}
	}
	if got, err := s.Invite(ctx, inv.Hash); used != 3 || err != nil || got.Uses != 3 {
		t.Errorf("%d racing uses succeeded, the invite counts %d (%v); want 3 and 3", used, got.Uses, err)
	}
}

// testRoomSettingsDeleted: deleting a room deletes its pins and invites.
func testRoomSettingsDeleted(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice").UserRef
	g := mustCreateGroup(t, ctx, s, "gone", alice)
	m := mustPost(t, ctx, s, g.Name, store.NewMessageID(), alice, "pinned")
	if _, err := s.PinMessage(ctx, g.Name, store.Pin{Message: m.ID, By: alice, At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	inv := newInvite(g.Name, alice, "gone-"+randomSuffix(), 3, time.Hour)
	if err := s.CreateInvite(ctx, inv); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.DeleteRoom(ctx, g.Name, alice); err != nil {
		t.Fatal(err)
	}
	if pins, err := s.Pins(ctx, g.Name); err != nil || len(pins) != 0 {
		t.Errorf("Pins after the delete = %+v, %v", pins, err)
	}
	_, err := s.Invite(ctx, inv.Hash)
	wantErr(t, "Invite after the delete", err, store.ErrNotFound)
	if list, err := s.Invites(ctx, g.Name); err != nil || len(list) != 0 {
		t.Errorf("Invites after the delete = %+v, %v", list, err)
	}
}

// testReadReceiptsChoice: the choice is a profile field, kept apart from
// the others.
func testReadReceiptsChoice(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice := mustCreateUser(t, ctx, s, "alice")
	if mustUser(t, ctx, s, alice.Login).NoReadReceipts {
		t.Fatal("a new user sends no read receipts; want them sent")
	}
	u, err := s.UpdateProfile(ctx, alice.Login, store.ProfileUpdate{ReadReceipts: ptrTo(false)})
	if err != nil || !u.NoReadReceipts {
		t.Fatalf("UpdateProfile(no receipts) = %+v, %v", u, err)
	}
	if got := mustUser(t, ctx, s, alice.Login); !got.NoReadReceipts || got.Firstname != alice.Firstname {
		t.Errorf("User after turning receipts off = %+v", got)
	}
	if _, err := s.UpdateProfile(ctx, alice.Login, store.ProfileUpdate{Bio: ptr("hello")}); err != nil {
		t.Fatal(err)
	}
	if !mustUser(t, ctx, s, alice.Login).NoReadReceipts {
		t.Error("a bio change turned receipts back on")
	}
	if u, err := s.UpdateProfile(ctx, alice.Login, store.ProfileUpdate{ReadReceipts: ptrTo(true)}); err != nil || u.NoReadReceipts || mustUser(t, ctx, s, alice.Login).NoReadReceipts {
		t.Errorf("UpdateProfile(receipts on) = %+v, %v", u, err)
	}
}
