package chat

import (
	"context"
	"errors"
	"fmt"
	netmail "net/mail"
	"slices"
	"strings"
	"time"

	"github.com/killrchat/chatql/notify/mail"
	"github.com/killrchat/chatql/store"
)

// Email digests: a person away (offline) with unread mentions or direct
// messages gets an email listing them, at most one per DigestEvery, and
// only at an address they verified. The notifier (package notify) reads
// the outbox's notices; for each recipient's mentions and direct messages
// it calls KeepForDigest, which keeps them (store.Email's digest, in the
// recipient's outbox shard) and makes the digest due DigestAfter later;
// then, while it holds a shard's lease, SendDueDigests sends the shard's
// due digests. So the digests are as durable as the outbox (a kept digest
// survives a crash and is sent by the shard's next holder), and one
// instance at a time sends a shard's: a digest is sent at least once, and
// twice only if an instance dies between sending it and recording it.

// dueDigestsPerRound bounds the digests one round of a shard sends.
const dueDigestsPerRound = 100

// digestRetry is how long a digest whose sending failed waits.
const digestRetry = 5 * time.Minute

// digests reports whether the server sends email digests.
func (s *Service) digests() bool { return s.Email != nil && s.Email.DigestAfter > 0 }

// KeepForDigest keeps one recipient's notices of one conversation for
// their next digest, if they are mentions or direct messages to someone
// offline who verified an address and did not turn digests off. Whether
// they are still unread, and still to be told, is decided when the
// digest is due.
func (s *Service) KeepForDigest(ctx context.Context, notices []store.Notice) error {
	if !s.digests() || len(notices) == 0 {
		return nil
	}
	kept := slices.DeleteFunc(slices.Clone(notices), func(n store.Notice) bool {
		return n.Kind != store.NoticeMention && n.Kind != store.NoticeDirectMessage
	})
	if len(kept) == 0 {
		return nil
	}
	login := kept[0].Recipient
	u, err := s.Store.User(ctx, login)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil || !wantsDigests(u) {
		return err
	}
	if online, err := s.online(ctx, login); err != nil || online {
		return err
	}
	now := s.now()
	due := now.Add(s.Email.DigestAfter)
	if next := u.DigestSentAt.Add(s.Email.DigestEvery); next.After(due) {
		due = next
	}
	return s.Store.AddDigestNotices(ctx, login, due, kept)
}

// wantsDigests reports whether u is to be emailed digests.
func wantsDigests(u store.User) bool {
	return u.Email != "" && u.EmailVerified && !u.DigestsOff && !u.Bot
}

// online reports whether login has a live connection.
func (s *Service) online(ctx context.Context, login string) (bool, error) {
	if s.Presence == nil {
		return false, nil
	}
	flags, err := s.Presence.Online(ctx, []string{login})
	if err != nil {
		return false, err
	}
	return flags[0], nil
}

// SendDueDigests sends shard's due digests. Its caller holds the shard's
// lease.
func (s *Service) SendDueDigests(ctx context.Context, shard int) error {
	if !s.digests() {
		return nil
	}
	logins, err := s.Store.DueDigests(ctx, shard, s.now(), dueDigestsPerRound)
	if err != nil {
		return err
	}
	for _, login := range logins {
		if err := s.sendDigest(ctx, login); err != nil {
			return err
		}
	}
	return nil
}

// sendDigest sends login's due digest of what is still unread and to be
// told, unless they came back (it waits DigestAfter more) or had one less
// than DigestEvery ago (it waits until then). A digest with nothing left
// to tell, or to someone who no longer wants digests, is dropped.
func (s *Service) sendDigest(ctx context.Context, login string) error {
	notices, err := s.Store.DigestNotices(ctx, login)
	if err != nil {
		return err
	}
	u, err := s.Store.User(ctx, login)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return s.Store.ClearDigest(ctx, login, notices)
	case err != nil:
		return err
	case !wantsDigests(u):
		return s.Store.ClearDigest(ctx, login, notices)
	}
	now := s.now()
	if online, err := s.online(ctx, login); err != nil || online {
		if err != nil {
			return err
		}
		return s.Store.SetDigestDue(ctx, login, now.Add(s.Email.DigestAfter))
	}
	if next := u.DigestSentAt.Add(s.Email.DigestEvery); next.After(now) {
		return s.Store.SetDigestDue(ctx, login, next)
	}
	items, err := s.digestItems(ctx, u, notices)
	if err != nil {
		return err
	}
	if len(items) == 0 {
		return s.Store.ClearDigest(ctx, login, notices)
	}
	d := mail.Digest{
		To:               netmail.Address{Name: strings.TrimSpace(u.Firstname + " " + u.Lastname), Address: u.Email},
		Items:            items,
		UnsubscribeURL:   s.Email.PublicURL + "/email/unsubscribe",
		UnsubscribeToken: s.Email.unsubscribeToken(login),
		Date:             now,
	}
	if err := s.Email.Mailer.SendDigest(ctx, d); err != nil {
		if mail.IsPermanent(err) || errors.Is(err, mail.ErrDigest) {
			s.Log.WarnContext(ctx, "mail: a digest was refused for good, and dropped", "login", login, "err", err)
			return s.Store.ClearDigest(ctx, login, notices)
		}
		s.Log.WarnContext(ctx, "mail: sending a digest failed; it waits", "login", login, "retry", digestRetry, "err", err)
		return s.Store.SetDigestDue(ctx, login, now.Add(digestRetry))
	}
	if err := s.Store.SetDigestSent(ctx, login, now); err != nil {
		return err
	}
	return s.Store.ClearDigest(ctx, login, notices)
}

// digestItems are the notices still to be told, newest first: messages
// u may read, not deleted, not hidden from them, unread, from someone
// they did not block, in a conversation they did not mute.
func (s *Service) digestItems(ctx context.Context, u store.User, notices []store.Notice) ([]mail.Item, error) {
	me := u.UserRef
	convs := map[string]*store.Conversation{}
	var items []mail.Item
	for _, n := range slices.Backward(notices) {
		c, ok := convs[n.Room]
		if !ok {
			conv, err := s.Conversation(ctx, me, n.Room)
			if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrForbidden) {
				return nil, err
			}
			if err == nil {
				c = &conv
			}
			convs[n.Room] = c
		}
		if c == nil || c.Muted || n.ID.Compare(c.ReadUpTo) <= 0 {
			continue
		}
		if blocked, err := s.Store.Blocks(ctx, me.Login, n.From.Login); err != nil || blocked {
			if err != nil {
				return nil, err
			}
			continue
		}
		msg, err := s.readableMessage(ctx, n.ID.String(), me)
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrForbidden) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if !ShowsContent(&msg, me) {
			continue
		}
		from := s.UserName(ctx, n.From.Login)
		name := strings.TrimSpace(from.Firstname + " " + from.Lastname)
		if name == "" {
			name = from.Login
		}
		it := mail.Item{Kind: mail.Mention, Conversation: "#" + n.Room, From: name, Excerpt: excerpt(msg), Link: s.Email.PublicURL + "/", At: msg.PostedAt()}
		if n.Kind == store.NoticeDirectMessage {
			it.Kind, it.Conversation = mail.DirectMessage, fmt.Sprintf("your conversation with %s", name)
		}
		items = append(items, it)
	}
	return items, nil
}
