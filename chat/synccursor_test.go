package chat

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

func TestSyncCursorRoundTrip(t *testing.T) {
	now := time.Now()
	c := SyncCursor{
		Base:  store.MinMessageID(now.Add(-time.Hour)),
		Inbox: store.NewMessageID(),
		Rooms: map[string]SyncPlace{
			"tea-party": {At: store.Cursor{ID: store.NewMessageID(), Seq: 42}},
			"left-room": {At: store.Cursor{ID: store.NewMessageID()}, Left: true},
			"group":     {At: store.Cursor{ID: store.MinMessageID(now), Seq: 1 << 40}, Left: true},
		},
	}
	got, err := ParseSyncCursor(c.String())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, c) {
		t.Fatalf("ParseSyncCursor(String()) = %+v, want %+v", got, c)
	}
	if c.String() != got.String() {
		t.Fatal("a cursor's encoding depends on its map's order")
	}
}

func TestSyncCursorRefusesWhatItDidNotWrite(t *testing.T) {
	good := SyncCursor{Base: store.NewMessageID(), Rooms: map[string]SyncPlace{"tea-party": {At: store.Cursor{ID: store.NewMessageID()}}}}.String()
	for _, bad := range []string{
		"",
		"not base64!",
		good[:len(good)-3],
		good + "AA",
		"Ag" + good[2:], // another version
		SyncCursor{}.String(),
		SyncCursor{Base: store.NewMessageID(), Rooms: map[string]SyncPlace{"bad name!": {At: store.Cursor{ID: store.NewMessageID()}}}}.String(),
		SyncCursor{Base: store.NewMessageID(), Rooms: map[string]SyncPlace{"tea-party": {}}}.String(),
		fmt.Sprint(store.NewMessageID()),
	} {
		if _, err := ParseSyncCursor(bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("ParseSyncCursor(%q) = %v, want ErrInvalid", bad, err)
		}
	}
	rooms := map[string]SyncPlace{}
	for i := range MaxSyncCursorRooms + 1 {
		rooms[fmt.Sprintf("room-%d", i)] = SyncPlace{At: store.Cursor{ID: store.NewMessageID()}}
	}
	if _, err := ParseSyncCursor(SyncCursor{Base: store.NewMessageID(), Rooms: rooms}.String()); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a cursor of %d rooms: %v, want ErrInvalid", len(rooms), err)
	}
}
