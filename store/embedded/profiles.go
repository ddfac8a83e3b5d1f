package embedded

import (
	"bytes"
	"context"
	"fmt"

	"github.com/killrchat/chatql/store"
)

// UpdateProfile applies p to the user's row under its lock.
func (db *DB) UpdateProfile(ctx context.Context, login string, p store.ProfileUpdate) (store.User, error) {
	k := userKey(login)
	end, err := db.beginLocked(ctx, k)
	if err != nil {
		return store.User{}, err
	}
	defer end()
	row, err := db.user(login)
	if err != nil {
		return store.User{}, err
	}
	a := row.account()
	a.User = p.Apply(a.User)
	row.Firstname, row.Lastname, row.Bio, row.NoReadReceipts = a.Firstname, a.Lastname, a.Bio, a.NoReadReceipts
	b := db.batch()
	b.set(k, row)
	b.indexUser(row)
	if err := b.commit(); err != nil {
		return store.User{}, fmt.Errorf("writing user %q: %w", login, err)
	}
	return a.User, nil
}

// SetAvatar replaces the avatar of the user's row under its lock.
func (db *DB) SetAvatar(ctx context.Context, login string, avatar *store.Picture) (*store.Picture, error) {
	k := userKey(login)
	end, err := db.beginLocked(ctx, k)
	if err != nil {
		return nil, err
	}
	defer end()
	row, err := db.user(login)
	if err != nil {
		return nil, err
	}
	old := row.Avatar
	row.Avatar = avatar
	b := db.batch()
	b.set(k, row)
	if err := b.commit(); err != nil {
		return nil, fmt.Errorf("writing the avatar of %q: %w", login, err)
	}
	return old, nil
}

// SetRoomIcon replaces the icon of the room's row under its lock.
func (db *DB) SetRoomIcon(ctx context.Context, room string, icon *store.Picture) (*store.Picture, error) {
	k := roomKey(room)
	end, err := db.beginLocked(ctx, k)
	if err != nil {
		return nil, err
	}
	defer end()
	row, err := db.room(room)
	if err != nil {
		return nil, err
	}
	old := row.Icon
	row.Icon = icon
	b := db.batch()
	b.set(k, row)
	if err := b.commit(); err != nil {
		return nil, fmt.Errorf("writing the icon of %q: %w", room, err)
	}
	return old, nil
}

// Names reads the users' rows one key each: a point read in pebble costs
// about what a row of a range scan does.
func (db *DB) Names(ctx context.Context, logins []string) (map[string]store.PublicProfile, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	out := make(map[string]store.PublicProfile, len(logins))
	for _, login := range logins {
		row, found, err := getRow[userRow](db, userKey(login))
		if err != nil {
			return nil, fmt.Errorf("reading user %q: %w", login, err)
		}
		if found && !row.Deleted {
			out[login] = store.PublicProfile{UserRef: store.UserRef{Login: row.Login, Firstname: row.Firstname, Lastname: row.Lastname}, Avatar: row.Avatar, Bot: row.Bot}
		}
	}
	return out, nil
}

// DeleteAccount replaces the user's row by its tombstone and deletes the
// user's sessions, blocks, mutes, push subscriptions and previews choice,
// in one batch. It holds the locks of the push subscriptions and of the
// blocks too, so an add or a block racing it lands before (and goes) or
// after.
func (db *DB) DeleteAccount(ctx context.Context, login string, passHash []byte) ([]string, error) {
	k := userKey(login)
	end, err := db.beginLocked(ctx, k, sessionPartition(login), pushPartition(login), blocksPartition(login))
	if err != nil {
		return nil, err
	}
	defer end()
	row, err := db.user(login)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(row.PassHash, passHash) {
		return nil, fmt.Errorf("password of %q changed meanwhile: %w", login, store.ErrConflict)
	}
	tomb := userRow{Login: login, ChatRooms: row.ChatRooms, Deleted: true}
	b := db.batch()
	b.set(k, tomb)
	b.indexUser(tomb)
	b.deleteRange(sessionPartition(login))
	b.deleteRange(blocksPartition(login))
	b.delete(blockCountKey(login))
	b.deleteRange(mutesPartition(login))
	b.deleteRange(pushPartition(login))
	b.delete(pushPreviewsKey(login))
	b.deleteRange(digestNoticesPartition(login))
	b.delete(digestDueKey(login))
	if err := b.commit(); err != nil {
		return nil, fmt.Errorf("deleting user %q: %w", login, err)
	}
	return append([]string{}, row.ChatRooms...), nil
}
