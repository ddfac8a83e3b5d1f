package resolvers

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

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

// pageRequest is what a page of a list of messages asks for, as Relay's
// arguments: `first` messages `after` a cursor (toward older ones), `last`
// messages `before` a cursor (toward newer ones), or a page `around` a
// message of the list.
type pageRequest struct {
	first, last           *int
	after, before, around *string
}

// olderPage is a request for the first messages after the cursor only,
// the paging of a list read one way (myMessages).
func olderPage(first *int, after *string) pageRequest {
	return pageRequest{first: first, after: after}
}

// size validates the combination of the arguments and returns the page's
// size: `first` or `last`, defaultMessagePage when neither is given.
func (p pageRequest) size() (int, error) {
	after, before, around := deref(p.after) != "", deref(p.before) != "", deref(p.around) != ""
	switch {
	case p.first != nil && p.last != nil:
		return 0, store.Invalidf("invalid page: give first or last, not both")
	case around && (after || before):
		return 0, store.Invalidf("invalid page: around opens the list at a message and takes no after or before cursor")
	case after && before:
		return 0, store.Invalidf("invalid page: give after or before, not both")
	case p.first != nil && before:
		return 0, store.Invalidf("invalid page: first goes with after, toward older messages; use last with before")
	case p.last != nil && after:
		return 0, store.Invalidf("invalid page: last goes with before, toward newer messages; use first with after")
	case p.last != nil:
		return bounded("last", p.last, defaultMessagePage, MaxPageSize)
	}
	return pageSize(p.first, defaultMessagePage)
}

// messagePage reads a page of a newest-first list of messages with pages,
// as req asks, and shapes it as a connection, newest first whichever way
// it was read, with the page's reactions and threads prefetched if
// selected. Both flags of its PageInfo are read from the store: one
// message more in the page's direction, and one beyond its other end (the
// cursor's, or the message around which it opens). A list read one way
// (no Newer) says there are newer messages when the page continues an
// earlier one.
func (r *Resolver) messagePage(ctx context.Context, req pageRequest, pages chat.Pages) (*model.MessageConnection, error) {
	n, err := req.size()
	if err != nil {
		return nil, err
	}
	var (
		msgs []store.Message
		info *model.PageInfo
	)
	around, backward := deref(req.around) != "", req.last != nil || deref(req.before) != ""
	if (around || backward) && pages.Newer == nil {
		return nil, store.Invalidf("invalid page: this list pages toward older messages only (first and after)")
	}
	switch {
	case around:
		msgs, info, err = pageAround(ctx, pages, *req.around, n)
	case backward:
		msgs, info, err = pageBefore(ctx, pages, req.before, n)
	default:
		msgs, info, err = pageAfter(ctx, pages, req.after, n)
	}
	if err != nil {
		return nil, err
	}
	if err := r.prefetch(ctx, msgs); err != nil {
		return nil, err
	}
	conn := &model.MessageConnection{Edges: make([]model.MessageEdge, len(msgs)), PageInfo: info}
	for i := range msgs {
		conn.Edges[i] = model.MessageEdge{Cursor: msgs[i].ID.String(), Node: &msgs[i]}
	}
	if len(conn.Edges) > 0 {
		// The page's cursors point into its edges: no string of their own.
		addEdge(info, &conn.Edges[0].Cursor)
		addEdge(info, &conn.Edges[len(conn.Edges)-1].Cursor)
	}
	return conn, nil
}

// pageAfter reads up to n messages older than the cursor after (absent:
// from the newest), newest first.
func pageAfter(ctx context.Context, pages chat.Pages, after *string, n int) ([]store.Message, *model.PageInfo, error) {
	cursor, err := parseCursor(after)
	if err != nil {
		return nil, nil, err
	}
	msgs, err := pages.Older(ctx, cursor, n+1)
	if err != nil {
		return nil, nil, err
	}
	info := newPageInfo(after, len(msgs) > n)
	if pages.Newer != nil {
		if info.HasPreviousPage, err = newerThan(ctx, pages, cursor); err != nil {
			return nil, nil, err
		}
	}
	return msgs[:min(n, len(msgs))], info, nil
}

// pageBefore reads up to n messages newer than the cursor before (absent:
// the n oldest), the page just above it, and turns it newest first.
func pageBefore(ctx context.Context, pages chat.Pages, before *string, n int) ([]store.Message, *model.PageInfo, error) {
	cursor, err := parseCursor(before)
	if err != nil {
		return nil, nil, err
	}
	msgs, err := pages.Newer(ctx, cursor, n+1)
	if err != nil {
		return nil, nil, err
	}
	info := &model.PageInfo{HasPreviousPage: len(msgs) > n}
	if info.HasNextPage, err = olderThan(ctx, pages, cursor); err != nil {
		return nil, nil, err
	}
	msgs = msgs[:min(n, len(msgs))]
	slices.Reverse(msgs)
	return msgs, info, nil
}

// pageAround reads the message id of the list with up to n/2 newer
// messages and older ones for the rest of n, newest first: a message
// near the newest end opens a page with more older ones.
func pageAround(ctx context.Context, pages chat.Pages, id string, n int) ([]store.Message, *model.PageInfo, error) {
	at, err := pages.At(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	newer, err := pages.Newer(ctx, at.ID, n/2+1)
	if err != nil {
		return nil, nil, err
	}
	info := &model.PageInfo{HasPreviousPage: len(newer) > n/2}
	newer = newer[:min(n/2, len(newer))]
	rest := n - 1 - len(newer)
	older, err := pages.Older(ctx, at.ID, rest+1)
	if err != nil {
		return nil, nil, err
	}
	info.HasNextPage = len(older) > rest
	slices.Reverse(newer)
	msgs := append(append(newer, at), older[:min(rest, len(older))]...)
	return msgs, info, nil
}

// newerThan reports whether the list holds a message newer than the
// cursor; none is newer than the zero cursor, the newest end.
func newerThan(ctx context.Context, pages chat.Pages, cursor store.MessageID) (bool, error) {
	if cursor.IsZero() {
		return false, nil
	}
	msgs, err := pages.Newer(ctx, cursor, 1)
	return len(msgs) > 0, err
}

// olderThan reports whether the list holds a message older than the
// cursor; none is older than the zero cursor, which a backward page reads
// from the oldest end.
func olderThan(ctx context.Context, pages chat.Pages, cursor store.MessageID) (bool, error) {
	if cursor.IsZero() {
		return false, nil
	}
	msgs, err := pages.Older(ctx, cursor, 1)
	return len(msgs) > 0, err
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
func boundedFirst(first *int, def, most int) (int, error) { return bounded("first", first, def, most) }

// bounded is a list's size argument called name: def when absent, else 1
// to most.
func bounded(name string, size *int, def, most int) (int, error) {
	if size == nil {
		return def, nil
	}
	if *size < 1 || *size > most {
		return 0, store.Invalidf("invalid %s: %d; it must be between 1 and %d", name, *size, most)
	}
	return *size, nil
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

// positive is n, or null for zero: an attachment's width and height, which
// only images have.
func positive(n int) *int {
	if n <= 0 {
		return nil
	}
	return &n
}

// caller is the user a request acts for, for resolvers whose arguments
// shadow package auth (a push subscription's auth key).
func caller(ctx context.Context) (store.UserRef, error) { return auth.UserFrom(ctx) }

// callerSession is the caller's session id; empty for a bot's API key,
// which has none.
func callerSession(ctx context.Context) string {
	_, session, _ := auth.SessionFrom(ctx)
	return session
}

// botCreated is the API's view of a bot with its new key.
func botCreated(b *chat.NewBot) *model.BotCreated {
	return &model.BotCreated{Bot: &b.Bot, APIKey: b.Key}
}

// names are the first and last names an input gives, each under its
// current name (firstName, lastName) or its deprecated one (firstname,
// lastname): either will do, both if they agree; nil if neither is given.
func names(oldFirst, first, oldLast, last *string) (*string, *string, error) {
	f, errFirst := eitherName("firstName", "firstname", oldFirst, first)
	l, errLast := eitherName("lastName", "lastname", oldLast, last)
	return f, l, store.JoinInvalid(errFirst, errLast)
}

// namedAsGiven returns err with its errors about the names (which the core
// calls firstname and lastname) naming the fields the input used: the
// camelCase ones, unless it gave only a deprecated one.
func namedAsGiven(err error, oldFirst, first, oldLast, last *string) error {
	if oldFirst == nil || first != nil {
		err = store.RenameField(err, "firstname", "firstName")
	}
	if oldLast == nil || last != nil {
		err = store.RenameField(err, "lastname", "lastName")
	}
	return err
}

func eitherName(field, deprecated string, old, current *string) (*string, error) {
	switch {
	case current == nil:
		return old, nil
	case old == nil || *old == *current:
		return current, nil
	}
	return nil, store.InvalidField(field, "invalid %s: it differs from the deprecated %s given too: give one of the two", field, deprecated)
}

// secondsOf is a count of seconds as a duration; nil stays nil.
func secondsOf(seconds *int) *time.Duration {
	if seconds == nil {
		return nil
	}
	d := time.Duration(*seconds) * time.Second
	return &d
}

// userConnection is a page of users sorted by login, as sortedPage makes
// it, with its cursors (the logins, which `after` takes) and the list's
// size.
func userConnection(users []store.UserRef, first *int, after *string) (*model.UserConnection, error) {
	page, err := sortedPage(users, func(u store.UserRef) string { return u.Login }, first, after)
	if err != nil {
		return nil, err
	}
	hasNext := len(page) > 0 && page[len(page)-1].Login != users[len(users)-1].Login
	conn := &model.UserConnection{Edges: []model.UserEdge{}, PageInfo: newPageInfo(after, hasNext), TotalCount: len(users)}
	for i := range page {
		conn.Edges = append(conn.Edges, model.UserEdge{Cursor: page[i].Login, Node: &page[i]})
		addEdge(conn.PageInfo, &page[i].Login)
	}
	return conn, nil
}
