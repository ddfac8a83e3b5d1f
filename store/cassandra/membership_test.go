package cassandra

import (
	"cmp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// TestMembershipSlice checks the bounds of selectMembership: the slice of
// the participants set it reads holds every element of the login asked
// about (the same login under other names too, as a set of frozen users
// may hold) and no other, however the other logins extend or prefix it.
func TestMembershipSlice(t *testing.T) {
	db := mustOpen(t, testConfig(t))
	ctx := t.Context()
	base := unique("m")
	creator := store.UserRef{Login: base + "-creator", Firstname: "C", Lastname: "R"}
	room := store.Room{Name: unique("slice"), Creator: creator, CreatedAt: time.Now()}
	if err := db.CreateRoom(ctx, room); err != nil {
		t.Fatalf("CreateRoom = %v", err)
	}
	members := []store.UserRef{
		{Login: base, Firstname: "Same", Lastname: "Login"},
		{Login: base, Firstname: "", Lastname: ""}, // empty names, not null
		{Login: base + "x", Firstname: "A", Lastname: "B"},
		{Login: base + ".y"},
		{Login: base + "-"},
		{Login: base[:len(base)-1]},
		{Login: base[:len(base)-1] + "z"},
	}
	// Added as a set element each, not by JoinRoom: a login already among
	// the participants, under other names, is no new participant.
	for _, u := range members {
		if err := db.query(ctx, `UPDATE chat_rooms SET participants = participants + ? WHERE room_name = ?`, []userUDT{userUDT(u)}, room.Name).Exec(); err != nil {
			t.Fatalf("add %+v to the participants: %v", u, err)
		}
	}

	logins := []string{creator.Login, base + "w"} // the last one is no participant
	for _, u := range members {
		logins = append(logins, u.Login)
	}
	for _, login := range logins {
		var (
			c         userUDT
			kind      string
			slice     []userUDT
			moderator *userUDT
			banned    *time.Time
			slowMode  int
		)
		err := db.query(ctx, selectMembership, login, login+"\x00", login, login, room.Name).Scan(&c, &kind, &slice, &moderator, &banned, &slowMode)
		if err != nil {
			t.Fatalf("selectMembership(%q) = %v", login, err)
		}
		var want []userUDT
		for _, u := range append([]store.UserRef{creator}, members...) {
			if u.Login == login && !slices.Contains(want, userUDT(u)) {
				want = append(want, userUDT(u))
			}
		}
		slices.SortFunc(slice, compareUDT)
		slices.SortFunc(want, compareUDT)
		if !slices.Equal(slice, want) {
			t.Errorf("selectMembership(%q) read the slice %+v, want %+v", login, slice, want)
		}
		if c != userUDT(creator) {
			t.Errorf("selectMembership(%q) read the creator %+v, want %+v", login, c, creator)
		}
	}
}

func compareUDT(a, b userUDT) int {
	return cmp.Or(strings.Compare(a.Login, b.Login), strings.Compare(a.Firstname, b.Firstname), strings.Compare(a.Lastname, b.Lastname))
}
