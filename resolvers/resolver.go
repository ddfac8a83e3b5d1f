// Package resolvers maps the GraphQL API onto the store and the broker:
// identity from the verified token, a store call, a broker publish.
package resolvers

import (
	"log/slog"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/presence"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/stream"
)

// Page sizes of the connections and paged lists.
const (
	MaxPageSize = 100
	// The page sizes when `first` is absent, as the schema states them.
	defaultMessagePage = 50
	defaultRoomPage    = 20
	defaultListPage    = 100 // a room's participants, a user's rooms
)

// Resolver holds the dependencies of every resolver, built once at start.
type Resolver struct {
	Store  store.Store
	Broker broker.Broker
	// Streams opens the subscriptions' streams over Store and Broker.
	Streams *stream.Source
	Tokens  *auth.Tokens
	// Sessions issues, refreshes and ends sessions, and ends the streams of
	// those that end. Nil in tests of other layers: streams then run until
	// they end by themselves.
	Sessions  *auth.Sessions
	Passwords *auth.Passwords
	Log       *slog.Logger
	// Limits count writes per user and per client address; nil limits
	// nothing.
	Limits *ratelimit.Set
	// Typists tracks who types where through this instance (NewTyping).
	Typists *presence.Typing
	// Presence tracks who is online (NewPresence).
	Presence *presence.Tracker
	// Profiles caches the users' current names, which every UserSummary
	// shows (NewProfiles). Nil in tests of other layers: a UserSummary then
	// shows the names as stored.
	Profiles *Profiles
	// Memberships caches who may post to which public room
	// (NewMemberships). Nil in tests of other layers: every post reads the
	// membership.
	Memberships *Memberships
	// MaxRoomsPerUser caps the rooms and groups a user takes part in
	// (DefaultMaxRoomsPerUser when 0).
	MaxRoomsPerUser int

	// history shares identical history reads made at once.
	history historyReads
	// roomLines order each room's events by id as they leave (roomorder.go).
	roomLines roomLines
}
