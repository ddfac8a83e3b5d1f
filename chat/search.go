package chat

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
)

// The bounds of a message search: what one query may ask, and what one
// call may read. A page is at most MaxSearchPage hits; to fill it, the core
// asks the store at most searchRounds times (hits the reader's view drops
// make a store page short), then answers with what it has and a cursor.
const (
	// MaxSearchQuery is the longest query, in bytes.
	MaxSearchQuery = 256
	// MaxSearchWords is the most words a query may hold, its phrases'
	// included.
	MaxSearchWords = 8
	// MaxSearchPage is the most hits of one page.
	MaxSearchPage = 50
	// searchRounds is how many store searches one page may take.
	searchRounds = 4
)

// MessageSearch is a search as the API asks it.
type MessageSearch struct {
	// Query is what the user typed: words, "quoted phrases", and the
	// filters from:login and in:room (see ParseSearch).
	Query string
	// Conversation, if set, is the one conversation searched (a room's
	// or group's name, or a direct conversation's id), as in:room does.
	Conversation string
	// From, if set, is the login whose messages only are searched, as
	// from:login does.
	From string
	// Before is the cursor: the search goes on with older messages (zero:
	// from the newest).
	Before store.MessageID
	// First is the number of hits wanted, at most MaxSearchPage.
	First int
}

// SearchHit is a message found, as its searcher may read it.
type SearchHit struct {
	Message store.Message
	// Snippet is the part of the content around the first match, with
	// the words that matched marked.
	Snippet []SnippetPart
}

// SnippetPart is a run of a snippet's text that matched or did not.
type SnippetPart struct {
	Text  string
	Match bool
}

// SearchResults is one page of a search.
type SearchResults struct {
	Hits []SearchHit
	// Next is the cursor of the next page (Before); More reports whether
	// there may be one.
	Next store.MessageID
	More bool
}

// ParsedSearch is a query as ParseSearch reads it.
type ParsedSearch struct {
	Terms   []string
	Phrases [][]string
	From    string
	In      string
}

// ParseSearch reads a query: words (any case, any accents), phrases in
// double quotes, and the filters from:login and in:room. Wildcards (* ?)
// and fuzzy matching (~) are refused rather than run: each could match
// most of the index. Returns ErrInvalid, saying why, for a query that is
// too long, holds too many words or none, or repeats a filter.
func ParseSearch(query string) (ParsedSearch, error) {
	var p ParsedSearch
	switch {
	case len(query) > MaxSearchQuery:
		return p, store.Invalidf("invalid query: at most %d bytes", MaxSearchQuery)
	case !utf8.ValidString(query):
		return p, store.Invalidf("invalid query: not UTF-8")
	case strings.ContainsAny(query, "*?~"):
		return p, store.Invalidf("invalid query: wildcards (* ?) and fuzzy matching (~) are not supported; search for whole words")
	}
	rest := query
	for rest = strings.TrimSpace(rest); rest != ""; rest = strings.TrimSpace(rest) {
		if rest[0] == '"' {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				return p, store.Invalidf("invalid query: a phrase's closing quote is missing")
			}
			switch words := store.Terms(rest[1 : end+1]); len(words) {
			case 0:
			case 1:
				p.Terms = append(p.Terms, words[0])
			default:
				p.Phrases = append(p.Phrases, words)
			}
			rest = rest[end+2:]
			continue
		}
		field, tail, _ := strings.Cut(rest, " ")
		rest = tail
		if name, value, ok := strings.Cut(field, ":"); ok && (name == "from" || name == "in") {
			target := &p.From
			if name == "in" {
				target = &p.In
			}
			if *target != "" {
				return p, store.Invalidf("invalid query: %s: given twice", name)
			}
			if value == "" {
				return p, store.Invalidf("invalid query: %s: needs a value", name)
			}
			*target = value
			continue
		}
		p.Terms = append(p.Terms, store.Terms(field)...)
	}
	n := len(p.Terms)
	for _, ph := range p.Phrases {
		n += len(ph)
	}
	switch {
	case n == 0:
		return p, store.Invalidf("invalid query: no words to search for")
	case n > MaxSearchWords:
		return p, store.Invalidf("invalid query: at most %d words", MaxSearchWords)
	}
	return p, nil
}

// SearchMessages finds the messages me may read that match the search,
// newest first, each as me's reader's view shows it (see readers.go): in
// the conversations me takes part in or took part in (a group's former
// member, within their windows), never a banned user's group, never a
// deleted message, a hidden one only to its author (to anyone else it is
// blank, and blank text matches nothing), an edited one by its current
// text only. A block hides nothing here either: the API flags the
// messages of an author me blocked.
//
// It counts against me's search limit. Returns ErrInvalid for a bad query
// (ParseSearch) or page size, and, for a conversation me may not read, the
// error reading it would give.
func (s *Service) SearchMessages(ctx context.Context, me store.UserRef, q MessageSearch) (SearchResults, error) {
	if q.First < 1 || q.First > MaxSearchPage {
		return SearchResults{}, store.Invalidf("invalid first: between 1 and %d", MaxSearchPage)
	}
	parsed, err := ParseSearch(q.Query)
	if err != nil {
		return SearchResults{}, err
	}
	if err := s.limit(ctx, ratelimit.Search, me); err != nil {
		return SearchResults{}, err
	}
	in, err := oneOf("in", parsed.In, q.Conversation)
	if err != nil {
		return SearchResults{}, err
	}
	from, err := oneOf("from", parsed.From, q.From)
	if err != nil {
		return SearchResults{}, err
	}

	readers := map[string]*Reader{} // nil: me reads none of it
	var conversations []string
	if in != "" {
		rd, err := s.reader(ctx, me, in)
		if err != nil {
			return SearchResults{}, err
		}
		readers[in] = &rd
		conversations = []string{in}
	} else if conversations, err = s.searchedConversations(ctx, me); err != nil {
		return SearchResults{}, err
	}
	sees := func(m store.Message) (bool, error) {
		rd, ok := readers[m.Room]
		if !ok {
			r, err := s.reader(ctx, me, m.Room)
			switch {
			case errors.Is(err, store.ErrForbidden) || errors.Is(err, store.ErrNotFound):
			case err != nil:
				return false, err
			default:
				rd = &r
			}
			readers[m.Room] = rd
		}
		return rd != nil && rd.SeesContent(m), nil
	}

	query := store.MessageQuery{Conversations: conversations, Terms: parsed.Terms, Phrases: parsed.Phrases, Author: from, Before: q.Before}
	var res SearchResults
	for round := 0; round < searchRounds; round++ {
		query.Limit = q.First + 1 - len(res.Hits)
		page, err := s.Store.SearchMessages(ctx, query)
		if err != nil {
			return SearchResults{}, err
		}
		for _, m := range page.Messages {
			query.Before = m.ID
			ok, err := sees(m)
			if err != nil {
				return SearchResults{}, err
			}
			if !ok {
				continue
			}
			if len(res.Hits) == q.First {
				res.More = true
				return res, nil
			}
			res.Hits = append(res.Hits, SearchHit{Message: m, Snippet: Snippet(m.Content, parsed.words())})
			res.Next = m.ID
		}
		switch {
		case !page.Resume.IsZero():
			query.Before = page.Resume
		case len(page.Messages) < query.Limit:
			return res, nil // the store has no more
		}
	}
	// Out of rounds: the next page goes on from where this one stopped.
	res.Next, res.More = query.Before, true
	return res, nil
}

// words are every word p looks for.
func (p ParsedSearch) words() []string {
	return store.MessageQuery{Terms: p.Terms, Phrases: p.Phrases}.Words()
}

// oneOf is the filter given in the query or as an argument; both must
// agree when both are given.
func oneOf(name, inQuery, argument string) (string, error) {
	if inQuery != "" && argument != "" && inQuery != argument {
		return "", store.Invalidf("invalid query: %s:%s and the argument %s: %q disagree", name, inQuery, name, argument)
	}
	if inQuery != "" {
		return inQuery, nil
	}
	return argument, nil
}

// searchedConversations are those a search of me's covers: the rooms and
// groups me takes part in and the entries of me's inbox (direct
// conversations, groups me left). The reader's view then decides on each
// message found.
func (s *Service) searchedConversations(ctx context.Context, me store.UserRef) ([]string, error) {
	u, err := s.Store.User(ctx, me.Login)
	if err != nil {
		return nil, fmt.Errorf("the conversations of %s: %w", me.Login, err)
	}
	entries, err := s.Store.InboxEntries(ctx, me.Login)
	if err != nil {
		return nil, fmt.Errorf("the conversations of %s: %w", me.Login, err)
	}
	seen := map[string]bool{}
	var out []string
	for _, c := range u.ChatRooms {
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	for _, e := range entries {
		if !seen[e.ID] {
			seen[e.ID] = true
			out = append(out, e.ID)
		}
	}
	return out, nil
}

// snippetRunes is about how long a snippet is, and snippetLead how much
// of it comes before the first match.
const (
	snippetRunes = 160
	snippetLead  = 40
)

// Snippet is the part of content around its first word among words
// (store.Terms words), cut to about snippetRunes runes with "…" where it was
// cut, with every such word marked.
func Snippet(content string, words []string) []SnippetPart {
	want := map[string]bool{}
	for _, w := range words {
		want[w] = true
	}
	// The runs of letters and digits of content, by rune offsets.
	runes := []rune(content)
	type span struct{ from, to int }
	var matches []span
	for i := 0; i < len(runes); {
		if !isWordRune(runes[i]) {
			i++
			continue
		}
		j := i
		for j < len(runes) && isWordRune(runes[j]) {
			j++
		}
		if t := store.Terms(string(runes[i:j])); len(t) == 1 && want[store.QueryTerm(t[0])] {
			matches = append(matches, span{i, j})
		}
		i = j
	}
	start := 0
	if len(matches) > 0 && matches[0].from > snippetLead {
		start = matches[0].from - snippetLead
		for start < matches[0].from && isWordRune(runes[start]) && start > 0 && isWordRune(runes[start-1]) {
			start++ // begin at a word's start
		}
	}
	end := min(len(runes), start+snippetRunes)
	var parts []SnippetPart
	add := func(text string, match bool) {
		if text == "" {
			return
		}
		if n := len(parts); n > 0 && parts[n-1].Match == match {
			parts[n-1].Text += text
			return
		}
		parts = append(parts, SnippetPart{Text: text, Match: match})
	}
	if start > 0 {
		add("…", false)
	}
	at := start
	for _, m := range matches {
		if m.to <= start || m.from >= end {
			continue
		}
		from, to := max(m.from, start), min(m.to, end)
		add(string(runes[at:from]), false)
		add(string(runes[from:to]), true)
		at = to
	}
	add(string(runes[at:end]), false)
	if end < len(runes) {
		add("…", false)
	}
	return parts
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
}

// The bounds of a directory search (SearchUsers, SearchRooms).
const (
	// MaxDirectoryQuery is the longest text typed, in bytes.
	MaxDirectoryQuery = 64
	// MaxDirectoryWords is the most words it may hold.
	MaxDirectoryWords = 4
	// MaxDirectoryPage is the most people or rooms of one answer.
	MaxDirectoryPage = 50
)

// directoryWords are the words of what was typed into a picker, each
// looked up as the start of a word.
func directoryWords(typed string, first int) ([]string, error) {
	switch {
	case first < 1 || first > MaxDirectoryPage:
		return nil, store.Invalidf("invalid first: between 1 and %d", MaxDirectoryPage)
	case len(typed) > MaxDirectoryQuery:
		return nil, store.Invalidf("invalid query: at most %d bytes", MaxDirectoryQuery)
	case strings.ContainsAny(typed, "*?~"):
		return nil, store.Invalidf("invalid query: wildcards (* ?) and fuzzy matching (~) are not supported; every word is the start of a word already")
	}
	words := store.Terms(typed)
	switch {
	case len(words) == 0:
		return nil, store.Invalidf("invalid query: no letters or digits to search for")
	case len(words) > MaxDirectoryWords:
		return nil, store.Invalidf("invalid query: at most %d words", MaxDirectoryWords)
	}
	return words, nil
}

// SearchUsers finds up to first people whose login or names start with
// what me typed (each word the start of one of theirs), sorted by login,
// for the "new message" picker. It leaves out whoever blocked me: a block
// is not told, and a person who blocked me is not found. Counted against
// me's search limit.
func (s *Service) SearchUsers(ctx context.Context, me store.UserRef, typed string, first int) ([]store.UserRef, error) {
	words, err := directoryWords(typed, first)
	if err != nil {
		return nil, err
	}
	if err := s.limit(ctx, ratelimit.Search, me); err != nil {
		return nil, err
	}
	// Read more than asked: the blocks filtered out below do not shorten
	// the answer unless they are many.
	found, err := s.Store.SearchUsers(ctx, words, first*2)
	if err != nil {
		return nil, err
	}
	out := []store.UserRef{}
	for _, u := range found {
		if len(out) == first {
			break
		}
		blocked, err := s.Store.Blocks(ctx, u.Login, me.Login)
		if err != nil {
			return nil, err
		}
		if !blocked {
			out = append(out, u)
		}
	}
	return out, nil
}

// SearchRooms finds up to first public rooms whose name or banner (its
// topic) have words starting with each word me typed, sorted by name: the
// room directory, searched. Private groups are never found. Counted
// against me's search limit.
func (s *Service) SearchRooms(ctx context.Context, me store.UserRef, typed string, first int) ([]store.Room, error) {
	words, err := directoryWords(typed, first)
	if err != nil {
		return nil, err
	}
	if err := s.limit(ctx, ratelimit.Search, me); err != nil {
		return nil, err
	}
	return s.Store.SearchRooms(ctx, words, first)
}
