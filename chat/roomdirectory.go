package chat

import (
	"context"

	"github.com/killrchat/chatql/store"
)

// A DirectoryPage is a page of the public room directory as a reader sees
// it.
type DirectoryPage struct {
	// Rooms are the page's public rooms, but those the reader is banned
	// from.
	Rooms []store.Room
	// More says that rooms follow; After is then where the next page
	// starts: the name of the last room read, shown or skipped.
	More  bool
	After string
}

// PublicRooms is a page of up to n public rooms after the room named after
// ("" from the first), in the store's stable order: one bounded read of
// n+1 rooms, the last only telling whether more follow. Private groups are
// never listed, and the rooms me is banned from are left out (so a page
// may hold fewer than n).
func (s *Service) PublicRooms(ctx context.Context, me store.UserRef, after string, n int) (DirectoryPage, error) {
	listed, err := s.Store.PublicRooms(ctx, me.Login, after, n+1)
	if err != nil {
		return DirectoryPage{}, err
	}
	page := DirectoryPage{Rooms: []store.Room{}}
	if len(listed) > n {
		listed = listed[:n]
		page.More, page.After = true, listed[n-1].Name
	}
	for _, r := range listed {
		if !r.ReaderBanned && r.Kind == store.PublicRoom {
			page.Rooms = append(page.Rooms, r.Room)
		}
	}
	return page, nil
}
