package cassandra

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gocql/gocql"

	"github.com/killrchat/chatql/store"
)

var _ store.MessageSearch = (*DB)(nil)

// MaxSearchReads bounds the partition reads of one SearchMessages: the
// listing of each conversation's days, then one read per (conversation,
// day) holding messages. A search stops after the day during which it
// reaches the bound and says where to go on (SearchPage.Resume), so a
// search costs at most MaxSearchReads plus one day's partitions, whatever
// the history holds.
const MaxSearchReads = 256

// searchParallelism is how many partitions one search reads at once.
const searchParallelism = 8

// searchTerms are the terms SAI finds m by (schema_v23.cql): none for a
// system message, which search never finds.
func searchTerms(m store.Message) []string {
	if m.System || m.Deleted {
		return nil
	}
	return store.IndexTerms(m.Author.Login, m.Content)
}

// SearchMessages reads the conversations' days newest first and, in each
// day, asks SAI for the messages of each conversation's partition that
// hold every term, in the partition's order (newest first): the terms'
// index restricted to one partition, so each read touches one replica set
// and never scans the cluster. Phrases are checked on the content read
// (SAI knows no positions).
//
// The alternative, one SAI query over the whole table with the caller's
// conversations filtered after, would read every node and return matches
// in token order, not newest first; a deployment past this one's bound
// (MaxSearchReads) wants a search engine fed from the event logs instead.
func (db *DB) SearchMessages(ctx context.Context, q store.MessageQuery) (store.SearchPage, error) {
	if q.Empty() {
		return store.SearchPage{}, store.Invalidf("a search needs words")
	}
	if len(q.Conversations) == 0 || q.Limit <= 0 {
		return store.SearchPage{}, nil
	}
	fail := func(err error) (store.SearchPage, error) {
		return store.SearchPage{}, fmt.Errorf("cassandra: search messages: %w", err)
	}
	var reads atomic.Int64

	// The days of each conversation, from the cursor's back.
	days := map[store.Bucket][]string{}
	var mu sync.Mutex
	fo := newFanout(searchParallelism)
	for _, c := range q.Conversations {
		fo.Go(func() error {
			reads.Add(1)
			listed, err := db.listedBuckets(ctx, roomBuckets, c)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			for _, b := range store.NewestFirstBuckets(listed, q.Before) {
				days[b] = append(days[b], c)
			}
			return nil
		})
	}
	if err := fo.Wait(); err != nil {
		return fail(err)
	}
	order := make([]store.Bucket, 0, len(days))
	for b := range days {
		order = append(order, b)
	}
	slices.Sort(order)
	slices.Reverse(order)

	terms := q.IndexTerms()
	cql := selectSearch(len(terms), !q.Before.IsZero())
	var found []store.Message
	for _, day := range order {
		fo := newFanout(searchParallelism)
		for _, c := range days[day] {
			fo.Go(func() error {
				reads.Add(1)
				msgs, err := db.searchPartition(ctx, cql, c, day, terms, q)
				mu.Lock()
				found = append(found, msgs...)
				mu.Unlock()
				return err
			})
		}
		if err := fo.Wait(); err != nil {
			return fail(err)
		}
		if len(found) >= q.Limit {
			break
		}
		if reads.Load() >= MaxSearchReads && day != order[len(order)-1] {
			sortNewestFirst(found)
			return store.SearchPage{Messages: found, Resume: store.MinMessageID(day.Start())}, nil
		}
	}
	sortNewestFirst(found)
	if len(found) > q.Limit {
		found = found[:q.Limit]
	}
	return store.SearchPage{Messages: found}, nil
}

func sortNewestFirst(msgs []store.Message) {
	slices.SortFunc(msgs, func(a, b store.Message) int { return b.ID.Compare(a.ID) })
}

// selectSearch is the read of one partition's messages holding n terms,
// after a cursor or not.
func selectSearch(n int, cursor bool) string {
	var b strings.Builder
	b.WriteString(`SELECT ` + messageColumns + ` FROM chat_room_messages WHERE room_name = ? AND time_bucket = ?`)
	for range n {
		b.WriteString(` AND search_terms CONTAINS ?`)
	}
	if cursor {
		b.WriteString(` AND message_id < ?`)
	}
	b.WriteString(` LIMIT ?`)
	return b.String()
}

// searchPartition reads up to q.Limit messages of one partition that match
// q, newest first, paging on while phrases leave a page short.
func (db *DB) searchPartition(ctx context.Context, cql, room string, day store.Bucket, terms []string, q store.MessageQuery) ([]store.Message, error) {
	var out []store.Message
	before := q.Before
	for len(out) < q.Limit {
		args := []any{room, int(day)}
		for _, t := range terms {
			args = append(args, t)
		}
		query := cql
		if !before.IsZero() {
			if q.Before.IsZero() {
				query = selectSearch(len(terms), true)
			}
			args = append(args, gocql.UUID(before))
		}
		want := q.Limit - len(out)
		args = append(args, want)
		iter := db.query(ctx, query, args...).Iter()
		read := roomRows(room)
		rows := 0
		for {
			m, ok, more := read(iter)
			if !more {
				break
			}
			rows++
			before = m.ID
			if ok && !m.Deleted && !m.System && (len(q.Phrases) == 0 || q.Matches(m.Content)) {
				out = append(out, m)
			}
		}
		if err := iter.Close(); err != nil {
			return nil, fmt.Errorf("room %q, day %d: %w", room, day, err)
		}
		if rows < want {
			break
		}
	}
	return out, nil
}

var _ store.Directory = (*DB)(nil)

// roomPrefixes are the prefixes r is found by: none for a private group.
func roomPrefixes(r store.Room) []string {
	if r.Kind == store.PrivateGroup {
		return nil
	}
	return store.Prefixes(r.Name, r.Banner)
}

// directoryOverRead is how many more rows than asked a directory search
// reads: it keeps those whose words really begin with the words typed
// (a prefix is indexed up to store.MaxPrefix runes).
const directoryOverRead = 2

// selectDirectory is the search of table by n prefixes: one SAI query
// over the table (a directory has no partition to keep to), LIMIT bound.
func selectDirectory(columns, table string, n int) string {
	var b strings.Builder
	b.WriteString(`SELECT ` + columns + ` FROM ` + table + ` WHERE`)
	for i := range n {
		if i > 0 {
			b.WriteString(` AND`)
		}
		b.WriteString(` search_prefixes CONTAINS ?`)
	}
	b.WriteString(` LIMIT ?`)
	return b.String()
}

func prefixArgs(words []string, limit int) []any {
	args := make([]any, 0, len(words)+1)
	for _, w := range words {
		args = append(args, store.PrefixTerm(w))
	}
	return append(args, limit*directoryOverRead)
}

// SearchUsers asks the users' prefix index: one query over the cluster,
// answered by each node's index (SAI), at most limit*2 rows.
func (db *DB) SearchUsers(ctx context.Context, words []string, limit int) ([]store.UserRef, error) {
	if len(words) == 0 {
		return nil, store.Invalidf("a search needs words")
	}
	iter := db.query(ctx, selectDirectory(`login, firstname, lastname`, `users`, len(words)), prefixArgs(words, limit)...).Iter()
	out := []store.UserRef{}
	var u store.UserRef
	for iter.Scan(&u.Login, &u.Firstname, &u.Lastname) {
		if store.BeginsWords(words, u.Login, u.Firstname, u.Lastname) {
			out = append(out, u)
		}
		u = store.UserRef{}
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: search users: %w", err)
	}
	slices.SortFunc(out, func(a, b store.UserRef) int { return strings.Compare(a.Login, b.Login) })
	return out[:min(len(out), limit)], nil
}

// SearchRooms asks the public rooms' prefix index, as SearchUsers does.
func (db *DB) SearchRooms(ctx context.Context, words []string, limit int) ([]store.Room, error) {
	if len(words) == 0 {
		return nil, store.Invalidf("a search needs words")
	}
	iter := db.query(ctx, selectDirectory(`room_name`, `chat_rooms`, len(words)), prefixArgs(words, limit)...).Iter()
	var names []string
	var name string
	for iter.Scan(&name) {
		names = append(names, name)
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: search rooms: %w", err)
	}
	slices.Sort(names)
	out := []store.Room{}
	for _, n := range names {
		if len(out) == limit {
			break
		}
		r, err := db.Room(ctx, n)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cassandra: search rooms: %w", err)
		}
		if r.Kind != store.PrivateGroup && store.BeginsWords(words, r.Name, r.Banner) {
			out = append(out, r)
		}
	}
	return out, nil
}
