package chat

import (
	"encoding/base64"
	"encoding/binary"
	"slices"
	"time"

	"github.com/killrchat/chatql/store"
)

// A SyncCursor is where a sync resumes (Service.Sync): a place in each
// source the user's sync follows. It is opaque to clients: base64url of a
// version byte, Base, Inbox, then each room's name, id and sequence place.
type SyncCursor struct {
	// Base bounds from below what a room that is not in Rooms has to
	// replay: the moment (less syncSkew) the sync that issued the cursor
	// read which rooms the user took part in. A room the user entered since
	// is replayed from Base, from their own joining on (see Sync).
	Base store.MessageID
	// Inbox is the last inbox event delivered; zero: none since Base.
	Inbox store.MessageID
	// Rooms are the rooms the sync followed, each with its place. A room
	// the user left keeps its place, so that rejoining it replays nothing
	// twice.
	Rooms map[string]SyncPlace
}

// A SyncPlace is a sync's place in one room.
type SyncPlace struct {
	// At is the last event delivered, or where the room's replay starts.
	At store.Cursor
	// Left: the sync delivered the user's leave (or removal, or ban) last;
	// the room is followed again only if they take part again.
	Left bool
}

// syncCursorVersion is the first byte of an encoded SyncCursor.
const syncCursorVersion = 1

// MaxSyncCursorRooms bounds the rooms a sync cursor holds: those the user
// takes part in (at most MaxRoomsPerUser) and the ones they left most
// recently.
const MaxSyncCursorRooms = 2 * DefaultMaxRoomsPerUser

// syncSkew is how far back of the moment it read the user's rooms a sync
// puts its cursor's Base: more than an instance's clock and a join's write
// may put a join's id before the moment it is read.
const syncSkew = time.Minute

// String encodes the cursor.
func (c SyncCursor) String() string {
	names := make([]string, 0, len(c.Rooms))
	for name := range c.Rooms {
		names = append(names, name)
	}
	slices.Sort(names)
	b := make([]byte, 0, 1+32+len(names)*40)
	b = append(b, syncCursorVersion)
	b = append(b, c.Base[:]...)
	b = append(b, c.Inbox[:]...)
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, name := range names {
		p := c.Rooms[name]
		left := uint64(0)
		if p.Left {
			left = 1
		}
		b = binary.AppendUvarint(b, uint64(len(name)))
		b = append(b, name...)
		b = append(b, p.At.ID[:]...)
		b = binary.AppendUvarint(b, p.At.Seq<<1|left)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// ParseSyncCursor reads a cursor written by SyncCursor.String; anything
// else is BAD_USER_INPUT.
func ParseSyncCursor(s string) (SyncCursor, error) {
	bad := store.Invalidf("invalid sync cursor: pass the `cursor` of a SyncPage as it came")
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) < 1+32 || b[0] != syncCursorVersion {
		return SyncCursor{}, bad
	}
	c := SyncCursor{Rooms: map[string]SyncPlace{}}
	copy(c.Base[:], b[1:17])
	copy(c.Inbox[:], b[17:33])
	b = b[33:]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > MaxSyncCursorRooms {
		return SyncCursor{}, bad
	}
	b = b[k:]
	for range n {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return SyncCursor{}, bad
		}
		name := string(b[k : k+int(l)])
		b = b[k+int(l):]
		if store.ValidateRoomName(name) != nil || len(b) < 16 {
			return SyncCursor{}, bad
		}
		var p SyncPlace
		copy(p.At.ID[:], b[:16])
		seq, k := binary.Uvarint(b[16:])
		if k <= 0 || p.At.ID.IsZero() {
			return SyncCursor{}, bad
		}
		p.At.Seq, p.Left = seq>>1, seq&1 == 1
		b = b[16+k:]
		if _, dup := c.Rooms[name]; dup {
			return SyncCursor{}, bad
		}
		c.Rooms[name] = p
	}
	if len(b) != 0 || c.Base.IsZero() {
		return SyncCursor{}, bad
	}
	return c, nil
}
