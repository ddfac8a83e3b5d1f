package store

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"io"
	"strconv"
	"sync/atomic"
	"time"
)

// MessageID is a version 1 (time-based) UUID, Cassandra's timeuuid: it sorts
// by the time it was made and is unique without coordination, so two
// messages posted in the same microsecond on two servers never collide.
type MessageID [16]byte

// uuidEpochOffset is the number of 100 ns ticks between the UUID epoch
// (1582-10-15) and the Unix epoch.
const uuidEpochOffset = 0x01B21DD213814000

// lastTick is the timestamp of the newest id this process made; NewMessageID
// keeps ids strictly increasing even when the clock stalls or steps back.
var lastTick atomic.Uint64

// processNode is this process's random node id and clock sequence, fixed at
// start: ids from different servers differ in these bytes.
var processNode = func() (b [8]byte) {
	if _, err := rand.Read(b[:]); err != nil {
		panic("store: no randomness for timeuuid node: " + err.Error())
	}
	return b
}()

// ticksPerMicro is the number of 100 ns timeuuid ticks in a microsecond,
// the resolution of Cassandra's write timestamps.
const ticksPerMicro = 10

// NewMessageID returns a fresh timeuuid for now, strictly greater than any
// this process returned before, and in a microsecond of its own: writes
// stamped with a message's time (USING TIMESTAMP) then never tie, and a tie
// is what lets Cassandra mix the columns of two messages. It stays ahead of
// the clock only past a million ids a second.
func NewMessageID() MessageID { return nextMessageID(&lastTick, time.Now(), processNode) }

// nextMessageID is the id for now after the newest of last, which it
// records.
func nextMessageID(last *atomic.Uint64, at time.Time, node [8]byte) MessageID {
	now := tickOf(at)
	now -= now % ticksPerMicro
	for {
		prev := last.Load()
		next := max(now, prev+ticksPerMicro)
		if last.CompareAndSwap(prev, next) {
			return makeMessageID(next, node)
		}
	}
}

// IDClock makes message ids as NewMessageID does, from a clock set off
// from this machine's by Offset and a node id of its own: the clock of
// another server, for tests of several instances in one process whose
// clocks disagree.
type IDClock struct {
	offset time.Duration
	node   [8]byte
	last   atomic.Uint64
}

// NewIDClock returns a clock offset from this machine's by offset.
func NewIDClock(offset time.Duration) *IDClock {
	c := &IDClock{offset: offset}
	if _, err := rand.Read(c.node[:]); err != nil {
		panic("store: no randomness for timeuuid node: " + err.Error())
	}
	return c
}

// Now is the clock's time.
func (c *IDClock) Now() time.Time { return time.Now().Add(c.offset) }

// NewMessageID returns a fresh timeuuid for the clock's now, strictly
// greater than any this clock returned before.
func (c *IDClock) NewMessageID() MessageID { return nextMessageID(&c.last, c.Now(), c.node) }

// MessageIDAt returns a timeuuid for t with random low bytes, for messages
// whose time is given (imports, tests of bucket boundaries).
func MessageIDAt(t time.Time) MessageID {
	var low [8]byte
	if _, err := rand.Read(low[:]); err != nil {
		panic("store: no randomness for timeuuid: " + err.Error())
	}
	return makeMessageID(tickOf(t), low)
}

func tickOf(t time.Time) uint64 {
	// Not UnixNano: it overflows outside 1678-2262 and rounds up before 1970.
	return uint64(t.Unix()*1e7 + int64(t.Nanosecond()/100) + uuidEpochOffset)
}

func makeMessageID(tick uint64, low [8]byte) (id MessageID) {
	binary.BigEndian.PutUint32(id[0:4], uint32(tick))
	binary.BigEndian.PutUint16(id[4:6], uint16(tick>>32))
	binary.BigEndian.PutUint16(id[6:8], uint16(tick>>48)&0x0fff|0x1000)
	copy(id[8:], low[:])
	id[8] = id[8]&0x3f | 0x80 // RFC 4122 variant
	return id
}

// tick is the 60-bit count of 100 ns intervals since the UUID epoch.
func (id MessageID) tick() uint64 {
	return uint64(binary.BigEndian.Uint16(id[6:8])&0x0fff)<<48 |
		uint64(binary.BigEndian.Uint16(id[4:6]))<<32 |
		uint64(binary.BigEndian.Uint32(id[0:4]))
}

// Time is the moment the id was made, to 100 ns.
func (id MessageID) Time() time.Time {
	t := int64(id.tick()) - uuidEpochOffset // 100 ns ticks since 1970, negative before
	return time.Unix(t/1e7, t%1e7*100).UTC()
}

// IsZero reports whether id is the zero value, which paging reads as "none".
func (id MessageID) IsZero() bool { return id == MessageID{} }

// Compare orders ids as Cassandra's timeuuid type does: by time, then by the
// low eight bytes compared as signed bytes. It returns -1, 0 or +1.
func (id MessageID) Compare(other MessageID) int {
	a, b := id.tick(), other.tick()
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	for i := 8; i < 16; i++ {
		x, y := int8(id[i]), int8(other[i])
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
	}
	return 0
}

// SortKey returns 16 bytes whose byte order is the Compare order, for
// backends that keep ids in ordered keys.
func (id MessageID) SortKey() (k [16]byte) {
	binary.BigEndian.PutUint64(k[0:8], id.tick())
	for i := 8; i < 16; i++ {
		k[i] = id[i] ^ 0x80
	}
	return k
}

// MessageIDFromSortKey inverts SortKey.
func MessageIDFromSortKey(k []byte) (MessageID, error) {
	if len(k) != 16 {
		return MessageID{}, Invalidf("message id sort key has %d bytes, want 16", len(k))
	}
	var low [8]byte
	for i := range low {
		low[i] = k[8+i] ^ 0x80
	}
	id := makeMessageID(binary.BigEndian.Uint64(k[0:8]), low)
	id[8] = k[8] ^ 0x80 // keep the variant bits exactly as stored
	return id, nil
}

// String formats id in the canonical 8-4-4-4-12 hex form.
func (id MessageID) String() string {
	var b [36]byte
	id.format(&b)
	return string(b[:])
}

// Append appends id's canonical form (String's) to b.
func (id MessageID) Append(b []byte) []byte {
	var s [36]byte
	id.format(&s)
	return append(b, s[:]...)
}

func (id MessageID) format(b *[36]byte) {
	hex.Encode(b[0:8], id[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], id[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], id[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], id[8:10])
	b[23] = '-'
	hex.Encode(b[24:], id[10:])
}

// ParseMessageID parses the canonical form String returns. It returns an
// error wrapping ErrInvalid unless s is a version 1 UUID.
func ParseMessageID(s string) (MessageID, error) {
	var id MessageID
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return id, Invalidf("message id %s is not a UUID (want xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)", Quote(s))
	}
	parts := [][2]int{{0, 8}, {9, 13}, {14, 18}, {19, 23}, {24, 36}}
	at := 0
	for _, p := range parts {
		n, err := hex.Decode(id[at:], []byte(s[p[0]:p[1]]))
		if err != nil {
			return MessageID{}, Invalidf("message id %q is not a UUID: %v", s, err)
		}
		at += n
	}
	if id[6]>>4 != 1 {
		return MessageID{}, Invalidf("message id %q is not a time-based (version 1) UUID", s)
	}
	return id, nil
}

// MarshalText encodes id in its canonical form, so JSON carries it as a string.
func (id MessageID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText parses the canonical form.
func (id *MessageID) UnmarshalText(b []byte) error {
	parsed, err := ParseMessageID(string(b))
	if err != nil {
		return err
	}
	*id = parsed
	return nil
}

// MarshalGQL writes id as a GraphQL ID string.
func (id MessageID) MarshalGQL(w io.Writer) {
	_, _ = io.WriteString(w, strconv.Quote(id.String()))
}

// UnmarshalGQL reads an ID argument.
func (id *MessageID) UnmarshalGQL(v any) error {
	s, ok := v.(string)
	if !ok {
		return Invalidf("message id must be a string, got %T", v)
	}
	return id.UnmarshalText([]byte(s))
}

// MinMessageID returns the smallest id made at t in Compare order: a
// strict lower bound for "every message from t on".
func MinMessageID(t time.Time) MessageID {
	low := [8]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80} // -128 as signed bytes
	return makeMessageID(tickOf(t), low)
}
