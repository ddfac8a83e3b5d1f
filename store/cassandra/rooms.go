package cassandra

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/chatql/store"
)

const (
	roomColumns = `room_name, creator, creation_date, banner, participants, kind, moderators, icon, title, slow_mode`
	insertRoom  = `INSERT INTO chat_rooms (room_name, creator, creator_login, creation_date, banner, participants, kind, search_prefixes, participant_count, inbox_fanout)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, ?) IF NOT EXISTS`
	selectRoom       = `SELECT ` + roomColumns + ` FROM chat_rooms WHERE room_name = ?`
	selectRooms      = `SELECT ` + roomColumns + ` FROM chat_rooms LIMIT ?`
	selectRoomsAfter = `SELECT ` + roomColumns + ` FROM chat_rooms WHERE token(room_name) > token(?) LIMIT ?`
	// A join or a leave is a compare-and-set of the participant set read
	// just before, as a delete is: of concurrent joins (or leaves) of one
	// user exactly one applies, and it alone logs the event. creator_login
	// in the condition keeps the update off a deleted room: on a missing
	// row participants = {} holds, and the update would write a row. A
	// join also requires that the login is not banned; a leave ends a
	// moderator's role. Each sets the participant count and the logins
	// posts write the inbox orders of (fanoutOf) from the set it compares.
	joinRoom     = `UPDATE chat_rooms SET participants = participants + ?, participant_count = ?, inbox_fanout = ? WHERE room_name = ? IF banned[?] = null AND creator_login = ? AND participants = ?`
	leaveRoom    = `UPDATE chat_rooms SET participants = participants - ?, participant_count = ?, inbox_fanout = ?, moderators = moderators - ? WHERE room_name = ? IF creator_login = ? AND participants = ?`
	leaveGroup   = `UPDATE chat_rooms SET participants = participants - ?, participant_count = ?, inbox_fanout = ?, moderators = moderators - ?, former_members = former_members + ? WHERE room_name = ? IF creator_login = ? AND participants = ?`
	deleteRoom   = `DELETE FROM chat_rooms WHERE room_name = ? IF creator_login = ? AND participants = ? AND former_members = ?`
	selectDoomed = `SELECT ` + roomColumns + `, former_members FROM chat_rooms WHERE room_name = ?`
	// selectMembership reads of the room's row the creator, the kind, and
	// the slice of the participants set that holds one login. Elements are
	// frozen users, ordered by login, then names, and a null field sorts
	// before any value (the empty string included): so the slice from
	// {login: L} to {login: L + "\x00"}, names null and both bounds
	// included, holds every element of login L and no other (logins hold
	// no NUL). On a non-frozen set, Cassandra 4.0 and later (CASSANDRA-7396)
	// build the read's column filter from the slice, so replicas return
	// only those cells, and the driver decodes no more.
	// The login's moderator role and ban are two elements of maps.
	selectMembership = `SELECT creator, kind, participants[{login: ?}..{login: ?}], moderators[?], banned[?], slow_mode FROM chat_rooms WHERE room_name = ?`
	// selectRoomCondition reads what the conditions of joinRoom, leaveRoom,
	// leaveGroup and a moderation action compare; selectDeleteCondition
	// what deleteRoom's does.
	selectRoomCondition   = `SELECT creator_login, participants, moderators, banned FROM chat_rooms WHERE room_name = ?`
	selectDeleteCondition = `SELECT creator_login, participants, former_members FROM chat_rooms WHERE room_name = ?`
)

// maxCASAttempts bounds the retries of a join, a leave or a delete when the
// participants keep changing under it.
const maxCASAttempts = 32

// CreateRoom stores a new room with INSERT ... IF NOT EXISTS (tried twice
// when a timeout leaves nothing written: againIfNotApplied), its creator as
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
	applied, err := againIfNotApplied(func() (bool, error) {
		q := db.query(ctx, insertRoom, r.Name, creator, r.Creator.Login, created, r.Banner, []userUDT{creator}, kind, roomPrefixes(r), []string{r.Creator.Login})
		return lwt(ctx, q, nil, func(ctx context.Context) (casOutcome, error) {
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
	fo := newFanout(3)
	fo.Go(db.activityWrite(ctx, r.Creator.Login, r.Name, store.MinMessageID(created)))
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
		creator   userUDT
		kind      string
		slice     []userUDT
		moderator *userUDT
		banned    *time.Time
		slowMode  int
	)
	err := db.query(ctx, selectMembership, login, login+"\x00", login, login, room).Scan(&creator, &kind, &slice, &moderator, &banned, &slowMode)
	if err == nil && creator.Login == "" {
		err = gocql.ErrNotFound // see readRoom
	}
	if errors.Is(err, gocql.ErrNotFound) {
		return store.RoomMembership{}, fmt.Errorf("room %q: %w", room, store.ErrNotFound)
	}
	if err != nil {
		return store.RoomMembership{}, fmt.Errorf("cassandra: read the membership of %q in room %q: %w", login, room, err)
	}
	m := store.RoomMembership{Room: room, Kind: store.RoomKind(kind), Creator: store.UserRef(creator), Login: login,
		Moderator: moderator != nil, Banned: banned != nil, SlowMode: time.Duration(slowMode) * time.Second}
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
	var moderators map[string]userUDT
	var icon string
	var slowMode int
	if err := q.Scan(&r.Name, &creator, &r.CreatedAt, &r.Banner, &participants, &r.Kind, &moderators, &icon, &r.Title, &slowMode); err != nil {
		return store.Room{}, err
	}
	r.SlowMode = time.Duration(slowMode) * time.Second
	r.Icon = decodePicture(icon)
	if creator.Login == "" {
		return store.Room{}, gocql.ErrNotFound
	}
	r.Creator = store.UserRef(creator)
	r.Participants = fromUDTs(participants)
	r.Moderators = moderatorsOf(moderators)
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
	var moderators map[string]userUDT
	var icon string
	var slowMode int
	for iter.Scan(&r.Name, &creator, &r.CreatedAt, &r.Banner, &participants, &r.Kind, &moderators, &icon, &r.Title, &slowMode) {
		if creator.Login != "" { // see readRoom
			r.Creator = store.UserRef(creator)
			r.Participants = fromUDTs(participants)
			r.Moderators = moderatorsOf(moderators)
			r.Icon = decodePicture(icon)
			r.SlowMode = time.Duration(slowMode) * time.Second
			rooms = append(rooms, r)
		}
		r, creator, participants, moderators, icon, slowMode = store.Room{}, userUDT{}, nil, nil, "", 0
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: list rooms after %q: %w", after, err)
	}
	return rooms, nil
}

// roomState is what the condition of a join, a leave, a delete or a
// moderation action compares: the creator's login ("" when the room is
// gone) and the participant set, as stored (frozen users, names and all),
// and, as far as the statement's condition or read named them, the
// moderators and the bans.
type roomState struct {
	creator      string
	participants []userUDT
	moderators   map[string]userUDT
	banned       map[string]time.Time
}

func stateOf(r store.Room) roomState {
	s := roomState{creator: r.Creator.Login, participants: toUDTs(r.Participants)}
	for _, m := range r.Moderators {
		if s.moderators == nil {
			s.moderators = map[string]userUDT{}
		}
		s.moderators[m.Login] = userUDT(m)
	}
	return s
}

// moderatorsOf returns the moderators of a chat_rooms row sorted by login,
// as store.Room has them.
func moderatorsOf(m map[string]userUDT) []store.UserRef {
	out := make([]store.UserRef, 0, len(m))
	for _, u := range m {
		out = append(out, store.UserRef(u))
	}
	slices.SortFunc(out, func(a, b store.UserRef) int { return strings.Compare(a.Login, b.Login) })
	return out
}

// isBanned reports whether login is banned in s, as far as s knows.
func isBanned(s roomState, login string) bool {
	_, banned := s.banned[login]
	return banned
}

func hasLogin(us []userUDT, login string) bool {
	return slices.ContainsFunc(us, func(u userUDT) bool { return u.Login == login })
}

// without returns the elements of every login but login's.
func without(us []userUDT, login string) []userUDT {
	return slices.DeleteFunc(slices.Clone(us), func(u userUDT) bool { return u.Login == login })
}

// fanoutOf is what participant_count and inbox_fanout hold for a room of
// these participants: their number and, while it is at most
// store.InboxFanoutLimit, their logins (nil, a null, past it).
func fanoutOf(participants []userUDT) (int, []string) {
	if len(participants) > store.InboxFanoutLimit {
		return len(participants), nil
	}
	logins := make([]string, 0, len(participants))
	for _, p := range participants {
		logins = append(logins, p.Login)
	}
	return len(participants), logins
}

// elementsOf returns the stored elements of login: set members match on
// every field, and the caller's copy of a user may lack the names.
func elementsOf(us []userUDT, login string) []userUDT {
	var out []userUDT
	for _, u := range us {
		if u.Login == login {
			out = append(out, u)
		}
	}
	return out
}

// casParticipants runs stmt, a conditional update of chat_rooms ending in
// IF creator_login = ? AND participants = ?, with args and then s. It
// reports whether it applied and, when not, the room's current state (a
// missing row reads as gone). An unknown outcome is settled by a serial
// read of the state, which decide judges.
func (db *DB) casParticipants(ctx context.Context, room, stmt string, args []any, s roomState, decide func(roomState) casOutcome) (bool, roomState, error) {
	q := db.query(ctx, stmt, append(args, s.creator, s.participants)...)
	return db.casRoom(ctx, room, q, decide)
}

// casRoom runs q, a conditional update of chat_rooms whose condition names
// some of the columns of roomState, as casParticipants does.
func (db *DB) casRoom(ctx context.Context, room string, q *gocql.Query, decide func(roomState) casOutcome) (bool, roomState, error) {
	var cur roomState
	current := map[string]any{"creator_login": &cur.creator, "participants": &cur.participants,
		"moderators": &cur.moderators, "banned": &cur.banned}
	applied, err := lwt(ctx, q, current, func(ctx context.Context) (casOutcome, error) {
		var err error
		if cur, err = db.serialRoomState(ctx, room); err != nil {
			return 0, err
		}
		return decide(cur), nil
	})
	return applied, cur, err
}

// serialRoomState reads the room's state at serial consistency; a missing
// row reads as the zero state (no creator: gone).
func (db *DB) serialRoomState(ctx context.Context, room string) (roomState, error) {
	var cur roomState
	err := db.serialRead(ctx, selectRoomCondition, room).Scan(&cur.creator, &cur.participants, &cur.moderators, &cur.banned)
	if errors.Is(err, gocql.ErrNotFound) {
		return roomState{}, nil
	}
	return cur, err
}

// What a join or a leave found.
type membershipChange int

const (
	// changed: this call added (removed) the user.
	changed membershipChange = iota
	// unchanged: the user already was (was no longer) a participant.
	unchanged
	// roomGone: the room does not exist.
	roomGone
)

// addParticipant adds u to the room r, as read just before, with joinRoom:
// a compare-and-set of the participant set, retried with the fresh set
// while only other participants changed. It returns the room after the
// call and whether this call added u. check, when set, vets each fresh set
// (the adder of a group must still be a member).
//
// A banned u is not added: ErrForbidden.
//
// A timeout is settled by a serial read: the room gone or u banned is
// rejected, u listed is applied. The second may be a concurrent join of u
// that won, not this one; then both log a join, the one way a join is
// logged twice.
func (db *DB) addParticipant(ctx context.Context, r store.Room, u store.UserRef, check func(roomState) error) (store.Room, membershipChange, error) {
	s := stateOf(r)
	decide := func(cur roomState) casOutcome {
		switch {
		case cur.creator == "":
			return casRejected
		case hasLogin(cur.participants, u.Login):
			return casApplied
		case isBanned(cur, u.Login):
			return casRejected
		}
		return casNotApplied
	}
	for attempt := 1; ; attempt++ {
		if attempt > maxCASAttempts {
			return store.Room{}, 0, fmt.Errorf("participants kept changing, gave up after %d attempts", maxCASAttempts)
		}
		count, fanout := fanoutOf(append(slices.Clone(s.participants), userUDT(u)))
		applied, cur, err := db.casParticipants(ctx, r.Name, joinRoom, []any{[]userUDT{userUDT(u)}, count, fanout, r.Name, u.Login}, s, decide)
		if err != nil {
			return store.Room{}, 0, err
		}
		if applied {
			r.Participants = fromUDTs(append(slices.Clone(s.participants), userUDT(u)))
			if s.creator != r.Creator.Login {
				// Created again by another user meanwhile: read it whole.
				r, err = db.Room(ctx, r.Name)
			}
			return r, changed, err
		}
		if cur.creator == "" {
			return store.Room{}, roomGone, nil
		}
		if isBanned(cur, u.Login) {
			return store.Room{}, 0, fmt.Errorf("%w: %s is banned from room %q", store.ErrForbidden, store.Quote(u.Login), r.Name)
		}
		if hasLogin(cur.participants, u.Login) {
			r.Participants = fromUDTs(cur.participants)
			if cur.creator != r.Creator.Login {
				r, err = db.Room(ctx, r.Name)
			}
			return r, unchanged, err
		}
		if check != nil {
			if err := check(cur); err != nil {
				return store.Room{}, 0, err
			}
		}
		s = cur
	}
}

// removeParticipant removes every element of u's login from the room r, as
// read just before, with leaveRoom (or, with former, leaveGroup, which also
// records u among the group's former members): a compare-and-set, retried
// as addParticipant's is. It reports whether this call removed u.
//
// A timeout is settled by a serial read: the room gone is rejected, u no
// longer listed is applied (perhaps a concurrent leave of u's; see
// addParticipant).
func (db *DB) removeParticipant(ctx context.Context, r store.Room, u store.UserRef, former bool) (membershipChange, error) {
	s := stateOf(r)
	decide := func(cur roomState) casOutcome {
		switch {
		case cur.creator == "":
			return casRejected
		case hasLogin(cur.participants, u.Login):
			return casNotApplied
		}
		return casApplied
	}
	for attempt := 1; ; attempt++ {
		if attempt > maxCASAttempts {
			return 0, fmt.Errorf("participants kept changing, gave up after %d attempts", maxCASAttempts)
		}
		gone := elementsOf(s.participants, u.Login)
		if len(gone) == 0 {
			return unchanged, nil
		}
		count, fanout := fanoutOf(without(s.participants, u.Login))
		stmt, args := leaveRoom, []any{gone, count, fanout, []string{u.Login}, r.Name}
		if former {
			stmt, args = leaveGroup, []any{gone, count, fanout, []string{u.Login}, []string{u.Login}, r.Name}
		}
		applied, cur, err := db.casParticipants(ctx, r.Name, stmt, args, s, decide)
		switch {
		case err != nil:
			return 0, err
		case applied:
			return changed, nil
		case cur.creator == "":
			return roomGone, nil
		}
		s = cur
	}
}

// systemMessage is a system message of the room, by u, at id.
func systemMessage(room string, id store.MessageID, u store.UserRef, content string) store.Message {
	return store.Message{Room: room, ID: id, Author: u, Content: content, System: true}
}

// eventOf is the event of a system message's arrival.
func eventOf(kind store.EventKind, m store.Message) store.Event {
	return store.Event{ID: m.ID, Kind: kind, Room: m.Room, User: m.Author, Message: &m}
}

// detached returns a context for taking back writes after a failure, which
// may be the caller's context ending: it outlives ctx, for settleTimeout.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
}

// JoinRoom adds u to the room. Everything the join writes outside the
// room's row goes first: the room into u's rooms, and the system message
// "<login> joined the room" with its ParticipantJoined event (and its day's
// listing). The participant is added last, by a compare-and-set of the
// participant set (addParticipant), which decides: if it applies, the join
// is complete; if u turns out to be a participant already (a concurrent
// join of u won), the message and event are taken back and the zero Event
// returned; if the room is gone, everything is taken back. A delete racing
// the join therefore either comes after the compare-and-set, sees u, and
// deletes u's copy and the message with the room's, or makes the join
// fail; it never leaves anything of the join behind, but the listing row of
// the day, which costs an empty read (see unwriteMessage).
//
// "Already a participant" is known without a race: from the room read
// first, or from the compare-and-set's current values when it does not
// apply. An outcome left unknown by a timeout, or a take-back that fails,
// is settled in the background once the cluster answers (settleJoin).
//
// The room goes into u's rooms at a timestamp of its own, and is taken back
// at that timestamp: the take-back removes this join's write and no later
// one (a tombstone wins a tie), so it never undoes a join of u that came
// after.
func (db *DB) JoinRoom(ctx context.Context, name string, u store.UserRef) (store.Room, store.Event, error) {
	listedAt := time.Now().UnixMicro()
	if err := db.query(ctx, addUserRoomAt, listedAt, []string{name}, u.Login).Exec(); err != nil {
		return store.Room{}, store.Event{}, fmt.Errorf("cassandra: add room %q to user %q: %w", name, u.Login, err)
	}
	var m store.Message
	takeBackRoom := func(err error) error {
		ctx, cancel := detached(ctx)
		defer cancel()
		if uerr := db.query(ctx, removeUserRoomAt, listedAt, []string{name}, u.Login).Exec(); uerr != nil {
			err = errors.Join(err, fmt.Errorf("cassandra: remove room %q from user %q: %w", name, u.Login, uerr))
			db.settleJoin(name, u, listedAt, m)
		}
		return err
	}
	r, err := db.Room(ctx, name)
	if err != nil {
		return store.Room{}, store.Event{}, takeBackRoom(err)
	}
	if r.HasParticipant(u.Login) {
		return r, store.Event{}, nil
	}
	m = systemMessage(name, store.NewMessageID(), u, u.Login+" joined the room")
	takeBackMessage := func(err error) error {
		ctx, cancel := detached(ctx)
		defer cancel()
		if uerr := db.unwriteMessage(ctx, m, true); uerr != nil {
			err = errors.Join(err, fmt.Errorf("cassandra: join room %q: %w", name, uerr))
		}
		return err
	}
	if err := db.writeMessage(ctx, m, store.ParticipantJoined, []func() error{db.activityWrite(ctx, u.Login, name, m.ID)}); err != nil {
		err = fmt.Errorf("cassandra: join room %q: %w", name, err)
		return store.Room{}, store.Event{}, takeBackRoom(takeBackMessage(err))
	}
	r, outcome, err := db.addParticipant(ctx, r, u, nil)
	switch {
	case errors.Is(err, errOutcomeUnknown):
		db.settleJoin(name, u, listedAt, m)
		return store.Room{}, store.Event{}, fmt.Errorf("cassandra: join room %q: %w", name, err)
	case err != nil:
		err = fmt.Errorf("cassandra: join room %q: %w", name, err)
		return store.Room{}, store.Event{}, takeBackRoom(takeBackMessage(err))
	case outcome == roomGone:
		err = fmt.Errorf("room %q: %w", name, store.ErrNotFound)
		return store.Room{}, store.Event{}, takeBackRoom(takeBackMessage(err))
	case outcome == unchanged:
		if err := takeBackMessage(nil); err != nil {
			return store.Room{}, store.Event{}, err
		}
		return r, store.Event{}, nil
	}
	if err := db.markLarge(ctx, name, r.Participants, u); err != nil {
		return store.Room{}, store.Event{}, fmt.Errorf("cassandra: join room %q applied, but marking it large failed: %w", name, err)
	}
	return r, eventOf(store.ParticipantJoined, m), nil
}

// Settling a join in the background: the first try after settleFirst,
// then backing off to settleEvery, for settleFor in all.
const (
	settleFirst = time.Second
	settleEvery = 10 * time.Second
	settleFor   = 10 * time.Minute
)

// settleJoin settles in the background a join of u to the room whose
// outcome is unknown (a timeout, and the read-back timed out too) or whose
// take-back failed: the room is in u's rooms (listed at listedAt) and the
// join's message m, if written, may be in the room, while u may not be a
// participant, or the room may have been deleted meanwhile; left so, u
// would list a room that is not theirs, or a deleted one. Once a serial
// read of the room answers: u a participant, the join applied and stands;
// otherwise its listing is taken back at listedAt (not undoing a later
// join of u) and its message too. Tried until it succeeds, for settleFor,
// or until Close.
func (db *DB) settleJoin(name string, u store.UserRef, listedAt int64, m store.Message) {
	db.closeMu.Lock()
	defer db.closeMu.Unlock()
	if db.closed {
		return
	}
	db.settling.Add(1)
	if db.log != nil {
		db.log.Warn("cassandra: a join's outcome is unknown; settling it in the background", "room", name, "login", u.Login)
	}
	go func() {
		defer db.settling.Done()
		wait := settleFirst
		var err error
		for deadline := time.Now().Add(settleFor); time.Now().Before(deadline); wait = min(2*wait, settleEvery) {
			select {
			case <-db.closing:
				return
			case <-time.After(wait):
			}
			if err = db.trySettleJoin(name, u, listedAt, m); err == nil {
				if db.log != nil {
					db.log.Info("cassandra: join settled", "room", name, "login", u.Login)
				}
				return
			}
		}
		if db.log != nil {
			db.log.Error("cassandra: gave up settling a join; the user may list a room they are not in until they join or leave it", "room", name, "login", u.Login, "err", err)
		}
	}()
}

func (db *DB) trySettleJoin(name string, u store.UserRef, listedAt int64, m store.Message) error {
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	cur, err := db.serialRoomState(ctx, name)
	switch {
	case err != nil:
		return err
	case hasLogin(cur.participants, u.Login):
		return nil // the join applied
	}
	if err := db.query(ctx, removeUserRoomAt, listedAt, []string{name}, u.Login).Exec(); err != nil {
		return err
	}
	if m.ID.IsZero() {
		return nil
	}
	return db.unwriteMessage(ctx, m, true)
}

// LeaveRoom removes u from the room: the system message "<login> left the
// room" and its ParticipantLeft event first, then the participant, by a
// compare-and-set of the participant set, then the room from u's rooms. The
// removal alone would commute with a delete, but the message would not: a
// plain update landing after a delete's clean-up would leave the message in
// the deleted room's partitions. So the leave is conditional, as a join is,
// and takes its message back when it does not apply (u gone meanwhile: of
// concurrent leaves of u, one logs). A group's leave records u among its
// former members (see LeaveGroup).
func (db *DB) LeaveRoom(ctx context.Context, name string, u store.UserRef) (store.Event, error) {
	r, err := db.Room(ctx, name)
	if err != nil {
		return store.Event{}, err
	}
	m := systemMessage(name, store.NewMessageID(), u, u.Login+" left the room")
	return db.leave(ctx, r, u, m, nil)
}

// leave removes u from the room r, as read just before, with the system
// message m written first, and with the extra writes (a group's closed
// window); see LeaveRoom.
func (db *DB) leave(ctx context.Context, r store.Room, u store.UserRef, m store.Message, extra []func() error) (store.Event, error) {
	name := r.Name
	if !r.HasParticipant(u.Login) {
		return store.Event{}, fmt.Errorf("user %q in room %q: %w", u.Login, name, store.ErrNotFound)
	}
	takeBack := func(err error) error {
		ctx, cancel := detached(ctx)
		defer cancel()
		if uerr := db.unwriteMessage(ctx, m, true); uerr != nil {
			err = errors.Join(err, uerr)
		}
		return err
	}
	if err := db.writeMessage(ctx, m, store.ParticipantLeft, extra); err != nil {
		return store.Event{}, takeBack(fmt.Errorf("cassandra: leave room %q: %w", name, err))
	}
	outcome, err := db.removeParticipant(ctx, r, u, r.Kind == store.PrivateGroup)
	switch {
	case errors.Is(err, errOutcomeUnknown):
		return store.Event{}, fmt.Errorf("cassandra: leave room %q: %w", name, err)
	case err != nil:
		return store.Event{}, takeBack(fmt.Errorf("cassandra: leave room %q: %w", name, err))
	case outcome == roomGone:
		return store.Event{}, takeBack(fmt.Errorf("room %q: %w", name, store.ErrNotFound))
	case outcome == unchanged:
		return store.Event{}, takeBack(fmt.Errorf("user %q in room %q: %w", u.Login, name, store.ErrNotFound))
	}
	if err := db.query(ctx, removeUserRoom, []string{name}, u.Login).Exec(); err != nil {
		return store.Event{}, fmt.Errorf("cassandra: left room %q, but removing it from user %q failed: %w", name, u.Login, err)
	}
	return eventOf(store.ParticipantLeft, m), nil
}

// DeleteRoom deletes the room under DELETE ... IF creator_login = ? AND
// participants = ? AND former_members = ?, retrying with the fresh values
// while only the members change, so everyone who joined or left meanwhile
// is cleaned up too. Then it removes the room from its participants' rooms
// (and a group from its members' and former members' inboxes) and deletes
// its messages, its log and its listing. Unlike every other method, the
// clean-up costs in proportion to the room's size: the message index is
// keyed by id and author, so each message's two index rows are deleted one
// by one, from one read of each bucket.
func (db *DB) DeleteRoom(ctx context.Context, name string, by store.UserRef) (store.Room, store.Event, error) {
	// Serial read: the state must include every committed join and leave.
	var (
		r       store.Room
		creator userUDT
		ps      []userUDT
		former  []string
	)
	var moderators map[string]userUDT
	var icon string
	var slowMode int
	err := db.serialRead(ctx, selectDoomed, name).Scan(&r.Name, &creator, &r.CreatedAt, &r.Banner, &ps, &r.Kind, &moderators, &icon, &r.Title, &slowMode, &former)
	r.SlowMode = time.Duration(slowMode) * time.Second
	if err == nil && creator.Login == "" {
		err = gocql.ErrNotFound // see readRoom
	}
	if errors.Is(err, gocql.ErrNotFound) {
		return store.Room{}, store.Event{}, fmt.Errorf("room %q: %w", name, store.ErrNotFound)
	}
	if err != nil {
		return store.Room{}, store.Event{}, fmt.Errorf("cassandra: read room %q: %w", name, err)
	}
	r.Creator, r.Participants, r.Moderators, r.Icon = store.UserRef(creator), fromUDTs(ps), moderatorsOf(moderators), decodePicture(icon)
	for attempt := 1; ; attempt++ {
		if r.Creator.Login != by.Login {
			return store.Room{}, store.Event{}, fmt.Errorf("room %q: only its creator may delete it: %w", name, store.ErrForbidden)
		}
		if attempt > maxCASAttempts {
			return store.Room{}, store.Event{}, fmt.Errorf("cassandra: delete room %q: members kept changing, gave up after %d attempts", name, maxCASAttempts)
		}
		var (
			curCreator      string
			curParticipants []userUDT
			curFormer       []string
			current         = map[string]any{"creator_login": &curCreator, "participants": &curParticipants, "former_members": &curFormer}
		)
		q := db.query(ctx, deleteRoom, name, by.Login, toUDTs(r.Participants), former)
		applied, err := lwt(ctx, q, current, func(ctx context.Context) (casOutcome, error) {
			err := db.serialRead(ctx, selectDeleteCondition, name).
				Scan(&curCreator, &curParticipants, &curFormer)
			switch {
			case errors.Is(err, gocql.ErrNotFound):
				return casApplied, nil // gone: deleted by us or, equally good, by its creator elsewhere
			case err != nil:
				return 0, err
			}
			return casRejected, nil
		})
		if err != nil {
			return store.Room{}, store.Event{}, fmt.Errorf("cassandra: delete room %q: %w", name, err)
		}
		if applied {
			break
		}
		if curCreator == "" {
			return store.Room{}, store.Event{}, fmt.Errorf("room %q: %w", name, store.ErrNotFound)
		}
		r.Creator.Login = curCreator
		r.Participants = fromUDTs(curParticipants)
		former = curFormer
	}
	if err := db.cleanUpRoom(ctx, r, former); err != nil {
		return store.Room{}, store.Event{}, fmt.Errorf("cassandra: room %q deleted, but cleaning up failed: %w", name, err)
	}
	return r, store.Event{ID: store.NewMessageID(), Kind: store.RoomDeleted, Room: name, User: by}, nil
}

// cleanUpRoom removes a deleted room from its participants' rooms (and,
// for a group, the inbox entries of its members and former members), and
// deletes its messages with their copies in the message index, its log, and
// its listing: the listed buckets and today's.
//
// Every delete is at one time, taken after the room's row was deleted: a
// statement retried on another replica (its coordinator died) writes the
// same tombstones, so it cannot remove what a room created again under the
// name wrote meanwhile; and a racing post's copies, written at the time of
// their message, from before the deletion, are covered.
func (db *DB) cleanUpRoom(ctx context.Context, r store.Room, former []string) error {
	at := time.Now().UnixMicro()
	fo := newFanout(fanoutParallelism)
	entries := map[string]bool{}
	for _, p := range r.Participants {
		fo.Go(func() error {
			if err := db.query(ctx, removeUserRoomAt, at, []string{r.Name}, p.Login).Exec(); err != nil {
				return fmt.Errorf("remove room from user %q: %w", p.Login, err)
			}
			return nil
		})
		entries[p.Login] = true
	}
	for _, login := range former {
		entries[login] = true
	}
	if r.Kind == store.PrivateGroup {
		for login := range entries {
			fo.Go(func() error {
				if err := db.query(ctx, deleteConversation, at, login, r.Name).Exec(); err != nil {
					return fmt.Errorf("delete the inbox entry of %q: %w", login, err)
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
	// Today's bucket too: a write that failed may have left a message or
	// an event there unlisted, which a new room of the name would list.
	buckets := append(listed, store.BucketOf(time.Now()))
	slices.Sort(buckets)
	for _, b := range slices.Compact(buckets) {
		fo := newFanout(2)
		fo.Go(func() error {
			if err := db.query(ctx, deleteRoomEvents, at, r.Name, int(b)).Exec(); err != nil {
				return fmt.Errorf("delete the log of bucket %d: %w", b, err)
			}
			return nil
		})
		fo.Go(func() error {
			if err := db.query(ctx, deleteReactionsOf, at, r.Name, int(b)).Exec(); err != nil {
				return fmt.Errorf("delete the reactions of bucket %d: %w", b, err)
			}
			if err := db.query(ctx, deleteRepliesOf, at, r.Name, int(b)).Exec(); err != nil {
				return fmt.Errorf("delete the threads of bucket %d: %w", b, err)
			}
			if err := db.unindexBucket(ctx, r.Name, b); err != nil {
				return fmt.Errorf("delete the index of bucket %d: %w", b, err)
			}
			if err := db.query(ctx, deleteMessages, at, r.Name, int(b)).Exec(); err != nil {
				return fmt.Errorf("delete messages of bucket %d: %w", b, err)
			}
			return nil
		})
		if err := fo.Wait(); err != nil {
			return err
		}
	}
	if err := db.query(ctx, deleteRoomReads, at, r.Name).Exec(); err != nil {
		return fmt.Errorf("delete the read marks: %w", err)
	}
	if err := db.deleteRoomSettings(ctx, at, r.Name); err != nil {
		return err
	}
	// Every listing row: no process remembers a room's (see remembered),
	// so a room created again under the name lists its days afresh.
	if err := db.query(ctx, deleteListing, at, r.Name).Exec(); err != nil {
		return fmt.Errorf("delete the listing: %w", err)
	}
	return nil
}
