package resolvers

import (
	"context"
	"errors"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/chat"
	"github.com/killrchat/chatql/graph"
	"github.com/killrchat/chatql/graph/model"
	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/stream"
)

// How subscription streams meet the transports that serve them. A stream
// that fails after it started (its subscriber fell behind, the server is
// shutting down, its session ended) cannot return an error from its
// resolver any more; it leaves the error where the transport looks for it
// when the stream's channel closes: the websocket transport's own slot, or
// the one StreamErrors gives gqlgen's transports (server-sent events).

type streamErrorKey struct{}

// streamError holds why a stream ended.
type streamError struct {
	mu  sync.Mutex
	err error
}

// WithStreamError returns a context in which a subscription's stream
// records why it failed, and a function that reads it once the stream's
// channel is closed (nil if it ended normally). Without it, failures are
// logged.
func WithStreamError(ctx context.Context) (context.Context, func() error) {
	slot := &streamError{}
	return context.WithValue(ctx, streamErrorKey{}, slot), func() error {
		slot.mu.Lock()
		defer slot.mu.Unlock()
		return slot.err
	}
}

// endStream records why a stream ended, for its transport. A stream whose
// subscriber already left has nobody to tell.
func (r *Resolver) endStream(ctx context.Context, err error) {
	if err == nil || ctx.Err() != nil {
		return
	}
	if slot, ok := ctx.Value(streamErrorKey{}).(*streamError); ok {
		slot.mu.Lock()
		slot.err = err
		slot.mu.Unlock()
		return
	}
	r.Log.WarnContext(ctx, "subscription ended; the client must resubscribe", "err", err)
}

// StreamErrors is a handler extension that lets gqlgen's transports report
// why a subscription's stream failed: a stream that ends with an error
// (see endStream) ends with one more response carrying it, coded as
// always, before the transport's end of stream (server-sent events: an
// event with the error, then "complete"). Operations that already have a
// slot (the websocket transport's) are left alone.
type StreamErrors struct{ Resolver *Resolver }

var (
	_ graphql.HandlerExtension     = StreamErrors{}
	_ graphql.OperationInterceptor = StreamErrors{}
)

// ExtensionName names the extension.
func (StreamErrors) ExtensionName() string { return "StreamErrors" }

// Validate accepts every schema.
func (StreamErrors) Validate(graphql.ExecutableSchema) error { return nil }

// InterceptOperation gives a subscription a slot for its stream's error and
// sends what it holds as the last response.
func (e StreamErrors) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	op := graphql.GetOperationContext(ctx).Operation
	if _, ok := ctx.Value(streamErrorKey{}).(*streamError); ok || op == nil || op.Operation != ast.Subscription {
		return next(ctx)
	}
	ctx, streamErr := WithStreamError(ctx)
	responses := next(ctx)
	ended := false
	return func(ctx context.Context) *graphql.Response {
		if ended {
			return nil
		}
		if resp := responses(ctx); resp != nil {
			return resp
		}
		ended = true
		if err := streamErr(); err != nil {
			return &graphql.Response{Errors: gqlerror.List{e.Resolver.present(ctx, err)}}
		}
		return nil
	}
}

// watchSession returns the context a subscription's stream runs in: ctx,
// ended early when the caller's access token expires or their session ends
// (see auth.Sessions.Watch).
func (r *Resolver) watchSession(ctx context.Context) context.Context {
	if r.Sessions != nil {
		if watched := r.Sessions.Watch(ctx); watched != nil {
			return watched
		}
	}
	return ctx
}

// whyEnded returns why a stream that ran in watched (from watchSession)
// ended, given err, what the stream itself reported: err, or, when the
// caller's credentials ended it while the subscriber was still there,
// their end (UNAUTHENTICATED).
func whyEnded(ctx, watched context.Context, err error) error {
	if err == nil && ctx.Err() == nil && watched.Err() != nil {
		return context.Cause(watched)
	}
	return err
}

// FeedSchema returns a schema in which the roomEvents subscription serves
// the events given to feed instead of a room, every other field resolving
// as in r's: a transport that executes a roomEvents selection once for
// many subscribers feeds it the events they have each been cleared to see,
// one before each execution, and writes the one result to all of them.
// feed never blocks: it drops an event that the last execution ended
// without reading (it failed first). Calls of feed must not overlap.
func (r *Resolver) FeedSchema() (schema graphql.ExecutableSchema, feed func(*store.Event)) {
	events := make(chan *model.RoomEvent, 1)
	schema = graph.NewExecutableSchema(graph.Config{Resolvers: feedRoot{r, events}})
	return schema, func(ev *store.Event) {
		select {
		case <-events:
		default:
		}
		events <- RoomEventOf(ev)
	}
}

// feedRoot is r with the roomEvents subscription served from a feed.
type feedRoot struct {
	*Resolver
	feed <-chan *model.RoomEvent
}

func (f feedRoot) Subscription() graph.SubscriptionResolver { return feedSubscription{f} }

type feedSubscription struct{ feedRoot }

func (f feedSubscription) RoomEvents(context.Context, string, *string, *bool) (<-chan *model.RoomEvent, error) {
	return f.feed, nil
}

func (f feedSubscription) Sync(context.Context, *string) (<-chan *model.SyncPage, error) {
	return nil, errors.New("resolvers: a feed schema serves roomEvents only")
}

func (f feedSubscription) InboxEvents(context.Context, *string, *bool) (<-chan *model.InboxEvent, error) {
	return nil, errors.New("resolvers: a feed schema serves roomEvents only")
}

// OpenRoomEvents opens the caller's stream of a room's events after the
// optional cursor (see chat.Service.FollowRoom), with its participants'
// presence if asked: the roomEvents subscription, for the transports that
// drive streams themselves.
func (r *Resolver) OpenRoomEvents(ctx context.Context, room string, after *string, presence bool) (*stream.Room, error) {
	me, err := auth.UserFrom(ctx)
	if err != nil {
		return nil, err
	}
	var from store.Cursor
	if after != nil && *after != "" {
		if from, err = store.ParseCursor(*after); err != nil {
			return nil, err
		}
	}
	s, err := r.Service.FollowRoom(ctx, me, room, from)
	if err != nil {
		return nil, err
	}
	if presence {
		if err := s.FollowPresence(ctx); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// RoomEventOf shapes a room event as the API's RoomEvent. A logged event
// has a cursor: its id, and its place in the room's sequence when the
// broker keeps one (store.CursorOf); ROOM_DELETED has none, since the
// room's log went with it.
func RoomEventOf(ev *store.Event) *model.RoomEvent {
	out := &model.RoomEvent{Kind: model.RoomEventKind(ev.Kind), Room: ev.Room, Message: ev.Message, User: &ev.User, By: actorOf(ev), Online: presenceOf(ev)}
	if !ev.ID.IsZero() && ev.Kind != store.RoomDeleted {
		cursor := store.CursorOf(ev)
		out.Cursor = &cursor
	}
	return out
}

// presenceOf is a PRESENCE_CHANGED's state, nil for other kinds.
func presenceOf(ev *store.Event) *bool {
	if ev.Kind != store.PresenceChanged {
		return nil
	}
	online := ev.Online
	return &online
}

// inboxEventOf shapes an inbox event as the API's InboxEvent. A logged
// event's id is its cursor; an ephemeral one (typing) has none.
func inboxEventOf(ev *store.Event) *model.InboxEvent {
	out := &model.InboxEvent{Kind: model.InboxEventKind(ev.Kind), ConversationID: ev.Room, Message: ev.Message, User: &ev.User, Online: presenceOf(ev)}
	if !ev.ID.IsZero() {
		cursor := ev.ID.String()
		out.Cursor = &cursor
	}
	return out
}

// channel runs a stream for gqlgen's subscription transports, which read
// events from a channel, shaping each with shape; why it failed goes to
// the transport (endStream). The stream runs in watched (from
// watchSession, derived from ctx), so it ends when the subscriber's session
// does.
func channel[T any](r *Resolver, ctx, watched context.Context, run func(context.Context, func(*store.Event) bool) error, shape func(*store.Event) T) <-chan T {
	out := make(chan T)
	go func() {
		defer close(out)
		err := run(watched, func(ev *store.Event) bool {
			select {
			case out <- shape(ev):
				return true
			case <-watched.Done():
				return false
			}
		})
		r.endStream(ctx, whyEnded(ctx, watched, err))
	}()
	return out
}

// actorOf is RoomEvent.by: who took a moderation action, the author of the
// system message that records it; nil for other events.
func actorOf(ev *store.Event) *store.UserRef {
	switch ev.Kind {
	case store.ModeratorAppointed, store.ModeratorDismissed, store.ParticipantRemoved, store.ParticipantBanned, store.ParticipantUnbanned:
		if ev.Message != nil {
			return &ev.Message.Author
		}
	}
	return nil
}

// syncPageOf shapes a sync's page as the API's SyncPage.
func syncPageOf(p chat.SyncPage) *model.SyncPage {
	out := &model.SyncPage{Changes: make([]model.SyncChange, len(p.Changes)), Cursor: p.Cursor, CaughtUp: p.CaughtUp}
	for i, c := range p.Changes {
		if c.Inbox {
			out.Changes[i].InboxEvent = inboxEventOf(c.Event)
		} else {
			out.Changes[i].RoomEvent = RoomEventOf(c.Event)
		}
	}
	return out
}

// runSync runs the caller's sync for gqlgen's subscription transports, as
// channel runs a stream.
func (r *Resolver) runSync(ctx, watched context.Context, s *chat.Sync) <-chan *model.SyncPage {
	out := make(chan *model.SyncPage)
	go func() {
		defer close(out)
		err := s.Run(watched, func(p chat.SyncPage) bool {
			select {
			case out <- syncPageOf(p):
				return true
			case <-watched.Done():
				return false
			}
		})
		r.endStream(ctx, whyEnded(ctx, watched, err))
	}()
	return out
}
