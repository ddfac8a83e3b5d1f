// Package resolvers is the GraphQL layer: each resolver reads the caller
// from the request once, calls the chat core (package chat), where every
// rule lives, and shapes its answer for the schema.
package resolvers

import (
	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/chat"
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
	// Service is the chat core the resolvers call.
	*chat.Service
	Tokens *auth.Tokens
}
