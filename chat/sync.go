package chat

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/stream"
)

// One sync for every device: a user's sync delivers, on one stream, the
// events of their inbox log and of the log of every room and group they
// take part in, each once, after a SyncCursor; then the live ones, as
// each source's stream does (subscribe first, replay, then go live, with
// no gap and no duplicate: see package stream).
//
// Which rooms it follows:
//   - those the user takes part in when it starts, each from its place in
//     the cursor (a fresh sync: from now on);
//   - a room entered since (joined, created, added to), from the cursor's
//     Base, delivering nothing of it before the user's own join (there is
//     none to wait for in a room they created since Base): an online sync learns
//     of the entry live (ROOM_ENTERED on the user's topic, ADDED_TO_GROUP)
//     and follows the room the same way, so both deliver the same events;
//   - a room the cursor follows that the user left, was removed or banned
//     from since: a group's former member gets its events up to their
//     leave (they keep reading those); a public room's, their own leave,
//     removal or ban (the room's messages are its participants' only); a
//     room deleted since, a ROOM_DELETED.
//
// A room's stream ends with the user's leave; it starts again if they take
// part again. A public room joined and left while the sync was offline is
// not replayed (the user is not in it, and an inbox has no trace of it).

// SyncChange is one change a sync delivers: an event of one of the user's
// rooms or groups, or (Inbox) of their inbox.
type SyncChange struct {
	Event *store.Event
	Inbox bool
}

// SyncPage is what a sync delivers at once: changes, and the cursor to
// resume after them.
type SyncPage struct {
	Changes []SyncChange
	Cursor  string
	// CaughtUp: the replay is over; this page and those after it are live.
	CaughtUp bool
}

// SyncPageSize bounds the changes of one SyncPage.
const SyncPageSize = 50

// A Sync is one subscriber's sync; Run drives it.
type Sync struct {
	s  *Service
	me store.UserRef
	// pageSize bounds a page's changes: SyncPageSize, or less (Changes).
	pageSize int
	// fullPages: during the replay, deliver full pages only (Changes).
	fullPages bool
	// cur is the cursor of what was delivered so far; from is the Base
	// rooms entered before this sync started replay from (the resumed
	// cursor's).
	cur  SyncCursor
	from store.MessageID
	// rooms are the streams followed now; awaiting, how many of them
	// deliver nothing before the user's join and started before cur.Base.
	rooms    map[string]*syncRoom
	inbox    *stream.Inbox
	inboxed  chan inboxItem
	mu       sync.Mutex
	ready    map[string]bool
	wake     chan struct{}
	page     []SyncChange
	initial  int // rooms whose replay has not run yet
	inboxUp  bool
	caughtUp bool
	// former are the rooms of the cursor the user no longer takes part
	// in, to settle before going live.
	former []string
	// release gives back the sync's place under MaxSyncsPerUser.
	release func()
}

type syncRoom struct {
	st *stream.Room
	// awaitJoin: deliver nothing before the user's own join; early: the
	// replay started before cur.Base, which must then not move past it.
	awaitJoin, early bool
	// initial: followed from the start, so the sync is not caught up
	// before its replay ran.
	initial bool
	// last is the last event the stream delivered.
	last *store.Event
}

type inboxItem struct {
	ev       *store.Event
	caughtUp bool
	end      bool
	err      error
}

// OpenSync opens me's sync after the cursor (empty: from now on), if me
// has fewer than MaxSyncsPerUser open on this instance (BAD_USER_INPUT
// otherwise); it holds its place until it is closed (Run returns).
func (s *Service) OpenSync(ctx context.Context, me store.UserRef, after string) (*Sync, error) {
	release, err := s.syncs.take(me.Login, s.syncsPerUser())
	if err != nil {
		return nil, err
	}
	sy, err := s.openSync(ctx, me, after)
	if err != nil {
		release()
		return nil, err
	}
	sy.release = release
	return sy, nil
}

func (s *Service) openSync(ctx context.Context, me store.UserRef, after string) (*Sync, error) {
	sy := &Sync{s: s, me: me, pageSize: SyncPageSize, rooms: map[string]*syncRoom{}, ready: map[string]bool{}, wake: make(chan struct{}, 1), inboxed: make(chan inboxItem)}
	resuming := after != ""
	if resuming {
		cur, err := ParseSyncCursor(after)
		if err != nil {
			return nil, err
		}
		sy.cur, sy.from = cur, cur.Base
	}
	// The inbox first: a room entered from now on is told there.
	now := time.Now()
	inboxAfter := sy.cur.Inbox
	if resuming && inboxAfter.IsZero() {
		inboxAfter = sy.from
	}
	in, err := s.FollowInbox(ctx, me, inboxAfter)
	if err != nil {
		return nil, err
	}
	sy.inbox = in
	u, err := s.Store.User(ctx, me.Login)
	if err != nil {
		in.Close()
		return nil, err
	}
	if !resuming {
		sy.cur = SyncCursor{Inbox: store.MinMessageID(now), Rooms: map[string]SyncPlace{}}
		sy.from = store.MinMessageID(now)
	}
	sy.cur.Base = store.MinMessageID(now.Add(-syncSkew))
	for _, room := range u.ChatRooms {
		if !resuming {
			sy.cur.Rooms[room] = SyncPlace{At: store.Cursor{ID: sy.from}}
		}
		if err := sy.enter(ctx, room, store.Cursor{ID: sy.from}, nil); err != nil {
			sy.close()
			return nil, err
		}
	}
	for room, p := range sy.cur.Rooms {
		if _, followed := sy.rooms[room]; !followed && !p.Left {
			sy.former = append(sy.former, room)
		}
	}
	slices.Sort(sy.former)
	for _, fr := range sy.rooms {
		fr.initial = true
	}
	sy.initial = len(sy.rooms)
	return sy, nil
}

// Changes is the polling form of a sync: its first page after the cursor
// (empty: from now on, the page is empty and caught up), of up to first
// changes (at most SyncPageSize). A page that is not CaughtUp has more
// after it: ask again with its cursor.
func (s *Service) Changes(ctx context.Context, me store.UserRef, since string, first int) (SyncPage, error) {
	if first < 1 || first > SyncPageSize {
		return SyncPage{}, store.Invalidf("invalid first: %d; it must be between 1 and %d", first, SyncPageSize)
	}
	sy, err := s.OpenSync(ctx, me, since)
	if err != nil {
		return SyncPage{}, err
	}
	sy.pageSize, sy.fullPages = first, true
	var page *SyncPage
	err = sy.Run(ctx, func(p SyncPage) bool {
		page = &p
		return false
	})
	if err == nil && page == nil {
		err = ctx.Err()
	}
	if err != nil {
		return SyncPage{}, err
	}
	return *page, nil
}

// enter follows room, which the user entered, unless the sync does: from
// its place in the cursor if it has one; otherwise from at (the zero
// cursor: from now on), or from the Base rooms entered since replay from,
// or from joined (the user's join's system message), whichever is later,
// and then delivering nothing before the user's join unless they created
// the room since.
func (sy *Sync) enter(ctx context.Context, room string, at store.Cursor, joined *store.Message) error {
	if _, followed := sy.rooms[room]; followed {
		return nil
	}
	fr := &syncRoom{}
	if p, known := sy.cur.Rooms[room]; known {
		at = p.At
	} else if at.ID.IsZero() || joined != nil {
		// Entered since the cursor's Base.
		start := sy.cur.Base
		if at.ID.Compare(start) > 0 {
			start = at.ID
		}
		if joined != nil {
			if j := store.MinMessageID(joined.ID.Time().Add(-syncSkew)); j.Compare(start) > 0 {
				start = j
			}
		}
		at = store.Cursor{ID: start}
	}
	rd, err := sy.s.reader(ctx, sy.me, room)
	switch {
	case errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrForbidden):
		return nil // gone, or no longer the user's: settled as a former room
	case err != nil:
		return err
	}
	if _, known := sy.cur.Rooms[room]; !known {
		r, err := sy.s.Store.Room(ctx, room)
		if err != nil {
			return err
		}
		if r.Creator.Login != sy.me.Login || r.CreatedAt.Before(at.ID.Time()) {
			fr.awaitJoin, fr.early = true, at.ID.Compare(sy.cur.Base) < 0
		} else {
			sy.cur.Rooms[room] = SyncPlace{At: at}
		}
	}
	st, err := sy.s.openRoomStream(ctx, rd, at)
	if err != nil {
		return err
	}
	fr.st = st
	sy.rooms[room] = fr
	st.Notify(func() { sy.markReady(room) })
	sy.markReady(room)
	return nil
}

// markReady schedules a Pump of room's stream; it runs on the broker's
// delivering goroutine.
func (sy *Sync) markReady(room string) {
	sy.mu.Lock()
	sy.ready[room] = true
	sy.mu.Unlock()
	select {
	case sy.wake <- struct{}{}:
	default:
	}
}

// Run delivers the sync's pages to emit until ctx ends or emit returns
// false (nil), or the sync fails (a stream fell behind, the broker closed,
// the store failed): the client resumes with its last page's cursor.
func (sy *Sync) Run(ctx context.Context, emit func(SyncPage) bool) error {
	ctx, cancel := context.WithCancel(ctx)
	var inboxDone sync.WaitGroup
	defer func() {
		cancel()
		sy.close()
		inboxDone.Wait()
	}()
	send := func(it inboxItem) bool {
		select {
		case sy.inboxed <- it:
			return true
		case <-ctx.Done():
			return false
		}
	}
	sy.inbox.ForSync(func() { send(inboxItem{caughtUp: true}) })
	inboxDone.Add(1)
	go func() {
		defer inboxDone.Done()
		err := sy.inbox.Run(ctx, func(ev *store.Event) bool { return send(inboxItem{ev: ev}) })
		send(inboxItem{end: true, err: err})
	}()
	for _, room := range sy.former {
		if ok, err := sy.settleFormer(ctx, room, emit); !ok {
			return err
		}
	}
	for ctx.Err() == nil {
		sy.mu.Lock()
		ready := make([]string, 0, len(sy.ready))
		for room := range sy.ready {
			ready = append(ready, room)
		}
		clear(sy.ready)
		sy.mu.Unlock()
		slices.Sort(ready)
		for _, room := range ready {
			if ok, err := sy.pump(ctx, room, emit); !ok {
				return err
			}
		}
		if !sy.caughtUp && sy.inboxUp && sy.initial == 0 {
			sy.caughtUp = true
			if !sy.flush(emit, true) {
				return nil
			}
		} else if len(sy.page) > 0 && (sy.caughtUp || !sy.fullPages) && !sy.flush(emit, false) {
			return nil
		}
		select {
		case <-sy.wake:
		case it := <-sy.inboxed:
			if ok, err := sy.fromInbox(ctx, it, emit); !ok {
				return err
			}
		case <-ctx.Done():
		}
	}
	return nil
}

// pump delivers what room's stream has ready; false ends the sync (with
// why, if it failed).
func (sy *Sync) pump(ctx context.Context, room string, emit func(SyncPage) bool) (bool, error) {
	fr := sy.rooms[room]
	if fr == nil {
		return true, nil
	}
	gone := false
	done, err := fr.st.Pump(ctx, func(ev *store.Event) bool {
		fr.last = ev
		if !sy.fromRoom(fr, ev, emit) {
			gone = true
			return false
		}
		return true
	})
	if fr.initial {
		fr.initial = false
		sy.initial--
	}
	if !done {
		return true, nil
	}
	delete(sy.rooms, room)
	if gone || ctx.Err() != nil {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	switch {
	case fr.last != nil && fr.last.Kind == store.RoomDeleted:
		return true, nil
	case fr.last != nil && store.EndsMembership(fr.last, sy.me.Login):
	default:
		// Ended after a gap: the room is gone, or the user left.
		m, err := sy.s.Store.Membership(ctx, room, sy.me.Login)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return false, err
		}
		if err != nil || !m.Participant {
			return true, nil
		}
	}
	p, known := sy.cur.Rooms[room]
	switch {
	case known:
		p.Left = true
		sy.cur.Rooms[room] = p
	case fr.last != nil && !fr.last.ID.IsZero():
		// Left before the join it awaited: never replay this again.
		sy.cur.Rooms[room] = SyncPlace{At: store.Cursor{ID: fr.last.ID, Seq: fr.last.Seq}, Left: true}
	default:
		return true, nil
	}
	// Back already? Then follow on from the leave.
	m, err := sy.s.Store.Membership(ctx, room, sy.me.Login)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return true, nil
	case err != nil:
		return false, err
	case m.Participant:
		if p, known := sy.cur.Rooms[room]; known {
			p.Left = false
			sy.cur.Rooms[room] = p
		}
		return true, sy.enter(ctx, room, store.Cursor{}, nil)
	}
	return true, nil
}

// fromRoom takes a room event its stream delivered; false: the subscriber
// is gone.
func (sy *Sync) fromRoom(fr *syncRoom, ev *store.Event, emit func(SyncPage) bool) bool {
	if ev.Kind == store.RoomDeleted {
		delete(sy.cur.Rooms, ev.Room)
		return sy.add(SyncChange{Event: ev}, emit)
	}
	if ev.ID.IsZero() || ev.Kind == store.ReadUpTo {
		return true // ephemeral: typing, presence; a receipt, which no log keeps
	}
	if fr.awaitJoin {
		if ev.Kind != store.ParticipantJoined || ev.User.Login != sy.me.Login {
			return true
		}
		fr.awaitJoin = false
	}
	p := sy.cur.Rooms[ev.Room]
	p.At = store.Cursor{ID: ev.ID, Seq: ev.Seq}
	sy.cur.Rooms[ev.Room] = p
	return sy.add(SyncChange{Event: ev}, emit)
}

// fromInbox takes what the inbox stream sent; false ends the sync.
func (sy *Sync) fromInbox(ctx context.Context, it inboxItem, emit func(SyncPage) bool) (bool, error) {
	switch {
	case it.end:
		return false, it.err
	case it.caughtUp:
		sy.inboxUp = true
		return true, nil
	}
	ev := it.ev
	switch {
	case ev.Kind == store.RoomEntered:
		return true, sy.enter(ctx, ev.Room, store.Cursor{}, ev.Message)
	case ev.ID.IsZero():
		return true, nil // ephemeral: typing, presence
	}
	sy.cur.Inbox = ev.ID
	if !sy.s.MutedNotice(ctx, sy.me.Login, ev) && !sy.add(SyncChange{Event: ev, Inbox: true}, emit) {
		return false, nil
	}
	if ev.Kind == store.AddedToGroup {
		return true, sy.enter(ctx, ev.Room, store.Cursor{}, ev.Message)
	}
	return true, nil
}

// settleFormer delivers what is left to deliver of room, in the cursor but
// no longer the user's (see Sync); false ends the sync.
func (sy *Sync) settleFormer(ctx context.Context, room string, emit func(SyncPage) bool) (bool, error) {
	p := sy.cur.Rooms[room]
	if _, err := sy.s.Store.Room(ctx, room); errors.Is(err, store.ErrNotFound) {
		delete(sy.cur.Rooms, room)
		return sy.add(SyncChange{Event: &store.Event{Kind: store.RoomDeleted, Room: room}}, emit), nil
	} else if err != nil {
		return false, err
	}
	p.Left = true
	sy.cur.Rooms[room] = p
	rd, err := sy.s.reader(ctx, sy.me, room)
	if err == nil && rd.Windows != nil {
		// A group's former member: its events up to their leave.
		st, err := sy.s.openRoomStream(ctx, rd, p.At)
		if err != nil {
			return false, err
		}
		fr := &syncRoom{st: st}
		gone := false
		_, err = st.Pump(ctx, func(ev *store.Event) bool {
			if !sy.fromRoom(fr, ev, emit) {
				gone = true
				return false
			}
			return !store.EndsMembership(ev, sy.me.Login)
		})
		st.Close()
		if gone || ctx.Err() != nil {
			return false, nil
		}
		return err == nil, err
	}
	if rd.Windows == nil && errors.Is(err, store.ErrForbidden) {
		m, merr := sy.s.Store.Membership(ctx, room, sy.me.Login)
		if merr != nil {
			return false, merr
		}
		if m.Kind != store.PrivateGroup {
			return sy.settleFormerPublic(ctx, room, p.At.ID, emit)
		}
	} else if err != nil && !errors.Is(err, store.ErrForbidden) && !errors.Is(err, store.ErrNotFound) {
		return false, err
	}
	// A group the user is banned from, who reads none of it: their own
	// last leave, removal or ban.
	_, end, err := sy.ownMembershipAfter(ctx, room, p.At.ID)
	if err != nil || end == nil {
		return err == nil, err
	}
	return sy.fromRoom(&syncRoom{}, end, emit), nil
}

// settleFormerPublic delivers the events of the public room the user left
// after the cursor's place, up to their last leave (or removal, or ban):
// what an online sync delivered. When the first of their own membership
// events since is a join, they were not in the room at the place, and the
// events start with that join.
func (sy *Sync) settleFormerPublic(ctx context.Context, room string, after store.MessageID, emit func(SyncPage) bool) (bool, error) {
	first, end, err := sy.ownMembershipAfter(ctx, room, after)
	if err != nil || end == nil {
		return err == nil, err
	}
	if first.Kind == store.ParticipantJoined {
		after = store.MinMessageID(first.ID.Time())
	}
	fr := &syncRoom{}
	for {
		events, err := sy.s.Store.RoomEvents(ctx, room, after, replayPageSize)
		if err != nil {
			return false, err
		}
		for i := range events {
			if events[i].ID.Compare(end.ID) > 0 {
				return true, nil
			}
			if !sy.fromRoom(fr, &events[i], emit) {
				return false, nil
			}
		}
		if len(events) < replayPageSize {
			return true, nil
		}
		after = events[len(events)-1].ID
	}
}

// replayPageSize is how many logged events a sync reads per store call.
const replayPageSize = 100

// ownMembershipAfter reads room's log after the cursor for the user's own
// membership events: the first of them (a join, or an end), and the last
// end of their membership (leave, removal or ban); nil if none.
func (sy *Sync) ownMembershipAfter(ctx context.Context, room string, after store.MessageID) (first, end *store.Event, err error) {
	for {
		events, err := sy.s.Store.RoomEvents(ctx, room, after, replayPageSize)
		if err != nil {
			return nil, nil, err
		}
		for i := range events {
			ev := &events[i]
			ends := store.EndsMembership(ev, sy.me.Login)
			if first == nil && (ends || ev.Kind == store.ParticipantJoined && ev.User.Login == sy.me.Login) {
				first = ev
			}
			if ends {
				end = ev
			}
		}
		if len(events) < replayPageSize {
			return first, end, nil
		}
		after = events[len(events)-1].ID
	}
}

// add appends a change to the page, delivering the page when full; false:
// the subscriber is gone.
func (sy *Sync) add(c SyncChange, emit func(SyncPage) bool) bool {
	sy.page = append(sy.page, c)
	return len(sy.page) < sy.pageSize || sy.flush(emit, sy.caughtUp)
}

// flush delivers the page and the cursor after it.
func (sy *Sync) flush(emit func(SyncPage) bool, caughtUp bool) bool {
	page := SyncPage{Changes: sy.page, Cursor: sy.cursor(), CaughtUp: caughtUp}
	sy.page = nil
	return emit(page)
}

// cursor encodes where the sync is: its Base stays where the replay of a
// room that awaits the user's join started, until the join comes.
func (sy *Sync) cursor() string {
	sy.prune()
	c := sy.cur
	for _, fr := range sy.rooms {
		if fr.awaitJoin && fr.early {
			c.Base = sy.from
		}
	}
	return c.String()
}

// prune forgets the rooms left longest ago once the cursor holds more
// than MaxSyncCursorRooms.
func (sy *Sync) prune() {
	if len(sy.cur.Rooms) <= MaxSyncCursorRooms {
		return
	}
	var left []string
	for room, p := range sy.cur.Rooms {
		if p.Left {
			left = append(left, room)
		}
	}
	slices.SortFunc(left, func(a, b string) int { return sy.cur.Rooms[a].At.ID.Compare(sy.cur.Rooms[b].At.ID) })
	for _, room := range left[:min(len(left), len(sy.cur.Rooms)-MaxSyncCursorRooms)] {
		delete(sy.cur.Rooms, room)
	}
}

// close releases the sync's streams, and its place among the user's.
func (sy *Sync) close() {
	sy.inbox.Close()
	for _, fr := range sy.rooms {
		fr.st.Close()
	}
	if sy.release != nil {
		sy.release()
	}
}
