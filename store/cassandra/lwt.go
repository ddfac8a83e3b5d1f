package cassandra

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/gocql/gocql"
)

// A lightweight transaction that times out has an unknown outcome: its Paxos
// round may still commit. Retrying it blindly could apply it twice or report
// a conflict with our own write (a signup answering "login taken" to the
// user who just took it). So the backend never retries an LWT; it settles
// the outcome by reading the partition back at serial consistency, which
// completes any round in flight, and answers from what it finds.
//
// A client-side timeout (the driver's, or the caller's context) settles less:
// the request may still wait at the coordinator and run after the read-back,
// which can only tell what had happened by then. The default Timeout is
// therefore above the server's, so slow LWTs fail with the server's timeout.

// casOutcome is what a serial read-back found.
type casOutcome int

const (
	// casApplied: our write is there.
	casApplied casOutcome = iota
	// casRejected: the condition failed; the state that made it fail is
	// there (another user's row, a deleted room), as if not applied.
	casRejected
	// casNotApplied: the write did not happen and nothing stood in its way;
	// the request failed and may be tried again.
	casNotApplied
)

// settleFunc reads a partition back at serial consistency and says what
// became of the write that timed out.
type settleFunc func(ctx context.Context) (casOutcome, error)

// errOutcomeUnknown marks an LWT error after which it is still unknown
// whether the write applied: the read-back failed too. errNotApplied marks
// one whose read-back found it had not applied and nothing in its way.
var (
	errOutcomeUnknown = errors.New("outcome unknown")
	errNotApplied     = errors.New("read back: not applied")
)

// settleTimeout bounds the read-back. It runs detached from the caller's
// context, which may be the very thing that expired.
const settleTimeout = 10 * time.Second

// lwt executes the conditional statement q, bound to ctx, and reports
// whether it applied. When it did not, the columns named in current receive
// the values that made the condition fail. An unknown outcome is settled by
// settle.
//
// An unknown outcome that the read-back shows did not apply is an error,
// not tried again here: a second try that times out too would turn a known
// failure, which the caller takes back cleanly, into an unknown outcome,
// which keeps its writes (a join's listing of a room it may not be in:
// TestFailoverNodePaused caught one left behind a room deleted meanwhile).
func lwt(ctx context.Context, q *gocql.Query, current map[string]any, settle settleFunc) (bool, error) {
	applied, err := execCAS(q, current)
	return settleUnknown(ctx, applied, err, settle)
}

// settleUnknown passes a known outcome through and settles an unknown one.
func settleUnknown(ctx context.Context, applied bool, err error, settle settleFunc) (bool, error) {
	if err == nil || !outcomeUnknown(err) {
		return applied, err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	outcome, serr := settle(ctx)
	switch {
	case serr != nil:
		return false, fmt.Errorf("%w; %w: reading it back failed: %w", err, errOutcomeUnknown, serr)
	case outcome == casNotApplied:
		return false, fmt.Errorf("%w; %w", err, errNotApplied)
	}
	return outcome == casApplied, nil
}

// againIfNotApplied runs an LWT, and once more if its outcome was unknown
// and its read-back found it had not applied. It is only for an insert if
// absent that comes before any other write of its operation (a signup, a
// room's creation, a client id's claim): the read-back found nothing
// written, so the second try starts from where the first did, and a second
// unknown outcome leaves no more than a first one would have, the row
// alone. The serial read-back's own Paxos round supersedes the first
// try's (CASSANDRA-12126), which cannot commit after it. See lwt for why
// others (a join, whose listing is written before its LWT) are not tried
// again.
func againIfNotApplied(try func() (bool, error)) (bool, error) {
	applied, err := try()
	if errors.Is(err, errNotApplied) {
		return try()
	}
	return applied, err
}

// outcomeUnknown reports whether err may have come after the write applied.
// Other errors (unavailable, invalid, overloaded) come before any proposal.
func outcomeUnknown(err error) bool {
	var (
		writeTimeout *gocql.RequestErrWriteTimeout // WriteType CAS: Paxos phase; SIMPLE: commit phase
		readTimeout  *gocql.RequestErrReadTimeout
		casUnknown   *gocql.RequestErrCASWriteUnknown
	)
	// A connection that broke (the coordinator died: connection reset,
	// EOF) may have broken after the request went out.
	var netErr net.Error
	return errors.As(err, &writeTimeout) || errors.As(err, &readTimeout) || errors.As(err, &casUnknown) ||
		errors.Is(err, gocql.ErrTimeoutNoResponse) || errors.Is(err, gocql.ErrConnectionClosed) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET)
}

// execCAS executes a conditional statement and reads its result row:
// [applied], then, when not applied, the current values of the columns the
// condition named (all columns for IF NOT EXISTS; none if the row is gone).
// Columns named in current are scanned into its pointers, others dropped.
func execCAS(q *gocql.Query, current map[string]any) (applied bool, err error) {
	// The result columns vary with the outcome, so they must come with the
	// result, not from the prepared statement (CASSANDRA-11099).
	iter := q.NoSkipMetadata().Iter()
	cols := iter.Columns()
	dest := make([]any, len(cols))
	for i, c := range cols {
		switch d, ok := current[c.Name]; {
		case c.Name == "[applied]":
			dest[i] = &applied
		case ok:
			dest[i] = d
		default:
			dest[i] = c.TypeInfo.New()
		}
	}
	scanned := len(cols) > 0 && iter.Scan(dest...)
	if err := iter.Close(); err != nil {
		return false, err
	}
	if !scanned {
		return false, errors.New("cassandra: conditional statement returned no [applied] row")
	}
	return applied, nil
}
