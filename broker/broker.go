// Package broker carries live events from the server instance where they
// happen to the subscribers on every instance. The store is the source of
// truth: a broker may drop events (a subscriber that falls behind is cut off,
// a Redis outage loses what was published during it), and subscribers catch
// up from the store by cursor.
package broker

import (
	"context"
	"errors"

	"github.com/killrchat/chatql/store"
)

// Event is what the broker carries: a store event, or Resync.
type Event = store.Event

// Resync is not a stored event: the broker may have lost events (its
// upstream connection dropped and came back, or a publish failed), so the
// subscriber must catch up from the event log after its last cursor. It
// comes once the broker receives the topic's events again, so that nothing
// falls between the catch-up and the live events that follow. It may be
// spurious; catching up is idempotent.
const Resync store.EventKind = "RESYNC"

// RoomTopic is the topic of a room's events.
func RoomTopic(room string) string { return "room:" + room }

// UserTopic is the topic of a user's inbox events.
func UserTopic(login string) string { return "user:" + login }

// RoomPresenceTopic and UserPresenceTopic carry the presence changes of a
// room's participants and of a user's direct-conversation peers, apart from
// the room's and the inbox's events: only the subscribers who follow
// presence subscribe to them, so the others are never woken by it.
func RoomPresenceTopic(room string) string  { return "presence:room:" + room }
func UserPresenceTopic(login string) string { return "presence:user:" + login }

// ProfilesTopic carries the instances' announcements of profile changes
// and account deletions (store.ProfileChanged, store.AccountDeleted), which
// every instance follows to drop what it cached of the user.
const ProfilesTopic = "profiles"

// Errors that end a subscription.
var (
	// ErrSlowSubscriber: the subscriber did not keep up and was cut off so
	// that it never holds back posters or other subscribers.
	ErrSlowSubscriber = errors.New("subscriber too slow: events were arriving faster than it read them; resubscribe with the last cursor to catch up")
	// ErrClosed: the broker is shutting down.
	ErrClosed = errors.New("broker closed: the server is shutting down; resubscribe with the last cursor")
)

// Broker publishes events to topics and subscribes to them.
type Broker interface {
	// Publish sends ev to the current subscribers of topic on every
	// instance, at most once.
	Publish(ctx context.Context, topic string, ev Event) error

	// Subscribe returns a subscription to topic. When it returns, the
	// subscription is live: every event published afterwards reaches it,
	// unless it ends first.
	Subscribe(ctx context.Context, topic string) (*Subscription, error)

	// Close ends every subscription with ErrClosed and releases resources.
	Close() error
}
