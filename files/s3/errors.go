package s3

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/minio/minio-go/v7"

	"github.com/killrchat/chatql/files"
)

// fail translates the error of operation op on key (nil for nil): a
// missing object is files.ErrNotFound; the store failing to answer (network
// errors, the timeout, 5xx, 429 and throttling) wraps files.ErrUnavailable;
// a cancelled caller's context wraps its error; other refusals (403 of bad
// credentials, a missing bucket) are errors of their own, which retrying
// will not cure.
func (s *Store) fail(ctx context.Context, op, key string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) && ctx.Err() == context.Canceled {
		return fmt.Errorf("s3: %s %s: %w", op, key, context.Canceled)
	}
	resp := minio.ToErrorResponse(err)
	switch {
	case resp.Code == "NoSuchKey" || resp.StatusCode == http.StatusNotFound && resp.Code != "NoSuchBucket":
		return fmt.Errorf("s3: %s %s: %w", op, key, files.ErrNotFound)
	case unreachable(err) || resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests ||
		resp.Code == "SlowDown" || resp.Code == "RequestTimeout":
		return fmt.Errorf("s3: %s %s: %w: %w", op, key, files.ErrUnavailable, err)
	default:
		return fmt.Errorf("s3: %s %s: %w", op, key, err)
	}
}

// unreachable reports whether err is a failure to reach the store or to
// hear from it in time: an error of the network or of the HTTP client (a
// *url.Error is a net.Error), or the operation's timeout.
func unreachable(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded)
}
