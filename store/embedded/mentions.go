package embedded

import (
	"context"
	"fmt"

	"github.com/killrchat/chatql/store"
)

// LogMention logs the event in each inbox log, in one batch.
func (db *DB) LogMention(ctx context.Context, m store.Message, logins []string) (store.Event, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return store.Event{}, err
	}
	defer end()
	ev := store.Event{ID: store.NewMessageID(), Kind: store.Mentioned, Room: m.Room, User: m.Author, Message: &m}
	b := db.batch()
	for _, login := range logins {
		if err := db.logInboxEvent(b, login, ev); err != nil {
			b.Close()
			return store.Event{}, err
		}
	}
	if err := b.commit(); err != nil {
		return store.Event{}, fmt.Errorf("logging the mentions of message %v: %w", m.ID, err)
	}
	return ev, nil
}
