package live

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/killrchat/chatql/apierror"
	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/stream"
)

// RoomStreams opens room event streams (the resolvers: who the caller is, which cursor).
type RoomStreams interface {
	OpenRoomEvents(ctx context.Context, room string, after *string, presence bool) (*stream.Room, error)
}

// operation is one subscribe (graphql-ws: start) of a connection. It runs
// until it completes or fails, or is stopped: the client completed it, or
// the connection ended. An operation run by gqlgen's executor has a context
// that stopping cancels. A room subscription has no context of its own (one
// per idle subscriber would be memory held for nothing): stopping sets the
// flag and wakes it.
type operation struct {
	c       *conn
	id      string
	stopped atomic.Bool
	onStop  func() // what stop calls to end the operation promptly; guarded by c.mu
}

// subscribe starts the operation of a subscribe message; false ends the
// connection. Problems with the operation itself (malformed, invalid, over
// a limit) fail only that operation, with an error message.
func (c *conn) subscribe(m message) bool {
	c.mu.Lock()
	acked, dup, running := c.acked, c.ops.find(m.ID) != nil, len(c.ops)
	var op *operation
	if acked && !dup && running < c.t.cfg.MaxOperations && !c.closed {
		op = &operation{c: c, id: m.ID}
		c.ops = append(c.ops, op)
	}
	c.mu.Unlock()
	switch {
	case !acked:
		c.close(closeUnauthorized, "Unauthorized")
		return false
	case dup:
		c.close(closeDuplicateID, truncateReason("Subscriber for "+m.ID+" already exists"))
		return false
	case running >= c.t.cfg.MaxOperations:
		return c.sendError(msgError, m.ID, badInput("too many operations on this connection: at most %d at a time; complete one or open another connection", c.t.cfg.MaxOperations))
	case op == nil:
		return false // closed
	}
	go op.start(m.Type, m.Payload)
	return true
}

// start parses and validates the operation and runs it. A room stream
// replays what followed its cursor here, and this goroutine exits: its
// stack, grown by validation and the store reads, is released while the
// stream waits, and later events are delivered by the connection's (see
// conn.drain).
func (op *operation) start(kind string, payload json.RawMessage) {
	handedOff := false
	defer func() {
		if p := recover(); p != nil || !handedOff {
			op.finish(p)
		}
	}()
	var params graphql.RawParams
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	if err := dec.Decode(&params); err != nil {
		op.fail(badInput("invalid %s payload: %v", kind, err))
		return
	}
	start := graphql.Now()
	params.ReadTime = graphql.TraceTiming{Start: start, End: start}
	ctx := graphql.StartOperationTrace(op.c.ctx)
	rc, errs := op.c.exec.CreateOperationContext(ctx, &params)
	if errs != nil {
		resp := op.c.exec.DispatchError(graphql.WithOperationContext(ctx, rc), errs)
		op.fail(resp.Errors...)
		return
	}
	ctx = graphql.WithOperationContext(ctx, rc)
	field, args, ok := roomEventsField(rc)
	if !ok {
		op.execute(ctx, rc)
		return
	}
	stream, ok := op.openRoom(ctx, field, args)
	if !ok {
		return
	}
	defer func() {
		if !handedOff {
			stream.Close() // a panic between opening and handing off
		}
	}()
	// From here on the stream needs only the shared encoder: the operation
	// context (its document, variables and field caches) is let go.
	r := &roomSubscription{op: op, stream: stream, alias: field.Alias,
		enc: op.c.t.encoders.acquire(ctx, rc, field)}
	handedOff = true
	r.start()
}

// stop ends the operation the client completed (graphql-ws: stopped). Its
// id is free again at once.
func (c *conn) stop(id string) {
	c.mu.Lock()
	op := c.ops.find(id)
	c.ops = c.ops.without(op)
	c.mu.Unlock()
	if op != nil {
		op.stop()
	}
}

// stop ends the operation from outside: the client completed it or the
// connection ended.
func (op *operation) stop() {
	op.stopped.Store(true)
	op.c.mu.Lock()
	f := op.onStop
	op.c.mu.Unlock()
	if f != nil {
		f()
	}
}

// setOnStop sets what stop calls, and calls it now if the operation was
// stopped before. f may be called twice.
func (op *operation) setOnStop(f func()) {
	op.c.mu.Lock()
	op.onStop = f
	op.c.mu.Unlock()
	if op.stopped.Load() {
		f()
	}
}

// over reports whether the client no longer waits for the operation.
func (op *operation) over() bool { return op.stopped.Load() || op.c.ctx.Err() != nil }

// roomArgs are the arguments of a roomEvents subscription.
type roomArgs struct {
	room     string
	after    *string
	presence bool
}

// roomEventsField recognizes a roomEvents subscription and reads its
// arguments; anything else (or arguments gqlgen would have to coerce) runs
// through gqlgen's executor.
func roomEventsField(rc *graphql.OperationContext) (f graphql.CollectedField, args roomArgs, ok bool) {
	if rc.Operation == nil || rc.Operation.Operation != ast.Subscription {
		return f, args, false
	}
	fields := graphql.CollectFields(rc, rc.Operation.SelectionSet, []string{"Subscription"})
	if len(fields) != 1 || fields[0].Name != "roomEvents" {
		return f, args, false
	}
	given := fields[0].ArgumentMap(rc.Variables)
	if args.room, ok = given["room"].(string); !ok {
		return f, args, false
	}
	switch a := given["after"].(type) {
	case nil:
	case string:
		args.after = &a
	default:
		return f, args, false
	}
	switch p := given["presence"].(type) {
	case nil:
	case bool:
		args.presence = p
	default:
		return f, args, false
	}
	return fields[0], args, true
}

// openRoom opens the room stream; a refusal (no such room, not a
// participant, a bad cursor) fails the operation with an error message, as
// for any subscription that cannot start (see execute).
func (op *operation) openRoom(ctx context.Context, field graphql.CollectedField, args roomArgs) (*stream.Room, bool) {
	stream, err := op.c.t.cfg.Rooms.OpenRoomEvents(ctx, args.room, args.after, args.presence)
	if err == nil {
		return stream, true
	}
	if ctx.Err() != nil {
		return nil, false
	}
	path := ast.Path{ast.PathName(field.Alias)}
	op.fail(op.c.exec.DispatchError(ctx, gqlerror.List{gqlerror.WrapPath(path, err)}).Errors...)
	return nil, false
}

// roomSubscription serves a roomEvents subscription. It has no goroutine
// while it waits: the broker subscription says when events are queued
// (Notify), and the subscription joins its connection's ready ones, which
// one goroutine of the connection delivers inside one batch of the socket
// (see conn.drain): the events queued for all of a connection's
// subscriptions go out together, and an idle subscriber holds no stack.
// Each event is encoded by the encoder shared with every subscription that
// selects the same fields, and written as is.
type roomSubscription struct {
	op      *operation
	stream  *stream.Room
	enc     *encoder
	prefix  []byte // the frame around each result; nil until the first
	alias   string
	pumping atomic.Bool // it is ready, or being delivered
}

// start replays what came after the cursor and follows the room. The
// replay reads the store, so it runs on a goroutine of its own rather than
// hold up the connection's other subscriptions.
func (r *roomSubscription) start() {
	r.op.c.counts().subscribed()
	r.pumping.Store(true) // a wake meanwhile leaves the events to the replay's pump
	wake := r.wake        // one closure for both
	r.stream.Notify(wake)
	r.op.setOnStop(wake)
	r.pump()
}

// wake makes sure what is ready gets delivered. It runs on the broker's
// delivering goroutine: it only hands the subscription to its connection.
func (r *roomSubscription) wake() {
	if r.pumping.CompareAndSwap(false, true) {
		r.op.c.ready(r)
	}
}

// pump delivers what is queued, once; r.pumping is set. A wake that comes
// meanwhile finds it set and leaves the event to it, so before it stops it
// looks again: whichever of it and a later wake claims the flag hands the
// subscription to its connection again. A panic fails the subscription,
// not the server.
func (r *roomSubscription) pump() {
	defer func() {
		if p := recover(); p != nil {
			r.stream.Close()
			r.release(p)
		}
	}()
	if done, err := r.deliver(); done {
		r.op.end(err, ast.Path{ast.PathName(r.alias)})
		r.release(nil)
		return
	}
	r.pumping.Store(false)
	if (r.stream.Ready() || r.op.over()) && r.pumping.CompareAndSwap(false, true) {
		r.op.c.ready(r)
	}
}

// deliver writes what is queued; done reports the end of the subscription,
// with why it failed if it did.
func (r *roomSubscription) deliver() (done bool, err error) {
	if r.op.over() {
		r.stream.Close()
		return true, nil
	}
	var encodeErr error
	var written uint64 // counted once per Pump, not per event
	r.op.c.openBatch()
	defer func() {
		// Also when the Pump panics: later writes must not gather.
		if !r.op.c.closeBatch() {
			written = 0
		}
		if written > 0 {
			r.op.c.counts().delivered.Add(written)
			if r.op.c.t.delayed.holding() { // a clock read a pump only when the write delay needs it
				r.op.c.wroteEvents.Store(time.Now().UnixNano())
			}
		}
	}()
	viewer := r.stream.Viewer() // once per pump, not per event
	done, err = r.stream.Pump(r.op.c.ctx, func(ev *store.Event) bool {
		if r.op.stopped.Load() {
			return false
		}
		payload, err := r.enc.encode(ev, viewer)
		if err != nil {
			encodeErr = err
			return false
		}
		if r.prefix == nil { // made at the first event: an idle subscription holds none
			r.prefix = framePrefix(r.op.c.proto, r.op.id)
		}
		if !r.op.writeResult(r.prefix, payload) {
			return false
		}
		written++
		return true
	})
	if encodeErr != nil {
		err = encodeErr
	}
	return done, err
}

// release lets go of the encoder and the operation; p is a panic that
// failed it.
func (r *roomSubscription) release(p any) {
	r.op.c.counts().unsubscribed()
	r.op.c.t.encoders.release(r.enc)
	r.op.finish(p)
}

// execute runs any other operation through gqlgen's executor: queries and
// mutations (one result) and other subscriptions (a result per event). A
// subscription that cannot start (its resolver refused: a response with
// errors and no data) fails with an error message, which clients report as
// the operation's error rather than as a result.
func (op *operation) execute(ctx context.Context, rc *graphql.OperationContext) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	op.setOnStop(cancel)
	ctx, streamErr := op.c.t.cfg.StreamError(ctx)
	responses, ctx := op.c.exec.DispatchOperation(ctx, rc)
	prefix := framePrefix(op.c.proto, op.id)
	subscription := rc.Operation.Operation == ast.Subscription
	if subscription {
		op.c.counts().subscribed()
		defer op.c.counts().unsubscribed()
	}
	for first := true; ; first = false {
		resp := responses(ctx)
		if resp == nil {
			break
		}
		if op.over() {
			return // the client completed it: its result is not sent
		}
		if first && subscription && len(resp.Errors) > 0 && isNull(resp.Data) {
			op.fail(resp.Errors...)
			return
		}
		b, err := json.Marshal(resp)
		if err != nil {
			op.end(err, nil)
			return
		}
		if !op.writeResult(prefix, b) {
			return
		}
		if subscription {
			op.c.counts().delivered.Add(1)
		}
	}
	op.end(streamErr(), nil)
}

// closingBrace ends a result message, after its prefix and result.
var closingBrace = []byte("}")

// writeResult writes one result message; false means the connection is
// gone.
func (op *operation) writeResult(prefix, result []byte) bool {
	return op.c.write(prefix, result, closingBrace)
}

// end tells the client how the operation ended, unless the client ended it
// or left: complete, or the error that cut it short.
func (op *operation) end(err error, path ast.Path) {
	if op.over() {
		return
	}
	if err != nil {
		op.fail(op.c.t.cfg.ErrorPresenter(op.c.ctx, gqlerror.WrapPath(path, err)))
		return
	}
	op.complete()
}

// The last message of an operation goes out after its id and its place in
// the connection's limit are freed: a client that reacts to it at once may
// reuse both.

// complete frees the operation and tells the client it is complete,
// unless the client completed it first.
func (op *operation) complete() {
	op.release()
	if !op.stopped.Load() {
		op.c.send(message{ID: op.id, Type: msgComplete})
	}
}

// fail frees the operation and sends the errors that ended it (never
// followed by complete), unless the client completed it first. Errors
// that say the connection's credentials ended close the connection
// instead (see credentialsEnded).
func (op *operation) fail(errs ...*gqlerror.Error) {
	op.release()
	if op.stopped.Load() {
		return
	}
	if reason, ended := op.c.credentialsEnded(errs); ended {
		op.c.close(closeUnauthorized, reason)
		return
	}
	op.c.sendError(msgError, op.id, errs...)
}

// finish releases the operation, if its last message has not already; a
// panic (p) in it fails the operation, not the server.
func (op *operation) finish(p any) {
	if p != nil {
		op.c.t.cfg.Log.Error("live: operation panicked", "panic", p, "id", op.id)
		op.fail(apierror.New(apierror.Internal, "internal error"))
		return
	}
	op.release()
}

// release frees the operation's id, unless a new operation has it already.
func (op *operation) release() {
	op.c.mu.Lock()
	op.c.ops = op.c.ops.without(op)
	op.c.mu.Unlock()
}

// operations are a connection's running operations, in the order they
// began: a few at a time (at most Config.MaxOperations), so a slice costs
// a connection less than a map and is searched as fast.
type operations []*operation

// find returns the operation with the id, or nil.
func (ops operations) find(id string) *operation {
	for _, op := range ops {
		if op.id == id {
			return op
		}
	}
	return nil
}

// without removes op, if it is one of them (nil is not).
func (ops operations) without(op *operation) operations {
	for i, o := range ops {
		if o == op {
			return slices.Delete(ops, i, i+1)
		}
	}
	return ops
}

func badInput(format string, args ...any) *gqlerror.Error {
	return apierror.New(apierror.BadUserInput, format, args...)
}

// isNull reports whether a response's data is absent or null.
func isNull(data json.RawMessage) bool {
	return len(data) == 0 || string(bytes.TrimSpace(data)) == "null"
}
