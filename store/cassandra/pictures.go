package cassandra

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gocql/gocql"
	"github.com/killrchat/chatql/store"
)

// A user's avatar and a room's icon (schema_v16.cql) are the JSON of their
// image's attachment, as a message's attachments are (fileJSON), with its
// owner, in a text column that is null for none.
const (
	selectRoomIcon = `SELECT creator_login, icon FROM chat_rooms WHERE room_name = ?`
	// setRoomIcon is a compare-and-set of the icon read, on the room
	// existing: on a missing row creator_login = ? fails.
	setRoomIcon = `UPDATE chat_rooms SET icon = ? WHERE room_name = ? IF creator_login = ? AND icon = ?`
)

// pictureJSON is a picture as its column holds it.
type pictureJSON struct {
	fileJSON
	Owner string `json:"o"`
}

// pictureValue binds a picture column: null for none.
func pictureValue(a *store.Picture) (any, error) {
	if a == nil {
		return nil, nil
	}
	b, err := json.Marshal(pictureJSON{
		fileJSON: fileJSON{ID: gocql.UUID(a.ID), Name: a.Name, ContentType: a.ContentType, Size: a.Size, Width: a.Width, Height: a.Height, Blurhash: a.Blurhash},
		Owner:    a.Owner,
	})
	if err != nil {
		return nil, fmt.Errorf("encode picture: %w", err)
	}
	return string(b), nil
}

// decodePicture reads a picture column; an empty or unreadable one reads
// as none.
func decodePicture(s string) *store.Picture {
	var f pictureJSON
	if s == "" || json.Unmarshal([]byte(s), &f) != nil {
		return nil
	}
	return &store.Picture{
		Attachment: store.Attachment{ID: store.FileID(f.ID), Name: f.Name, ContentType: f.ContentType, Size: f.Size, Width: f.Width, Height: f.Height, Blurhash: f.Blurhash},
		Owner:      f.Owner,
	}
}

// samePicture reports whether two pictures are the same file (or both
// none).
func samePicture(a, b *store.Picture) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.ID == b.ID
}

// SetRoomIcon writes the icon as a compare-and-set of the one read, on the
// room existing; a change of the icon between the read and the write makes
// it read and try again.
func (db *DB) SetRoomIcon(ctx context.Context, room string, icon *store.Picture) (*store.Picture, error) {
	fail := func(err error) error { return fmt.Errorf("cassandra: set the icon of %q: %w", room, err) }
	value, err := pictureValue(icon)
	if err != nil {
		return nil, fail(err)
	}
	read := func(ctx context.Context) (creator string, icon *store.Picture, err error) {
		var s string
		err = db.serialRead(ctx, selectRoomIcon, room).Scan(&creator, &s)
		if err == nil && creator == "" {
			err = gocql.ErrNotFound // see readRoom
		}
		return creator, decodePicture(s), err
	}
	for range maxCASAttempts {
		creator, old, err := read(ctx)
		if errors.Is(err, gocql.ErrNotFound) {
			return nil, fmt.Errorf("room %q: %w", room, store.ErrNotFound)
		}
		if err != nil {
			return nil, fail(err)
		}
		oldValue, err := pictureValue(old)
		if err != nil {
			return nil, fail(err)
		}
		q := db.query(ctx, setRoomIcon, value, room, creator, oldValue)
		applied, err := lwt(ctx, q, nil, func(ctx context.Context) (casOutcome, error) {
			_, got, err := read(ctx)
			switch {
			case errors.Is(err, gocql.ErrNotFound):
				return casRejected, nil
			case err != nil:
				return 0, err
			case samePicture(got, icon):
				return casApplied, nil
			case samePicture(got, old):
				return casNotApplied, nil
			}
			return casRejected, nil
		})
		if err != nil {
			return nil, fail(err)
		}
		if applied {
			return old, nil
		}
		// The icon changed since the read, or the room went: read again.
	}
	return nil, fail(fmt.Errorf("the icon kept changing, gave up after %d attempts", maxCASAttempts))
}
