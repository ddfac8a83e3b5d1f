package embedded

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/whitespace"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/killrchat/chatql/store"
)

var _ store.MessageSearch = (*DB)(nil)

// The search index is a bleve index (scorch) in its own directory beside
// the store's, holding one document per message that search may find (not
// deleted, not a system message): its words as store.Terms makes them, its
// conversation, its author, and a key that sorts as its id; and one per
// user and public room: the prefixes of their words (the directory).
//
// The index follows the store through the search queue (tableSearchQueue):
// every write that adds, changes or removes a message's text, or a user's
// or room's names, puts a row in the queue in its own batch, so the store
// never holds a change the queue does not. After the batch is committed,
// the write applies its rows (searchIndex.apply) before it returns: it
// reads each message, user or room as the store holds it now and indexes
// or unindexes it; searches see it at once. The rows are deleted when
// bleve has the change on disk. A crash at any moment leaves at worst rows
// whose changes the index may or may not have: opening the store applies
// them again (applySearchQueue), which is harmless since applying reads
// the current state. Nothing is rebuilt but an index that is missing (a
// new one, or one deleted by hand).

// tableSearchQueue holds the ids of the messages whose text changed since
// the search index last took them.
const tableSearchQueue = "search_queue"

func searchQueueKey(seq store.MessageID) key { return tuple(tableSearchQueue).asc(seq) }

// searchQueueRow names the message, the user or the room a queue row is
// about.
type searchQueueRow struct {
	Message *store.MessageID `json:"m,omitempty"`
	User    string           `json:"u,omitempty"`
	Room    string           `json:"r,omitempty"`
}

// searchIndex is the store's bleve index.
type searchIndex struct {
	idx bleve.Index
	mu  sync.Mutex // held by the one application under way (apply)
	// waiting are the batches whose rows no application has taken yet.
	waitingMu sync.Mutex
	waiting   []*searchApply
}

// searchDoc is a message's document in the index.
type searchDoc struct {
	Room   string `json:"room"`
	Author string `json:"author"`
	Words  string `json:"words"`
	Order  string `json:"order"`
	// Micros is the message's time in Unix microseconds, exact in a
	// float64: bleve answers a numeric range from a few terms of each
	// precision, where a range of order would list every message's.
	Micros float64 `json:"micros"`
}

// The analyzer of the words field: the words are store.Terms already, one
// space apart.
const wordsAnalyzer = "chatql_words"

// searchMapping maps searchDoc: exact keywords, and the words with their
// positions (for phrases).
func searchMapping() (mapping.IndexMapping, error) {
	im := bleve.NewIndexMapping()
	if err := im.AddCustomAnalyzer(wordsAnalyzer, map[string]any{"type": custom.Name, "tokenizer": whitespace.Name}); err != nil {
		return nil, err
	}
	keywordField := func(docValues bool) *mapping.FieldMapping {
		f := bleve.NewKeywordFieldMapping()
		f.Store, f.IncludeInAll, f.DocValues = false, false, docValues
		return f
	}
	words := bleve.NewTextFieldMapping()
	words.Analyzer, words.Store, words.IncludeInAll, words.DocValues = wordsAnalyzer, false, false, false
	doc := bleve.NewDocumentStaticMapping()
	doc.AddFieldMappingsAt("room", keywordField(false))
	doc.AddFieldMappingsAt("author", keywordField(false))
	doc.AddFieldMappingsAt("order", keywordField(true))
	doc.AddFieldMappingsAt("words", words)
	micros := bleve.NewNumericFieldMapping()
	micros.Store, micros.IncludeInAll, micros.DocValues = false, false, false
	doc.AddFieldMappingsAt("micros", micros)
	prefixes := bleve.NewTextFieldMapping()
	prefixes.Analyzer, prefixes.Store, prefixes.IncludeInAll, prefixes.DocValues, prefixes.IncludeTermVectors = wordsAnalyzer, false, false, false, false
	doc.AddFieldMappingsAt("prefixes", prefixes)
	doc.AddFieldMappingsAt("kind", keywordField(false))
	im.DefaultMapping = doc
	im.DefaultAnalyzer = keyword.Name
	im.StoreDynamic, im.IndexDynamic, im.DocValuesDynamic = false, false, false
	return im, nil
}

// searchDir is where the search index of the store in dir lives: beside
// it, so that pebble's directory holds pebble's files only.
func searchDir(dir string) string { return filepath.Clean(dir) + "-search" }

// openSearch opens the index in dir and brings it
// up to the store: a new index is built from every message, an existing
// one takes what the queue holds.
func (db *DB) openSearch(dir string) error {
	im, err := searchMapping()
	if err != nil {
		return err
	}
	var idx bleve.Index
	fresh := true
	// unsafe_batch: a batch returns once searches see it, without waiting
	// for it to be on disk, which the search queue's rows stand for until
	// then (applySearchRows).
	config := map[string]any{"unsafe_batch": true}
	if _, statErr := os.Stat(dir); statErr == nil {
		fresh = false
		idx, err = bleve.OpenUsing(dir, config)
	} else {
		idx, err = bleve.NewUsing(dir, im, scorch.Name, scorch.Name, config)
	}
	if err != nil {
		return fmt.Errorf("opening the search index in %q: %w", dir, err)
	}
	db.search = &searchIndex{idx: idx}
	if fresh {
		err = db.indexEveryMessage()
	}
	if err == nil {
		err = db.applySearchQueue()
	}
	if err != nil {
		return errors.Join(err, idx.Close())
	}
	return nil
}

// indexEveryMessage indexes every message of the store, in batches: the
// build of a new index. The queue's rows are applied after it.
func (db *DB) indexEveryMessage() error {
	const perBatch = 1000
	p := tuple(tableMessagesByID)
	batch := db.search.idx.NewBatch()
	flush := func() error {
		if batch.Size() == 0 {
			return nil
		}
		err := db.search.idx.Batch(batch)
		batch.Reset()
		return err
	}
	err := db.scan(context.Background(), p, p.end(), false, func(k, v []byte) (bool, error) {
		row, err := decode[indexRow](v)
		if err != nil {
			return false, err
		}
		id, err := store.MessageIDFromSortKey(k[len(p):])
		if err != nil {
			return false, err
		}
		if m := row.message(row.Room, id); searchable(m) {
			if err := batch.Index(id.String(), newSearchDoc(m)); err != nil {
				return false, err
			}
		}
		if batch.Size() >= perBatch {
			return true, flush()
		}
		return true, nil
	})
	for _, table := range []string{tableUsers, tableChatRooms} {
		if err != nil {
			break
		}
		p := tuple(table)
		err = db.scan(context.Background(), p, p.end(), false, func(k, v []byte) (bool, error) {
			name, _, err := parseStr(k[len(p):])
			if err != nil {
				return false, err
			}
			if table == tableUsers {
				err = db.indexDirectory(batch, name, "")
			} else {
				err = db.indexDirectory(batch, "", name)
			}
			if err == nil && batch.Size() >= perBatch {
				err = flush()
			}
			return err == nil, err
		})
	}
	if err == nil {
		err = flush()
	}
	if err != nil {
		return fmt.Errorf("building the search index: %w", err)
	}
	return nil
}

var _ store.Directory = (*DB)(nil)

// SearchUsers looks up each word's prefix among the users' prefixes.
func (db *DB) SearchUsers(ctx context.Context, words []string, limit int) ([]store.UserRef, error) {
	ids, err := db.searchDirectory(ctx, "user", words, limit)
	if err != nil {
		return nil, fmt.Errorf("searching users: %w", err)
	}
	out := []store.UserRef{}
	for _, id := range ids {
		row, found, err := getRow[userRow](db, userKey(strings.TrimPrefix(id, "user/")))
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
	ids, err := db.searchDirectory(ctx, "room", words, limit)
	if err != nil {
		return nil, fmt.Errorf("searching rooms: %w", err)
	}
	out := []store.Room{}
	for _, id := range ids {
		row, found, err := getRow[roomRow](db, roomKey(strings.TrimPrefix(id, "room/")))
		if err != nil {
			return nil, err
		}
		if found && store.RoomKind(row.Kind) != store.PrivateGroup && store.BeginsWords(words, row.Name, row.Banner) {
			out = append(out, row.room())
		}
	}
	return out, nil
}

// searchDirectory returns the ids of up to limit documents of kind holding
// every word's prefix, by id.
func (db *DB) searchDirectory(ctx context.Context, kind string, words []string, limit int) ([]string, error) {
	if len(words) == 0 {
		return nil, store.Invalidf("a search needs words")
	}
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	if db.search == nil {
		return nil, errors.New("embedded store opened without its search index")
	}
	k := bleve.NewTermQuery(kind)
	k.SetField("kind")
	all := []query.Query{k}
	for _, w := range words {
		t := bleve.NewTermQuery(store.PrefixTerm(w))
		t.SetField("prefixes")
		all = append(all, t)
	}
	req := bleve.NewSearchRequestOptions(bleve.NewConjunctionQuery(all...), limit, 0, false)
	req.SortBy([]string{"_id"})
	res, err := db.search.idx.SearchInContext(ctx, req)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		ids[i] = h.ID
	}
	return ids, nil
}

// searchable reports whether search may find m at all.
func searchable(m store.Message) bool { return !m.Deleted && !m.System && m.Content != "" }

func newSearchDoc(m store.Message) searchDoc {
	words := store.Terms(m.Content)
	for i, w := range words {
		words[i] = store.QueryTerm(w)
	}
	return searchDoc{Room: m.Room, Author: m.Author.Login, Words: strings.Join(words, " "), Order: orderKey(m.ID), Micros: float64(m.ID.Time().UnixMicro())}
}

// orderKey is a string that sorts as id does: its sort key, in hex.
func orderKey(id store.MessageID) string {
	sk := id.SortKey()
	return hex.EncodeToString(sk[:])
}

// queuedSearch is a row of the search queue.
type queuedSearch struct {
	key key
	row searchQueueRow
}

// queueSearch adds a row to b's search queue for the message id.
func (b *batch) queueSearch(id store.MessageID) {
	b.queue(searchQueueRow{Message: &id})
}

// queueDirectory adds a row to b's search queue for the user login or the
// room (one of them).
func (b *batch) queueDirectory(login, room string) {
	b.queue(searchQueueRow{User: login, Room: room})
}

func (b *batch) queue(row searchQueueRow) {
	k := searchQueueKey(store.NewMessageID())
	b.set(k, row)
	b.searched = append(b.searched, queuedSearch{k, row})
}

// The documents of the directory: a user's or a public room's prefixes
// (store.Prefixes), with ids that no message's can be.
type directoryDoc struct {
	Kind     string `json:"kind"`
	Prefixes string `json:"prefixes"`
}

func userDocID(login string) string { return "user/" + login }
func roomDocID(name string) string  { return "room/" + name }

// indexDirectory adds to batch the document of the user login or the
// room, as the store holds it now, or its removal.
func (db *DB) indexDirectory(batch *bleve.Batch, login, room string) error {
	if login != "" {
		row, found, err := getRow[userRow](db, userKey(login))
		if err != nil {
			return err
		}
		if !found || row.Deleted {
			batch.Delete(userDocID(login))
			return nil
		}
		return batch.Index(userDocID(login), directoryDoc{Kind: "user", Prefixes: strings.Join(store.Prefixes(login, row.Firstname, row.Lastname), " ")})
	}
	row, found, err := getRow[roomRow](db, roomKey(room))
	if err != nil {
		return err
	}
	if !found || store.RoomKind(row.Kind) == store.PrivateGroup {
		batch.Delete(roomDocID(room))
		return nil
	}
	return batch.Index(roomDocID(room), directoryDoc{Kind: "room", Prefixes: strings.Join(store.Prefixes(room, row.Banner), " ")})
}

// applySearchQueue applies every row of the queue: what the writes
// before the store last closed (or died) left there.
func (db *DB) applySearchQueue() error {
	var rows []queuedSearch
	p := tuple(tableSearchQueue)
	err := db.scan(context.Background(), p, p.end(), false, func(k, v []byte) (bool, error) {
		row, err := decode[searchQueueRow](v)
		rows = append(rows, queuedSearch{key(append([]byte(nil), k...)), row})
		return err == nil, err
	})
	for err == nil && len(rows) > 0 {
		n := min(len(rows), 512)
		err = db.applySearchRows(rows[:n])
		rows = rows[n:]
	}
	return err
}

// A searchApply is the rows one committed batch queued, waiting to be
// applied, and where its outcome goes.
type searchApply struct {
	rows []queuedSearch
	done chan error
}

// apply applies the rows a batch queued, after its commit, together with
// those of every batch waiting meanwhile: one application runs at a time,
// and the next takes every batch that queued during it, so concurrent
// writes share bleve's persisting as they share pebble's fsyncs.
//
// An application reads each message as the store holds it when it runs,
// which is after the commits of every batch it applies: so whatever the
// order of applications, the last one to read a message read its latest
// change, and the index ends with it. No application scans the queue: a
// row is applied by the write that queued it, or at the next open.
func (s *searchIndex) apply(db *DB, rows []queuedSearch) error {
	mine := &searchApply{rows: rows, done: make(chan error, 1)}
	s.waitingMu.Lock()
	s.waiting = append(s.waiting, mine)
	s.waitingMu.Unlock()

	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case err := <-mine.done: // applied by the application before
		return err
	default:
	}
	s.waitingMu.Lock()
	taken := s.waiting
	s.waiting = nil
	s.waitingMu.Unlock()
	var all []queuedSearch
	for _, a := range taken {
		all = append(all, a.rows...)
	}
	err := db.applySearchRows(all)
	for _, a := range taken {
		a.done <- err
	}
	return <-mine.done
}

// applySearchRows indexes what rows name as the store holds it now, waits
// for bleve to have it on disk, then deletes the rows.
func (db *DB) applySearchRows(rows []queuedSearch) error {
	batch := db.search.idx.NewBatch()
	ids := map[store.MessageID]bool{}
	for _, q := range rows {
		if q.row.Message == nil {
			if err := db.indexDirectory(batch, q.row.User, q.row.Room); err != nil {
				return err
			}
			continue
		}
		id := *q.row.Message
		if ids[id] {
			continue
		}
		ids[id] = true
		row, found, err := getRow[indexRow](db, messageByIDKey(id))
		if err != nil {
			return err
		}
		if m := row.message(row.Room, id); found && searchable(m) {
			err = batch.Index(id.String(), newSearchDoc(m))
		} else {
			batch.Delete(id.String())
		}
		if err != nil {
			return err
		}
	}
	// Batch returns once searches see the batch (unsafe_batch); the
	// callback runs once it is on disk, and only then deletes the rows.
	// (Close closes the index first, so no callback comes after the
	// store's close; a batch the index had not persisted by then stays
	// queued, for the next open.)
	batch.SetPersistedCallback(func(err error) {
		if err != nil {
			return
		}
		done := db.pdb.NewBatch()
		defer done.Close()
		for _, q := range rows {
			if done.Delete(q.key, nil) != nil {
				return
			}
		}
		// Unsynced: a row a crash brings back is applied again.
		_ = done.Commit(nil)
	})
	if err := db.search.idx.Batch(batch); err != nil {
		return fmt.Errorf("updating the search index: %w", err)
	}
	return nil
}

// searchWindows are the spans before the cursor a search looks at, each
// while the one before found too few; 0 is the whole history.
var searchWindows = []time.Duration{24 * time.Hour, 7 * 24 * time.Hour, 60 * 24 * time.Hour, 0}

// SearchMessages asks the index for the newest documents matching q and
// reads the messages found from the store, as they are now.
func (db *DB) SearchMessages(ctx context.Context, q store.MessageQuery) (store.SearchPage, error) {
	if q.Empty() {
		return store.SearchPage{}, store.Invalidf("a search needs words")
	}
	end, err := db.begin(ctx)
	if err != nil {
		return store.SearchPage{}, err
	}
	defer end()
	if db.search == nil {
		return store.SearchPage{}, errors.New("embedded store opened without its search index")
	}
	if len(q.Conversations) == 0 || q.Limit <= 0 {
		return store.SearchPage{}, nil
	}

	field := func(q *query.TermQuery, f string) query.Query { q.SetField(f); return q }
	rooms := make([]query.Query, 0, len(q.Conversations))
	for _, c := range q.Conversations {
		rooms = append(rooms, field(bleve.NewTermQuery(c), "room"))
	}
	all := []query.Query{bleve.NewDisjunctionQuery(rooms...)}
	for _, t := range q.Terms {
		all = append(all, field(bleve.NewTermQuery(store.QueryTerm(t)), "words"))
	}
	for _, p := range q.Phrases {
		terms := make([]string, len(p))
		for i, w := range p {
			terms[i] = store.QueryTerm(w)
		}
		all = append(all, bleve.NewPhraseQuery(terms, "words"))
	}
	if q.Author != "" {
		all = append(all, field(bleve.NewTermQuery(q.Author), "author"))
	}
	// Newest first costs bleve a sort of every match, so the search looks
	// at the latest day before the cursor first, and widens the window
	// only while the page is not full: a common word in a long history
	// sorts a day's matches, not the history's.
	// The range is to the cursor's microsecond, inclusive: the messages
	// of that microsecond not before the cursor are dropped below, and a
	// few more hits than the page are asked for them.
	const slack = 8
	newest := time.Now().Add(time.Hour) // a clock running ahead may have written past now
	var upper *float64
	if !q.Before.IsZero() {
		newest = q.Before.Time()
		u := float64(newest.UnixMicro())
		upper = &u
	}
	var res *bleve.SearchResult
	for _, window := range searchWindows {
		var lower *float64
		if window > 0 {
			l := float64(newest.Add(-window).UnixMicro())
			lower = &l
		}
		inclusive := true
		r := bleve.NewNumericRangeInclusiveQuery(lower, upper, &inclusive, &inclusive)
		r.SetField("micros")
		req := bleve.NewSearchRequestOptions(bleve.NewConjunctionQuery(append(slices.Clone(all), r)...), q.Limit+slack, 0, false)
		req.SortBy([]string{"-order"})
		if res, err = db.search.idx.SearchInContext(ctx, req); err != nil {
			return store.SearchPage{}, fmt.Errorf("searching messages: %w", err)
		}
		if len(res.Hits) >= q.Limit+slack {
			break
		}
	}
	page := store.SearchPage{Messages: make([]store.Message, 0, len(res.Hits))}
	for _, hit := range res.Hits {
		id, err := store.ParseMessageID(hit.ID)
		if err != nil {
			return store.SearchPage{}, fmt.Errorf("search index holds %q: %w", hit.ID, err)
		}
		if !q.Before.IsZero() && id.Compare(q.Before) >= 0 || len(page.Messages) == q.Limit {
			continue
		}
		row, found, err := getRow[indexRow](db, messageByIDKey(id))
		if err != nil {
			return store.SearchPage{}, err
		}
		// A message the index has not let go of yet (its room's deletion
		// is being applied) is not found.
		if m := row.message(row.Room, id); found && searchable(m) {
			page.Messages = append(page.Messages, m)
		}
	}
	return page, nil
}
