package cassandra

import (
	"context"
	"errors"
	"fmt"

	"github.com/gocql/gocql"
	"github.com/killrchat/chatql/store"
)

// claimClientMessage claims a name for a week (store.ClientMessageRetention):
// the row then expires by itself.
var claimClientMessage = fmt.Sprintf(`INSERT INTO client_messages (author_login, client_id, room_name, message_id)
	VALUES (?, ?, ?, ?) IF NOT EXISTS USING TTL %d`, int(store.ClientMessageRetention.Seconds()))

const selectClientMessage = `SELECT room_name, message_id FROM client_messages WHERE author_login = ? AND client_id = ?`

// ClaimClientMessage is a lightweight transaction: a deterministic message
// id cannot stand in for it, because a message's id is a timeuuid whose
// time places it in its day's partition, and a retry does not know the
// time of the first send. A claim that times out is settled by a serial
// read of the row, and made once more if the read finds no claim: a claim
// whose outcome stays unknown holds only its own row, which a retry of the
// post then finds, so a second try risks nothing the first did not.
func (db *DB) ClaimClientMessage(ctx context.Context, author, clientID string, m store.ClientMessage) (store.ClientMessage, bool, error) {
	var (
		room string
		id   gocql.UUID
	)
	applied, err := againIfNotApplied(func() (bool, error) {
		q := db.query(ctx, claimClientMessage, author, clientID, m.Room, gocql.UUID(m.ID))
		return lwt(ctx, q, map[string]any{"room_name": &room, "message_id": &id}, func(ctx context.Context) (casOutcome, error) {
			err := db.serialRead(ctx, selectClientMessage, author, clientID).Scan(&room, &id)
			switch {
			case errors.Is(err, gocql.ErrNotFound):
				return casNotApplied, nil
			case err != nil:
				return 0, err
			case id == gocql.UUID(m.ID):
				return casApplied, nil
			}
			return casRejected, nil
		})
	})
	if err != nil {
		return store.ClientMessage{}, false, fmt.Errorf("cassandra: claim client message %q of %q: %w", clientID, author, err)
	}
	if applied {
		return store.ClientMessage{}, true, nil
	}
	return store.ClientMessage{Room: room, ID: store.MessageID(id)}, false, nil
}
