package store

import (
	"strconv"
	"strings"
)

// An event's Seq is its place in its room's sequence: the order in which a
// broker shared by several instances carried the room's logged events
// (Redis numbers them, from 1, as it publishes them). Ids give each
// instance's events their order, but two instances' ids interleave by
// their clocks and by when their writes end, not by when their events
// reached subscribers; the sequence is that order itself, so a subscriber
// that resumes after the event it saw last gets exactly the events it had
// not seen. A sequence that was lost or ended starts again from 1: a place
// is only ever taken together with the id of the event found there. Zero
// is no place: an event carried without a sequence.

// Cursor is where a room's stream resumes: after the event with ID, which
// was at Seq in its room's sequence (zero if it came without one).
type Cursor struct {
	ID  MessageID
	Seq uint64
}

// CursorOf is ev's cursor: its id, and after a dot its place in the room's
// sequence, if it has one.
func CursorOf(ev *Event) string {
	id := ev.ID.String()
	if ev.Seq == 0 {
		return id
	}
	return id + "." + strconv.FormatUint(ev.Seq, 10)
}

// ParseCursor reads a cursor written by CursorOf; a plain message id is a
// cursor without a place in a sequence.
func ParseCursor(s string) (Cursor, error) {
	idPart, place, sequenced := strings.Cut(s, ".")
	id, err := ParseMessageID(idPart)
	if err != nil {
		return Cursor{}, Invalidf("cursor %s is not an event's cursor (an id, or an id and a number joined by a dot)", Quote(s))
	}
	if !sequenced {
		return Cursor{ID: id}, nil
	}
	seq, err := strconv.ParseUint(place, 10, 64)
	if err != nil || seq == 0 || place[0] == '+' {
		return Cursor{}, Invalidf("cursor %s is not an event's cursor (an id, or an id and a number joined by a dot)", Quote(s))
	}
	return Cursor{ID: id, Seq: seq}, nil
}
