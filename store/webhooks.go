package store

import (
	"context"
	"time"
)

// MaxWebhooks caps the webhooks of one room.
const MaxWebhooks = 10

// Webhook is an outside HTTP endpoint registered to receive a room's
// events, with its delivery state.
type Webhook struct {
	// ID names the webhook; it is unique across rooms.
	ID   string
	Room string
	// URL is the endpoint the events are posted to.
	URL string
	// Secret is the text form of the key that signs the deliveries
	// ("whsec_...").
	Secret string
	// CreatedBy is the login of who registered it.
	CreatedBy string
	// CreatedAt is when it was registered, to the millisecond.
	CreatedAt time.Time
	WebhookState
}

// WebhookState is where a webhook's delivery stands: its cursor in the
// room's event log and the failures since the last delivery.
type WebhookState struct {
	// Cursor is the id of the last event the receiver acknowledged (2xx);
	// the zero id before the first. Delivery resumes after it.
	Cursor MessageID
	// FailedAttempts counts the failed attempts at the event after Cursor;
	// zero after a delivery.
	FailedAttempts int
	// NextAttempt is when the event after Cursor may be tried again after
	// a failure; zero for at once.
	NextAttempt time.Time
	// LastError explains the last failed attempt; empty after a delivery.
	LastError string
	// LastDeliveredAt is when the receiver last acknowledged an event.
	LastDeliveredAt time.Time
	// Dead is set once an event failed for good (every retry failed, or
	// the receiver answered 410 Gone): delivery stops until revived.
	Dead bool
	// DeadEvent is the event it died on, the one after Cursor.
	DeadEvent MessageID
}

// Webhooks keeps the rooms' webhooks, their cursors and state, and the
// leases that let one instance at a time deliver to each.
type Webhooks interface {
	// AddWebhook registers w, whose ID, Room, URL and Secret are set; its
	// state starts at the zero cursor unless w carries one (a webhook
	// starts at the room's newest event: see package chat). ErrInvalid when
	// the room has MaxWebhooks already. The cap is a check before the
	// write: on Cassandra, racing adds may each see room for one.
	AddWebhook(ctx context.Context, w Webhook) error
	// Webhook returns the webhook of id; ErrNotFound if there is none.
	Webhook(ctx context.Context, id string) (Webhook, error)
	// RoomWebhooks lists the room's webhooks, oldest first.
	RoomWebhooks(ctx context.Context, room string) ([]Webhook, error)
	// AllWebhooks lists every room's webhooks (a small listing: at most
	// MaxWebhooks a room, of the rooms that have any), by id.
	AllWebhooks(ctx context.Context) ([]Webhook, error)
	// RemoveWebhook deletes the webhook of id, its state and lease;
	// removing a missing one does nothing.
	RemoveWebhook(ctx context.Context, id string) error
	// SetWebhookState records where the delivery to the webhook of id
	// stands. It is written by the holder of its lease (and by a revival,
	// of a dead webhook nobody delivers to); it changes nothing if the
	// webhook is gone, or if a removal races it (a reader then finds no
	// webhook).
	SetWebhookState(ctx context.Context, id string, st WebhookState) error
	// LeaseWebhook takes the lease of the webhook of id for holder until
	// ttl from now, or renews it if holder has it; it reports false,
	// changing nothing, while another holder's lease runs. Of racing takers
	// exactly one wins. Leases behave as LeaseNoticeShard's do.
	LeaseWebhook(ctx context.Context, id, holder string, ttl time.Duration) (bool, error)
}
