package resolvers

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
func (r *Resolver) FollowAnnouncements(ctx context.Context, deleted func(login string)) error {
	sub, err := r.Broker.Subscribe(ctx, broker.AnnouncementsTopic)
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
				r.heard(ev, deleted)
			}
			sub.Close()
			r.purgeCaches()
			for ctx.Err() == nil {
				if sub, err = r.Broker.Subscribe(ctx, broker.AnnouncementsTopic); err == nil {
					break
				}
				r.Log.Warn("following the instances' announcements failed; retrying", "err", err)
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
func (r *Resolver) tellInstances(ctx context.Context, ev store.Event) {
	if r.Broker == nil {
		return
	}
	markPublished(ctx)
	if err := r.Broker.Publish(context.WithoutCancel(ctx), broker.AnnouncementsTopic, ev); err != nil {
		r.Log.WarnContext(ctx, "announcing to the other instances failed; their caches keep the old state until the entries expire", "kind", ev.Kind, "room", ev.Room, "err", err)
	}
}

// heard acts on one announcement.
func (r *Resolver) heard(ev *broker.Event, deleted func(login string)) {
	switch ev.Kind {
	case store.ProfileChanged:
		if r.Profiles != nil {
			r.Profiles.Forget(ev.User.Login)
		}
	case store.AccountDeleted:
		if r.Profiles != nil {
			r.Profiles.Forget(ev.User.Login)
		}
		if r.Memberships != nil {
			r.Memberships.forgetUser(ev.User.Login)
		}
		if deleted != nil {
			deleted(ev.User.Login)
		}
	case store.MembershipEnded:
		if r.Memberships != nil {
			r.Memberships.forget(ev.Room, ev.User.Login)
		}
	case broker.Resync:
		r.purgeCaches()
	}
}

// purgeCaches drops everything the caches hold: announcements may have
// been lost.
func (r *Resolver) purgeCaches() {
	if r.Profiles != nil {
		r.Profiles.Purge()
	}
	if r.Memberships != nil {
		r.Memberships.Purge()
	}
}
