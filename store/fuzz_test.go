package store

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The fuzz targets below cover the store's parsers of client input: message
// ids (also the cursors of every message page and stream) and the names and
// texts a client chooses. CI runs each for a short time (`make fuzz`);
// `go test` alone runs their seeds.

// FuzzParseMessageID: any string either fails with ErrInvalid or is a
// version 1 UUID whose canonical form parses back to the same id.
func FuzzParseMessageID(f *testing.F) {
	for _, s := range []string{
		NewMessageID().String(),
		strings.ToUpper(NewMessageID().String()),
		"00000000-0000-1000-0000-000000000000",
		"ffffffff-ffff-1fff-ffff-ffffffffffff",
		"6ba7b810-9dad-41d1-80b4-00c04fd430c8", // version 4
		"6ba7b810-9dad-11d1-80b4-00c04fd430c",
		"6ba7b810+9dad-11d1-80b4-00c04fd430c8",
		"6ba7b810-9dad-11d1-80b4-00c04fd430cg",
		"",
		"\x00",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseMessageID(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseMessageID(%q) = %v, not an ErrInvalid", s, err)
			}
			if !id.IsZero() {
				t.Fatalf("ParseMessageID(%q) failed but returned %v", s, id)
			}
			shortMessage(t, err)
			return
		}
		if id[6]>>4 != 1 {
			t.Fatalf("ParseMessageID(%q) accepted a version %d UUID", s, id[6]>>4)
		}
		canonical := id.String()
		if !strings.EqualFold(canonical, s) {
			t.Fatalf("ParseMessageID(%q) = %s, which is not the same id", s, canonical)
		}
		again, err := ParseMessageID(canonical)
		if err != nil || again != id {
			t.Fatalf("canonical form %s of %q parses to %v, %v", canonical, s, again, err)
		}
		// The buckets a cursor selects stay bounded whatever its time.
		listed := []Bucket{BucketOf(id.Time()), BucketOf(time.Now())}
		if n := len(NewestFirstBuckets(listed, id)); n > len(listed) {
			t.Fatalf("cursor %s selects %d buckets", s, n)
		}
	})
}

// FuzzNames: an accepted login or room name follows its rule; above all a
// room name never holds ':', which keeps rooms apart from direct
// conversations (store.DirectConversationID). Rejections are ErrInvalid.
func FuzzNames(f *testing.F) {
	for _, s := range []string{strings.Repeat("\\", 5000), strings.Repeat("é", 100), "alice", "tea-party", "a", "ab", "a:b", "Alice", "_x", "x.y", strings.Repeat("a", 41), "é1", "a\x00b", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if err := ValidateLogin(s); err == nil {
			if n := len(s); n < 3 || n > 32 || strings.ToLower(s) != s || strings.ContainsAny(s, ": \x00") {
				t.Fatalf("ValidateLogin accepted %q", s)
			}
		} else if !errors.Is(err, ErrInvalid) {
			t.Fatalf("ValidateLogin(%q) = %v, not an ErrInvalid", s, err)
		} else {
			shortMessage(t, err)
		}
		if err := ValidateRoomName(s); err == nil {
			if n := len(s); n < 2 || n > 40 || IsDirectConversation(s) || strings.ToLower(s) != s {
				t.Fatalf("ValidateRoomName accepted %q", s)
			}
		} else if !errors.Is(err, ErrInvalid) {
			t.Fatalf("ValidateRoomName(%q) = %v, not an ErrInvalid", s, err)
		} else {
			shortMessage(t, err)
		}
	})
}

// FuzzContent: accepted message content is valid UTF-8, not blank, and
// within MaxMessageLength characters.
func FuzzContent(f *testing.F) {
	for _, s := range []string{"hello", " ", "\t\n", "\xff", strings.Repeat("é", MaxMessageLength), strings.Repeat("a", MaxMessageLength+1), "a\x00b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := ValidateContent(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ValidateContent(%q) = %v, not an ErrInvalid", s, err)
			}
			return
		}
		if !utf8.ValidString(s) || strings.TrimSpace(s) == "" || utf8.RuneCountInString(s) > MaxMessageLength {
			t.Fatalf("ValidateContent accepted %q", s)
		}
	})
}

// shortMessage fails unless err's message is short: it quotes at most
// the start of the input it refuses (see Quote), however long the input.
func shortMessage(t *testing.T, err error) {
	t.Helper()
	if n := len(err.Error()); n > 500 {
		t.Fatalf("error message of %d bytes: %.100s...", n, err)
	}
}

// FuzzMentions: whatever the content, Mentions returns at most MaxMentions
// distinct valid logins, each written as @login in the content.
func FuzzMentions(f *testing.F) {
	for _, seed := range []string{"", "@", "@@alice", "hi @alice.", "a@b.c @bob_2-x", "@ab @abc", "(@frank)", strings.Repeat("@user ", 30)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, content string) {
		logins := Mentions(content)
		if len(logins) > MaxMentions {
			t.Fatalf("Mentions(%q) = %d logins, more than %d", content, len(logins), MaxMentions)
		}
		for i, login := range logins {
			if err := ValidateLogin(login); err != nil {
				t.Fatalf("Mentions(%q) returned %q: %v", content, login, err)
			}
			if !strings.Contains(content, "@"+login) || slices.Contains(logins[:i], login) {
				t.Fatalf("Mentions(%q) returned %q, not mentioned or twice", content, login)
			}
		}
	})
}
