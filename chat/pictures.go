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
//  1. files.Service.ClaimPicture claims the new file as the owner's avatar
//     (or the room's icon): it is on the sweep's list, claimed.
//  2. The picture it replaces, as read, is released: claimed again by its
//     holder, back on the sweep's list.
//  3. The store sets the picture, as a compare-and-set that returns the
//     picture it really replaced.
//  4. Attached takes the new file off the sweep's list, and the replaced
//     one is discarded (removed at once, or by the sweep), as a deleted
//     message's files are.
//
// Should the server die between the steps, the sweep finds claimed files
// and asks FileHeld, which reads the profile or room: a file it shows is
// attached (again), any other removed.
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
	if err := s.releasePicture(ctx, u.Avatar); err != nil {
		return nil, err // the new file, claimed, stays for the sweep
	}
	old, err := s.Store.SetAvatar(ctx, me.Login, pic)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: the token's user no longer exists", auth.ErrUnauthenticated)
	}
	if err != nil {
		return nil, err // a claimed file stays for the sweep, which asks FileHeld
	}
	s.pictureChanged(ctx, pic, old)
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
	if err := s.releasePicture(ctx, r.Icon); err != nil {
		return nil, err // the new file, claimed, stays for the sweep
	}
	old, err := s.Store.SetRoomIcon(ctx, room, pic)
	if err != nil {
		return nil, err // a claimed file stays for the sweep, which asks FileHeld
	}
	s.pictureChanged(ctx, pic, old)
	return s.roomAfter(ctx, room, nil)
}

// mayChangeIcon says whether the member m may change the room's icon
// (roomRights).
func mayChangeIcon(m store.RoomMembership) error { return mayChange(m, settingIcon) }

// samePictureFile reports whether the picture is already the file id (or
// both are none).
func samePictureFile(pic *store.Picture, id *string) bool {
	if pic == nil || id == nil {
		return pic == nil && id == nil
	}
	return pic.ID.String() == *id
}

// claimPicture claims me's file id as a picture (see files.ClaimPicture);
// nil claims nothing.
func (s *Service) claimPicture(ctx context.Context, me store.UserRef, id *string, room string) (*store.Picture, error) {
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
	return &store.Picture{Attachment: a, Owner: me.Login}, nil
}

// releasePicture puts the file of a picture about to be replaced back on
// the sweep's list (see files.Service.Release); nil releases nothing.
func (s *Service) releasePicture(ctx context.Context, pic *store.Picture) error {
	if pic == nil || s.Files == nil {
		return nil
	}
	return s.Files.Release(ctx, pic.Owner, []store.Attachment{pic.Attachment})
}

// pictureChanged takes the new picture off the sweep's list and removes
// the file of the one it replaced.
func (s *Service) pictureChanged(ctx context.Context, pic, old *store.Picture) {
	if s.Files == nil {
		return
	}
	if pic != nil {
		s.Files.Attached(ctx, pic.Owner, []store.Attachment{pic.Attachment})
	}
	if old != nil && (pic == nil || old.ID != pic.ID) {
		s.discardPicture(ctx, *old)
	}
}

// discardPicture removes the file of a picture no longer shown: at once if
// it can, through the sweep otherwise.
func (s *Service) discardPicture(ctx context.Context, pic store.Picture) {
	if s.Files == nil {
		return
	}
	if err := s.Files.Discard(context.WithoutCancel(ctx), pic.Owner, []store.Attachment{pic.Attachment}); err != nil {
		s.Log.WarnContext(ctx, "files: a picture's file stays until its owner's are swept", "file", pic.ID, "owner", pic.Owner, "err", err)
	}
}

// pictureHolds reports whether the profile or room a picture's claimed
// file names took it: the sweep's test (FileHeld).
func (s *Service) pictureHolds(ctx context.Context, f store.File) (bool, error) {
	var pic *store.Picture
	if f.Room == "" {
		u, err := s.Store.User(ctx, f.Owner)
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		pic = u.Avatar
	} else {
		r, err := s.Store.Room(ctx, f.Room)
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		pic = r.Icon
	}
	return pic != nil && pic.ID == f.ID && pic.Owner == f.Owner, nil
}

// dropIconsOf removes the icons login set of the rooms given (theirs, as
// their deleted account lists them), whose files go with their account.
func (s *Service) dropIconsOf(ctx context.Context, login string, rooms []string) error {
	var errs []error
	for _, name := range rooms {
		r, err := s.Store.Room(ctx, name)
		if err != nil {
			if !errors.Is(err, store.ErrNotFound) {
				errs = append(errs, err)
			}
			continue
		}
		if r.Icon == nil || r.Icon.Owner != login {
			continue
		}
		old, err := s.Store.SetRoomIcon(ctx, name, nil)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			errs = append(errs, err)
		}
		if old != nil && old.Owner != login {
			// Another's icon came meanwhile, and went: remove its file too.
			s.discardPicture(ctx, *old)
		}
	}
	return errors.Join(errs...)
}
