package chat

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/killrchat/chatql/notify/webhook"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
)

// The rules of outgoing webhooks:
//
//   - A room's webhooks are managed (registered, listed, deleted, revived)
//     by its creator and its moderators; in a private group, only those of
//     them who are members now. A plain participant may not: a webhook
//     sends what is said in the room to a server outside, which is the
//     moderators' decision, and a plain member of a private group, who may
//     otherwise do much (add members, change the icon), may not either.
//   - A room has at most store.MaxWebhooks webhooks.
//   - A URL is https, and its host no private, loopback or otherwise
//     reserved address (webhook.ValidateURL; loopback over http in tests).
//   - A webhook receives the room's events from its registration on, never
//     the history before it: a private group's webhook thus sees what a
//     member who joined then would.
//   - It sees what a participant who moderates nothing sees: a hidden
//     message's content and attachments are blank (only the author reads
//     them), a deleted message is a tombstone.
//   - Its secret is shown once, by createWebhook; listings leave it out.

// WebhookIDPrefix starts every webhook's id.
const WebhookIDPrefix = "wh_"

// mayManageWebhooks says whether the member m may manage the room's
// webhooks.
func mayManageWebhooks(m store.RoomMembership) error {
	switch {
	case m.Kind == store.PrivateGroup && !m.Participant:
		return fmt.Errorf("%w: only the members of %q who moderate it may manage its webhooks", store.ErrForbidden, m.Room)
	case m.Moderates():
		return nil
	}
	return fmt.Errorf("%w: only the creator and moderators of %q may manage its webhooks", store.ErrForbidden, m.Room)
}

// webhookManager checks that me may manage the room's webhooks. A private
// group me is not in is NOT_FOUND, as everywhere.
func (s *Service) webhookManager(ctx context.Context, me store.UserRef, room string) error {
	m, err := s.visibleMembership(ctx, room, me)
	if err != nil {
		return err
	}
	return mayManageWebhooks(m)
}

// CreateWebhook registers url to receive the room's events from now on,
// and returns the webhook with its secret, which is never shown again.
func (s *Service) CreateWebhook(ctx context.Context, me store.UserRef, room, url string) (store.Webhook, error) {
	if err := s.limit(ctx, ratelimit.RoomChange, me); err != nil {
		return store.Webhook{}, err
	}
	if err := s.webhookManager(ctx, me, room); err != nil {
		return store.Webhook{}, err
	}
	u, err := webhook.ValidateURL(url, s.WebhooksAllowLoopback)
	if err != nil {
		return store.Webhook{}, store.Invalidf("invalid webhook URL: %v", err)
	}
	w, err := newWebhook(room, u.String(), me, s.now())
	if err != nil {
		return store.Webhook{}, err
	}
	return w, s.Store.AddWebhook(ctx, w)
}

// newWebhook makes the webhook of room posting to url, registered by me
// at now, with a fresh id and secret, whose delivery starts after now.
func newWebhook(room, url string, me store.UserRef, now time.Time) (store.Webhook, error) {
	secret, err := webhook.NewSecret()
	if err != nil {
		return store.Webhook{}, err
	}
	id := make([]byte, 12)
	if _, err := rand.Read(id); err != nil {
		return store.Webhook{}, err
	}
	return store.Webhook{
		ID: WebhookIDPrefix + hex.EncodeToString(id), Room: room, URL: url, Secret: secret.Encode(),
		CreatedBy: me.Login, CreatedAt: now.UTC().Truncate(time.Millisecond),
		// Not CreatedAt's millisecond, which may precede the last events.
		WebhookState: store.WebhookState{Cursor: store.MinMessageID(now)},
	}, nil
}

// RoomWebhooks lists the room's webhooks, oldest first, without their
// secrets.
func (s *Service) RoomWebhooks(ctx context.Context, me store.UserRef, room string) ([]store.Webhook, error) {
	if err := s.webhookManager(ctx, me, room); err != nil {
		return nil, err
	}
	ws, err := s.Store.RoomWebhooks(ctx, room)
	for i := range ws {
		ws[i].Secret = ""
	}
	return ws, err
}

// managedWebhook reads the webhook of id, if me may manage it; one of a
// room me cannot see is NOT_FOUND, as one that does not exist.
func (s *Service) managedWebhook(ctx context.Context, me store.UserRef, id string) (store.Webhook, error) {
	w, err := s.Store.Webhook(ctx, id)
	if err != nil {
		return store.Webhook{}, err
	}
	if err := s.webhookManager(ctx, me, w.Room); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return store.Webhook{}, fmt.Errorf("%w: webhook %s", store.ErrNotFound, id)
		}
		return store.Webhook{}, err
	}
	w.Secret = ""
	return w, nil
}

// DeleteWebhook removes a webhook: nothing more is delivered to it.
func (s *Service) DeleteWebhook(ctx context.Context, me store.UserRef, id string) error {
	if err := s.limit(ctx, ratelimit.RoomChange, me); err != nil {
		return err
	}
	if _, err := s.managedWebhook(ctx, me, id); err != nil {
		return err
	}
	return s.Store.RemoveWebhook(ctx, id)
}

// ReviveWebhook brings a dead webhook back: delivery resumes with the
// event it died on. A live one is returned as it is.
func (s *Service) ReviveWebhook(ctx context.Context, me store.UserRef, id string) (store.Webhook, error) {
	if err := s.limit(ctx, ratelimit.RoomChange, me); err != nil {
		return store.Webhook{}, err
	}
	w, err := s.managedWebhook(ctx, me, id)
	if err != nil || !w.Dead {
		return w, err
	}
	w.WebhookState = store.WebhookState{Cursor: w.Cursor, LastDeliveredAt: w.LastDeliveredAt}
	return w, s.Store.SetWebhookState(ctx, id, w.WebhookState)
}

// dropRoomWebhooks removes the webhooks of a deleted room, so that a room
// made later under its name does not inherit them. A failure is logged:
// the deliverer finds nothing to deliver to those left.
func (s *Service) dropRoomWebhooks(ctx context.Context, room string) {
	ws, err := s.Store.RoomWebhooks(ctx, room)
	for _, w := range ws {
		err = errors.Join(err, s.Store.RemoveWebhook(ctx, w.ID))
	}
	if err != nil && s.Log != nil {
		s.Log.WarnContext(ctx, "dropping the webhooks of a deleted room", "room", room, "err", err)
	}
}

// WebhookEvent is the JSON body a webhook receives for one event of its
// room.
type WebhookEvent struct {
	// ID is the event's id, the cursor of the room's log; the webhook-id
	// header carries it too, the same on every retry.
	ID   string          `json:"id"`
	Kind store.EventKind `json:"kind"`
	Room string          `json:"room"`
	// User is the login of who the event is about (who posted, joined,
	// left, hid, edited or deleted).
	User    string          `json:"user"`
	Message *WebhookMessage `json:"message,omitempty"`
}

// WebhookMessage is a message as a webhook sees it: as it is at delivery,
// and as a participant who moderates nothing reads it.
type WebhookMessage struct {
	ID          string              `json:"id"`
	Author      string              `json:"author"`
	Content     string              `json:"content"`
	PostedAt    time.Time           `json:"postedAt"`
	EditedAt    *time.Time          `json:"editedAt,omitempty"`
	System      bool                `json:"system"`
	Hidden      bool                `json:"hidden"`
	Deleted     bool                `json:"deleted"`
	ReplyToID   string              `json:"replyToId,omitempty"`
	Attachments []WebhookAttachment `json:"attachments"`
}

// WebhookAttachment names a file of a message.
type WebhookAttachment struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// WebhookBody is the JSON a webhook receives for e.
func WebhookBody(e store.Event) ([]byte, error) {
	out := WebhookEvent{ID: e.ID.String(), Kind: e.Kind, Room: e.Room, User: e.User.Login}
	if m := e.Message; m != nil {
		out.Message = webhookMessage(m)
	}
	return json.Marshal(out)
}

// webhookMessage is m as a webhook sees it: with the content and the
// attachments an anonymous viewer reads (none of a hidden message's).
func webhookMessage(m *store.Message) *WebhookMessage {
	var nobody store.UserRef
	wm := &WebhookMessage{
		ID: m.ID.String(), Author: m.Author.Login, Content: Content(m, nobody), PostedAt: m.PostedAt().UTC(),
		System: m.System, Hidden: m.Hidden, Deleted: m.Deleted, Attachments: []WebhookAttachment{},
	}
	if !m.EditedAt.IsZero() {
		at := m.EditedAt.UTC()
		wm.EditedAt = &at
	}
	if !m.ReplyTo.IsZero() {
		wm.ReplyToID = m.ReplyTo.String()
	}
	for _, a := range Attachments(m, nobody) {
		wm.Attachments = append(wm.Attachments, WebhookAttachment{ID: a.ID.String(), Name: a.Name})
	}
	return wm
}
