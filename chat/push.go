package chat

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/killrchat/chatql/notify/webpush"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
)

// Push is what the chat knows of the server's Web Push: the VAPID public
// key browsers subscribe with, and whether subscriptions on loopback are
// accepted (tests only).
type Push struct {
	PublicKey     string
	AllowLoopback bool
}

// errNoPush refuses push subscriptions on a server that sends no pushes.
var errNoPush = fmt.Errorf("%w: this server sends no push notifications", store.ErrForbidden)

// maxDeviceName bounds the name a user gives a device.
const maxDeviceName = 64

// VAPIDPublicKey is the server's VAPID public key, or "" when it sends no
// pushes.
func (s *Service) VAPIDPublicKey() string {
	if s.Push == nil {
		return ""
	}
	return s.Push.PublicKey
}

// RegisterPush registers a browser's push subscription for me, tied to
// the session that registers it (empty for a bot's API key): it goes when
// that session ends.
func (s *Service) RegisterPush(ctx context.Context, me store.UserRef, session string, sub store.PushSubscription) (store.PushSubscription, error) {
	if s.Push == nil {
		return sub, errNoPush
	}
	if err := s.limit(ctx, ratelimit.RoomChange, me); err != nil {
		return sub, err
	}
	if err := webpush.Validate(webpush.Subscription{Endpoint: sub.Endpoint, P256dh: sub.P256dh, Auth: sub.Auth}, s.Push.AllowLoopback); err != nil {
		return sub, store.Invalidf("invalid push subscription: %v", err)
	}
	sub.Device = strings.TrimSpace(sub.Device)
	if !utf8.ValidString(sub.Device) || utf8.RuneCountInString(sub.Device) > maxDeviceName {
		return sub, store.Invalidf("invalid device name: at most %d characters", maxDeviceName)
	}
	sub.CreatedAt = s.now().UTC().Truncate(1e6)
	sub.Session = session
	return sub, s.Store.AddPushSubscription(ctx, me.Login, sub)
}

// UnregisterPush drops one of me's push subscriptions.
func (s *Service) UnregisterPush(ctx context.Context, me store.UserRef, endpoint string) error {
	if err := s.limit(ctx, ratelimit.RoomChange, me); err != nil {
		return err
	}
	return s.Store.RemovePushSubscription(ctx, me.Login, endpoint)
}

// SetPushPreviews sets whether me's notifications show the text.
func (s *Service) SetPushPreviews(ctx context.Context, me store.UserRef, previews bool) error {
	if err := s.limit(ctx, ratelimit.RoomChange, me); err != nil {
		return err
	}
	return s.Store.SetPushPreviews(ctx, me.Login, previews)
}

// PushSubscriptions lists me's push subscriptions.
func (s *Service) PushSubscriptions(ctx context.Context, me store.UserRef) ([]store.PushSubscription, error) {
	return s.livePushSubscriptions(ctx, me.Login)
}

// livePushSubscriptions are login's push subscriptions whose session
// still runs; the others, whose session ended (logout, a password change
// or reset, a reused refresh token, expiry), are dropped.
func (s *Service) livePushSubscriptions(ctx context.Context, login string) ([]store.PushSubscription, error) {
	subs, err := s.Store.PushSubscriptions(ctx, login)
	if err != nil {
		return nil, err
	}
	live := subs[:0]
	for _, sub := range subs {
		if sub.Session != "" {
			_, err := s.Store.Session(ctx, login, sub.Session)
			if errors.Is(err, store.ErrNotFound) {
				if err := s.Store.RemovePushSubscription(ctx, login, sub.Endpoint); err != nil {
					return nil, err
				}
				continue
			}
			if err != nil {
				return nil, err
			}
		}
		live = append(live, sub)
	}
	return live, nil
}

// PushTargets are the push subscriptions the notifier sends to: those of
// sessions still running.
type PushTargets struct{ Service *Service }

// PushSubscriptions are login's subscriptions of running sessions.
func (p PushTargets) PushSubscriptions(ctx context.Context, login string) ([]store.PushSubscription, error) {
	return p.Service.livePushSubscriptions(ctx, login)
}

// RemovePushSubscription drops a subscription the push service says is
// gone.
func (p PushTargets) RemovePushSubscription(ctx context.Context, login, endpoint string) error {
	return p.Service.Store.RemovePushSubscription(ctx, login, endpoint)
}

// Logout ends me's session (its tokens stop working, its sockets close)
// and drops the push subscriptions it registered.
func (s *Service) Logout(ctx context.Context, me store.UserRef, session string) error {
	if err := s.Sessions.End(ctx, me.Login, session); err != nil {
		return err
	}
	_, err := s.livePushSubscriptions(ctx, me.Login)
	return err
}

// PushPreviews is me's choice of notifications with the text.
func (s *Service) PushPreviews(ctx context.Context, me store.UserRef) (bool, error) {
	return s.Store.PushPreviews(ctx, me.Login)
}
