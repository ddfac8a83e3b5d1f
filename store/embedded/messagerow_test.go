package embedded

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
	"unsafe"

	"github.com/killrchat/chatql/store"
)

// sameRow compares rows as the store reads them: times by instant and zone
// offset (each parse makes a zone of its own).
func sameRow(a, b messageRow) bool {
	_, ao := a.EditedAt.Zone()
	_, bo := b.EditedAt.Zone()
	ta, tb := a.EditedAt, b.EditedAt
	a.EditedAt, b.EditedAt = time.Time{}, time.Time{}
	return reflect.DeepEqual(a, b) && ta.Equal(tb) && ao == bo
}

func sampleRows() []messageRow {
	edited := time.Date(2026, 11, 25, 23, 30, 1, 123456789, time.UTC)
	return []messageRow{
		{Author: userRef{"alice", "Alice", "Liddell"}, Content: "hello"},
		{Author: userRef{"bob", "Bob", `"Quoted" \ Name`}, Content: "tab\tnew\nline", System: true},
		{Author: userRef{"carol", "Carol", "C"}, Content: "é 👍 中文", Hidden: true, EditedAt: edited},
		{Author: userRef{"carol", "Carol", "C"}, Content: "<b>&amp;</b>"},
		{Author: userRef{"dave", "", ""}, Content: "", Deleted: true, ReplyTo: store.NewMessageID()},
		{Author: userRef{"eve", "Eve", "E"}, Content: "\xff invalid", EditedAt: edited.In(time.FixedZone("", 2*3600)), ReplyTo: store.NewMessageID()},
		{Author: userRef{"fay", "Fay", "F"}, Content: "a cat", Files: []fileRow{{ID: store.NewMessageID(), Name: "cat.png", ContentType: "image/png", Size: 1234, Width: 64, Height: 48, Blurhash: "LEHV6n"}}},
		{Author: userRef{"gus", "Gus", "G"}, Content: "see https://example.com", Preview: &previewRow{URL: "https://example.com", Title: "Example"}},
	}
}

// TestDecodeMessage: rows as the store writes them decode as encoding/json
// decodes them, by the fast path when they need no unescaping (encoding/json
// escapes quotes, control characters, invalid UTF-8 and <, > and &).
func TestDecodeMessage(t *testing.T) {
	fast := 0
	for _, want := range sampleRows() {
		v, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		var viaJSON messageRow
		if err := json.Unmarshal(v, &viaJSON); err != nil {
			t.Fatal(err)
		}
		got, err := decodeMessage(v, userRef{})
		if err != nil || !sameRow(got, viaJSON) {
			t.Errorf("decodeMessage(%s) = %+v, %v; want %+v", v, got, err, viaJSON)
		}
		if _, ok := parseMessageRow(v, userRef{}); ok {
			fast++
		}
	}
	if fast < 3 {
		t.Errorf("the fast path decoded %d of the sample rows, want the 3 without escapes", fast)
	}
}

// TestDecodeMessageSharesTheKnownAuthor: a row by the author known takes
// the known strings, and a row by someone else (or with another name) its
// own, the same as encoding/json's either way.
func TestDecodeMessageSharesTheKnownAuthor(t *testing.T) {
	known := userRef{Login: string([]byte("alice")), Firstname: string([]byte("Alice")), Lastname: string([]byte("Liddell"))}
	rows := []messageRow{
		{Author: userRef{"alice", "Alice", "Liddell"}, Content: "same author"},
		{Author: userRef{"alice", "Alicia", "Liddell"}, Content: "renamed"},
		{Author: userRef{"bob", "Bob", "B"}, Content: "another author"},
	}
	for i, want := range rows {
		v, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeMessage(v, known)
		if err != nil || !sameRow(got, want) {
			t.Fatalf("decodeMessage(%s) = %+v, %v; want %+v", v, got, err, want)
		}
		shared := func(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }
		sameAuthor := want.Author == known
		if i == 0 && !(shared(got.Author.Login, known.Login) && shared(got.Author.Firstname, known.Firstname) && shared(got.Author.Lastname, known.Lastname)) {
			t.Errorf("row %d is by the known author and has strings of its own", i)
		}
		if !sameAuthor && shared(got.Author.Firstname, known.Firstname) {
			t.Errorf("row %d: firstname %q shares the known %q", i, got.Author.Firstname, known.Firstname)
		}
	}
}

// FuzzDecodeMessage: whatever the fast path accepts, encoding/json accepts
// too and decodes to the same row, whoever the known author is.
func FuzzDecodeMessage(f *testing.F) {
	for _, r := range sampleRows() {
		v, _ := json.Marshal(r)
		f.Add(v)
	}
	f.Add([]byte(`{"c":"x","a":{"n":"N","l":"l"},"c":"y","s":false}`))
	f.Add([]byte(`{"A":{"l":"x"}}`))
	f.Add([]byte(`{"a":{"l":"x"},"a":{"f":"y"}}`))
	f.Fuzz(func(t *testing.T, v []byte) {
		got, ok := parseMessageRow(v, userRef{Login: "x", Firstname: "y", Lastname: "N"})
		if !ok {
			return
		}
		var want messageRow
		if err := json.Unmarshal(v, &want); err != nil {
			t.Fatalf("the fast path took %q, which encoding/json refuses: %v", v, err)
		}
		if !sameRow(got, want) {
			t.Fatalf("%q: the fast path read %+v, encoding/json %+v", v, got, want)
		}
	})
}

// BenchmarkDecodeMessage: a typical row, by decodeMessage and by
// encoding/json.
func BenchmarkDecodeMessage(b *testing.B) {
	v, err := json.Marshal(messageRow{Author: userRef{"load-p000", "Load", "Tester load-p000"}, Content: "a message of about the size chatload posts, some eighty characters or so, ok"})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("decodeMessage", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeMessage(v, userRef{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			if _, err := decode[messageRow](v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
