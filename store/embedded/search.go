package embedded

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
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
// the write hands its rows to the indexer (searchIndex.run), a goroutine
// that applies the rows in batches, in the order they were committed: it
// reads each message, user or room as the store holds it now and indexes
// or unindexes it. The write answers without waiting for it, unless the
// indexer is more than searchMaxLag rows behind: then it waits until the
// indexer is back within the bound, so the lag never grows past it.
//
// A search first waits for the indexer to apply every row committed before
// the search began (searchIndex.caughtUp): a post, an edit or a delete that
// answered before a search began is in effect for it (read-your-writes),
// and a search waits for at most searchMaxLag rows of indexing. Each hit
// is then read from the store and checked against the query again
// (MessageQuery.Matches), so a change that lands while the search runs
// never shows text the message no longer has.
//
// A queue row is deleted when bleve has its change on disk. A crash at any
// moment leaves at worst rows whose changes the index may or may not have:
// opening the store applies them again (applySearchQueue), which is
// harmless since applying reads the current state. Nothing is rebuilt but
// an index that is missing (a new one, or one deleted by hand).

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

// searchIndex is the store's bleve index and the indexer that feeds it.
type searchIndex struct {
	idx bleve.Index

	// mu guards what follows: the rows committed but not yet applied, in
	// the order their batches were committed, and the positions of the
	// queue (counted in rows since the store opened) reached by the writes
	// and by the indexer.
	mu      sync.Mutex
	pending []queuedSearch
	queued  uint64 // rows committed
	applied uint64 // rows applied: the first applied rows of those committed
	// failed is the last application's error, nil once one succeeds.
	failed error
	// progress is closed, and replaced, whenever applied or failed
	// changes: what searches and held-back writes wait on.
	progress chan struct{}
	// maxLag is the most rows a write leaves unapplied when it answers
	// (searchMaxLag; tests lower it).
	maxLag uint64

	wake chan struct{} // rows are pending (buffered: one wake-up is enough)
	stop chan struct{} // closed by close
	done chan struct{} // closed when the indexer has stopped

	// hold is held by the indexer while it takes and applies a batch: a
	// test holds it to stop the indexer between batches.
	hold sync.Mutex
	// waiting, if set (tests), is called when a search or a write starts
	// waiting for the indexer, with what waits: "search" or "write".
	waiting func(what string)
}

// searchMaxLag is the most rows of the search queue the index may be
// behind when a write answers: past it, writes wait for the indexer. It is
// also the most a search waits for (it waits for the rows committed before
// it began): at the indexer's pace here (BENCHMARKS.md), well under a
// second.
const searchMaxLag = 1024

// searchBatchRows is the most rows the indexer applies in one bleve batch.
const searchBatchRows = 1024

// searchRetry is how long the indexer waits before retrying a batch that
// failed.
const searchRetry = time.Second

func newSearchIndex(idx bleve.Index) *searchIndex {
	return &searchIndex{idx: idx, progress: make(chan struct{}), maxLag: searchMaxLag,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// enqueue hands the indexer the rows of a committed batch, and returns
// once the index is at most maxLag rows behind: then the write answers.
// The write is in the store either way; an error says the index is
// failing (the queue keeps the rows for the next open).
func (s *searchIndex) enqueue(rows []queuedSearch) error {
	s.mu.Lock()
	s.pending = append(s.pending, rows...)
	s.queued += uint64(len(rows))
	mine := s.queued
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	// Wait for the rows beyond the lag allowed to be applied: those up to
	// this write's last row, less maxLag.
	if mine <= s.maxLag {
		return nil
	}
	return s.await(context.Background(), mine-s.maxLag, "write")
}

// caughtUp returns once the index has every row committed before the call:
// what a search waits for, so that it sees every write that answered
// before it began (a post, an edit, a delete), however far the indexer
// lags.
func (s *searchIndex) caughtUp(ctx context.Context) error {
	s.mu.Lock()
	target := s.queued
	s.mu.Unlock()
	return s.await(ctx, target, "search")
}

// await returns once the indexer has applied position rows, or fails.
func (s *searchIndex) await(ctx context.Context, position uint64, what string) error {
	told := false
	for {
		s.mu.Lock()
		applied, failed, progress := s.applied, s.failed, s.progress
		s.mu.Unlock()
		switch {
		case applied >= position:
			return nil
		case failed != nil:
			return fmt.Errorf("the search index is failing (the search queue keeps the changes): %w", failed)
		}
		if !told && s.waiting != nil {
			s.waiting(what)
		}
		told = true
		select {
		case <-progress:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return errClosed
		}
	}
}

// run is the indexer: it applies the pending rows in batches of up to
// searchBatchRows, in the order they were committed, until close; then it
// applies what is left, so the next open has nothing to replay.
func (s *searchIndex) run(db *DB) {
	defer close(s.done)
	for {
		select {
		case <-s.wake:
		case <-s.stop:
			for s.applyPending(db) {
			}
			return
		}
		for s.applyPending(db) {
		}
		s.mu.Lock()
		failed := s.failed
		s.mu.Unlock()
		if failed != nil {
			slog.Error("search index: applying the search queue failed; retrying", "err", failed)
			select {
			case <-time.After(searchRetry):
				s.wakeUp()
			case <-s.stop:
				return
			}
		}
	}
}

func (s *searchIndex) wakeUp() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// applyPending applies one batch of the pending rows, reporting whether it
// applied any (false when none are pending or the batch failed).
func (s *searchIndex) applyPending(db *DB) bool {
	s.hold.Lock()
	defer s.hold.Unlock()
	s.mu.Lock()
	rows := s.pending[:min(len(s.pending), searchBatchRows)]
	s.mu.Unlock()
	if len(rows) == 0 {
		return false
	}
	err := db.applySearchRows(s.idx, rows)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failed = err
	if err == nil {
		s.pending = s.pending[len(rows):]
		if len(s.pending) == 0 {
			s.pending = nil
		}
		s.applied += uint64(len(rows))
	}
	close(s.progress)
	s.progress = make(chan struct{})
	return err == nil
}

// close stops the indexer, once it has applied what is pending.
func (s *searchIndex) close() {
	close(s.stop)
	<-s.done
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
	db.search = newSearchIndex(idx)
	if fresh {
		err = db.indexEveryMessage()
	}
	if err == nil {
		err = db.applySearchQueue()
	}
	if err != nil {
		return errors.Join(err, idx.Close())
	}
	go db.search.run(db)
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
	if err := db.search.caughtUp(ctx); err != nil {
		return nil, err
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
		err = db.applySearchRows(db.search.idx, rows[:n])
		rows = rows[n:]
	}
	return err
}

// applySearchRows indexes what rows name as the store holds it now, waits
// for bleve to have it on disk, then deletes the rows.
func (db *DB) applySearchRows(idx bleve.Index, rows []queuedSearch) error {
	batch := idx.NewBatch()
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
	if err := idx.Batch(batch); err != nil {
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
	if err := db.search.caughtUp(ctx); err != nil {
		return store.SearchPage{}, err
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
		// A message changed since the index took it (an edit, a delete, a
		// room's deletion the indexer is applying) is found by what it
		// holds now, or not at all.
		if m := row.message(row.Room, id); found && searchable(m) && q.Matches(m.Content) && (q.Author == "" || m.Author.Login == q.Author) {
			page.Messages = append(page.Messages, m)
		}
	}
	return page, nil
}
