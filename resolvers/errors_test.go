package resolvers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql"

	"github.com/killrchat/chatql/apierror"
	"github.com/killrchat/chatql/chat"
)

// An unexpected error is logged as an error and shown as "internal error";
// the same error of a request whose client went away (its context
// canceled) is logged at debug level only: it is no fault of the server.
func TestPresentLogsWhatFailed(t *testing.T) {
	var logs bytes.Buffer
	r := &Resolver{Service: &chat.Service{Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}}
	present := func(ctx context.Context, err error) (string, string) {
		logs.Reset()
		e := r.present(graphql.WithResponseContext(ctx, graphql.DefaultErrorPresenter, nil), err)
		return apierror.CodeOf(e) + ": " + e.Message, logs.String()
	}

	shown, logged := present(context.Background(), errors.New("disk on fire"))
	if shown != "INTERNAL: internal error" || !strings.Contains(logged, "level=ERROR") || !strings.Contains(logged, "disk on fire") {
		t.Errorf("an unexpected error: shown %q, logged %q; want INTERNAL, logged as an error", shown, logged)
	}

	gone, cancel := context.WithCancel(context.Background())
	cancel()
	shown, logged = present(gone, fmt.Errorf("reading the inbox: %w", context.Canceled))
	if shown != "INTERNAL: internal error" || !strings.Contains(logged, "level=DEBUG") || strings.Contains(logged, "level=ERROR") {
		t.Errorf("the error of a request its client gave up on: shown %q, logged %q; want INTERNAL, logged at debug level", shown, logged)
	}

	// A cancellation the client did not ask for (its request still open)
	// is the server's: an error.
	shown, logged = present(context.Background(), fmt.Errorf("a store call: %w", context.Canceled))
	if !strings.Contains(logged, "level=ERROR") {
		t.Errorf("a cancellation with the request still open: shown %q, logged %q; want it logged as an error", shown, logged)
	}
}
