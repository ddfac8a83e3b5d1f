package store

import (
	"context"
	"slices"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// MessageSearch finds messages by their words. Each backend keeps its own
// index of the messages' current text, and a search sees every write (a
// post, an edit, a delete) that answered before it began, so a search made
// after an edit answered finds the new words and not the old ones:
//
//   - embedded: an inverted index in the store's own keys (term to message
//     ids, per conversation), written in each write's own batch, so it
//     agrees with the store at every moment, a crash included;
//   - cassandra: a Storage-Attached Index on the terms of each message in
//     chat_room_messages (search_terms), written with the content.
//
// Both index the words Terms makes of a message: what a word is, and that
// case and accents do not matter, is decided here, once, for both.
type MessageSearch interface {
	// SearchMessages returns the messages of q.Conversations that match q,
	// newest first, as the store holds them now. It never returns a deleted
	// or a system message; it returns hidden ones (whose content the
	// caller's reader's view decides on). A backend may stop before
	// q.Limit messages when a search would read too much at once (see
	// SearchPage.Resume). Returns ErrInvalid for an empty query.
	SearchMessages(ctx context.Context, q MessageQuery) (SearchPage, error)
}

// MessageQuery is a search of messages: every one of Terms, and each
// phrase of Phrases as consecutive words, in a message of one of
// Conversations (by Author, if set), older than Before.
type MessageQuery struct {
	Conversations []string
	// Terms are words as Terms makes them.
	Terms []string
	// Phrases are runs of words as Terms makes them, each of two words or
	// more.
	Phrases [][]string
	// Author, if set, is the login whose messages only match.
	Author string
	// Before is the search's cursor: only messages strictly older match
	// (the zero id: from the newest).
	Before MessageID
	Limit  int
}

// Empty reports whether q has no words to look for.
func (q MessageQuery) Empty() bool { return len(q.Terms) == 0 && len(q.Phrases) == 0 }

// IndexTerms are the distinct terms a message must be indexed under to
// match q: its author's (AuthorTerm), if set, and each word's (QueryTerm).
func (q MessageQuery) IndexTerms() []string {
	var terms []string
	if q.Author != "" {
		terms = append(terms, AuthorTerm(q.Author))
	}
	for _, w := range q.Words() {
		if w = QueryTerm(w); !slices.Contains(terms, w) {
			terms = append(terms, w)
		}
	}
	return terms
}

// Words are every word q looks for, its terms' and its phrases'.
func (q MessageQuery) Words() []string {
	words := append([]string(nil), q.Terms...)
	for _, p := range q.Phrases {
		words = append(words, p...)
	}
	return words
}

// SearchPage is what one SearchMessages found.
type SearchPage struct {
	// Messages are the matches found, newest first.
	Messages []Message
	// Resume is set when the backend stopped early, having searched every
	// message at or after it but not those before: the next search goes on
	// with Before = Resume. Zero when it searched until it found Limit
	// messages or ran out.
	Resume MessageID
}

// AuthorTerm is the term indexed with each message of login, which no word
// of a message can be (Terms splits at ':'): a search of one author's
// messages looks for it.
func AuthorTerm(login string) string { return "from:" + login }

// Terms are the words of text as search indexes and matches them: runs of
// letters and digits, lowercased, with accents and other marks removed
// (é is e, Æ stays æ), in order, repeats kept (phrases need positions).
func Terms(text string) []string {
	var words []string
	var w strings.Builder
	flush := func() {
		if w.Len() > 0 {
			words = append(words, w.String())
			w.Reset()
		}
	}
	for _, r := range norm.NFKD.String(text) {
		switch {
		case unicode.Is(unicode.Mn, r):
			// a mark a letter was decomposed into: the letter stays, bare
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			w.WriteRune(unicode.ToLower(r))
		default:
			flush()
		}
	}
	flush()
	return words
}

// MaxTermLength is the longest word search indexes, in bytes; longer ones
// are cut to it, in the index and in queries alike.
const MaxTermLength = 64

// IndexTerms are the distinct terms a message of author with text is found
// by: its words (cut to MaxTermLength) and AuthorTerm(author).
func IndexTerms(author, text string) []string {
	seen := map[string]bool{}
	out := []string{AuthorTerm(author)}
	for _, w := range Terms(text) {
		w = cutTerm(w)
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// cutTerm cuts w to MaxTermLength bytes, at a rune's start.
func cutTerm(w string) string {
	if len(w) <= MaxTermLength {
		return w
	}
	n := MaxTermLength
	for n > 0 && !utfStart(w[n]) {
		n--
	}
	return w[:n]
}

func utfStart(b byte) bool { return b&0xc0 != 0x80 }

// QueryTerm is w as the index holds it.
func QueryTerm(w string) string { return cutTerm(w) }

// Matches reports whether text has every term of q and each of its
// phrases as consecutive words: the check a backend whose index knows no
// positions makes of what it found.
func (q MessageQuery) Matches(text string) bool {
	words := Terms(text)
	for i, w := range words {
		words[i] = cutTerm(w)
	}
	has := map[string]bool{}
	for _, w := range words {
		has[w] = true
	}
	for _, t := range q.Terms {
		if !has[t] {
			return false
		}
	}
	for _, p := range q.Phrases {
		if !hasRun(words, p) {
			return false
		}
	}
	return true
}

// hasRun reports whether run occurs in words as consecutive words.
func hasRun(words, run []string) bool {
	for i := 0; i+len(run) <= len(words); i++ {
		match := true
		for j, w := range run {
			if words[i+j] != w {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// Directory finds people and public rooms by the start of their words,
// for pickers and the room directory: each backend indexes the prefixes
// (Prefixes) of a user's login and names and of a public room's name and
// banner, written with them.
type Directory interface {
	// SearchUsers returns up to limit accounts (not deleted ones) whose
	// login or names have, for each of words (Terms words), a word it
	// begins, sorted by login. Which of more matches it returns is the
	// backend's choice.
	SearchUsers(ctx context.Context, words []string, limit int) ([]UserRef, error)

	// SearchRooms returns up to limit public rooms whose name or banner
	// has, for each of words, a word it begins, sorted by name. Private
	// groups are never found.
	SearchRooms(ctx context.Context, words []string, limit int) ([]Room, error)
}

// MaxPrefix is the longest prefix indexed, in runes: a longer word typed
// is looked up by its first MaxPrefix runes, and what is found is then
// checked whole (BeginsWords).
const MaxPrefix = 12

// Prefixes are the distinct prefixes, of 1 to MaxPrefix runes, of the
// Terms words of texts.
func Prefixes(texts ...string) []string {
	seen := map[string]bool{}
	var out []string
	for _, text := range texts {
		for _, w := range Terms(text) {
			rs := []rune(w)
			for n := 1; n <= min(len(rs), MaxPrefix); n++ {
				if p := string(rs[:n]); !seen[p] {
					seen[p] = true
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// PrefixTerm is the indexed prefix a typed word is looked up by.
func PrefixTerm(w string) string {
	if rs := []rune(w); len(rs) > MaxPrefix {
		return string(rs[:MaxPrefix])
	}
	return w
}

// BeginsWords reports whether each of words begins a Terms word of texts.
func BeginsWords(words []string, texts ...string) bool {
	var have []string
	for _, t := range texts {
		have = append(have, Terms(t)...)
	}
	for _, w := range words {
		found := false
		for _, h := range have {
			if strings.HasPrefix(h, w) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
