package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeStream is a stream in memory, for the logic of CountUnread: the
// backends' streams are tested by storetest against the real stores.
type fakeStream struct {
	msgs   []Message // any order
	listed int       // calls of Listed
}

func (f *fakeStream) stream() Stream {
	return Stream{
		Listed: func(context.Context) ([]Bucket, error) {
			f.listed++
			var days []Bucket
			for _, m := range f.msgs {
				days = append(days, BucketOf(m.ID.Time()))
			}
			return days, nil
		},
		Read: func(_ context.Context, s Segment, limit int) ([]Message, error) {
			var page []Message
			for _, m := range f.msgs {
				if BucketOf(m.ID.Time()) == s.Bucket && m.ID.Compare(s.From) >= 0 && (s.Before.IsZero() || m.ID.Compare(s.Before) < 0) {
					page = append(page, m)
				}
			}
			slices.SortFunc(page, func(a, b Message) int { return b.ID.Compare(a.ID) })
			return page[:min(limit, len(page))], nil
		},
	}
}

// blocksOf answers Blocks from a set of "login blocked other" pairs, and
// counts the questions.
type blocksOf struct {
	pairs map[[2]string]bool
	asked *int
	err   error
}

func (b blocksOf) Blocks(_ context.Context, login, other string) (bool, error) {
	if b.asked != nil {
		*b.asked++
	}
	return b.pairs[[2]string{login, other}], b.err
}

type noBlocks = blocksOf

func TestCountUnread(t *testing.T) {
	last := time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC)
	me, peer := UserRef{Login: "me"}, UserRef{Login: "peer"}
	at := func(d time.Duration, author UserRef, system bool) Message {
		return Message{Room: "me:peer", ID: MessageIDAt(last.Add(-d)), Author: author, System: system}
	}
	// Across a month's end: March 30th to April 1st, then older days.
	msgs := []Message{
		at(0, peer, false),
		at(time.Hour, peer, true), // a system message: not counted
		at(2*time.Hour, me, false),
		at(24*time.Hour, peer, false), // March 31st
		at(48*time.Hour, peer, false), // March 30th
		at(10*24*time.Hour, peer, false),
	}
	for _, tc := range []struct {
		name   string
		mark   MessageID
		want   int
		listed bool
	}{
		{"nothing read", MessageID{}, 4, true},
		{"read up to the last", msgs[0].ID, 0, false},
		{"read two days before", MinMessageID(msgs[4].ID.Time()), 3, false},
		{"read ten days before", msgs[5].ID, 3, true},
		{"read up to March 30th's", msgs[4].ID, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeStream{msgs: msgs}
			c := Conversation{ID: "me:peer", Kind: DirectConversation, LastMessage: msgs[0], ReadUpTo: tc.mark}
			got, _, err := CountUnread(t.Context(), me.Login, c, f.stream(), noBlocks{})
			if err != nil || got != tc.want || (f.listed > 0) != tc.listed {
				t.Errorf("CountUnread = %d, %v, listing read %d times; want %d, listing read: %v", got, err, f.listed, tc.want, tc.listed)
			}
		})
	}

	t.Run("cap", func(t *testing.T) {
		f := &fakeStream{}
		for i := range 2*UnreadCap + 1 {
			f.msgs = append(f.msgs, at(time.Duration(i)*time.Second, peer, false))
		}
		c := Conversation{ID: "me:peer", Kind: DirectConversation, LastMessage: f.msgs[0], ReadUpTo: f.msgs[2*UnreadCap].ID}
		if got, _, err := CountUnread(t.Context(), me.Login, c, f.stream(), noBlocks{}); err != nil || got != UnreadCap {
			t.Errorf("CountUnread of %d unread = %d, %v; want %d", 2*UnreadCap, got, err, UnreadCap)
		}
		// Own messages don't count: the others' reach the cap on the second page.
		for i := 0; i < UnreadCap; i++ {
			f.msgs[i].Author = me
		}
		if got, _, err := CountUnread(t.Context(), me.Login, c, f.stream(), noBlocks{}); err != nil || got != UnreadCap {
			t.Errorf("CountUnread of %d unread after %d own = %d, %v; want %d", UnreadCap, UnreadCap, got, err, UnreadCap)
		}
	})
}

// TestCountUnreadSkipsDeleted: a deleted message of another's is no unread
// message, nor a mention, however it was written; a hidden one still
// counts (it keeps its place, shown as hidden).
func TestCountUnreadSkipsDeleted(t *testing.T) {
	last := time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC)
	me, peer := UserRef{Login: "mira"}, UserRef{Login: "peer"}
	msgs := []Message{
		{Room: "mira:peer", ID: MessageIDAt(last), Author: peer, Deleted: true, Content: "@mira deleted"},
		{Room: "mira:peer", ID: MessageIDAt(last.Add(-time.Minute)), Author: peer, Hidden: true, Content: "@mira hidden"},
		{Room: "mira:peer", ID: MessageIDAt(last.Add(-2 * time.Minute)), Author: peer, Content: "@mira hi"},
	}
	f := &fakeStream{msgs: msgs}
	c := Conversation{ID: "mira:peer", Kind: DirectConversation, LastMessage: msgs[0]}
	unread, mentions, err := CountUnread(t.Context(), me.Login, c, f.stream(), noBlocks{})
	if err != nil || unread != 2 || mentions != 2 {
		t.Errorf("CountUnread = %d unread, %d mentions, %v; want 2 and 2: the deleted message is not counted, the hidden one is", unread, mentions, err)
	}
}

func TestDaysBetween(t *testing.T) {
	day := func(m time.Month, d, h int) time.Time { return time.Date(2026, m, d, h, 0, 0, 0, time.UTC) }
	for _, tc := range []struct {
		from, to time.Time
		want     []Bucket
	}{
		{day(3, 30, 23), day(4, 1, 1), []Bucket{20260401, 20260331, 20260330}},
		{day(4, 1, 1), day(4, 1, 23), []Bucket{20260401}},
		{day(4, 2, 1), day(4, 1, 23), nil},
		// Past unlistedDays it stops: the caller reads the listing.
		{day(1, 1, 0), day(4, 1, 0), []Bucket{20260401, 20260331, 20260330, 20260329}},
	} {
		if got := daysBetween(tc.from, tc.to); !slices.Equal(got, tc.want) {
			t.Errorf("daysBetween(%v, %v) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
}

func TestMentions(t *testing.T) {
	for content, want := range map[string][]string{
		"hi @alice and @bob_2, @alice again": {"alice", "bob_2"},
		"ask @carol.":                        {"carol"},
		"mail me at dan@example.com":         nil,
		"@@eve @ab @UPPER":                   nil,
		"(@frank) @gil-r: ok":                {"frank", "gil-r"},
	} {
		if got := Mentions(content); !slices.Equal(got, want) {
			t.Errorf("Mentions(%q) = %q, want %q", content, got, want)
		}
	}
	many := ""
	for i := range MaxMentions + 5 {
		many += fmt.Sprintf("@user%02d ", i)
	}
	if got := Mentions(many); len(got) != MaxMentions || got[0] != "user00" {
		t.Errorf("Mentions of %d logins = %d of them, from %q; want the first %d", MaxMentions+5, len(got), got, MaxMentions)
	}
}

func TestCountUnreadMentions(t *testing.T) {
	me, peer := UserRef{Login: "me.1"}, UserRef{Login: "peer"}
	f := &fakeStream{}
	for i, content := range []string{"hey @me.1", "nothing", "@me.1 again", "@me.10 is another"} {
		f.msgs = append(f.msgs, Message{Room: "r", ID: MessageIDAt(time.Now().Add(time.Duration(i) * time.Second)), Author: peer, Content: content})
	}
	f.msgs = append(f.msgs, Message{Room: "r", ID: MessageIDAt(time.Now().Add(time.Minute)), Author: me, Content: "talking to @me.1 myself"})
	c := Conversation{ID: "r", Kind: RoomConversation, LastMessage: f.msgs[4], ReadUpTo: f.msgs[0].ID}
	unread, mentions, err := CountUnread(t.Context(), me.Login, c, f.stream(), noBlocks{})
	if err != nil || unread != 3 || mentions != 1 {
		t.Errorf("CountUnread = %d unread, %d mentions, %v; want 3, 1", unread, mentions, err)
	}
}

// The mentions of an author the owner blocked do not count, though the
// messages stay unread; whether the owner blocked an author is asked once
// per author, and only of authors who mention the owner.
func TestCountUnreadIgnoresBlockedAuthorsMentions(t *testing.T) {
	me, friend, pest, quiet := UserRef{Login: "owner"}, UserRef{Login: "friend"}, UserRef{Login: "pest"}, UserRef{Login: "quiet"}
	f := &fakeStream{}
	post := func(author UserRef, content string) {
		f.msgs = append(f.msgs, Message{Room: "r", ID: MessageIDAt(time.Now().Add(time.Duration(len(f.msgs)) * time.Second)), Author: author, Content: content})
	}
	post(friend, "read")
	post(pest, "@owner look")
	post(friend, "@owner hi")
	post(pest, "@owner LOOK")
	post(quiet, "no mention")
	post(pest, "@owner!!!")
	c := Conversation{ID: "r", Kind: RoomConversation, LastMessage: f.msgs[len(f.msgs)-1], ReadUpTo: f.msgs[0].ID}
	asked := 0
	blocks := blocksOf{pairs: map[[2]string]bool{{"owner", "pest"}: true, {"owner", "quiet"}: true}, asked: &asked}
	unread, mentions, err := CountUnread(t.Context(), me.Login, c, f.stream(), blocks)
	if err != nil || unread != 5 || mentions != 1 {
		t.Errorf("CountUnread = %d unread, %d mentions, %v; want 5 unread, 1 mention (friend's)", unread, mentions, err)
	}
	if asked != 2 {
		t.Errorf("asked whether owner blocked an author %d times; want 2 (pest and friend, once each)", asked)
	}
	failing := errors.New("blocks unreadable")
	if _, _, err := CountUnread(t.Context(), me.Login, c, f.stream(), blocksOf{err: failing}); !errors.Is(err, failing) {
		t.Errorf("CountUnread with the blocks unreadable = %v; want %v", err, failing)
	}
}

// BenchmarkMentions is what every post of a room or group now pays to find
// its mentions: one scan of the content.
func BenchmarkMentions(b *testing.B) {
	for name, content := range map[string]string{
		"none":  "The quick brown fox jumps over the lazy dog.",
		"two":   "@alice, the quick brown fox jumps over @bob.smith's lazy dog.",
		"4000B": strings.Repeat("nothing to see here, move along ", 125),
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Mentions(content)
			}
		})
	}
}
