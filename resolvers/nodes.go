package resolvers

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"sync"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/graph/model"
	"github.com/killrchat/chatql/store"
)

// Global ids (the schema's Node): a user's, a profile's and a room's are
// the standard base64 of "<kind>:<key>", their login or name; a message's
// is its timeuuid, which clients already hold everywhere, and which no
// base64 id resembles (base64 has no '-').
const (
	userNode    = "User"    // a UserSummary: any user's public face
	profileNode = "Profile" // a User: the caller's own profile
	roomNode    = "Room"
	// maxNodeID bounds the ids node decodes: the longest key is a room's
	// name or a login, at most 40 characters.
	maxNodeID = 128
)

// nodeID is the global id of the object of kind with key.
func nodeID(kind, key string) string {
	return base64.StdEncoding.EncodeToString([]byte(kind + ":" + key))
}

// errNotNodeID refuses an id no field gave.
var errNotNodeID = store.Invalidf("invalid id: not the id of a UserSummary, User, Room or Message (ids are opaque: pass one a field returned)")

// parseNodeID splits a base64 global id into its kind and key.
func parseNodeID(id string) (kind, key string, err error) {
	if len(id) > maxNodeID {
		return "", "", errNotNodeID
	}
	raw, err := base64.StdEncoding.DecodeString(id)
	if err != nil {
		return "", "", errNotNodeID
	}
	kind, key, ok := strings.Cut(string(raw), ":")
	if !ok || key == "" {
		return "", "", errNotNodeID
	}
	switch kind {
	case userNode, profileNode, roomNode:
		return kind, key, nil
	}
	return "", "", errNotNodeID
}

// node reads the object id names, as me may see it through the core; nil
// for one that does not exist or that me may not read alike.
func (r *Resolver) node(ctx context.Context, me store.UserRef, id string) (model.Node, error) {
	if _, err := store.ParseMessageID(id); err == nil {
		return nodeOrNull(r.Service.Message(ctx, me, id))
	}
	kind, key, err := parseNodeID(id)
	if err != nil {
		return nil, err
	}
	switch kind {
	case userNode:
		return nodeOrNull(r.Service.User(ctx, me, key))
	case profileNode:
		if key != me.Login {
			return nil, nil // another's profile: unreadable, so absent
		}
		u, err := r.Service.Me(ctx, me)
		if err != nil {
			return nil, err
		}
		return u, nil
	default: // roomNode
		return nodeOrNull(r.Service.Room(ctx, me, key))
	}
}

// nodeOrNull is a core read's object as a Node, or no node for NOT_FOUND
// (which the core answers for what me may not read too).
func nodeOrNull[T any](v T, err error) (model.Node, error) {
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// roomOf is the room or group a message was posted in as the caller sees
// it (nil for a direct message, or one the caller may not see), read once
// per operation and room.
func (r *Resolver) roomOf(ctx context.Context, m *store.Message) (*store.Room, error) {
	if store.IsDirectConversation(m.Room) {
		return nil, nil
	}
	return r.roomNamed(ctx, m.Room)
}

// roomNamed is the room or group called name as the caller sees it (nil
// for one the caller may not see, or that is gone), read once per
// operation and room: a message's room, a room event's.
func (r *Resolver) roomNamed(ctx context.Context, name string) (*store.Room, error) {
	me, err := auth.UserFrom(ctx)
	if err != nil {
		return nil, err
	}
	read := func() (*store.Room, error) { return nullIfMissing(r.Service.Room(ctx, me, name)) }
	l := loaderOf(ctx)
	if l == nil || l.live {
		return read()
	}
	l.mu.Lock()
	if l.rooms == nil {
		l.rooms = map[string]*onceRoom{}
	}
	once := l.rooms[name]
	if once == nil {
		once = &onceRoom{}
		l.rooms[name] = once
	}
	l.mu.Unlock()
	once.once.Do(func() { once.room, once.err = read() })
	return once.room, once.err
}

// onceRoom is a room read once per operation, when first needed.
type onceRoom struct {
	once sync.Once
	room *store.Room
	err  error
}
