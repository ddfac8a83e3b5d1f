package store

import "context"

// ProfileUpdate is a change to a user's profile: each field given (non-nil)
// replaces the stored one, the others are kept.
type ProfileUpdate struct {
	Firstname, Lastname, Bio *string
	// ReadReceipts is whether the user sends (and sees) read receipts in
	// direct conversations and groups (User.NoReadReceipts, inverted).
	ReadReceipts *bool
}

// Apply returns u with the update's fields replaced.
func (p ProfileUpdate) Apply(u User) User {
	if p.Firstname != nil {
		u.Firstname = *p.Firstname
	}
	if p.Lastname != nil {
		u.Lastname = *p.Lastname
	}
	if p.Bio != nil {
		u.Bio = *p.Bio
	}
	if p.ReadReceipts != nil {
		u.NoReadReceipts = !*p.ReadReceipts
	}
	return u
}

// Validate checks the fields given by signup's rules: names required, at
// most MaxNameLength characters; a bio of at most MaxBioLength. It reports
// every invalid field (InvalidFields).
func (p ProfileUpdate) Validate() error {
	var errs []error
	if p.Firstname != nil {
		errs = append(errs, ValidateName("firstname", *p.Firstname))
	}
	if p.Lastname != nil {
		errs = append(errs, ValidateName("lastname", *p.Lastname))
	}
	if p.Bio != nil {
		errs = append(errs, validateText("bio", *p.Bio, 0, MaxBioLength, multiline))
	}
	return JoinInvalid(errs...)
}

// PublicProfile is what everyone sees of a user: their names and avatar,
// as they are now.
type PublicProfile struct {
	UserRef
	Avatar *Picture
	// Bot marks a bot account.
	Bot bool
}

// Profiles keeps the users' profiles current: profile changes, batched reads
// of the public names for the API (which shows every user as their profile
// is now, not as the copies rooms and messages carry), and account deletion.
//
// A deleted account leaves a tombstone in the users table: its login stays
// taken (CreateUser gives ErrConflict) so that nobody can sign up as the
// author of a deleted user's messages, while every other read of it (User,
// Account, Names, ChangePassword, UpdateProfile, joins) answers ErrNotFound
// or leaves it out, and its names, email, bio, avatar and password hash are erased.
type Profiles interface {
	// UpdateProfile applies p to login's profile and returns the profile
	// as it now is. The write is conditional on the account standing (on
	// Cassandra, UPDATE ... IF pass_hash = <the hash read>), so an update
	// racing the account's deletion never brings the names back. Returns
	// ErrNotFound if there is no such user or it was deleted.
	UpdateProfile(ctx context.Context, login string, p ProfileUpdate) (User, error)

	// Names returns the current names and avatars of the users among
	// logins who exist, keyed by login, in one round trip per 100 logins
	// (Cassandra: login IN (...)). Deleted and unknown logins are absent
	// from the map.
	Names(ctx context.Context, logins []string) (map[string]PublicProfile, error)

	// SetAvatar makes avatar (nil: none) login's avatar and returns the
	// one it replaces (nil: none). The write is a compare-and-set of the
	// avatar read (on Cassandra, UPDATE ... IF pass_hash = ? AND avatar =
	// ?), so of concurrent changes each returns the avatar it really
	// replaced, and none brings an avatar back into a deleted account's
	// tombstone. Returns ErrNotFound if there is no such user or it was
	// deleted.
	SetAvatar(ctx context.Context, login string, avatar *Picture) (old *Picture, err error)

	// SetRoomIcon makes icon (nil: none) the room's icon and returns the
	// one it replaces (nil: none), as a compare-and-set of the icon read,
	// conditional on the room existing (a set never resurrects a deleted
	// room). Returns ErrNotFound if the room does not exist.
	SetRoomIcon(ctx context.Context, room string, icon *Picture) (old *Picture, err error)

	// DeleteAccount erases login's profile if its password hash is still
	// passHash (a compare-and-set, as ChangePassword): names, email, bio and
	// the hash go, the row stays as a tombstone holding the login and the
	// rooms it still lists, which it returns (the caller leaves them). It
	// also deletes the user's sessions, blocks and mutes, and their push
	// subscriptions and previews choice. Returns
	// ErrNotFound if there is no such user (or it is already deleted),
	// ErrConflict if the password changed meanwhile.
	DeleteAccount(ctx context.Context, login string, passHash []byte) (rooms []string, err error)
}
