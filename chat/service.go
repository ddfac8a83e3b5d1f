// Package chat holds the chat's rules, between the API and the store: who
// may read and change what (rooms, groups and their membership windows,
// bans, blocks, moderators, hidden and deleted messages), how a write is
// made (limit, check, order, store, publish), to whom each event goes, the
// sends that retries make once, and the caches of the instance.
//
// Its methods take the caller explicitly: the GraphQL resolvers read the
// caller from the request once, call the Service and shape its answer, so
// every path to a message (the history, a thread, a message by id, the
// inbox, a subscription's replay) meets the same rules.
package chat

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/files"
	"github.com/killrchat/chatql/presence"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/stream"
)

// Service is the chat of one instance, built once at start.
type Service struct {
	Store  store.Store
	Broker broker.Broker
	// Streams opens the subscriptions' streams over the store and broker.
	Streams *stream.Source
	// Sessions starts and ends the users' sessions. Nil in tests of other
	// layers.
	Sessions *auth.Sessions
	// PasskeyCeremonies runs WebAuthn's ceremonies; nil: no passkeys.
	PasskeyCeremonies *auth.Passkeys
	// OIDC signs in with an OpenID Connect provider; nil: none configured.
	OIDC *auth.OIDC
	// Passwords hashes and checks passwords.
	Passwords *auth.Passwords
	Log       *slog.Logger
	// Limits count writes per user and per client address; nil limits
	// nothing.
	Limits *ratelimit.Set
	// Typists tracks who types where through this instance (NewTyping).
	Typists *presence.Typing
	// Presence tracks who is online (NewPresence).
	Presence *presence.Tracker
	// Profiles caches the users' current names (NewProfiles). Nil in tests
	// of other layers: users are shown with the names as stored.
	Profiles *Profiles
	// Memberships caches who may post to which public room
	// (NewMemberships). Nil in tests of other layers: every post reads the
	// membership.
	Memberships *Memberships
	// MaxRoomsPerUser caps the rooms and groups a user takes part in
	// (DefaultMaxRoomsPerUser when 0).
	MaxRoomsPerUser int
	// MaxSyncsPerUser caps the syncs a user has open at once on this
	// instance (DefaultMaxSyncsPerUser when 0; see syncSlots).
	MaxSyncsPerUser int
	// Files keeps the files people send; nil refuses them.
	Files *files.Service
	// WebhooksAllowLoopback accepts webhook URLs on loopback over http
	// (the receivers of tests).
	WebhooksAllowLoopback bool
	// Push is the server's Web Push; nil: it sends none.
	Push *Push
	// Email is the server's email (links and digests); nil: it sends none.
	Email *Email
	// Previews fetches the cards of links in messages; nil fetches none.
	Previews Previewer
	// Clock makes the ids of posted messages and orders the rooms' writes
	// (roomorder.go); nil is this machine's clock.
	Clock *store.IDClock

	// history shares identical history reads made at once.
	history historyReads
	// syncs counts each user's open syncs (syncslots.go).
	syncs syncSlots
	// roomLines order each room's events by id as they leave (roomorder.go).
	roomLines roomLines
	// previewsUnderWay holds a token per preview being fetched
	// (previews.go).
	previewsOnce     sync.Once
	previewsUnderWay chan struct{}
	previewsRunning  sync.WaitGroup
}

// newMessageID is a fresh id of the instance's clock.
func (s *Service) newMessageID() store.MessageID {
	if s.Clock == nil {
		return store.NewMessageID()
	}
	return s.Clock.NewMessageID()
}

// now is the instance's clock's time.
func (s *Service) now() time.Time {
	if s.Clock == nil {
		return time.Now()
	}
	return s.Clock.Now()
}

// windowStart is when a membership window opens now, to the microsecond
// as message ids are: the system message that records it (its id taken at
// that time) falls in the window, which a finer bound would open after.
func (s *Service) windowStart() time.Time { return s.now().Truncate(time.Microsecond) }

// limit counts a write of me's within the limit of action.
func (s *Service) limit(ctx context.Context, action ratelimit.Action, me store.UserRef) error {
	return s.Limits.Allow(ctx, action, me.Login)
}
