package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/killrchat/chatql/store"
)

// testPublicRooms pages through the public room directory, three at a
// time: each of this test's public rooms shows up exactly once, no room
// twice, no private group ever and no deleted room; the reader's ban is
// told with the room.
func testPublicRooms(t *testing.T, s store.Store) {
	// The store may hold many rooms from other tests and runs.
	ctx, cancel := context.WithTimeout(t.Context(), 4*subtestTimeout)
	defer cancel()
	creator := mustCreateUser(t, ctx, s, "lister")
	reader := mustCreateUser(t, ctx, s, "browser")
	own := map[string]store.Room{}
	for range 8 {
		r := mustCreateRoom(t, ctx, s, "listed", creator.UserRef)
		own[r.Name] = r
	}
	groups := map[string]bool{}
	for range 4 {
		groups[mustCreateGroup(t, ctx, s, "unlisted", creator.UserRef).Name] = true
	}
	var banned, deleted string
	for name := range own {
		switch {
		case banned == "":
			banned = name
			mustModerate(t, ctx, s, name, store.ParticipantBanned, creator.UserRef, reader.UserRef)
		case deleted == "":
			deleted = name
			if _, _, err := s.DeleteRoom(ctx, name, creator.UserRef); err != nil {
				t.Fatalf("DeleteRoom(%q) = %v", name, err)
			}
			delete(own, name)
		}
	}

	const limit = 3
	seen := map[string]int{} // room name → page it was on
	after := ""
	for page := 0; ; page++ {
		rooms, err := s.PublicRooms(ctx, reader.Login, after, limit)
		if err != nil {
			t.Fatalf("PublicRooms(%q, %d) = %v, want nil (page %d)", after, limit, err, page)
		}
		if len(rooms) > limit {
			t.Errorf("PublicRooms(%q, %d) returned %d rooms, want at most %d", after, limit, len(rooms), limit)
		}
		if len(rooms) == 0 {
			break
		}
		for _, r := range rooms {
			if p, dup := seen[r.Name]; dup {
				t.Fatalf("room %q on pages %d and %d: paging must visit every room once", r.Name, p, page)
			}
			seen[r.Name] = page
			if r.Kind != store.PublicRoom || groups[r.Name] {
				t.Errorf("PublicRooms listed %q, of kind %q: a private group", r.Name, r.Kind)
			}
			if r.Name == deleted {
				t.Errorf("PublicRooms listed %q, deleted", r.Name)
			}
			if want, ok := own[r.Name]; ok {
				checkRoomHeader(t, fmt.Sprintf("PublicRooms page %d: room %q", page, r.Name), r.Room, want)
				if r.ReaderBanned != (r.Name == banned) {
					t.Errorf("PublicRooms: room %q says the reader banned: %v, want %v", r.Name, r.ReaderBanned, r.Name == banned)
				}
			}
		}
		after = rooms[len(rooms)-1].Name
	}
	for name := range own {
		if _, ok := seen[name]; !ok {
			t.Errorf("room %q never listed by PublicRooms paging (%d rooms seen)", name, len(seen))
		}
	}
	// A deleted room's name still places a page: the rooms after it.
	if _, err := s.PublicRooms(ctx, reader.Login, deleted, limit); err != nil {
		t.Errorf("PublicRooms after the deleted room %q = %v, want nil", deleted, err)
	}
	if rooms, err := s.PublicRooms(ctx, reader.Login, "", 0); err != nil || len(rooms) != 0 {
		t.Errorf("PublicRooms with limit 0 = %v, %v; want none", rooms, err)
	}
}
