package chat

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/ratelimit"

	"github.com/killrchat/chatql/store"
)

// leaveTimeout bounds the leaves of a deleted account's rooms.
const leaveTimeout = time.Minute

// UpdateProfile changes me's names or bio and tells every instance.
func (s *Service) UpdateProfile(ctx context.Context, me store.UserRef, p store.ProfileUpdate) (*store.User, error) {
	if err := s.limit(ctx, ratelimit.RoomChange, me); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	u, err := s.Store.UpdateProfile(ctx, me.Login, p)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: the token's user no longer exists", auth.ErrUnauthenticated)
	}
	if err != nil {
		return nil, err
	}
	s.announce(ctx, store.ProfileChanged, me.Login)
	return &u, nil
}

// DeleteAccount deletes the account whose password the caller proved:
//
//  1. The account becomes a tombstone (store.DeleteAccount, conditional on
//     the password hash checked), and its sessions go.
//  2. This instance refuses the user's tokens at once and forgets their
//     profile; the announcement tells every other instance to do the same.
//  3. Their files are doomed, their avatar with them, and the rooms they
//     are in lose the icons they set; their bots are deleted as
//     deleteBot deletes one.
//  4. The user leaves each room and group the tombstone lists, with the
//     usual PARTICIPANT_LEFT, which shows them deleted: the account is gone
//     before anyone sees it leave.
//
// Leaving comes last so that the login stops working first. If a leave
// fails (or the server dies midway), the room lists the deleted user as a
// participant, shown deleted, and the tombstone still lists the room.
func (s *Service) DeleteAccount(ctx context.Context, acct store.Account) error {
	login := acct.Login
	rooms, err := s.Store.DeleteAccount(ctx, login, acct.PassHash)
	if err != nil {
		return err
	}
	if s.Sessions != nil {
		s.Sessions.EndUser(login)
	}
	s.announce(ctx, store.AccountDeleted, login)
	if err := s.deleteBotsOf(ctx, login); err != nil {
		s.Log.WarnContext(ctx, "a deleted user's bots could not all be deleted", "login", login, "err", err)
	}
	if s.Files != nil {
		if err := s.dropIconsOf(ctx, login, rooms); err != nil {
			s.Log.WarnContext(ctx, "files: a deleted user's room icons could not all be removed", "login", login, "err", err)
		}
		if err := s.Files.DiscardOwner(ctx, login); err != nil {
			s.Log.WarnContext(ctx, "files: a deleted user's files could not be doomed", "login", login, "err", err)
		}
	}
	// The account is gone whatever the client does now: the leaves run on
	// if it hangs up.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaveTimeout)
	defer cancel()
	var errs []error
	for _, room := range rooms {
		errs = append(errs, s.leaveAsDeleted(ctx, room, login))
	}
	if err := errors.Join(errs...); err != nil {
		s.Log.WarnContext(ctx, "a deleted user could not leave every room", "login", login, "err", err)
	}
	return nil
}

// leaveAsDeleted makes login leave the room or group, if they are still in
// it, and publishes the leave.
func (s *Service) leaveAsDeleted(ctx context.Context, room, login string) error {
	u := store.UserRef{Login: login}
	m, err := s.Store.Membership(ctx, room, login)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil // deleted meanwhile
	case err != nil:
		return err
	case !m.Participant:
		return nil
	}
	_, err = s.inLine(ctx, room, func() (store.Event, error) {
		if m.Kind == store.PrivateGroup {
			return s.Store.LeaveGroup(ctx, room, u, s.now())
		}
		return s.Store.LeaveRoom(ctx, room, u)
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil // left or deleted meanwhile
	}
	return err
}

// announce tells every instance that login's profile changed or their
// account was deleted (kind is store.ProfileChanged or
// store.AccountDeleted); this one drops what it cached of them at once.
func (s *Service) announce(ctx context.Context, kind store.EventKind, login string) {
	if s.Profiles != nil {
		s.Profiles.Forget(login)
	}
	if kind == store.AccountDeleted && s.Memberships != nil {
		s.Memberships.forgetUser(login)
	}
	s.tellInstances(ctx, store.Event{Kind: kind, User: store.UserRef{Login: login}})
}

// User is login's public face, which every signed-in user may see (me,
// the caller, sees what anyone does). NOT_FOUND for a login no account has,
// a deleted one's included.
func (s *Service) User(ctx context.Context, me store.UserRef, login string) (store.UserRef, error) {
	u, err := s.Store.User(ctx, login)
	if err != nil {
		return store.UserRef{}, err
	}
	return u.UserRef, nil
}
