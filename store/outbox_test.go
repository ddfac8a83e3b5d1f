package store

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// TestNoticesOf: notices take their message's id and room when they have
// none, and are refused without a recipient or a kind, or with another
// message's id.
func TestNoticesOf(t *testing.T) {
	id, other := MessageIDAt(time.Now()), MessageIDAt(time.Now().Add(time.Second))
	got, err := NoticesOf(id, "room", []Notice{
		{Recipient: "bob", Kind: NoticeMention},
		{ID: id, Recipient: "carol", Kind: NoticeReply, Room: "elsewhere"},
	})
	want := []Notice{
		{ID: id, Recipient: "bob", Kind: NoticeMention, Room: "room"},
		{ID: id, Recipient: "carol", Kind: NoticeReply, Room: "elsewhere"},
	}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("NoticesOf = %v, %v; want %v", got, err, want)
	}
	for _, bad := range []Notice{
		{Kind: NoticeMention},
		{Recipient: "bob"},
		{ID: other, Recipient: "bob", Kind: NoticeMention},
	} {
		if _, err := NoticesOf(id, "room", []Notice{bad}); !errors.Is(err, ErrInvalid) {
			t.Errorf("NoticesOf(%+v) = %v, want ErrInvalid", bad, err)
		}
	}
}

// TestCompareNotices: by id, then recipient.
func TestCompareNotices(t *testing.T) {
	early, late := MessageIDAt(time.Now()), MessageIDAt(time.Now().Add(time.Millisecond))
	ns := []Notice{{ID: late, Recipient: "a"}, {ID: early, Recipient: "b"}, {ID: early, Recipient: "a"}}
	slices.SortFunc(ns, CompareNotices)
	want := []Notice{{ID: early, Recipient: "a"}, {ID: early, Recipient: "b"}, {ID: late, Recipient: "a"}}
	if !slices.Equal(ns, want) {
		t.Errorf("sorted = %v, want %v", ns, want)
	}
}
