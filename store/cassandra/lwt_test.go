package cassandra

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/gocql/gocql"
)

// TestSettleUnknown checks the decision logic of an LWT's outcome against
// a fake read-back, without a server.
func TestSettleUnknown(t *testing.T) {
	timeout := &gocql.RequestErrWriteTimeout{WriteType: "CAS"}
	readFailed := errors.New("read-back failed")
	tests := []struct {
		name        string
		applied     bool
		err         error
		outcome     casOutcome
		readErr     error
		wantRead    bool
		wantApplied bool
		wantErr     error // nil: no error
	}{
		{name: "Applied", applied: true, wantApplied: true},
		{name: "NotApplied", applied: false, wantApplied: false},
		{name: "OtherError", err: &gocql.RequestErrUnavailable{}, wantErr: &gocql.RequestErrUnavailable{}},
		{name: "TimeoutApplied", err: timeout, outcome: casApplied, wantRead: true, wantApplied: true},
		{name: "TimeoutRejected", err: timeout, outcome: casRejected, wantRead: true, wantApplied: false},
		{name: "TimeoutNotApplied", err: timeout, outcome: casNotApplied, wantRead: true, wantErr: timeout},
		{name: "TimeoutReadFails", err: timeout, readErr: readFailed, wantRead: true, wantErr: readFailed},
		{name: "CommitTimeout", err: &gocql.RequestErrWriteTimeout{WriteType: "SIMPLE"}, outcome: casApplied, wantRead: true, wantApplied: true},
		{name: "CASWriteUnknown", err: &gocql.RequestErrCASWriteUnknown{}, outcome: casApplied, wantRead: true, wantApplied: true},
		{name: "ClientTimeout", err: fmt.Errorf("exec: %w", gocql.ErrTimeoutNoResponse), outcome: casRejected, wantRead: true},
		{name: "Deadline", err: context.DeadlineExceeded, outcome: casApplied, wantRead: true, wantApplied: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The caller's context is already cancelled: the read-back must
			// not depend on it.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			read := false
			settle := func(ctx context.Context) (casOutcome, error) {
				read = true
				if ctx.Err() != nil {
					t.Errorf("read-back got a dead context: %v", ctx.Err())
				}
				return tt.outcome, tt.readErr
			}
			applied, err := settleUnknown(ctx, tt.applied, tt.err, settle)
			if read != tt.wantRead {
				t.Errorf("read back = %v, want %v", read, tt.wantRead)
			}
			if applied != tt.wantApplied {
				t.Errorf("applied = %v, want %v", applied, tt.wantApplied)
			}
			if unknown := errors.Is(err, errOutcomeUnknown); unknown != (tt.readErr != nil) {
				t.Errorf("err = %v: marked outcome unknown = %v, want %v", err, unknown, tt.readErr != nil)
			}
			switch {
			case tt.wantErr == nil && err != nil:
				t.Errorf("err = %v, want nil", err)
			case tt.wantErr != nil && (err == nil || !errors.Is(err, tt.wantErr) && err.Error() != tt.wantErr.Error()):
				t.Errorf("err = %v, want one wrapping %v", err, tt.wantErr)
			}
		})
	}
}

// TestAgainIfNotApplied: an LWT read back as not applied is made once
// more, and only then; other outcomes and errors stand.
func TestAgainIfNotApplied(t *testing.T) {
	timeout := &gocql.RequestErrWriteTimeout{WriteType: "CAS"}
	notApplied := fmt.Errorf("%w; %w", timeout, errNotApplied)
	unknown := fmt.Errorf("%w; %w", timeout, errOutcomeUnknown)
	for _, c := range []struct {
		name        string
		results     []error // of each try; nil applies
		wantTries   int
		wantApplied bool
		wantErr     error
	}{
		{"applied", []error{nil}, 1, true, nil},
		{"unknown", []error{unknown}, 1, false, errOutcomeUnknown},
		{"unavailable", []error{&gocql.RequestErrUnavailable{}}, 1, false, &gocql.RequestErrUnavailable{}},
		{"not applied, then applied", []error{notApplied, nil}, 2, true, nil},
		{"not applied twice", []error{notApplied, notApplied}, 2, false, errNotApplied},
		{"not applied, then unknown", []error{notApplied, unknown}, 2, false, errOutcomeUnknown},
	} {
		t.Run(c.name, func(t *testing.T) {
			tries := 0
			applied, err := againIfNotApplied(func() (bool, error) {
				err := c.results[tries]
				tries++
				return err == nil, err
			})
			if tries != c.wantTries || applied != c.wantApplied {
				t.Errorf("%d tries, applied %v; want %d, %v", tries, applied, c.wantTries, c.wantApplied)
			}
			if (err == nil) != (c.wantErr == nil) || err != nil && !errors.Is(err, c.wantErr) && err.Error() != c.wantErr.Error() {
				t.Errorf("err = %v, want %v", err, c.wantErr)
			}
		})
	}
}

// TestDDLTimedOut: a schema change is sent again after a timeout, on
// either side, never after a refusal.
func TestDDLTimedOut(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("exec: %w", gocql.ErrTimeoutNoResponse), true},
		{&gocql.RequestErrWriteTimeout{}, true},
		{&gocql.RequestErrAlreadyExists{}, false},
		{gocql.ErrUnavailable, false},
		{context.Canceled, false},
	} {
		if got := ddlTimedOut(c.err); got != c.want {
			t.Errorf("ddlTimedOut(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
