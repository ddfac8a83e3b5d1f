package cassandra

import (
	"context"
	"fmt"

	"github.com/killrchat/chatql/store"
)

// LogMention logs the event in each inbox log, listing its day, concurrently.
func (db *DB) LogMention(ctx context.Context, m store.Message, logins []string) (store.Event, error) {
	ev := store.Event{ID: store.NewMessageID(), Kind: store.Mentioned, Room: m.Room, User: m.Author, Message: &m}
	fo := newFanout(fanoutParallelism)
	for _, login := range logins {
		fo.Go(func() error {
			b := db.inboxBatch(ctx)
			inboxListing(b, login, ev.ID)
			return db.session.ExecuteBatch(b)
		})
		fo.Go(db.inboxEventWrite(ctx, login, ev))
	}
	if err := fo.Wait(); err != nil {
		return store.Event{}, fmt.Errorf("cassandra: log the mentions of message %v: %w", m.ID, err)
	}
	return ev, nil
}
