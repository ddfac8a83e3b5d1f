package embedded

import (
	"context"
	"fmt"
	"time"

	"github.com/killrchat/chatql/store"
)

// clientMessageRow is a row of client_messages: the message a client's
// name stands for; the author and the name are in the key.
type clientMessageRow struct {
	Room      string          `json:"r"`
	ID        store.MessageID `json:"i"`
	ClaimedAt time.Time       `json:"t"`
}

// ClaimClientMessage is a compare-and-set under the row's lock. A row older
// than store.ClientMessageRetention is claimed over; one never claimed
// again stays (a row is small, one per message sent with a name).
func (db *DB) ClaimClientMessage(ctx context.Context, author, clientID string, m store.ClientMessage) (store.ClientMessage, bool, error) {
	k := clientMessageKey(author, clientID)
	end, err := db.beginLocked(ctx, k)
	if err != nil {
		return store.ClientMessage{}, false, err
	}
	defer end()
	row, found, err := getRow[clientMessageRow](db, k)
	if err != nil {
		return store.ClientMessage{}, false, fmt.Errorf("reading client message %q of %q: %w", clientID, author, err)
	}
	now := time.Now()
	if found && now.Sub(row.ClaimedAt) < store.ClientMessageRetention {
		return store.ClientMessage{Room: row.Room, ID: row.ID}, false, nil
	}
	b := db.batch()
	b.set(k, clientMessageRow{Room: m.Room, ID: m.ID, ClaimedAt: now.UTC()})
	if err := b.commit(); err != nil {
		return store.ClientMessage{}, false, fmt.Errorf("claiming client message %q of %q: %w", clientID, author, err)
	}
	return store.ClientMessage{}, true, nil
}
