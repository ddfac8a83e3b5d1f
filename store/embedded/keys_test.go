package embedded

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// TestStringOrder checks that encoded strings sort as the strings do, and
// that none is a prefix of another, so a room's range holds no other room.
func TestStringOrder(t *testing.T) {
	strs := []string{
		"", "\x00", "\x00\x00", "\x00\x01", "\x00\xff", "\x01",
		"a", "a\x00", "a\x00b", "a\x01", "a-", "a0", "a_", "ab", "abc", "b",
		"\xff", "\xff\x00", "\xff\xff",
	}
	for _, a := range strs {
		for _, b := range strs {
			ka, kb := tuple(tableChatRooms).str(a), tuple(tableChatRooms).str(b)
			if got, want := bytes.Compare(ka, kb), strings.Compare(a, b); got != want {
				t.Errorf("compare(key %q, key %q) = %d, want %d", a, b, got, want)
			}
			if a != b && bytes.HasPrefix(kb, ka) {
				t.Errorf("key of %q (%x) prefixes key of %q (%x)", a, ka, b, kb)
			}
		}
	}
}

// TestTupleOrder checks that tuples sort element by element: every key of
// one partition sorts before every key of the next, however the elements'
// lengths differ.
func TestTupleOrder(t *testing.T) {
	type tup struct {
		room   string
		bucket int64
	}
	tups := []tup{
		{"a", math.MinInt64}, {"a", -1}, {"a", 0}, {"a", 20250101}, {"a", math.MaxInt64},
		{"a\x00b", 0}, {"ab", -5}, {"ab", 7},
	}
	keys := make([][]byte, len(tups))
	for i, tp := range tups {
		keys[i] = tuple(tableRoomMessages).str(tp.room).int(tp.bucket)
	}
	if !slices.IsSortedFunc(keys, bytes.Compare) {
		t.Errorf("keys of ascending tuples are not ascending: %x", keys)
	}
	for i := range keys {
		for j := range keys {
			if i != j && bytes.HasPrefix(keys[j], keys[i]) {
				t.Errorf("key of %v prefixes key of %v", tups[i], tups[j])
			}
		}
	}
	for _, v := range []int64{math.MinInt64, -1, 0, 1, 20250101, math.MaxInt64} {
		k := tuple(tableBuckets).int(v)
		got, err := parseInt(k[len(tuple(tableBuckets)):])
		if err != nil || got != v {
			t.Errorf("parseInt(int(%d)) = %d, %v", v, got, err)
		}
	}
}

// TestPartitionRange checks that a partition's range holds its own rows
// and no other partition's, including those of rooms whose names extend its
// name.
func TestPartitionRange(t *testing.T) {
	now := time.Now()
	id := store.MessageIDAt(now)
	room := "a"
	p := roomMessages(room)
	inside := [][]byte{
		messageKey(room, id),
		messageKey(room, store.MessageIDAt(now.Add(-48*time.Hour))),
	}
	outside := [][]byte{
		messageKey("a\x00b", id), messageKey("ab", id), messageKey("", id), messageKey("b", id),
		bucketKey(room, store.BucketOf(now)), roomKey(room),
	}
	for _, k := range inside {
		if bytes.Compare(k, p) < 0 || bytes.Compare(k, p.end()) >= 0 {
			t.Errorf("key %x is outside its room's range [%x, %x)", k, p, p.end())
		}
	}
	for _, k := range outside {
		if bytes.Compare(k, p) >= 0 && bytes.Compare(k, p.end()) < 0 {
			t.Errorf("key %x of another partition is inside the range [%x, %x)", k, p, p.end())
		}
	}
	if got := (key{0x01, 0xff, 0xff}).end(); !bytes.Equal(got, []byte{0x02}) {
		t.Errorf("end of 01ffff = %x, want 02", got)
	}
	if got := (key{0xff, 0xff}).end(); got != nil {
		t.Errorf("end of ffff = %x, want nil (unbounded)", got)
	}
}

// TestMessageOrder checks that messages sort newest first within their
// partition, in store.MessageID.Compare order, and that ids round-trip.
func TestMessageOrder(t *testing.T) {
	day := store.BucketOf(time.Now()).Start()
	var ids []store.MessageID
	for i := range 50 {
		// Several ids per instant, so the low bytes decide some orders.
		ids = append(ids, store.MessageIDAt(day.Add(time.Duration(i/3)*time.Millisecond)))
	}
	ids = append(ids, store.NewMessageID(), store.NewMessageID())
	for _, a := range ids {
		for _, b := range ids {
			ka, kb := messageKey("r", a), messageKey("r", b)
			if store.BucketOf(a.Time()) != store.BucketOf(b.Time()) {
				continue
			}
			if got, want := bytes.Compare(ka, kb), b.Compare(a); got != want {
				t.Errorf("compare(key %v, key %v) = %d, want %d (newest first)", a, b, got, want)
			}
		}
		p := messagePartition("r", store.BucketOf(a.Time()))
		got, err := parseDesc(messageKey("r", a)[len(p):])
		if err != nil || got != a {
			t.Errorf("parseDesc(desc(%v)) = %v, %v", a, got, err)
		}
	}
}

// TestKeyAliasing checks that extending one prefix twice yields two
// independent keys.
func TestKeyAliasing(t *testing.T) {
	p := make(key, 0, 64)
	p = append(p, "prefix"...)
	a, b := p.str("a"), p.str("b")
	if bytes.Equal(a, b) {
		t.Errorf("two extensions of one prefix share memory: %q, %q", a, b)
	}
}

// TestParseStr checks that parseStr inverts str and returns what follows.
func TestParseStr(t *testing.T) {
	for _, s := range []string{"", "a", "\x00", "a\x00b", "\x00\xff", "\xff\x00\x01", "alice:bob"} {
		k := key(nil).str(s).int(7)
		got, rest, err := parseStr(k)
		if err != nil || got != s || !bytes.Equal(rest, key(nil).int(7)) {
			t.Errorf("parseStr(str(%q)+int) = %q, %x, %v; want %q, %x", s, got, rest, err, s, key(nil).int(7))
		}
	}
	for _, bad := range [][]byte{{'a'}, {'a', 0x00}, {'a', 0x00, 0x02}} {
		if got, _, err := parseStr(bad); err == nil {
			t.Errorf("parseStr(%x) = %q, nil; want an error", bad, got)
		}
	}
}
