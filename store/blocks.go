package store

import "context"

// MaxBlocks bounds how many users one user may block: the partition of a
// user's blocks stays small enough to read whole.
const MaxBlocks = 1000

// Blocks keeps whom each user blocked, in a partition per user.
type Blocks interface {
	// Block records that login blocked u. Blocking again changes nothing.
	// Returns ErrInvalid if login already blocks MaxBlocks users. Racing
	// blocks never pass MaxBlocks on the embedded store; on Cassandra,
	// which counts and then writes, they may by fewer than their number.
	Block(ctx context.Context, login string, u UserRef) error

	// Unblock forgets that login blocked other; unblocking a user not
	// blocked changes nothing.
	Unblock(ctx context.Context, login, other string) error

	// BlockedUsers returns the users login blocked, by login.
	BlockedUsers(ctx context.Context, login string) ([]UserRef, error)

	// Blocks reports whether login blocked other: one row's read.
	Blocks(ctx context.Context, login, other string) (bool, error)

	// BlocksBetween reports whether a blocked b and whether b blocked a,
	// in one round trip: the check of every direct message.
	BlocksBetween(ctx context.Context, a, b string) (aBlocksB, bBlocksA bool, err error)
}

// Mutes keeps the conversations (rooms, groups, direct conversations) each
// user muted, in a partition per user.
type Mutes interface {
	// Mute records that login muted the conversation; again changes
	// nothing.
	Mute(ctx context.Context, login, conversation string) error

	// Unmute forgets it; unmuting what is not muted changes nothing.
	Unmute(ctx context.Context, login, conversation string) error

	// Muted returns the ids of the conversations login muted, sorted.
	Muted(ctx context.Context, login string) ([]string, error)

	// Mutes reports whether login muted the conversation: one row's read.
	Mutes(ctx context.Context, login, conversation string) (bool, error)
}
