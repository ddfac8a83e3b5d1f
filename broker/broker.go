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

// AnnouncementsTopic carries the instances' announcements of profile
// changes, account deletions and ended memberships (store.ProfileChanged,
// store.AccountDeleted, store.MembershipEnded), which every instance follows
// to drop what it cached of the user or the room. It keeps the name it had
// when it carried profile changes only, so that instances of both versions
// hear each other during an upgrade.
const AnnouncementsTopic = "profiles"

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

	// Flush returns once every event the caller published before it has
	// left this instance for the other instances' subscribers, or has been
	// dropped (its topic's subscribers then catch up from the store), or
	// when ctx ends (with its error). A change answered after Flush
	// reaches every instance's subscribers even if this instance dies the
	// moment it answers.
	Flush(ctx context.Context) error

	// Subscribe returns a subscription to topic. When it returns, the
	// subscription is live: every event published afterwards reaches it,
	// unless it ends first.
	Subscribe(ctx context.Context, topic string) (*Subscription, error)

	// Close ends every subscription with ErrClosed and releases resources.
	Close() error
}

// Stats are a broker's counts, for monitoring (the server's /metrics reads
// them at each scrape). Counters count from the broker's start.
type Stats struct {
	// Published counts the events handed to Publish.
	Published uint64
	// SlowSubscribers counts the local subscribers cut off because their
	// queue was full (each missed the event that did not fit).
	SlowSubscribers uint64
	// Topics and Subscribers are the local topics with subscribers, and
	// their subscribers, now.
	Topics, Subscribers int

	// Redis reports a Redis broker; the fields below are its own.
	Redis bool
	// DroppedOutboxFull and DroppedPublishFailed count the events that
	// never reached Redis: the outbox was full, or Redis refused or failed
	// the write. Their topics were resynced.
	DroppedOutboxFull, DroppedPublishFailed uint64
	// ResyncsPublished counts the Resyncs this instance published for
	// topics whose events it lost; ResyncsReceived the Resyncs that reached
	// it from Redis (its own included); ResyncsReconnect those it gave its
	// subscribers when a subscription came back after the pub/sub
	// connection dropped; ResyncsUndecodable those that replaced an event
	// it could not decode.
	ResyncsPublished, ResyncsReceived, ResyncsReconnect, ResyncsUndecodable uint64
	// Renewals counts the sharded pub/sub connections replaced because
	// their node stopped serving their slot (a failover, a resharding), or
	// failed on a cluster, or were found deaf.
	Renewals uint64
	// ProbesLost counts the sharded pub/sub connections found deaf: a probe
	// the instance published to itself did not come back (a half-open
	// connection, or one left on a node that no longer serves its slot).
	// Each was renewed, and is counted in Renewals too.
	ProbesLost uint64
	// PubSubUp: the pub/sub connection works (its last read did not fail).
	// PublishUp: the last write of events to Redis succeeded.
	PubSubUp, PublishUp bool
	// Channels is the Redis channels subscribed or being subscribed; Outbox
	// the events waiting to be written to Redis.
	Channels, Outbox int
}
