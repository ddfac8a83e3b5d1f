package resolvers

import (
	"context"
	"errors"
	"time"

	"github.com/killrchat/chatql/store"
)

// leaveTimeout bounds the leaves of a deleted account's rooms.
const leaveTimeout = time.Minute

// deleteAccount deletes the account whose password the caller proved:
//
//  1. The account becomes a tombstone (store.DeleteAccount, conditional on
//     the password hash checked), and its sessions go.
//  2. This instance refuses the user's tokens at once and forgets their
//     profile; the announcement tells every other instance to do the same.
//  3. The user leaves each room and group the tombstone lists, with the
//     usual PARTICIPANT_LEFT, which shows them deleted: the account is gone
//     before anyone sees it leave.
//
// Leaving comes last so that the login stops working first. If a leave
// fails (or the server dies midway), the room lists the deleted user as a
// participant, shown deleted, and the tombstone still lists the room.
func (r *Resolver) deleteAccount(ctx context.Context, acct store.Account) error {
	login := acct.Login
	rooms, err := r.Store.DeleteAccount(ctx, login, acct.PassHash)
	if err != nil {
		return err
	}
	if r.Sessions != nil {
		r.Sessions.EndUser(login)
	}
	r.announce(ctx, store.AccountDeleted, login)
	// The account is gone whatever the client does now: the leaves run on
	// if it hangs up.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaveTimeout)
	defer cancel()
	var errs []error
	for _, room := range rooms {
		errs = append(errs, r.leaveAsDeleted(ctx, room, login))
	}
	if err := errors.Join(errs...); err != nil {
		r.Log.WarnContext(ctx, "a deleted user could not leave every room", "login", login, "err", err)
	}
	return nil
}

// leaveAsDeleted makes login leave the room or group, if they are still in
// it, and publishes the leave.
func (r *Resolver) leaveAsDeleted(ctx context.Context, room, login string) error {
	u := store.UserRef{Login: login}
	m, err := r.Store.Membership(ctx, room, login)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil // deleted meanwhile
	case err != nil:
		return err
	case !m.Participant:
		return nil
	}
	w := r.beginRoomWrite(ctx, room)
	defer w.end()
	var left store.Event
	if m.Kind == store.PrivateGroup {
		left, err = r.Store.LeaveGroup(ctx, room, u, time.Now())
	} else {
		left, err = r.Store.LeaveRoom(ctx, room, u)
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil // left or deleted meanwhile
	}
	if err != nil {
		return err
	}
	w.publish(left)
	return nil
}

// announce tells every instance that login's profile changed or their
// account was deleted (kind is store.ProfileChanged or
// store.AccountDeleted); this one drops what it cached of them at once.
func (r *Resolver) announce(ctx context.Context, kind store.EventKind, login string) {
	if r.Profiles != nil {
		r.Profiles.Forget(login)
	}
	if kind == store.AccountDeleted && r.Memberships != nil {
		r.Memberships.forgetUser(login)
	}
	r.tellInstances(ctx, store.Event{Kind: kind, User: store.UserRef{Login: login}})
}
