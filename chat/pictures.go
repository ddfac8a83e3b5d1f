package chat

import (
	"context"
	"errors"
	"fmt"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
)

// Pictures are the avatars of users and the icons of rooms: images their
// owners uploaded (createUpload), never sent with a message. A picture's
// change goes the way a message's files do, so that a crash anywhere
// leaves no file forever:
//
//  1. files.Service.ClaimPicture claims the file as the owner's avatar (or
//     the room's icon): it is on the sweep's list, claimed.
//  2. The store sets the picture, as a compare-and-set that returns the
//     picture it replaced.
//  3. Attached takes the file off the sweep's list. Should the server die
//     before, the sweep asks FileHeld, which reads the profile or room:
//     the file is attached if it took it, removed otherwise.
//  4. The replaced picture's file is discarded (removed at once, or by the
//     sweep), as a deleted message's are.
//
// A room's icon is its setter's file, counted in their quota.

// SetAvatar makes me's uploaded image file id their avatar; nil removes it.
// The avatar it replaces is removed.
func (s *Service) SetAvatar(ctx context.Context, me store.UserRef, id *string) (*store.User, error) {
	if err := s.limit(ctx, ratelimit.RoomChange, me); err != nil {
		return nil, err
	}
	u, err := s.Store.User(ctx, me.Login)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: the token's user no longer exists", auth.ErrUnauthenticated)
	}
	if err != nil {
		return nil, err
	}
	if samePictureFile(u.Avatar, id) {
		return &u, nil
	}
	pic, err := s.claimPicture(ctx, me, id, "")
	if err != nil {
		return nil, err
	}
	old, err := s.Store.SetAvatar(ctx, me.Login, pic)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: the token's user no longer exists", auth.ErrUnauthenticated)
	}
	if err != nil {
		return nil, err // a claimed file stays for the sweep, which asks FileHeld
	}
	s.pictureChanged(ctx, me.Login, pic, old)
	s.announce(ctx, store.ProfileChanged, me.Login)
	u.Avatar = pic
	return &u, nil
}

// SetRoomIcon makes me's uploaded image file id the room's icon; nil
// removes it. In a public room only its creator and moderators may; in a
// private group, any member (as any member may add members). The icon it
// replaces is removed.
func (s *Service) SetRoomIcon(ctx context.Context, me store.UserRef, room string, id *string) (*store.Room, error) {
	if err := s.limit(ctx, ratelimit.RoomChange, me); err != nil {
		return nil, err
	}
	m, err := s.visibleMembership(ctx, room, me)
	if err != nil {
		return nil, err
	}
	if err := mayChangeIcon(m); err != nil {
		return nil, err
	}
	r, err := s.Store.Room(ctx, room)
	if err != nil {
		return nil, err
	}
	if samePictureFile(r.Icon, id) {
		return &r, nil
	}
	pic, err := s.claimPicture(ctx, me, id, room)
	if err != nil {
		return nil, err
	}
	old, err := s.Store.SetRoomIcon(ctx, room, pic)
	if err != nil {
		return nil, err // a claimed file stays for the sweep, which asks FileHeld
	}
	s.pictureChanged(ctx, me.Login, pic, old)
	return s.roomAfter(ctx, room, nil)
}

// mayChangeIcon says whether the member m may change the room's icon.
func mayChangeIcon(m store.RoomMembership) error {
	switch {
	case m.Kind == store.PrivateGroup && m.Participant:
		return nil
	case m.Kind == store.PrivateGroup:
		return fmt.Errorf("%w: only the members of %q may change its icon", store.ErrForbidden, m.Room)
	case m.Moderates():
		return nil
	}
	return fmt.Errorf("%w: only the creator and moderators of %q may change its icon", store.ErrForbidden, m.Room)
}

// samePictureFile reports whether the picture is already the file id (or
// both are none).
func samePictureFile(pic *store.Attachment, id *string) bool {
	if pic == nil || id == nil {
		return pic == nil && id == nil
	}
	return pic.ID.String() == *id
}

// claimPicture claims me's file id as a picture (see files.ClaimPicture);
// nil claims nothing.
func (s *Service) claimPicture(ctx context.Context, me store.UserRef, id *string, room string) (*store.Attachment, error) {
	if id == nil {
		return nil, nil
	}
	if s.Files == nil {
		return nil, ErrNoFiles
	}
	if err := s.limit(ctx, ratelimit.Upload, me); err != nil {
		return nil, err
	}
	a, err := s.Files.ClaimPicture(ctx, me.Login, *id, room)
	if err != nil {
		return nil, err
	}
	return &a, nil
}

// pictureChanged takes the new picture of owner's off the sweep's list and
// removes the file of the one it replaced (whoever's it was).
func (s *Service) pictureChanged(ctx context.Context, owner string, pic, old *store.Attachment) {
	if s.Files == nil {
		return
	}
	if pic != nil {
		s.Files.Attached(ctx, owner, []store.Attachment{*pic})
	}
	if old != nil && (pic == nil || old.ID != pic.ID) {
		s.discardPicture(context.WithoutCancel(ctx), *old)
	}
}

// discardPicture removes a picture's file. Its owner is found in the
// records: an avatar's is the user, an icon's whoever set it.
func (s *Service) discardPicture(ctx context.Context, pic store.Attachment) {
	owner, err := s.pictureOwner(ctx, pic)
	if err == nil {
		err = s.Files.Discard(ctx, owner, []store.Attachment{pic})
	}
	if err != nil {
		s.Log.WarnContext(ctx, "files: a replaced picture's file stays until its owner's are swept", "file", pic.ID, "err", err)
	}
}
