package chat

import (
	"errors"
	"testing"

	"github.com/killrchat/chatql/store"
)

// TestRoomRights: the table of who may change what, for each kind of
// member of each kind of room.
func TestRoomRights(t *testing.T) {
	creator := store.UserRef{Login: "alice"}
	member := func(kind store.RoomKind, login string, participant, moderator bool) store.RoomMembership {
		return store.RoomMembership{Room: "r", Kind: kind, Creator: creator, Login: login, Participant: participant, Moderator: moderator}
	}
	const (
		ok        = "ok"
		forbidden = "FORBIDDEN"
		invalid   = "BAD_USER_INPUT"
	)
	type who struct {
		name string
		m    func(store.RoomKind) store.RoomMembership
	}
	people := []who{
		{"creator", func(k store.RoomKind) store.RoomMembership { return member(k, "alice", true, false) }},
		{"moderator", func(k store.RoomKind) store.RoomMembership { return member(k, "bob", true, true) }},
		{"participant", func(k store.RoomKind) store.RoomMembership { return member(k, "carol", true, false) }},
		{"outsider", func(k store.RoomKind) store.RoomMembership { return member(k, "dave", false, false) }},
	}
	want := map[store.RoomKind]map[roomSetting][4]string{ // creator, moderator, participant, outsider
		store.PublicRoom: {
			settingBanner:   {ok, ok, forbidden, forbidden},
			settingTitle:    {invalid, invalid, invalid, invalid},
			settingSlowMode: {ok, ok, forbidden, forbidden},
			settingIcon:     {ok, ok, forbidden, forbidden},
			settingPins:     {ok, ok, forbidden, forbidden},
			settingInvites:  {invalid, invalid, invalid, invalid},
		},
		store.PrivateGroup: {
			settingBanner:   {ok, ok, ok, forbidden},
			settingTitle:    {ok, ok, ok, forbidden},
			settingSlowMode: {ok, ok, forbidden, forbidden},
			settingIcon:     {ok, ok, ok, forbidden},
			settingPins:     {ok, ok, ok, forbidden},
			settingInvites:  {ok, ok, forbidden, forbidden},
		},
	}
	outcome := func(err error) string {
		switch {
		case err == nil:
			return ok
		case errors.Is(err, store.ErrForbidden):
			return forbidden
		case errors.Is(err, store.ErrInvalid):
			return invalid
		}
		return err.Error()
	}
	for kind, settings := range want {
		if len(settings) != len(roomRights) {
			t.Fatalf("the test covers %d settings, roomRights has %d", len(settings), len(roomRights))
		}
		for setting, answers := range settings {
			for i, p := range people {
				if got := outcome(mayChange(p.m(kind), setting)); got != answers[i] {
					t.Errorf("%q room, %s changes %s: %s, want %s", kind, p.name, setting, got, answers[i])
				}
			}
		}
	}
}
