package resolvers

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/chat"
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

// messagePage reads a newest-first page of first messages after the
// cursor with read, and shapes it as a connection, with the page's
// reactions and threads prefetched if selected.
func (r *Resolver) messagePage(ctx context.Context, first *int, after *string, read chat.Pager) (*model.MessageConnection, error) {
	n, err := pageSize(first, defaultMessagePage)
	if err != nil {
		return nil, err
	}
	before, err := parseCursor(after)
	if err != nil {
		return nil, err
	}
	msgs, err := read(ctx, before, n+1)
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

// roomKind maps the API's room kind to the store's.
func roomKind(k *model.RoomKind) store.RoomKind {
	if k != nil && *k == model.RoomKindPrivateGroup {
		return store.PrivateGroup
	}
	return store.PublicRoom
}

// authPayload shapes a session's tokens as the API's AuthPayload.
func authPayload(p auth.Pair, u store.User) *model.AuthPayload {
	return &model.AuthPayload{Token: p.AccessToken, ExpiresAt: p.AccessExpires, RefreshToken: p.RefreshToken, RefreshExpiresAt: p.RefreshExpires, User: &u}
}

// moderate takes the caller's moderation action of this kind on login in
// the room.
func (r *mutationResolver) moderate(ctx context.Context, room, login string, kind store.EventKind) (*store.Room, error) {
	me, err := auth.UserFrom(ctx)
	if err != nil {
		return nil, err
	}
	return r.Service.Moderate(ctx, me, room, login, kind)
}

// visibleContent is m's content as the caller reads it (chat.Content). The
// caller is looked up only for a hidden message: pages and events resolve
// this for every message. An event's shared encoding has no caller, and
// shows hidden content to nobody.
func visibleContent(ctx context.Context, m *store.Message) string {
	if !m.Hidden {
		return m.Content
	}
	me, _ := auth.UserFrom(ctx)
	return chat.Content(m, me)
}
