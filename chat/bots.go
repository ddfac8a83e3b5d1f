package chat

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
)

// NewBot is a bot account just created, with its API key: the only time
// the key is shown.
type NewBot struct {
	store.Bot
	Key string
}

// CreateBot creates a bot account of login owned by me, with a new API key.
// Its login follows the rules of users' (ErrConflict if taken); lastname
// may be empty. A bot cannot create bots, and one owner has at most
// store.MaxBotsPerOwner (counted before the create: two creates at once
// may both pass at the last place).
func (s *Service) CreateBot(ctx context.Context, me store.UserRef, login, firstname, lastname string) (*NewBot, error) {
	if err := s.limit(ctx, ratelimit.RoomChange, me); err != nil {
		return nil, err
	}
	if err := s.mayOwnBots(ctx, me); err != nil {
		return nil, err
	}
	if err := validateBot(login, firstname, lastname); err != nil {
		return nil, err
	}
	bots, err := s.Store.Bots(ctx, me.Login)
	if err != nil {
		return nil, err
	}
	if len(bots) >= store.MaxBotsPerOwner {
		return nil, store.Invalidf("invalid bot: %s owns %d bots already, the most one may", me.Login, len(bots))
	}
	key, stored, err := auth.NewBotKey()
	if err != nil {
		return nil, err
	}
	a, err := botAccount(login, firstname, lastname, me.Login)
	if err != nil {
		return nil, err
	}
	created := s.now()
	if err := s.Store.CreateBot(ctx, a, stored, created); err != nil {
		return nil, err
	}
	return &NewBot{Bot: store.Bot{UserRef: a.UserRef, Owner: me.Login, CreatedAt: created, KeyPrefix: stored.Prefix, KeyHash: stored.Hash}, Key: key}, nil
}

// Bots are the bots me owns, by login.
func (s *Service) Bots(ctx context.Context, me store.UserRef) ([]store.Bot, error) {
	return s.Store.Bots(ctx, me.Login)
}

// RotateBotKey gives me's bot login a new API key, and revokes the old one
// at once: it stops working on this instance now, on the others as soon
// as they hear of it (within CHAT_SESSION_CHECK at worst), and the
// bot's streams opened with it end. ErrNotFound if me owns no such bot.
func (s *Service) RotateBotKey(ctx context.Context, me store.UserRef, login string) (*NewBot, error) {
	if err := s.limit(ctx, ratelimit.RoomChange, me); err != nil {
		return nil, err
	}
	key, stored, err := auth.NewBotKey()
	if err != nil {
		return nil, err
	}
	old, err := s.Store.SetBotKey(ctx, me.Login, login, stored)
	if err != nil {
		return nil, err
	}
	s.revokeKey(ctx, login, old.KeyHash)
	bot := old
	bot.KeyPrefix, bot.KeyHash = stored.Prefix, stored.Hash
	return &NewBot{Bot: bot, Key: key}, nil
}

// DeleteBot revokes the API key of me's bot login and deletes the bot's
// account as any account is deleted (see DeleteAccount): its messages
// remain, from a deleted user. ErrNotFound if me owns no such bot.
func (s *Service) DeleteBot(ctx context.Context, me store.UserRef, login string) error {
	if err := s.limit(ctx, ratelimit.RoomChange, me); err != nil {
		return err
	}
	return s.deleteBot(ctx, me.Login, login)
}

// deleteBot removes owner's bot login and deletes its account.
func (s *Service) deleteBot(ctx context.Context, owner, login string) error {
	old, err := s.Store.RemoveBot(ctx, owner, login)
	if err != nil {
		return err
	}
	s.revokeKey(ctx, login, old.KeyHash)
	acct, err := s.Store.Account(ctx, login)
	if errors.Is(err, store.ErrNotFound) {
		return nil // deleted meanwhile
	}
	if err != nil {
		return err
	}
	return s.DeleteAccount(ctx, acct)
}

// deleteBotsOf deletes the bots of owner, whose account is going.
func (s *Service) deleteBotsOf(ctx context.Context, owner string) error {
	bots, err := s.Store.Bots(ctx, owner)
	if err != nil {
		return err
	}
	var errs []error
	for _, b := range bots {
		if err := s.deleteBot(ctx, owner, b.Login); err != nil && !errors.Is(err, store.ErrNotFound) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// revokeKey makes the API key whose hash is hash, of the bot login, stop
// working on this instance at once, and tells the other instances.
func (s *Service) revokeKey(ctx context.Context, login string, hash []byte) {
	if s.Sessions != nil {
		s.Sessions.RevokeKey(login, hash)
	}
	s.tellInstances(ctx, store.Event{Kind: store.BotKeyRevoked, User: store.UserRef{Login: login}, Room: hex.EncodeToString(hash)})
}

// mayOwnBots checks that me is a user (not a bot) who still exists.
func (s *Service) mayOwnBots(ctx context.Context, me store.UserRef) error {
	u, err := s.Store.User(ctx, me.Login)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("%w: the token's user no longer exists", auth.ErrUnauthenticated)
	case err != nil:
		return err
	case u.Bot:
		return fmt.Errorf("%w: a bot cannot create bots", store.ErrForbidden)
	}
	return nil
}

// validateBot checks a bot's login and names by the rules of users'; the
// last name may be empty. It reports every invalid field.
func validateBot(login, firstname, lastname string) error {
	var last error
	if lastname != "" {
		last = store.ValidateName("lastname", lastname)
	}
	return store.JoinInvalid(store.ValidateLogin(login), store.ValidateName("firstname", firstname), last)
}

// botAccount is the account of a new bot: its password hash random bytes
// that no password hashes to, so that it never logs in with one.
func botAccount(login, firstname, lastname, owner string) (store.Account, error) {
	hash := make([]byte, 32)
	if _, err := rand.Read(hash); err != nil {
		return store.Account{}, err
	}
	return store.Account{
		User:     store.User{UserRef: store.UserRef{Login: login, Firstname: firstname, Lastname: lastname}, Bot: true, Owner: owner},
		PassHash: hash,
	}, nil
}
