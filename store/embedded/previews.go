package embedded

import (
	"context"

	"github.com/killrchat/chatql/store"
)

// SetPreview stores p as the message's preview (see changeMessage), logged
// as by its author, unless the message was deleted or edited since m was
// read: its EditedAt is no longer m's.
func (db *DB) SetPreview(ctx context.Context, m store.Message, p store.LinkPreview) (store.Event, error) {
	return db.changeMessage(ctx, m, m.Author, store.MessagePreviewed, func(r *messageRow) (bool, error) {
		if r.Deleted || !r.EditedAt.Equal(m.EditedAt) {
			return false, nil
		}
		r.Preview = newPreviewRow(&p)
		return true, nil
	})
}
