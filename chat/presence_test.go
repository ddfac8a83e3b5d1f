package chat

import (
	"context"
	"fmt"
	"testing"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/presence"
	"github.com/killrchat/chatql/store"
)

// sizedRegistry records the size of each question asked of it.
type sizedRegistry struct {
	presence.Local
	asked []int
}

func (s *sizedRegistry) Online(ctx context.Context, logins []string) ([]bool, error) {
	s.asked = append(s.asked, len(logins))
	return s.Local.Online(ctx, logins)
}

// Room.online asks about a big room a chunk at a time, stops once it has
// `first`, and never looks past maxOnlineScanned participants.
func TestRoomOnlineBoundsItsWork(t *testing.T) {
	room := &store.Room{Name: "hall"}
	for i := range 2 * maxOnlineScanned {
		room.Participants = append(room.Participants, store.UserRef{Login: fmt.Sprintf("u%05d", i)})
	}
	reg := &sizedRegistry{}
	r := &Service{Presence: &presence.Tracker{Registry: reg}}
	ctx := auth.WithUser(t.Context(), room.Participants[0])
	for _, i := range []int{1100, 1200, maxOnlineScanned + 5} {
		if _, err := reg.Arrive(ctx, room.Participants[i].Login); err != nil {
			t.Fatal(err)
		}
	}
	one := 1
	got, err := r.RoomOnline(ctx, room.Participants[0], room, one)
	if err != nil || len(got) != 1 || got[0].Login != "u01100" {
		t.Fatalf("roomOnline(first: 1) = %v, %v; want u01100", got, err)
	}
	if want := 1100/onlineChunk + 1; len(reg.asked) != want || reg.asked[0] != onlineChunk {
		t.Fatalf("asked %v, want %d questions of %d", reg.asked, want, onlineChunk)
	}
	reg.asked = nil
	got, err = r.RoomOnline(ctx, room.Participants[0], room, DefaultOnline)
	if err != nil || len(got) != 2 || got[1].Login != "u01200" {
		t.Fatalf("roomOnline = %v, %v; want u01100 and u01200 (u%05d is past the scan)", got, err, maxOnlineScanned+5)
	}
	scanned := 0
	for _, n := range reg.asked {
		scanned += n
	}
	if scanned != maxOnlineScanned {
		t.Fatalf("asked about %d participants, want the %d scanned", scanned, maxOnlineScanned)
	}
}
