package resolvers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/graph/model"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
)

// limitedUser returns the caller once their write is counted within the
// limit of action.
func (r *Resolver) limitedUser(ctx context.Context, action ratelimit.Action) (store.UserRef, error) {
	me, err := auth.UserFrom(ctx)
	if err != nil {
		return me, err
	}
	return me, r.Limits.Allow(ctx, action, me.Login)
}

// participantRoom reads the room and checks that u takes part in it: only
// participants read and post. Returns ErrNotFound or ErrForbidden. It reads
// the whole participant set: when the room's kind (or creator) is all the
// caller needs besides the check, use participant.
func (r *Resolver) participantRoom(ctx context.Context, name string, u store.UserRef) (store.Room, error) {
	room, err := r.Store.Room(ctx, name)
	if err != nil {
		return store.Room{}, err
	}
	if !room.HasParticipant(u.Login) {
		return store.Room{}, notParticipant(name, u)
	}
	return room, nil
}

// participant checks that u takes part in the room as participantRoom does,
// from the room's membership (Store.Membership) instead of the whole room:
// the same answer, at the cost of one small read whatever the room's size.
// Returns ErrNotFound or ErrForbidden.
func (r *Resolver) participant(ctx context.Context, name string, u store.UserRef) (store.RoomMembership, error) {
	m, err := r.Store.Membership(ctx, name, u.Login)
	if err != nil {
		return store.RoomMembership{}, err
	}
	if !m.Participant {
		return store.RoomMembership{}, notParticipant(name, u)
	}
	return m, nil
}

func notParticipant(room string, u store.UserRef) error {
	return fmt.Errorf("%w: %s is not a participant of room %q; join it first", store.ErrForbidden, u.Login, room)
}

// postAudience checks that u may post to the room, as participant does,
// and returns its kind and, for a private group, the members whose inboxes
// the post goes to. Only a group's post needs them, so only a group's
// costs a read of the whole room (made after the membership read, and
// checked again by it).
func (r *Resolver) postAudience(ctx context.Context, name string, u store.UserRef) (store.RoomKind, []store.UserRef, error) {
	m, err := r.participant(ctx, name, u)
	if err != nil || m.Kind != store.PrivateGroup {
		return m.Kind, nil, err
	}
	group, err := r.participantRoom(ctx, name, u)
	if err != nil {
		return "", nil, err
	}
	return group.Kind, group.Participants, nil
}

// recordMembership stores the system message of a join or leave and
// publishes it as the event of that kind.
func (r *Resolver) recordMembership(ctx context.Context, kind store.EventKind, room string, u store.UserRef, text string) error {
	msg := store.Message{Room: room, ID: store.NewMessageID(), Author: u, Content: text, System: true}
	if err := r.Store.PostMessage(ctx, msg); err != nil {
		return err
	}
	r.publish(ctx, broker.Event{Kind: kind, Room: room, Message: &msg, User: u})
	return nil
}

// publish hands ev to the broker. The write it reports is already stored,
// so a failed publish only delays live delivery until subscribers resume;
// it is logged, not returned.
func (r *Resolver) publish(ctx context.Context, ev broker.Event) {
	r.publishTo(ctx, broker.RoomTopic(ev.Room), ev)
}

// publishTo hands ev to the broker on any topic (a user's inbox topic).
func (r *Resolver) publishTo(ctx context.Context, topic string, ev broker.Event) {
	if err := r.Broker.Publish(ctx, topic, ev); err != nil {
		r.Log.WarnContext(ctx, "publish failed; subscribers will catch up from the store", "topic", topic, "kind", ev.Kind, "err", err)
	}
}

// messagePage reads a newest-first page of first messages after the
// cursor with fetch, which returns up to n messages older than before, and
// shapes it as a connection.
func (r *Resolver) messagePage(first *int, after *string, fetch func(before store.MessageID, n int) ([]store.Message, error)) (*model.MessageConnection, error) {
	n, err := pageSize(first, defaultMessagePage)
	if err != nil {
		return nil, err
	}
	before, err := parseCursor(after)
	if err != nil {
		return nil, err
	}
	msgs, err := fetch(before, n+1)
	if err != nil {
		return nil, err
	}
	conn := &model.MessageConnection{Edges: []model.MessageEdge{}, PageInfo: newPageInfo(after, len(msgs) > n)}
	for i := range msgs[:min(n, len(msgs))] {
		cursor := msgs[i].ID.String()
		conn.Edges = append(conn.Edges, model.MessageEdge{Cursor: cursor, Node: &msgs[i]})
		addEdge(conn.PageInfo, &cursor)
	}
	return conn, nil
}

// newPageInfo starts the PageInfo of a forward page asked for after the
// cursor `after`, before its edges are added with addEdge. Relay lets a
// forward page say whether edges precede it when that is cheap: a page
// after a cursor continues an earlier one, so it says yes.
func newPageInfo(after *string, hasNext bool) *model.PageInfo {
	return &model.PageInfo{HasNextPage: hasNext, HasPreviousPage: deref(after) != ""}
}

// addEdge records the cursor of the page's next edge: the first is the
// start cursor, the last the end cursor.
func addEdge(info *model.PageInfo, cursor *string) {
	if info.StartCursor == nil {
		info.StartCursor = cursor
	}
	info.EndCursor = cursor
}

// groupWindows returns me's membership windows of a private group.
// Returns ErrForbidden if me never was a member.
func (r *Resolver) groupWindows(ctx context.Context, group string, me store.UserRef) ([]store.Window, error) {
	conv, err := r.Store.Conversation(ctx, me.Login, group)
	if errors.Is(err, store.ErrNotFound) || err == nil && len(conv.Windows) == 0 {
		return nil, fmt.Errorf("%w: %s is not a member of group %q", store.ErrForbidden, me.Login, group)
	}
	return conv.Windows, err
}

// pageSize validates a connection's `first` argument.
func pageSize(first *int, def int) (int, error) {
	if first == nil {
		return def, nil
	}
	if *first < 1 || *first > MaxPageSize {
		return 0, store.Invalidf("invalid first: %d; it must be between 1 and %d", *first, MaxPageSize)
	}
	return *first, nil
}

// parseCursor reads an optional message cursor; nil means "from the newest".
func parseCursor(cursor *string) (store.MessageID, error) {
	if cursor == nil || *cursor == "" {
		return store.MessageID{}, nil
	}
	return store.ParseMessageID(*cursor)
}

// sortedPage is a page of a paged list (a room's participants, a user's
// rooms): of items, sorted by key, up to first (defaultListPage when
// absent) whose key follows after.
func sortedPage[T any](items []T, key func(T) string, first *int, after *string) ([]T, error) {
	n, err := pageSize(first, defaultListPage)
	if err != nil {
		return nil, err
	}
	i, found := slices.BinarySearchFunc(items, deref(after), func(item T, k string) int { return strings.Compare(key(item), k) })
	if found {
		i++
	}
	return items[i:min(i+n, len(items))], nil
}

// nullIfMissing is the answer of a nullable lookup: a thing that does not
// exist and one the caller may not see (both ErrNotFound, so that names and
// ids reveal nothing) are null, with no error.
func nullIfMissing[T any](v T, err error) (*T, error) {
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// deref reads an optional string argument; absent means empty.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// visibleRoom reads a room the caller may see: any public room, and the
// private groups they are in. Others' groups are NOT_FOUND, so names do not
// reveal that a group exists.
func (r *Resolver) visibleRoom(ctx context.Context, name string, me store.UserRef) (store.Room, error) {
	room, err := r.Store.Room(ctx, name)
	if err != nil {
		return store.Room{}, err
	}
	if err := r.checkVisible(ctx, name, room.Kind, room.HasParticipant(me.Login), me); err != nil {
		return store.Room{}, err
	}
	return room, nil
}

// visibleMembership is visibleRoom for callers that need the room's kind
// and whether me takes part, not the room: it reads the membership only.
func (r *Resolver) visibleMembership(ctx context.Context, name string, me store.UserRef) (store.RoomMembership, error) {
	m, err := r.Store.Membership(ctx, name, me.Login)
	if err != nil {
		return store.RoomMembership{}, err
	}
	if err := r.checkVisible(ctx, name, m.Kind, m.Participant, me); err != nil {
		return store.RoomMembership{}, err
	}
	return m, nil
}

// checkVisible is the rule of visibleRoom: a private group me is not in is
// NOT_FOUND unless me has its inbox entry (a former member).
func (r *Resolver) checkVisible(ctx context.Context, name string, kind store.RoomKind, participant bool, me store.UserRef) error {
	if kind == store.PrivateGroup && !participant {
		if _, err := r.Store.Conversation(ctx, me.Login, name); err != nil {
			return fmt.Errorf("room %q: %w", name, store.ErrNotFound)
		}
	}
	return nil
}

// visibleRooms pages the rooms the caller may see, reading on past others'
// private groups until the page is full or the rooms run out.
func (r *Resolver) visibleRooms(ctx context.Context, me store.UserRef, after string, limit int) ([]store.Room, error) {
	var page []store.Room
	for len(page) < limit {
		rooms, err := r.Store.Rooms(ctx, after, limit)
		if err != nil {
			return nil, err
		}
		for _, room := range rooms {
			if room.Kind != store.PrivateGroup || room.HasParticipant(me.Login) {
				page = append(page, room)
			}
		}
		if len(rooms) < limit {
			break
		}
		after = rooms[len(rooms)-1].Name
	}
	return page[:min(len(page), limit)], nil
}

// roomKind maps the API's room kind to the store's.
func roomKind(k *model.RoomKind) store.RoomKind {
	if k != nil && *k == model.RoomKindPrivateGroup {
		return store.PrivateGroup
	}
	return store.PublicRoom
}

// limitLogin counts a login attempt, whatever its outcome and before the
// password is checked, against the client address and against the login
// tried, so that guessing one user's password is slow from any number of
// addresses, and so is trying many logins from one address. A login that
// cannot exist is counted only against the address.
func (r *Resolver) limitLogin(ctx context.Context, login string) error {
	if err := r.Limits.Allow(ctx, ratelimit.LoginAddress, ratelimit.AddressFrom(ctx)); err != nil {
		return err
	}
	if store.ValidateLogin(login) != nil {
		return nil
	}
	return r.Limits.Allow(ctx, ratelimit.Login, login)
}

// authPayload shapes a session's tokens as the API's AuthPayload.
func authPayload(p auth.Pair, u store.User) *model.AuthPayload {
	return &model.AuthPayload{Token: p.AccessToken, ExpiresAt: p.AccessExpires, RefreshToken: p.RefreshToken, RefreshExpiresAt: p.RefreshExpires, User: &u}
}
