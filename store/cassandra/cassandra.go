// Package cassandra is the production backend of the chat: KillrChat's data
// model (schema.cql) on Apache Cassandra through gocql, with lightweight
// transactions (LWTs) exactly where the model needs a compare-and-set.
//
// Every Store method maps onto a fixed, small number of partition reads and
// writes. Queries are package constants, so the driver prepares each once.
package cassandra

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/chatql/store"
)

// DB is the Cassandra backend. It is safe for concurrent use.
type DB struct {
	session *gocql.Session
	serial  gocql.SerialConsistency

	listed *listedToday
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
	return &DB{session: session, serial: s.serial, listed: newListedToday()}, nil
}

// Close closes the session. Every write was done before its call returned,
// so nothing is left to write. Calling it again does nothing.
func (db *DB) Close() error {
	db.session.Close()
	return nil
}

// query returns q bound to ctx.
func (db *DB) query(ctx context.Context, stmt string, args ...any) *gocql.Query {
	return db.session.Query(stmt, args...).WithContext(ctx)
}

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

// Users.

const (
	insertUser = `INSERT INTO users (login, pass_hash, firstname, lastname, email, bio)
		VALUES (?, ?, ?, ?, ?, ?) IF NOT EXISTS`
	selectUser = `SELECT login, pass_hash, firstname, lastname, email, bio, chat_rooms
		FROM users WHERE login = ?`
	addUserRoom    = `UPDATE users SET chat_rooms = chat_rooms + ? WHERE login = ?`
	removeUserRoom = `UPDATE users SET chat_rooms = chat_rooms - ? WHERE login = ?`
)

// CreateUser stores a new account with INSERT ... IF NOT EXISTS. The new
// user is in no room yet, whatever a.ChatRooms says.
func (db *DB) CreateUser(ctx context.Context, a store.Account) error {
	q := db.query(ctx, insertUser, a.Login, a.PassHash, a.Firstname, a.Lastname, a.Email, a.Bio)
	applied, err := lwt(ctx, q, nil, func(ctx context.Context) (casOutcome, error) {
		got, err := db.readAccount(db.serialRead(ctx, selectUser, a.Login))
		switch {
		case errors.Is(err, gocql.ErrNotFound):
			return casNotApplied, nil
		case err != nil:
			return 0, err
		case bytes.Equal(got.PassHash, a.PassHash):
			// Hashes are salted: an equal one is our own write.
			return casApplied, nil
		}
		return casRejected, nil
	})
	if err != nil {
		return fmt.Errorf("cassandra: create user %q: %w", a.Login, err)
	}
	if !applied {
		return fmt.Errorf("login %q: %w", a.Login, store.ErrConflict)
	}
	return nil
}

// Account returns the account of login, password hash included.
func (db *DB) Account(ctx context.Context, login string) (store.Account, error) {
	a, err := db.readAccount(db.query(ctx, selectUser, login))
	if errors.Is(err, gocql.ErrNotFound) {
		return store.Account{}, fmt.Errorf("user %q: %w", login, store.ErrNotFound)
	}
	if err != nil {
		return store.Account{}, fmt.Errorf("cassandra: read user %q: %w", login, err)
	}
	return a, nil
}

// User returns the profile of login.
func (db *DB) User(ctx context.Context, login string) (store.User, error) {
	a, err := db.Account(ctx, login)
	return a.User, err
}

// readAccount runs selectUser. It returns gocql.ErrNotFound for no row, and
// for a row holding chat_rooms alone, which a join by a login that never
// signed up leaves behind: the INSERT of a signup always writes firstname,
// an empty string included, so only such a row has it null.
func (db *DB) readAccount(q *gocql.Query) (store.Account, error) {
	var a store.Account
	var firstname *string
	err := q.Scan(&a.Login, &a.PassHash, &firstname, &a.Lastname, &a.Email, &a.Bio, &a.ChatRooms)
	if err == nil && firstname == nil {
		err = gocql.ErrNotFound
	}
	if err != nil {
		return store.Account{}, err
	}
	a.Firstname = *firstname
	slices.Sort(a.ChatRooms)
	return a, nil
}

// Rooms.

const (
	roomColumns = `room_name, creator, creation_date, banner, participants, kind`
	insertRoom  = `INSERT INTO chat_rooms (room_name, creator, creator_login, creation_date, banner, participants, kind)
		VALUES (?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS`
	selectRoom       = `SELECT ` + roomColumns + ` FROM chat_rooms WHERE room_name = ?`
	selectRooms      = `SELECT ` + roomColumns + ` FROM chat_rooms LIMIT ?`
	selectRoomsAfter = `SELECT ` + roomColumns + ` FROM chat_rooms WHERE token(room_name) > token(?) LIMIT ?`
	joinRoom         = `UPDATE chat_rooms SET participants = participants + ? WHERE room_name = ? IF EXISTS`
	leaveRoom        = `UPDATE chat_rooms SET participants = participants - ? WHERE room_name = ?`
	deleteRoom       = `DELETE FROM chat_rooms WHERE room_name = ? IF creator_login = ? AND participants = ?`
	// selectMembership reads of the room's row the creator, the kind, and
	// the slice of the participants set that holds one login. Elements are
	// frozen users, ordered by login, then names, and a null field sorts
	// before any value (the empty string included): so the slice from
	// {login: L} to {login: L + "\x00"}, names null and both bounds
	// included, holds every element of login L and no other (logins hold
	// no NUL). On a non-frozen set, Cassandra 4.0 and later (CASSANDRA-7396)
	// build the read's column filter from the slice, so replicas return
	// only those cells, and the driver decodes no more.
	selectMembership = `SELECT creator, kind, participants[{login: ?}..{login: ?}] FROM chat_rooms WHERE room_name = ?`
	// selectRoomCondition reads what deleteRoom's condition compares.
	selectRoomCondition = `SELECT creator_login, participants FROM chat_rooms WHERE room_name = ?`
)

// maxDeleteAttempts bounds DeleteRoom's retries when participants keep
// changing under it.
const maxDeleteAttempts = 32

// CreateRoom stores a new room with INSERT ... IF NOT EXISTS, its creator as
// the first participant, then adds it to the creator's rooms and, for a
// private group, opens the creator's inbox entry with a window at CreatedAt.
// CreatedAt is kept to the millisecond, Cassandra's timestamp precision.
func (db *DB) CreateRoom(ctx context.Context, r store.Room) error {
	var kind any = gocql.UnsetValue // a public room writes no kind, not even a null
	switch r.Kind {
	case store.PublicRoom:
	case store.PrivateGroup:
		kind = string(r.Kind)
	default:
		return store.Invalidf("invalid room kind %q: a room is public or %q", r.Kind, store.PrivateGroup)
	}
	created := r.CreatedAt.Truncate(time.Millisecond)
	creator := userUDT(r.Creator)
	q := db.query(ctx, insertRoom, r.Name, creator, r.Creator.Login, created, r.Banner, []userUDT{creator}, kind)
	applied, err := lwt(ctx, q, nil, func(ctx context.Context) (casOutcome, error) {
		got, err := db.readRoom(db.serialRead(ctx, selectRoom, r.Name))
		switch {
		case errors.Is(err, gocql.ErrNotFound):
			return casNotApplied, nil
		case err != nil:
			return 0, err
		case got.Creator == r.Creator && got.CreatedAt.Equal(created) && got.Banner == r.Banner && got.Kind == r.Kind:
			return casApplied, nil
		}
		return casRejected, nil
	})
	if err != nil {
		return fmt.Errorf("cassandra: create room %q: %w", r.Name, err)
	}
	if !applied {
		return fmt.Errorf("room %q: %w", r.Name, store.ErrConflict)
	}
	// The room exists from here on: a failure below leaves it without the
	// creator's copies, which AddGroupMember of the creator repairs (see
	// there) for a group.
	fo := newFanout(2)
	fo.Go(func() error {
		if err := db.query(ctx, addUserRoom, []string{r.Name}, r.Creator.Login).Exec(); err != nil {
			return fmt.Errorf("cassandra: add room %q to user %q: %w", r.Name, r.Creator.Login, err)
		}
		return nil
	})
	if r.Kind == store.PrivateGroup {
		fo.Go(func() error {
			if err := db.openWindow(ctx, r.Name, r.Creator.Login, created); err != nil {
				return fmt.Errorf("cassandra: open the inbox entry of group %q for %q: %w", r.Name, r.Creator.Login, err)
			}
			return nil
		})
	}
	return fo.Wait()
}

// Room returns the room called name.
func (db *DB) Room(ctx context.Context, name string) (store.Room, error) {
	return db.roomAt(db.query(ctx, selectRoom, name), name)
}

// Membership reads the room's creator and kind and the participants of
// login's name, a slice of the set (see selectMembership), from the room's
// one row: a single-partition read, so it sees each join (an LWT), leave
// and delete (an LWT) of the room wholly or not at all, as Room does, at
// the same consistency. The slice holds the elements of that login only,
// checked here again, so a bound that met some other element could only
// cost a longer answer, never a wrong one.
func (db *DB) Membership(ctx context.Context, room, login string) (store.RoomMembership, error) {
	var (
		creator userUDT
		kind    string
		slice   []userUDT
	)
	err := db.query(ctx, selectMembership, login, login+"\x00", room).Scan(&creator, &kind, &slice)
	if err == nil && creator.Login == "" {
		err = gocql.ErrNotFound // see readRoom
	}
	if errors.Is(err, gocql.ErrNotFound) {
		return store.RoomMembership{}, fmt.Errorf("room %q: %w", room, store.ErrNotFound)
	}
	if err != nil {
		return store.RoomMembership{}, fmt.Errorf("cassandra: read the membership of %q in room %q: %w", login, room, err)
	}
	m := store.RoomMembership{Room: room, Kind: store.RoomKind(kind), Creator: store.UserRef(creator), Login: login}
	for _, p := range slice {
		m.Participant = m.Participant || p.Login == login
	}
	return m, nil
}

// roomAt runs the room read q and maps a missing room to store.ErrNotFound.
func (db *DB) roomAt(q *gocql.Query, name string) (store.Room, error) {
	r, err := db.readRoom(q)
	if errors.Is(err, gocql.ErrNotFound) {
		return store.Room{}, fmt.Errorf("room %q: %w", name, store.ErrNotFound)
	}
	if err != nil {
		return store.Room{}, fmt.Errorf("cassandra: read room %q: %w", name, err)
	}
	return r, nil
}

// readRoom runs a single-room read. A row without a creator is no room but
// the seed's corruption, a participant added by a plain update after a
// delete. This backend never writes one; it reads one as gocql.ErrNotFound.
func (db *DB) readRoom(q *gocql.Query) (store.Room, error) {
	var r store.Room
	var creator userUDT
	var participants []userUDT
	if err := q.Scan(&r.Name, &creator, &r.CreatedAt, &r.Banner, &participants, &r.Kind); err != nil {
		return store.Room{}, err
	}
	if creator.Login == "" {
		return store.Room{}, gocql.ErrNotFound
	}
	r.Creator = store.UserRef(creator)
	r.Participants = fromUDTs(participants)
	return r, nil
}

// Rooms pages through the rooms in token order, the ring's own order: it is
// stable, and each page is one range read.
func (db *DB) Rooms(ctx context.Context, after string, limit int) ([]store.Room, error) {
	if limit <= 0 {
		return nil, nil
	}
	q := db.query(ctx, selectRooms, limit)
	if after != "" {
		q = db.query(ctx, selectRoomsAfter, after, limit)
	}
	iter := q.Iter()
	var rooms []store.Room
	var r store.Room
	var creator userUDT
	var participants []userUDT
	for iter.Scan(&r.Name, &creator, &r.CreatedAt, &r.Banner, &participants, &r.Kind) {
		if creator.Login != "" { // see readRoom
			r.Creator = store.UserRef(creator)
			r.Participants = fromUDTs(participants)
			rooms = append(rooms, r)
		}
		r, creator, participants = store.Room{}, userUDT{}, nil
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: list rooms after %q: %w", after, err)
	}
	return rooms, nil
}

// joinLWT adds u to the room's participants on condition that the room
// exists (UPDATE ... IF EXISTS). A timeout settles the unknown outcome with
// a serial read: the room gone means rejected, u listed means applied.
func (db *DB) joinLWT(ctx context.Context, room string, u store.UserRef) (bool, error) {
	q := db.query(ctx, joinRoom, []userUDT{userUDT(u)}, room)
	return lwt(ctx, q, nil, func(ctx context.Context) (casOutcome, error) {
		got, err := db.readRoom(db.serialRead(ctx, selectRoom, room))
		switch {
		case errors.Is(err, gocql.ErrNotFound):
			return casRejected, nil
		case err != nil:
			return 0, err
		case got.HasParticipant(u.Login):
			return casApplied, nil
		}
		return casNotApplied, nil
	})
}

// JoinRoom adds u to the room. The room goes into u's rooms first and the
// participant is added second, under IF EXISTS: a delete racing the join
// then either sees u among the participants and cleans up u's rooms, or
// makes the join fail, and the join cleans up itself. Either way no user
// keeps a deleted room.
func (db *DB) JoinRoom(ctx context.Context, name string, u store.UserRef) (store.Room, error) {
	if err := db.query(ctx, addUserRoom, []string{name}, u.Login).Exec(); err != nil {
		return store.Room{}, fmt.Errorf("cassandra: add room %q to user %q: %w", name, u.Login, err)
	}
	applied, err := db.joinLWT(ctx, name, u)
	if err == nil && applied {
		return db.Room(ctx, name)
	}
	if errors.Is(err, errOutcomeUnknown) {
		// u may be a participant: keep the room in u's rooms, where a
		// delete's clean-up finds it. Joining again settles it.
		return store.Room{}, fmt.Errorf("cassandra: join room %q: %w", name, err)
	}
	// Not a participant: take the room back out of u's rooms.
	if uerr := db.query(ctx, removeUserRoom, []string{name}, u.Login).Exec(); uerr != nil {
		err = errors.Join(err, fmt.Errorf("remove room from user %q: %w", u.Login, uerr))
	}
	if err != nil {
		return store.Room{}, fmt.Errorf("cassandra: join room %q: %w", name, err)
	}
	return store.Room{}, fmt.Errorf("room %q: %w", name, store.ErrNotFound)
}

// LeaveRoom removes u from the room with plain updates: a removal writes
// tombstones, which commute with a concurrent delete, so no LWT is needed.
func (db *DB) LeaveRoom(ctx context.Context, name string, u store.UserRef) error {
	r, err := db.Room(ctx, name)
	if err != nil {
		return err
	}
	return db.leave(ctx, r, u)
}

// leave removes u from the room r as read just before.
func (db *DB) leave(ctx context.Context, r store.Room, u store.UserRef) error {
	name := r.Name
	// Remove the stored elements: set members match on every field, and the
	// caller's copy of u may lack the names.
	var gone []userUDT
	for _, p := range r.Participants {
		if p.Login == u.Login {
			gone = append(gone, userUDT(p))
		}
	}
	if len(gone) == 0 {
		return fmt.Errorf("user %q in room %q: %w", u.Login, name, store.ErrNotFound)
	}
	if err := db.query(ctx, leaveRoom, gone, name).Exec(); err != nil {
		return fmt.Errorf("cassandra: leave room %q: %w", name, err)
	}
	if err := db.query(ctx, removeUserRoom, []string{name}, u.Login).Exec(); err != nil {
		return fmt.Errorf("cassandra: remove room %q from user %q: %w", name, u.Login, err)
	}
	return nil
}

// DeleteRoom deletes the room under DELETE ... IF creator_login = ? AND
// participants = ?, retrying with the fresh set while only the participants
// change, so everyone who joined meanwhile is cleaned up too. Then it
// removes the room from its participants' rooms (and a group from their
// inboxes) and deletes its messages. Unlike every other method, the clean-up
// costs in proportion to the room's size: the message index is keyed by id
// and author, so each message's two index rows are deleted one by one, from
// one read of each bucket.
func (db *DB) DeleteRoom(ctx context.Context, name string, creatorLogin string) (store.Room, error) {
	// Serial read: the participants must include every committed join.
	r, err := db.roomAt(db.serialRead(ctx, selectRoom, name), name)
	if err != nil {
		return store.Room{}, err
	}
	for attempt := 1; ; attempt++ {
		if r.Creator.Login != creatorLogin {
			return store.Room{}, fmt.Errorf("room %q: only its creator may delete it: %w", name, store.ErrForbidden)
		}
		if attempt > maxDeleteAttempts {
			return store.Room{}, fmt.Errorf("cassandra: delete room %q: participants kept changing, gave up after %d attempts", name, maxDeleteAttempts)
		}
		var (
			curCreator      string
			curParticipants []userUDT
			current         = map[string]any{"creator_login": &curCreator, "participants": &curParticipants}
		)
		q := db.query(ctx, deleteRoom, name, creatorLogin, toUDTs(r.Participants))
		applied, err := lwt(ctx, q, current, func(ctx context.Context) (casOutcome, error) {
			err := db.serialRead(ctx, selectRoomCondition, name).
				Scan(&curCreator, &curParticipants)
			switch {
			case errors.Is(err, gocql.ErrNotFound):
				return casApplied, nil // gone: deleted by us or, equally good, by its creator elsewhere
			case err != nil:
				return 0, err
			}
			return casRejected, nil
		})
		if err != nil {
			return store.Room{}, fmt.Errorf("cassandra: delete room %q: %w", name, err)
		}
		if applied {
			break
		}
		if curCreator == "" {
			return store.Room{}, fmt.Errorf("room %q: %w", name, store.ErrNotFound)
		}
		r.Creator.Login = curCreator
		r.Participants = fromUDTs(curParticipants)
	}
	if err := db.cleanUpRoom(ctx, r); err != nil {
		return store.Room{}, fmt.Errorf("cassandra: room %q deleted, but cleaning up failed: %w", name, err)
	}
	return r, nil
}

// cleanUpRoom removes a deleted room from its participants' rooms (and,
// for a group, their inbox entries), and deletes its messages with their
// copies in the message index: the listed buckets and today's.
func (db *DB) cleanUpRoom(ctx context.Context, r store.Room) error {
	fo := newFanout(fanoutParallelism)
	for _, p := range r.Participants {
		fo.Go(func() error {
			if err := db.query(ctx, removeUserRoom, []string{r.Name}, p.Login).Exec(); err != nil {
				return fmt.Errorf("remove room from user %q: %w", p.Login, err)
			}
			return nil
		})
		if r.Kind == store.PrivateGroup {
			fo.Go(func() error {
				if err := db.query(ctx, deleteConversation, p.Login, r.Name).Exec(); err != nil {
					return fmt.Errorf("delete the inbox entry of %q: %w", p.Login, err)
				}
				return nil
			})
		}
	}
	if err := fo.Wait(); err != nil {
		return err
	}
	listed, err := db.listedBuckets(ctx, roomBuckets, r.Name)
	if err != nil {
		return err
	}
	// Today's bucket too: a post that failed may have left its message
	// there unlisted, which a new room of the name would list again.
	now := time.Now()
	buckets := append(listed, store.BucketOf(now))
	slices.Sort(buckets)
	for _, b := range slices.Compact(buckets) {
		if err := db.unindexBucket(ctx, r.Name, b); err != nil {
			return fmt.Errorf("delete the index of bucket %d: %w", b, err)
		}
		if err := db.query(ctx, deleteMessages, r.Name, int(b)).Exec(); err != nil {
			return fmt.Errorf("delete messages of bucket %d: %w", b, err)
		}
	}
	return db.forgetBuckets(ctx, r.Name, now)
}
