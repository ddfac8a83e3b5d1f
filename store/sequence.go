package store

import (
	"strconv"
	"strings"
)

// Seq is a logged event's place in its room's sequence: the order in which
// a broker shared by several instances carried the room's events (Redis
// numbers them as it publishes them). Ids give each instance's events
// their order, but two instances' ids interleave by their clocks and by
// when their writes end, not by when their events reached subscribers; the
// sequence is that order itself, so a subscriber that resumes after the
// event it saw last gets exactly the events it had not seen. Epoch names
// the numbering: a sequence that was lost or reset starts a new epoch,
// and a place in an older one no longer says what came after it. The zero
// Seq is an event carried without a sequence.
type Seq struct {
	Epoch string
	N     uint64
}

// IsZero reports whether s is no place.
func (s Seq) IsZero() bool { return s.N == 0 }

// Cursor is where a room's stream resumes: after the event with ID, which
// was at Seq in its room's sequence (zero if it came without one).
type Cursor struct {
	ID  MessageID
	Seq Seq
}

// CursorOf is ev's cursor: its id, and after a dot its place in the room's
// sequence, if it has one: "<id>.<epoch>.<n>".
func CursorOf(ev *Event) string {
	id := ev.ID.String()
	if ev.Seq.IsZero() {
		return id
	}
	return id + "." + ev.Seq.Epoch + "." + strconv.FormatUint(ev.Seq.N, 10)
}

// maxEpochLen bounds an epoch's name in a cursor.
const maxEpochLen = 32

// ParseCursor reads a cursor written by CursorOf; a plain message id is a
// cursor without a place in a sequence.
func ParseCursor(s string) (Cursor, error) {
	idPart, place, sequenced := strings.Cut(s, ".")
	id, err := ParseMessageID(idPart)
	if err != nil {
		return Cursor{}, Invalidf("cursor %s is not an event's cursor (an id, or an id, an epoch and a number joined by dots)", Quote(s))
	}
	if !sequenced {
		return Cursor{ID: id}, nil
	}
	epoch, n, ok := strings.Cut(place, ".")
	seq, err := strconv.ParseUint(n, 10, 64)
	if !ok || err != nil || seq == 0 || epoch == "" || len(epoch) > maxEpochLen || strings.ContainsFunc(epoch, notEpochRune) {
		return Cursor{}, Invalidf("cursor %s is not an event's cursor (an id, or an id, an epoch and a number joined by dots)", Quote(s))
	}
	return Cursor{ID: id, Seq: Seq{Epoch: epoch, N: seq}}, nil
}

func notEpochRune(r rune) bool {
	return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z')
}
