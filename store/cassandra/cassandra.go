// Package cassandra is the production backend of the chat: KillrChat's data
// model (schema.cql) on Apache Cassandra through gocql, with lightweight
// transactions (LWTs) exactly where the model needs a compare-and-set.
//
// Every Store method maps onto a fixed, small number of partition reads and
// writes. Queries are package constants, so the driver prepares each once.
package cassandra

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/gocql/gocql"
	"github.com/killrchat/chatql/store"
)

// DB is the Cassandra backend. It is safe for concurrent use.
type DB struct {
	session *gocql.Session
	serial  gocql.SerialConsistency

	listed *listedToday
	hours  listedHours
	log    *slog.Logger // nil: silent
	// moves moves public rooms in their participants' inbox orders, a few
	// moves at a time per room (roommoves.go).
	moves *roomMoves

	// Joins whose outcome a timeout left unknown are settled in the
	// background (settleJoin) until Close.
	closeMu  sync.Mutex
	closed   bool
	closing  chan struct{}
	settling sync.WaitGroup
}

var (
	_ store.Store         = (*DB)(nil)
	_ store.Conversations = (*DB)(nil)
	_ store.MessageIndex  = (*DB)(nil)
)

// Open connects to the cluster, creates the keyspace if it is missing,
// and applies the schema migrations it lacks.
// ctx bounds the schema work; cfg.ConnectTimeout bounds connecting.
func Open(ctx context.Context, cfg Config) (*DB, error) {
	s, err := cfg.parse()
	if err != nil {
		return nil, err
	}
	// The keyspace must exist before a session can use it, so a first,
	// keyspace-less session creates it.
	boot, err := s.cluster("").CreateSession()
	if err != nil {
		return nil, fmt.Errorf("cassandra: connect to %s: %w", strings.Join(s.Hosts, ","), err)
	}
	err = createKeyspace(ctx, boot, s)
	boot.Close()
	if err != nil {
		return nil, err
	}
	session, err := s.cluster(s.Keyspace).CreateSession()
	if err != nil {
		return nil, fmt.Errorf("cassandra: connect to keyspace %s: %w", s.Keyspace, err)
	}
	if err := migrate(ctx, session, s.Keyspace); err != nil {
		session.Close()
		return nil, err
	}
	db := &DB{session: session, serial: s.serial, listed: newListedToday(), log: cfg.Log, closing: make(chan struct{})}
	db.moves = newRoomMoves(db.moveRoom)
	return db, nil
}

// Close closes the session. Every write was done before its call returned,
// so nothing is left to write. Calling it again does nothing.
func (db *DB) Close() error {
	db.closeMu.Lock()
	if !db.closed {
		db.closed = true
		close(db.closing)
	}
	db.closeMu.Unlock()
	db.settling.Wait()
	db.session.Close()
	return nil
}

// query returns q bound to ctx. A read is retried elsewhere (see
// retryElsewhere), and so is a write that names its own timestamp (USING
// TIMESTAMP): applied twice, it is the same cell with the same timestamp,
// which cannot undo a later write.
func (db *DB) query(ctx context.Context, stmt string, args ...any) *gocql.Query {
	q := db.session.Query(stmt, args...).WithContext(ctx)
	if strings.HasPrefix(stmt, "SELECT ") || strings.Contains(stmt, "USING TIMESTAMP") {
		q = q.Idempotent(true).RetryPolicy(retryElsewhere)
	}
	return q
}

// write returns the write stmt bound to ctx, retried elsewhere like a read:
// for writes that land the same however often they do, and that nothing
// changes later but a delete of the whole row (a message's copies, keyed by
// its id; an event of a log; the listing of a day; deleting such rows).
func (db *DB) write(ctx context.Context, stmt string, args ...any) *gocql.Query {
	return db.session.Query(stmt, args...).WithContext(ctx).Idempotent(true).RetryPolicy(retryElsewhere)
}

// retryElsewhere tries a failed request again on the next replica, twice at
// most: a node that dies (kill -9, a lost host) fails the requests it was
// coordinating, and a read, or an idempotent write (see query and write),
// may be tried elsewhere safely. Other writes are not retried: one retried
// after it applied could land after a later write and undo it (a set's
// element added back after its removal). A lightweight transaction settles
// its unknown outcome instead (lwt.go), and a failed write is the client's
// to retry (posts under their client message id).
var retryElsewhere = &gocql.SimpleRetryPolicy{NumRetries: 2}

// serialRead returns a read of stmt at serial consistency, which sees every
// committed LWT and completes any in flight.
func (db *DB) serialRead(ctx context.Context, stmt string, args ...any) *gocql.Query {
	return db.query(ctx, stmt, args...).Consistency(gocql.Consistency(db.serial))
}

// userUDT is the CQL type user. It converts to and from store.UserRef,
// whose fields it shares.
type userUDT struct {
	Login     string `cql:"login"`
	Firstname string `cql:"firstname"`
	Lastname  string `cql:"lastname"`
}

func toUDTs(refs []store.UserRef) []userUDT {
	out := make([]userUDT, len(refs))
	for i, r := range refs {
		out[i] = userUDT(r)
	}
	return out
}

// fromUDTs returns the participants sorted by login, as store.Room has them.
func fromUDTs(us []userUDT) []store.UserRef {
	out := make([]store.UserRef, len(us))
	for i, u := range us {
		out[i] = store.UserRef(u)
	}
	slices.SortFunc(out, func(a, b store.UserRef) int { return strings.Compare(a.Login, b.Login) })
	return out
}
