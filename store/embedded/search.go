package embedded

import (
	"bytes"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/killrchat/chatql/store"
)

var _ store.MessageSearch = (*DB)(nil)

// The search index is an inverted index in the store's own keys, written in
// the batch of the change it follows, so it never disagrees with the store:
// not after a crash, not for a moment between a write and its answer. What
// the index holds:
//
//   - search_words | room | term | message id (newest first): one row per
//     term of each message search may find (store.IndexTerms: its words and
//     its author), so a conversation's messages holding a term are one
//     contiguous range, newest first.
//   - search_names | kind | prefix | id: the directory, one row per prefix
//     (store.Prefixes) of the words of each user ("user", by login) and
//     public room ("room", by name); search_name_docs | kind | id lists the
//     prefixes indexed, so a rename removes the old ones.
//
// A post adds its terms' rows, an edit replaces them, a delete removes them
// and deleting a room removes its range: a dozen keys in a batch that
// already writes several, and no second engine to keep in step. A search
// intersects the terms' ranges of each conversation by leapfrogging
// (each term's cursor seeks to the newest id the others allow) and merges
// the conversations newest first, reading every match from the store as it
// is now and checking its content (store.MessageQuery.Matches: phrases, and
// any row a racing edit left behind).
//
// Older stores kept a bleve index beside the store's directory, fed by a
// search queue; opening such a store builds the index from its messages
// once (buildSearchIndex), then removes the queue and the old directory.
const (
	tableSearchWords    = "search_words"
	tableSearchNames    = "search_names"
	tableSearchNameDocs = "search_name_docs"
	// tableSearchQueue is the queue of the bleve index of older stores,
	// removed when the index is built.
	tableSearchQueue = "search_queue"
)

func wordsPartition(room string) key        { return tuple(tableSearchWords).str(room) }
func wordKey(room, term string) key         { return wordsPartition(room).str(term) }
func namePrefixKey(kind, prefix string) key { return tuple(tableSearchNames).str(kind).str(prefix) }
func nameDocKey(kind, id string) key        { return tuple(tableSearchNameDocs).str(kind).str(id) }

// searchIndexBuilt marks a store whose search index is built.
func searchIndexBuilt() key { return tuple(tableMeta).str(tableSearchWords) }

// The kinds of the directory's entries.
const (
	userEntry = "user"
	roomEntry = "room"
)

// searchable reports whether search may find m at all.
func searchable(m store.Message) bool { return !m.Deleted && !m.System && m.Content != "" }

// messageTerms are the terms search finds m by: none if it may not be
// found.
func messageTerms(m store.Message) []string {
	if !searchable(m) {
		return nil
	}
	return store.IndexTerms(m.Author.Login, m.Content)
}

// indexMessage makes the index follow a message from was (its state before
// the batch; the zero message for a new one) to now. Every term of now is
// written, not only the new ones: of racing changes of one message, the
// last committed leaves its row and all its terms.
func (b *batch) indexMessage(was, now store.Message) {
	if b.db.searchOff {
		return
	}
	terms := messageTerms(now)
	for _, t := range messageTerms(was) {
		if !slices.Contains(terms, t) {
			b.delete(wordKey(was.Room, t).desc(was.ID))
		}
	}
	for _, t := range terms {
		b.setEmpty(wordKey(now.Room, t).desc(now.ID))
	}
}

// unindexRoom removes every message of room from the index.
func (b *batch) unindexRoom(room string) { b.deleteRange(wordsPartition(room)) }

// indexName makes the directory entry of kind and id hold the prefixes of
// texts, or removes it when there are none. The caller holds the lock of
// the user's or room's row, so no other change of the entry is under way.
func (b *batch) indexName(kind, id string, texts ...string) {
	if b.err != nil || b.db.searchOff {
		return
	}
	docKey := nameDocKey(kind, id)
	was, _, err := getRow[[]string](b.db, docKey)
	if err != nil {
		b.err = fmt.Errorf("reading the directory entry of %s %q: %w", kind, id, err)
		return
	}
	now := store.Prefixes(texts...)
	for _, p := range was {
		if !slices.Contains(now, p) {
			b.delete(namePrefixKey(kind, p).str(id))
		}
	}
	for _, p := range now {
		b.setEmpty(namePrefixKey(kind, p).str(id))
	}
	if len(now) == 0 {
		b.delete(docKey)
	} else {
		b.set(docKey, now)
	}
}

// indexUser and indexRoom index what the directory finds a user and a
// room by; a deleted account, a deleted room and a private group are not
// found.
func (b *batch) indexUser(u userRow) {
	if u.Deleted {
		b.indexName(userEntry, u.Login)
		return
	}
	b.indexName(userEntry, u.Login, u.Login, u.Firstname, u.Lastname)
}

func (b *batch) indexRoom(r roomRow) {
	if store.RoomKind(r.Kind) == store.PrivateGroup {
		b.indexName(roomEntry, r.Name)
		return
	}
	b.indexName(roomEntry, r.Name, r.Name, r.Banner)
}

// buildSearchIndex indexes every message, user and room of a store opened
// without its index (one from before it), in batches, then marks it built
// and removes what the older bleve index left: its queue's rows and its
// directory beside dir. A crash before the mark builds it again, which
// rewrites the same rows.
func (db *DB) buildSearchIndex(dir string) error {
	if built, err := db.has(searchIndexBuilt()); err != nil || built {
		return err
	}
	const perBatch = 1000
	b, n := db.batch(), 0
	flush := func() error {
		err := b.err
		if err == nil {
			err = b.Commit(pebble.NoSync)
		}
		b.Close()
		b, n = db.batch(), 0
		return err
	}
	each := func(table string, fn func(k, v []byte) error) error {
		p := tuple(table)
		return db.scan(context.Background(), p, p.end(), false, func(k, v []byte) (bool, error) {
			if err := fn(k[len(p):], v); err != nil {
				return false, err
			}
			if n++; n >= perBatch {
				return true, flush()
			}
			return true, nil
		})
	}
	err := each(tableMessagesByID, func(k, v []byte) error {
		row, err := decode[indexRow](v)
		if err != nil {
			return err
		}
		id, err := store.MessageIDFromSortKey(k)
		if err != nil {
			return err
		}
		b.indexMessage(store.Message{}, row.message(row.Room, id))
		return nil
	})
	if err == nil {
		err = each(tableUsers, func(_, v []byte) error {
			row, err := decode[userRow](v)
			b.indexUser(row)
			return err
		})
	}
	if err == nil {
		err = each(tableChatRooms, func(_, v []byte) error {
			row, err := decode[roomRow](v)
			b.indexRoom(row)
			return err
		})
	}
	if err == nil {
		b.deleteRange(tuple(tableSearchQueue))
		b.setEmpty(searchIndexBuilt())
		err = b.err
	}
	if err == nil {
		err = b.Commit(pebble.Sync)
	}
	b.Close()
	if err == nil {
		err = os.RemoveAll(filepath.Clean(dir) + "-search")
	}
	if err != nil {
		return fmt.Errorf("building the search index: %w", err)
	}
	return nil
}

// maxSearchSeeks bounds the seeks of one SearchMessages once it found the
// newest match of each conversation: a search that reaches it returns what
// it found with SearchPage.Resume set, so a page of a rare conjunction of
// common words costs a bounded read, as on Cassandra (MaxSearchReads). A
// variable for TestSearchResumes.
var maxSearchSeeks = 20000

// SearchMessages merges the conversations' matches newest first (see the
// index's description above).
func (db *DB) SearchMessages(ctx context.Context, q store.MessageQuery) (store.SearchPage, error) {
	if q.Empty() {
		return store.SearchPage{}, store.Invalidf("a search needs words")
	}
	end, err := db.begin(ctx)
	if err != nil {
		return store.SearchPage{}, err
	}
	defer end()
	if len(q.Conversations) == 0 || q.Limit <= 0 {
		return store.SearchPage{}, nil
	}
	page, err := db.searchMessages(ctx, q)
	if err != nil {
		return store.SearchPage{}, fmt.Errorf("searching messages: %w", err)
	}
	return page, nil
}

func (db *DB) searchMessages(ctx context.Context, q store.MessageQuery) (page store.SearchPage, err error) {
	p := tuple(tableSearchWords)
	it, err := db.pdb.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: p, UpperBound: p.end()})
	if err != nil {
		return page, err
	}
	defer func() { err = errors.Join(err, it.Close()) }()
	s := &leapfrog{it: it, terms: q.IndexTerms()}

	// The newest match of each conversation, then the newest of those,
	// replaced by its conversation's next, until the page is full.
	var matches matchHeap
	for _, room := range q.Conversations {
		id, found, err := s.newestBelow(room, q.Before)
		if err != nil {
			return page, err
		}
		if found {
			matches = append(matches, roomMatch{room, id})
		}
	}
	heap.Init(&matches)
	s.seeks = 0
	for len(matches) > 0 && len(page.Messages) < q.Limit {
		if err := ctx.Err(); err != nil {
			return page, err
		}
		top := matches[0]
		row, found, err := getRow[indexRow](db, messageByIDKey(top.id))
		if err != nil {
			return page, err
		}
		if m := row.message(row.Room, top.id); found && m.Room == top.room && searchable(m) && q.Matches(m.Content) &&
			(q.Author == "" || m.Author.Login == q.Author) {
			page.Messages = append(page.Messages, m)
		}
		next, found, err := s.newestBelow(top.room, top.id)
		if err != nil {
			return page, err
		}
		if found {
			matches[0].id = next
			heap.Fix(&matches, 0)
		} else {
			heap.Pop(&matches)
		}
		// Every conversation is searched down to its next match, which is
		// older than top: so every message at or after top is searched.
		if s.seeks > maxSearchSeeks && len(matches) > 0 && len(page.Messages) < q.Limit {
			page.Resume = top.id
			break
		}
	}
	return page, nil
}

// A leapfrog finds the messages holding every one of terms, by seeking
// each term's rows of a conversation in turn to the newest id the others
// allow.
type leapfrog struct {
	it    *pebble.Iterator
	terms []string
	seeks int
}

// newestBelow returns the newest message of room older than below (the
// zero id: the newest of all) that holds every term.
func (s *leapfrog) newestBelow(room string, below store.MessageID) (store.MessageID, bool, error) {
	cand, inclusive := below, false
	for agree, i := 0, 0; agree < len(s.terms); i = (i + 1) % len(s.terms) {
		id, found, err := s.seek(wordKey(room, s.terms[i]), cand, inclusive)
		if err != nil || !found {
			return store.MessageID{}, false, err
		}
		if inclusive && id == cand {
			agree++
		} else {
			cand, inclusive, agree = id, true, 1
		}
	}
	return cand, true, nil
}

// seek returns the newest id of the term's rows p at or older than bound
// (inclusive) or older than it; the zero bound is no bound.
func (s *leapfrog) seek(p key, bound store.MessageID, inclusive bool) (store.MessageID, bool, error) {
	s.seeks++
	target := []byte(p)
	switch {
	case bound.IsZero():
	case inclusive:
		target = p.desc(bound)
	default:
		target = p.desc(bound).next()
	}
	if !s.it.SeekGE(target) || !bytes.HasPrefix(s.it.Key(), p) {
		return store.MessageID{}, false, s.it.Error()
	}
	id, err := parseDesc(s.it.Key()[len(p):])
	return id, err == nil, err
}

// roomMatch is a conversation's newest match not yet taken.
type roomMatch struct {
	room string
	id   store.MessageID
}

// matchHeap orders the conversations' matches newest first.
type matchHeap []roomMatch

func (h matchHeap) Len() int           { return len(h) }
func (h matchHeap) Less(i, j int) bool { return h[i].id.Compare(h[j].id) > 0 }
func (h matchHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *matchHeap) Push(x any)        { *h = append(*h, x.(roomMatch)) }
func (h *matchHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

var _ store.Directory = (*DB)(nil)

// SearchUsers looks up each word's prefix among the users' prefixes.
func (db *DB) SearchUsers(ctx context.Context, words []string, limit int) ([]store.UserRef, error) {
	logins, err := db.searchDirectory(ctx, userEntry, words, limit)
	if err != nil {
		return nil, fmt.Errorf("searching users: %w", err)
	}
	out := []store.UserRef{}
	for _, login := range logins {
		row, found, err := getRow[userRow](db, userKey(login))
		if err != nil {
			return nil, err
		}
		if found && !row.Deleted && store.BeginsWords(words, row.Login, row.Firstname, row.Lastname) {
			out = append(out, store.UserRef{Login: row.Login, Firstname: row.Firstname, Lastname: row.Lastname})
		}
	}
	return out, nil
}

// SearchRooms looks up each word's prefix among the public rooms'.
func (db *DB) SearchRooms(ctx context.Context, words []string, limit int) ([]store.Room, error) {
	names, err := db.searchDirectory(ctx, roomEntry, words, limit)
	if err != nil {
		return nil, fmt.Errorf("searching rooms: %w", err)
	}
	out := []store.Room{}
	for _, name := range names {
		row, found, err := getRow[roomRow](db, roomKey(name))
		if err != nil {
			return nil, err
		}
		if found && store.RoomKind(row.Kind) != store.PrivateGroup && store.BeginsWords(words, row.Name, row.Banner) {
			out = append(out, row.room())
		}
	}
	return out, nil
}

// searchDirectory returns the ids, in order, of up to limit entries of
// kind holding every word's prefix: a leapfrog, as for messages, over ids
// in ascending order.
func (db *DB) searchDirectory(ctx context.Context, kind string, words []string, limit int) (ids []string, err error) {
	if len(words) == 0 {
		return nil, store.Invalidf("a search needs words")
	}
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	var prefixes []key
	for _, w := range words {
		if p := namePrefixKey(kind, store.PrefixTerm(w)); !slices.ContainsFunc(prefixes, func(k key) bool { return bytes.Equal(k, p) }) {
			prefixes = append(prefixes, p)
		}
	}
	p := tuple(tableSearchNames).str(kind)
	it, err := db.pdb.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: p, UpperBound: p.end()})
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, it.Close()) }()
	// seek returns the first id of the prefix's entries at or after from.
	seek := func(p key, from string, first bool) (string, bool, error) {
		target := []byte(p)
		if !first {
			target = p.str(from)
		}
		if !it.SeekGE(target) || !bytes.HasPrefix(it.Key(), p) {
			return "", false, it.Error()
		}
		id, _, err := parseStr(it.Key()[len(p):])
		return id, err == nil, err
	}
	cand, first := "", true
	for len(ids) < limit {
		for agree, i := 0, 0; agree < len(prefixes); i = (i + 1) % len(prefixes) {
			id, found, err := seek(prefixes[i], cand, first)
			if err != nil || !found {
				return ids, err
			}
			if !first && id == cand {
				agree++
			} else {
				cand, first, agree = id, false, 1
			}
		}
		ids = append(ids, cand)
		cand += "\x00" // the next id after cand
	}
	return ids, nil
}
