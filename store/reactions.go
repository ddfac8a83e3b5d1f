package store

import (
	"context"
	"unicode"
	"unicode/utf8"
)

// ReactionChanged: User added or removed a reaction to Message. A room
// event, and an inbox event of both users of a direct conversation.
const ReactionChanged EventKind = "REACTION_CHANGED"

// MaxReactionKinds bounds the distinct reactions of one message: adding
// another kind is refused, adding to a kind it has is not.
const MaxReactionKinds = 20

// MaxEmojiLength bounds a reaction, in bytes: room for the longest emoji
// sequences (a family with skin tones) or a :shortcode:.
const MaxEmojiLength = 32

// A Reaction is one kind of reaction to a message: how many reacted with
// Emoji, and whether the viewer the reactions were read for did.
type Reaction struct {
	Emoji string
	Count int
	Mine  bool
}

// ValidateEmoji checks a reaction: 1 to MaxEmojiLength bytes of UTF-8,
// without spaces or control characters.
func ValidateEmoji(emoji string) error {
	if emoji == "" || len(emoji) > MaxEmojiLength || !utf8.ValidString(emoji) {
		return Invalidf("invalid reaction: it must be 1 to %d bytes of UTF-8", MaxEmojiLength)
	}
	for _, r := range emoji {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return Invalidf("invalid reaction: it must not contain spaces or control characters")
		}
	}
	return nil
}

// Reactions keeps who reacted with what to each message: one row per
// message, emoji and user, in the message's room and day.
type Reactions interface {
	// React adds (add true) or removes by's reaction emoji to m, and logs
	// ReactionChanged (a fresh id, User by) in the room's log, or in both
	// users' inbox logs for a direct message. Adding a reaction by has, or
	// removing one by has not, changes and logs nothing (the zero Event).
	// Returns ErrNotFound if m does not exist or is deleted, and
	// ErrInvalid when a new kind would exceed MaxReactionKinds (two racing
	// new kinds may both pass on Cassandra). The caller checks who may.
	React(ctx context.Context, m Message, by UserRef, emoji string, add bool) (Event, error)

	// Reactions returns the reactions of each of msgs that has any, by id,
	// emoji by emoji in byte order, Mine for viewer: one read per room and
	// day of msgs, not one per message.
	Reactions(ctx context.Context, msgs []Message, viewer string) (map[MessageID][]Reaction, error)
}
