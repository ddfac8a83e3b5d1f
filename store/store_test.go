package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// randomID returns a random version 1 id: any time, any low bytes (the
// variant bits included, which ids from other systems may set otherwise).
func randomID(r *rand.Rand) store.MessageID {
	var id store.MessageID
	for i := range id {
		id[i] = byte(r.Uint32())
	}
	id[6] = id[6]&0x0f | 0x10
	return id
}

// isVersion1 reports whether id has the version and variant bits of an
// RFC 4122 time-based UUID.
func isVersion1(id store.MessageID) bool {
	return id[6]>>4 == 1 && id[8]>>6 == 0b10
}

func TestMessageIDKnownAnswer(t *testing.T) {
	// RFC 9562, appendix A.1: the UUIDv1 of 2022-02-22 14:22:22 -05:00.
	const s = "c232ab00-9414-11ec-b3c8-9f6bdeced846"
	wantTime := time.Date(2022, 2, 22, 19, 22, 22, 0, time.UTC)
	id, err := store.ParseMessageID(s)
	if err != nil {
		t.Fatalf("ParseMessageID(%q) = %v, want nil", s, err)
	}
	if got := id.Time(); !got.Equal(wantTime) {
		t.Errorf("ParseMessageID(%q).Time() = %v, want %v", s, got, wantTime)
	}
	if got := id.String(); got != s {
		t.Errorf("String() = %q, want %q", got, s)
	}
	// MessageIDAt lays the time out as Cassandra's timeuuid does.
	at := store.MessageIDAt(wantTime)
	if !bytes.Equal(at[:8], id[:8]) {
		t.Errorf("MessageIDAt(%v) = %v, want time fields of %v", wantTime, at, id)
	}
}

func TestMessageIDStringParse(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ids := []store.MessageID{store.NewMessageID(), store.MessageIDAt(time.Unix(0, 0)), store.MessageIDAt(time.Now())}
	for range 1000 {
		ids = append(ids, randomID(r))
	}
	for _, id := range ids {
		s := id.String()
		if len(s) != 36 || strings.ToLower(s) != s {
			t.Fatalf("String() = %q, want 36 lowercase characters", s)
		}
		got, err := store.ParseMessageID(s)
		if err != nil || got != id {
			t.Fatalf("ParseMessageID(%q) = %v, %v; want %v, nil", s, got, err, id)
		}
		if appended := string(id.Append([]byte("id "))); appended != "id "+s {
			t.Fatalf("Append = %q, want %q", appended, "id "+s)
		}
	}
}

func TestMessageIDJSON(t *testing.T) {
	type payload struct{ ID store.MessageID }
	want := payload{store.NewMessageID()}
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatalf("json.Marshal = %v", err)
	}
	if wantJSON := `{"ID":"` + want.ID.String() + `"}`; string(b) != wantJSON {
		t.Errorf("json.Marshal = %s, want %s", b, wantJSON)
	}
	var got payload
	if err := json.Unmarshal(b, &got); err != nil || got != want {
		t.Errorf("json.Unmarshal(%s) = %v, %v; want %v", b, got, err, want)
	}
	err = json.Unmarshal([]byte(`{"ID":"not-an-id"}`), &got)
	if !errors.Is(err, store.ErrInvalid) {
		t.Errorf("json.Unmarshal of a bad id = %v, want an error wrapping ErrInvalid", err)
	}
}

func TestParseMessageIDRejects(t *testing.T) {
	valid := store.NewMessageID().String()
	for _, tc := range []struct{ name, s string }{
		{"empty", ""},
		{"too short", valid[:35]},
		{"too long", valid + "0"},
		{"no hyphens", strings.ReplaceAll(valid, "-", "") + "0000"},
		{"hyphen misplaced", valid[:7] + "-" + valid[7:8] + valid[9:]},
		{"non-hex", "g" + valid[1:]},
		{"non-hex in the node", valid[:35] + "z"},
		{"sign in a field", valid[:9] + "+abc" + valid[13:]},
		{"braces", "{" + valid[:34] + "}"},
		{"version 4", "f47ac10b-58cc-4372-a567-0e02b2c3d479"},
		{"version 0 (the zero id)", store.MessageID{}.String()},
		{"version 7", "017f22e2-79b0-7cc3-98c4-dc0c0c07398f"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := store.ParseMessageID(tc.s)
			if !errors.Is(err, store.ErrInvalid) {
				t.Errorf("ParseMessageID(%q) = %v, %v; want an error wrapping ErrInvalid", tc.s, id, err)
			}
			if !id.IsZero() {
				t.Errorf("ParseMessageID(%q) returned id %v with its error, want the zero id", tc.s, id)
			}
		})
	}
}

func TestNewMessageIDIncreasing(t *testing.T) {
	start := time.Now()
	prev := store.NewMessageID()
	for i := range 10000 {
		id := store.NewMessageID()
		if id.Compare(prev) <= 0 {
			t.Fatalf("call %d: NewMessageID() = %v, not after the previous %v", i, id, prev)
		}
		if k, pk := id.SortKey(), prev.SortKey(); bytes.Compare(k[:], pk[:]) <= 0 {
			t.Fatalf("call %d: SortKey of %v not after that of %v", i, id, prev)
		}
		if !isVersion1(id) {
			t.Fatalf("NewMessageID() = %v, not a version 1 RFC 4122 UUID", id)
		}
		prev = id
	}
	end := time.Now()
	// Ids may run ahead of the clock by a tick per call when made faster
	// than one per 100 ns.
	if got := prev.Time(); got.Before(start.Add(-time.Millisecond)) || got.After(end.Add(10*time.Millisecond)) {
		t.Errorf("last NewMessageID().Time() = %v, want between %v and %v", got, start, end)
	}
}

func TestNewMessageIDConcurrent(t *testing.T) {
	const goroutines, perGoroutine = 8, 2000
	ids := make([][]store.MessageID, goroutines)
	var wg sync.WaitGroup
	for g := range ids {
		wg.Go(func() {
			for range perGoroutine {
				ids[g] = append(ids[g], store.NewMessageID())
			}
		})
	}
	wg.Wait()
	seen := map[store.MessageID]bool{}
	for _, batch := range ids {
		for i, id := range batch {
			if seen[id] {
				t.Fatalf("NewMessageID() returned %v twice", id)
			}
			seen[id] = true
			if i > 0 && id.Compare(batch[i-1]) <= 0 {
				t.Fatalf("NewMessageID() = %v, not after %v made before it", id, batch[i-1])
			}
		}
	}
}

func TestMessageIDTimeRange(t *testing.T) {
	// The zero id, which paging reads as "none", is at the UUID epoch: before
	// every message, so "after the zero id" means "from the first".
	if got, want := (store.MessageID{}).Time(), time.Date(1582, 10, 15, 0, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("MessageID{}.Time() = %v, want %v", got, want)
	}
	var last store.MessageID
	for i := range 8 {
		last[i] = 0xff
	}
	last[6] = 0x1f // version 1, largest tick
	if got, want := last.Time(), time.Date(5236, 3, 31, 21, 21, 0, 0, time.UTC); got.Before(want) || got.After(want.Add(time.Minute)) {
		t.Errorf("Time() of the largest tick = %v, want about %v", got, want)
	}
}

func TestMessageIDAtTime(t *testing.T) {
	for _, at := range []time.Time{
		time.Now(),
		time.Unix(0, 0),
		time.Unix(0, 99),
		time.Unix(0, 100),
		time.Date(2000, 1, 1, 0, 0, 0, 123456789, time.UTC),
		time.Date(2024, 2, 29, 23, 59, 59, 999999999, time.FixedZone("UTC+5", 5*3600)),
		time.Date(2099, 12, 31, 23, 59, 59, 999999999, time.UTC),
	} {
		id := store.MessageIDAt(at)
		want := at.Truncate(100 * time.Nanosecond)
		if got := id.Time(); !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("MessageIDAt(%v).Time() = %v, want %v in UTC", at, got, want)
		}
		if got := (store.Message{ID: id}).PostedAt(); !got.Equal(want) {
			t.Errorf("PostedAt() = %v, want %v", got, want)
		}
		if !isVersion1(id) {
			t.Errorf("MessageIDAt(%v) = %v, not a version 1 RFC 4122 UUID", at, id)
		}
		if other := store.MessageIDAt(at); other == id {
			t.Errorf("MessageIDAt(%v) returned %v twice, want random low bytes", at, id)
		}
	}
}

func TestCompareSortKey(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	sign := func(n int) int { return max(-1, min(1, n)) }
	for i := range 20000 {
		a, b := randomID(r), randomID(r)
		switch i % 4 {
		case 1: // same time, different low bytes
			copy(b[:8], a[:8])
		case 2: // same time and first low bytes
			copy(b[:12], a[:12])
		case 3:
			b = a
		}
		ka, kb := a.SortKey(), b.SortKey()
		got, want := a.Compare(b), sign(bytes.Compare(ka[:], kb[:]))
		if got != want {
			t.Fatalf("%v.Compare(%v) = %d, want %d as their sort keys compare", a, b, got, want)
		}
		if back := b.Compare(a); back != -got {
			t.Fatalf("%v.Compare(%v) = %d but the reverse is %d", a, b, got, back)
		}
		if c := a.Time().Compare(b.Time()); c != 0 && c != got {
			t.Fatalf("%v (%v).Compare(%v (%v)) = %d, want %d as their times compare", a, a.Time(), b, b.Time(), got, c)
		}
		if (got == 0) != (a == b) {
			t.Fatalf("%v.Compare(%v) = %d for ids that are equal: %v", a, b, got, a == b)
		}
		back, err := store.MessageIDFromSortKey(ka[:])
		if err != nil || back != a {
			t.Fatalf("MessageIDFromSortKey(%v.SortKey()) = %v, %v; want the id back", a, back, err)
		}
	}
}

// TestCompareTimeFirst checks that ids of different times compare as their
// times, whatever their low bytes.
func TestCompareTimeFirst(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	lo, hi := time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano(), time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	for range 20000 {
		ta := time.Unix(0, lo+r.Int64N(hi-lo))
		tb := ta.Add(time.Duration(r.Int64N(2000)-1000) * 100 * time.Nanosecond)
		a, b := store.MessageIDAt(ta), store.MessageIDAt(tb)
		want := ta.Truncate(100).Compare(tb.Truncate(100))
		if want == 0 {
			continue
		}
		if got := a.Compare(b); got != want {
			t.Fatalf("%v (%v).Compare(%v (%v)) = %d, want %d", a, ta, b, tb, got, want)
		}
	}
}

// TestCompareSignedLowBytes pins Cassandra's timeuuid order: at equal
// times, the low bytes compare as signed bytes.
func TestCompareSignedLowBytes(t *testing.T) {
	at := time.Now()
	a, b := store.MessageIDAt(at), store.MessageIDAt(at)
	copy(b[8:], a[8:])
	a[9], b[9] = 0x7f, 0x80 // 127 > -128
	if got := a.Compare(b); got != 1 {
		t.Errorf("Compare with low byte 0x7f vs 0x80 = %d, want 1 (signed bytes)", got)
	}
	older := store.MessageIDAt(at.Add(-100 * time.Nanosecond))
	older[8], older[9] = 0xbf, 0x7f
	if got := older.Compare(b); got != -1 {
		t.Errorf("Compare of an older id with larger low bytes = %d, want -1 (time first)", got)
	}
}

func TestMessageIDFromSortKeyRejects(t *testing.T) {
	for _, n := range []int{0, 15, 17} {
		if _, err := store.MessageIDFromSortKey(make([]byte, n)); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("MessageIDFromSortKey(%d bytes) = %v, want an error wrapping ErrInvalid", n, err)
		}
	}
}

func date(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

func TestBucketOf(t *testing.T) {
	for _, tc := range []struct {
		at   time.Time
		want store.Bucket
	}{
		{date(2024, 3, 1), 20240301},
		{date(2024, 3, 1).Add(-time.Nanosecond), 20240229},
		{date(2023, 3, 1).Add(-time.Nanosecond), 20230228},
		{date(2024, 1, 1), 20240101},
		{date(2024, 1, 1).Add(-time.Nanosecond), 20231231},
		{date(2024, 12, 31).Add(12 * time.Hour), 20241231},
		{time.Date(2024, 1, 1, 2, 0, 0, 0, time.FixedZone("UTC+5", 5*3600)), 20231231},
		{time.Date(2023, 12, 31, 22, 0, 0, 0, time.FixedZone("UTC-5", -5*3600)), 20240101},
	} {
		if got := store.BucketOf(tc.at); got != tc.want {
			t.Errorf("BucketOf(%v) = %d, want %d", tc.at, got, tc.want)
		}
	}
}

func TestBucketStart(t *testing.T) {
	day := date(2023, 12, 20)
	prev := store.BucketOf(day.Add(-time.Nanosecond))
	for range 500 { // through a leap day and two new years
		b := store.BucketOf(day.Add(13 * time.Hour))
		if got := b.Start(); !got.Equal(day) || got.Location() != time.UTC {
			t.Fatalf("Bucket(%d).Start() = %v, want %v", b, got, day)
		}
		if got := store.BucketOf(b.Start()); got != b {
			t.Fatalf("BucketOf(Bucket(%d).Start()) = %d", b, got)
		}
		if got := store.BucketOf(b.Start().Add(-time.Nanosecond)); got != prev {
			t.Fatalf("bucket before %d = %d, want %d", b, got, prev)
		}
		if b <= prev {
			t.Fatalf("bucket %d not after the previous day's %d", b, prev)
		}
		prev = b
		day = day.AddDate(0, 0, 1)
	}
}

func TestNewestFirstBuckets(t *testing.T) {
	listed := []store.Bucket{20240225, 20240220, 20240229, 20240225, 20240210}
	orig := slices.Clone(listed)
	for _, tc := range []struct {
		name   string
		listed []store.Bucket
		before store.MessageID
		want   []store.Bucket
	}{
		{"from the newest", listed, store.MessageID{},
			[]store.Bucket{20240229, 20240225, 20240220, 20240210}},
		{"before a listed day", listed, store.MessageIDAt(date(2024, 2, 25).Add(9 * time.Hour)),
			[]store.Bucket{20240225, 20240220, 20240210}},
		{"before an unlisted day", listed, store.MessageIDAt(date(2024, 2, 23)),
			[]store.Bucket{20240220, 20240210}},
		{"before everything", listed, store.MessageIDAt(date(2024, 1, 1)), []store.Bucket{}},
		{"before the future", listed, store.MessageIDAt(date(2024, 5, 1)),
			[]store.Bucket{20240229, 20240225, 20240220, 20240210}},
		// Another server's clock runs ahead: its bucket is read, not hidden.
		{"listed future day", []store.Bucket{20990302, 20240220}, store.MessageID{},
			[]store.Bucket{20990302, 20240220}},
		{"nothing listed", nil, store.MessageID{}, []store.Bucket{}},
	} {
		got := store.NewestFirstBuckets(tc.listed, tc.before)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: NewestFirstBuckets(%v, %v) = %v, want %v", tc.name, tc.listed, tc.before.Time(), got, tc.want)
		}
	}
	if !slices.Equal(listed, orig) {
		t.Errorf("NewestFirstBuckets changed its listed argument to %v, was %v", listed, orig)
	}
}

func TestOldestFirstBuckets(t *testing.T) {
	listed := []store.Bucket{20240225, 20240220, 20240229, 20240225, 20240210}
	orig := slices.Clone(listed)
	for _, tc := range []struct {
		name   string
		listed []store.Bucket
		after  store.MessageID
		want   []store.Bucket
	}{
		{"after a listed day", listed, store.MessageIDAt(date(2024, 2, 20).Add(23 * time.Hour)),
			[]store.Bucket{20240220, 20240225, 20240229}},
		{"after an unlisted day", listed, store.MessageIDAt(date(2024, 2, 21)),
			[]store.Bucket{20240225, 20240229}},
		{"after everything listed", listed, store.MessageIDAt(date(2024, 2, 29).Add(23 * time.Hour)),
			[]store.Bucket{20240229}},
		{"after long ago", listed, store.MessageIDAt(date(2020, 1, 1)),
			[]store.Bucket{20240210, 20240220, 20240225, 20240229}},
		{"nothing listed", nil, store.MessageIDAt(date(2024, 2, 1)), []store.Bucket{}},
		{"after the zero id", listed, store.MessageID{},
			[]store.Bucket{20240210, 20240220, 20240225, 20240229}},
		{"after the last listed day", listed, store.MessageIDAt(date(2024, 3, 2)), []store.Bucket{}},
	} {
		got := store.OldestFirstBuckets(tc.listed, tc.after)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: OldestFirstBuckets(%v, %v) = %v, want %v", tc.name, tc.listed, tc.after.Time(), got, tc.want)
		}
	}
	if !slices.Equal(listed, orig) {
		t.Errorf("OldestFirstBuckets changed its listed argument to %v, was %v", listed, orig)
	}
}

// fakeBuckets serves messages per bucket and records each read.
type fakeBuckets struct {
	msgs  map[store.Bucket]int // messages per bucket
	fail  store.Bucket         // reading it fails
	calls []string             // "bucket:limit" per read
}

var errRead = errors.New("read failed")

func (f *fakeBuckets) read(_ context.Context, b store.Bucket, limit int) ([]store.Message, error) {
	f.calls = append(f.calls, fmt.Sprintf("%d:%d", b, limit))
	if b == f.fail {
		return nil, errRead
	}
	var out []store.Message
	for i := range min(limit, f.msgs[b]) {
		out = append(out, store.Message{Room: "r", Content: fmt.Sprintf("%d/%d", b, i)})
	}
	return out, nil
}

func contents(msgs []store.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Content
	}
	return out
}

func TestScanBuckets(t *testing.T) {
	msgs := map[store.Bucket]int{5: 2, 4: 0, 3: 3, 2: 4, 1: 1}
	order := []store.Bucket{5, 4, 3, 2, 1}
	for _, tc := range []struct {
		name      string
		limit     int
		fail      store.Bucket
		wantCalls []string
		want      []string
		wantErr   error
	}{
		{"filled across an empty bucket", 4, 0, []string{"5:4", "4:2", "3:2"}, []string{"5/0", "5/1", "3/0", "3/1"}, nil},
		{"filled by the first bucket", 2, 0, []string{"5:2"}, []string{"5/0", "5/1"}, nil},
		{"filled exactly by a later bucket", 5, 0, []string{"5:5", "4:3", "3:3"}, []string{"5/0", "5/1", "3/0", "3/1", "3/2"}, nil},
		{"more than all", 100, 0, []string{"5:100", "4:98", "3:98", "2:95", "1:91"},
			[]string{"5/0", "5/1", "3/0", "3/1", "3/2", "2/0", "2/1", "2/2", "2/3", "1/0"}, nil},
		{"zero limit", 0, 0, nil, nil, nil},
		{"read error", 10, 3, []string{"5:10", "4:8", "3:8"}, nil, errRead},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeBuckets{msgs: msgs, fail: tc.fail}
			got, err := store.ScanBuckets(t.Context(), order, tc.limit, f.read)
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("ScanBuckets error = %v, want %v", err, tc.wantErr)
			}
			if !slices.Equal(contents(got), tc.want) {
				t.Errorf("ScanBuckets = %q, want %q", contents(got), tc.want)
			}
			if !slices.Equal(f.calls, tc.wantCalls) {
				t.Errorf("ScanBuckets read (bucket:limit) %q, want %q", f.calls, tc.wantCalls)
			}
		})
	}
}

func wantValid(t *testing.T, call string, err error, valid bool) {
	t.Helper()
	switch {
	case valid && err != nil:
		t.Errorf("%s = %v, want nil", call, err)
	case !valid && !errors.Is(err, store.ErrInvalid):
		t.Errorf("%s = %v, want an error wrapping ErrInvalid", call, err)
	}
}

func TestValidateLogin(t *testing.T) {
	for _, tc := range []struct {
		login string
		valid bool
	}{
		{"jdoe", true},
		{"abc", true},
		{"0ab", true},
		{"j.doe_2-x", true},
		{"a..", true},
		{strings.Repeat("a", 32), true},
		{"", false},
		{"ab", false},
		{strings.Repeat("a", 33), false},
		{"JDoe", false},
		{".jdoe", false},
		{"-jdoe", false},
		{"_jdoe", false},
		{"j doe", false},
		{"jdoe\n", false},
		{"\njdoe", false},
		{"jdoé", false},
		{"j@doe", false},
		{"j/doe", false},
	} {
		wantValid(t, fmt.Sprintf("ValidateLogin(%q)", tc.login), store.ValidateLogin(tc.login), tc.valid)
	}
}

func TestValidateRoomName(t *testing.T) {
	for _, tc := range []struct {
		name  string
		valid bool
	}{
		{"games", true},
		{"ab", true},
		{"0x", true},
		{"a-b_c-", true},
		{strings.Repeat("r", 40), true},
		{"", false},
		{"a", false},
		{strings.Repeat("r", 41), false},
		{"a.b", false},
		{"-ab", false},
		{"_ab", false},
		{"Games", false},
		{"ga mes", false},
		{"games\n", false},
		{"café", false},
		{"games/x", false},
	} {
		wantValid(t, fmt.Sprintf("ValidateRoomName(%q)", tc.name), store.ValidateRoomName(tc.name), tc.valid)
	}
}

func TestValidatePassword(t *testing.T) {
	for _, tc := range []struct {
		password string
		valid    bool
	}{
		{"", false},
		{"1234567", false},
		{"12345678", true},
		{strings.Repeat("p", 72), true},
		{strings.Repeat("p", 73), false},
		{strings.Repeat("é", 4), true},   // 8 bytes
		{strings.Repeat("é", 36), true},  // 72 bytes
		{strings.Repeat("é", 37), false}, // 74 bytes: bcrypt would cut it
	} {
		err := store.ValidatePassword(tc.password)
		wantValid(t, fmt.Sprintf("ValidatePassword(%d bytes)", len(tc.password)), err, tc.valid)
		if err != nil && tc.password != "" && strings.Contains(err.Error(), tc.password) {
			t.Errorf("ValidatePassword error %q shows the password", err)
		}
	}
}

func TestUserValidate(t *testing.T) {
	ok := store.User{
		UserRef: store.UserRef{Login: "jdoe", Firstname: "John", Lastname: "Doe"},
		Email:   "john@example.com",
		Bio:     "hi",
	}
	for _, tc := range []struct {
		name  string
		edit  func(u *store.User)
		valid bool
	}{
		{"ok", func(*store.User) {}, true},
		{"no email, no bio", func(u *store.User) { u.Email, u.Bio = "", "" }, true},
		{"longest names", func(u *store.User) {
			u.Firstname, u.Lastname = strings.Repeat("é", 64), strings.Repeat("ß", 64)
		}, true},
		{"longest bio", func(u *store.User) { u.Bio = strings.Repeat("☕", 500) }, true},
		{"short email", func(u *store.User) { u.Email = "a@b" }, true},
		{"bad login", func(u *store.User) { u.Login = "J" }, false},
		{"no firstname", func(u *store.User) { u.Firstname = "" }, false},
		{"blank firstname", func(u *store.User) { u.Firstname = " \t" }, false},
		{"no lastname", func(u *store.User) { u.Lastname = "" }, false},
		{"long firstname", func(u *store.User) { u.Firstname = strings.Repeat("é", 65) }, false},
		{"long lastname", func(u *store.User) { u.Lastname = strings.Repeat("a", 65) }, false},
		{"firstname not UTF-8", func(u *store.User) { u.Firstname = "Jo\xffhn" }, false},
		{"email without @", func(u *store.User) { u.Email = "john.example.com" }, false},
		{"email starting with @", func(u *store.User) { u.Email = "@example.com" }, false},
		{"email ending with @", func(u *store.User) { u.Email = "john@" }, false},
		{"email with a space", func(u *store.User) { u.Email = "john doe@example.com" }, false},
		{"email too long", func(u *store.User) { u.Email = "j@" + strings.Repeat("e", 253) }, false},
		{"long bio", func(u *store.User) { u.Bio = strings.Repeat("☕", 501) }, false},
		{"bio not UTF-8", func(u *store.User) { u.Bio = "\xc3" }, false},
	} {
		u := ok
		tc.edit(&u)
		wantValid(t, fmt.Sprintf("%s: User.Validate()", tc.name), u.Validate(), tc.valid)
	}
}

func TestRoomValidate(t *testing.T) {
	ok := store.Room{Name: "games", Banner: "Let's play"}
	for _, tc := range []struct {
		name  string
		edit  func(r *store.Room)
		valid bool
	}{
		{"ok", func(*store.Room) {}, true},
		{"no banner", func(r *store.Room) { r.Banner = "" }, true},
		{"longest banner", func(r *store.Room) { r.Banner = strings.Repeat("🎲", 200) }, true},
		{"bad name", func(r *store.Room) { r.Name = "G" }, false},
		{"long banner", func(r *store.Room) { r.Banner = strings.Repeat("🎲", 201) }, false},
		{"banner not UTF-8", func(r *store.Room) { r.Banner = "\xff" }, false},
	} {
		r := ok
		tc.edit(&r)
		wantValid(t, fmt.Sprintf("%s: Room.Validate()", tc.name), r.Validate(), tc.valid)
	}
}

func TestValidateContent(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content string
		valid   bool
	}{
		{"short", "hi", true},
		{"4000 runes", strings.Repeat("é", 4000), true},
		{"4000 emoji", strings.Repeat("🙂", 4000), true},
		{"4001 runes", strings.Repeat("é", 4001), false},
		{"4001 ASCII", strings.Repeat("a", 4001), false},
		{"empty", "", false},
		{"blank", " \n\t ", false},
		{"not UTF-8", "hi \xff", false},
	} {
		wantValid(t, fmt.Sprintf("%s: ValidateContent", tc.name), store.ValidateContent(tc.content), tc.valid)
	}
}

func TestInvalidf(t *testing.T) {
	err := store.Invalidf("invalid %s: %d", "thing", 42)
	if !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Invalidf(...) = %v, want an error wrapping ErrInvalid", err)
	}
	if got, want := err.Error(), "invalid thing: 42"; got != want {
		t.Errorf("Invalidf(...).Error() = %q, want %q", got, want)
	}
	if wrapped := fmt.Errorf("signup: %w", err); !errors.Is(wrapped, store.ErrInvalid) {
		t.Errorf("wrapped Invalidf error %v does not wrap ErrInvalid", wrapped)
	}
}

func TestHasParticipant(t *testing.T) {
	r := store.Room{Participants: []store.UserRef{{Login: "alice"}, {Login: "bob"}}}
	for login, want := range map[string]bool{"alice": true, "bob": true, "carol": false, "": false} {
		if got := r.HasParticipant(login); got != want {
			t.Errorf("HasParticipant(%q) = %v, want %v", login, got, want)
		}
	}
}

// Ids of one process never share a microsecond, the resolution of
// Cassandra's write timestamps.
func TestNewMessageIDMicrosecondsApart(t *testing.T) {
	prev := store.NewMessageID()
	for range 10_000 {
		id := store.NewMessageID()
		if id.Time().Truncate(time.Microsecond).Compare(prev.Time().Truncate(time.Microsecond)) <= 0 {
			t.Fatalf("ids %s (%v) and %s (%v) share a microsecond", prev, prev.Time(), id, id.Time())
		}
		prev = id
	}
}
