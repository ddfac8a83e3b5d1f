package cassandra

import (
	"context"
	"errors"

	"github.com/killrchat/chatql/store"
)

// SetPreview is not written yet (the branch files-store writes it).
func (db *DB) SetPreview(ctx context.Context, m store.Message, p store.LinkPreview) (store.Event, error) {
	return store.Event{}, errors.ErrUnsupported
}
