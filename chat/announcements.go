package chat

import (
	"context"
	"time"

	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/store"
)

// FollowAnnouncements subscribes to the announcements of the instances
// (this one's included) and, until ctx ends, drops what they name from the
// profile and membership caches; deleted is called with the login of each
// deleted account. It returns once the subscription is live. After a gap
// (the broker lost announcements, or cut the subscription off) it drops
// everything both caches hold.
func (s *Service) FollowAnnouncements(ctx context.Context, deleted func(login string)) error {
	sub, err := s.Broker.Subscribe(ctx, broker.AnnouncementsTopic)
	if err != nil {
		return err
	}
	go func() {
		for {
			for {
				ev, ok := sub.Next(ctx)
				if !ok {
					break
				}
				s.heard(ev, deleted)
			}
			sub.Close()
			s.purgeCaches()
			for ctx.Err() == nil {
				if sub, err = s.Broker.Subscribe(ctx, broker.AnnouncementsTopic); err == nil {
					break
				}
				s.Log.Warn("following the instances' announcements failed; retrying", "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
			if ctx.Err() != nil {
				return
			}
		}
	}()
	return nil
}

// tellInstances publishes ev on the instances' announcements topic. A
// failure is logged: the other instances' caches then keep the old state
// until their entries expire.
func (s *Service) tellInstances(ctx context.Context, ev store.Event) {
	if s.Broker == nil {
		return
	}
	markPublished(ctx)
	if err := s.Broker.Publish(context.WithoutCancel(ctx), broker.AnnouncementsTopic, ev); err != nil {
		s.Log.WarnContext(ctx, "announcing to the other instances failed; their caches keep the old state until the entries expire", "kind", ev.Kind, "room", ev.Room, "err", err)
	}
}

// heard acts on one announcement.
func (s *Service) heard(ev *broker.Event, deleted func(login string)) {
	switch ev.Kind {
	case store.ProfileChanged:
		if s.Profiles != nil {
			s.Profiles.Forget(ev.User.Login)
		}
	case store.AccountDeleted:
		if s.Profiles != nil {
			s.Profiles.Forget(ev.User.Login)
		}
		if s.Memberships != nil {
			s.Memberships.forgetUser(ev.User.Login)
		}
		if deleted != nil {
			deleted(ev.User.Login)
		}
	case store.BotKeyRevoked:
		if s.Sessions != nil {
			s.Sessions.RevokeKeyHex(ev.User.Login, ev.Room)
		}
	case store.MembershipEnded:
		if s.Memberships != nil {
			s.Memberships.forget(ev.Room, ev.User.Login)
		}
	case broker.Resync:
		s.purgeCaches()
	}
}

// purgeCaches drops everything the caches hold: announcements may have
// been lost.
func (s *Service) purgeCaches() {
	if s.Profiles != nil {
		s.Profiles.Purge()
	}
	if s.Memberships != nil {
		s.Memberships.Purge()
	}
}
