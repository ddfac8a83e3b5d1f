package store

import (
	"context"
	"regexp"
	"time"
)

// ClientMessageRetention is how long a client's name for a message is
// remembered: a retry within it returns the message the first send stored;
// a send after it, under the same name, is a new message.
const ClientMessageRetention = 7 * 24 * time.Hour

// MaxClientMessageIDLength bounds a client's name for a message: room for
// a UUID, a ULID or a nanoid with a prefix.
const MaxClientMessageIDLength = 64

// A ClientMessage is the message a client's name stands for: the one its
// first send stored.
type ClientMessage struct {
	Room string
	ID   MessageID
}

// ClientMessages makes sends safe to retry: the client names each message
// it sends (Matrix's transaction id, Stream's message id), and a retry
// under the same name finds the message of the first send instead of
// posting a second.
type ClientMessages interface {
	// ClaimClientMessage records that author's message named clientID is
	// m, unless one is recorded already (and younger than
	// ClientMessageRetention): then it records nothing and returns that
	// one, claimed false. Of concurrent claims of one name exactly one is
	// claimed (Cassandra: INSERT ... IF NOT EXISTS). The claim is written
	// before the message: a claimed name whose message is missing is a
	// send that did not finish, which the retry finishes under m.ID.
	ClaimClientMessage(ctx context.Context, author, clientID string, m ClientMessage) (prior ClientMessage, claimed bool, err error)
}

var clientMessageID = regexp.MustCompile(`^[A-Za-z0-9._:-]+$`)

// ValidateClientMessageID checks a client's name for a message: 1 to
// MaxClientMessageIDLength letters, digits and . _ : -.
func ValidateClientMessageID(id string) error {
	if id == "" || len(id) > MaxClientMessageIDLength || !clientMessageID.MatchString(id) {
		return Invalidf("invalid clientMessageId: it must be 1 to %d letters, digits, '.', '_', ':' or '-'", MaxClientMessageIDLength)
	}
	return nil
}
