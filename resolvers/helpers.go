package resolvers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/graph/model"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/tracing"
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

// publish hands a room event the store logged to the broker, for the
// room's live subscribers. The zero event (the store logged nothing) is not
// published.
func (r *Resolver) publish(ctx context.Context, ev store.Event) {
	if !ev.ID.IsZero() {
		r.publishTo(ctx, broker.RoomTopic(ev.Room), ev)
	}
}

// publishChange publishes the event of a change to a message: to the
// room's subscribers, or to both users' inboxes for a direct message.
func (r *Resolver) publishChange(ctx context.Context, ev store.Event) {
	if ev.ID.IsZero() || !store.IsDirectConversation(ev.Room) {
		r.publish(ctx, ev)
		return
	}
	a, b := store.DirectParties(ev.Room)
	r.publishTo(ctx, broker.UserTopic(a), ev)
	r.publishTo(ctx, broker.UserTopic(b), ev)
}

// changed publishes the event of a change to the message id, which w
// wrote, and returns the message as it now is: the event's, or, when the
// change logged nothing (an edit older than the message's last), as stored.
func (r *Resolver) changed(ctx context.Context, w *roomWrite, ev store.Event, id store.MessageID) (*store.Message, error) {
	w.publish(ev)
	if ev.Message != nil {
		return ev.Message, nil
	}
	m, err := r.Store.Message(ctx, id)
	if err != nil {
		return nil, err
	}
	return &m, nil
}

// publishTo hands ev to the broker on any topic (a user's inbox topic). The
// write it reports is already stored and logged, so a failed publish only
// delays live delivery until subscribers catch up from the log; it is
// logged, not returned. It publishes even when the request that made the
// write has ended (its client went away): the subscribers have nothing
// else to tell them of the event.
func (r *Resolver) publishTo(ctx context.Context, topic string, ev store.Event) {
	markPublished(ctx)
	publishing := context.WithoutCancel(ctx)
	var err error
	if tracing.FromContext(ctx) == nil {
		// Untraced, as nearly every publish is: no clock read, and no
		// attributes built (they would be allocated for every event).
		err = r.Broker.Publish(publishing, topic, ev)
	} else {
		start := time.Now()
		err = r.Broker.Publish(publishing, topic, ev)
		tracing.Record(ctx, "broker.publish", tracing.Producer, start, err, tracing.Attr{Key: "chat.topic", Value: topic}, tracing.Attr{Key: "chat.event", Value: string(ev.Kind)})
	}
	if err != nil {
		r.Log.WarnContext(ctx, "publish failed; subscribers will catch up from the log", "topic", topic, "kind", ev.Kind, "err", err)
	}
}

// messagePage reads a newest-first page of first messages after the
// cursor with fetch, which returns up to n messages older than before, and
// shapes it as a connection, with the page's reactions and threads
// prefetched if selected.
func (r *Resolver) messagePage(ctx context.Context, first *int, after *string, fetch func(before store.MessageID, n int) ([]store.Message, error)) (*model.MessageConnection, error) {
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
	msgs = msgs[:min(n, len(msgs))]
	if err := r.prefetch(ctx, msgs); err != nil {
		return nil, err
	}
	for i := range msgs {
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

// pageSize validates a connection's `first` argument.
func pageSize(first *int, def int) (int, error) { return boundedFirst(first, def, MaxPageSize) }

// boundedFirst is a list's `first` argument: def when absent, else 1 to
// most.
func boundedFirst(first *int, def, most int) (int, error) {
	if first == nil {
		return def, nil
	}
	if *first < 1 || *first > most {
		return 0, store.Invalidf("invalid first: %d; it must be between 1 and %d", *first, most)
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

// accountWithPassword returns the caller's account if password is theirs;
// otherwise UNAUTHENTICATED, naming what (the password, the old password)
// was wrong. A caller whose account is gone is UNAUTHENTICATED too.
func (r *Resolver) accountWithPassword(ctx context.Context, login, password, what string) (store.Account, error) {
	acct, err := r.Store.Account(ctx, login)
	if errors.Is(err, store.ErrNotFound) {
		return store.Account{}, fmt.Errorf("%w: the token's user no longer exists", auth.ErrUnauthenticated)
	}
	if err != nil {
		return store.Account{}, err
	}
	if err := r.Passwords.Check(ctx, acct.PassHash, password); err != nil {
		if errors.Is(err, auth.ErrUnauthenticated) {
			err = fmt.Errorf("%w: %s is wrong", auth.ErrUnauthenticated, what)
		}
		return store.Account{}, err
	}
	return acct, nil
}
