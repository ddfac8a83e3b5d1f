package chat

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/killrchat/chatql/notify"
	"github.com/killrchat/chatql/store"
)

// Notices: who is told of a message while they may be away (when the
// server sends pushes or email digests: Notifies). A notice is
// written with the message (the store's outbox), for every participant the
// message concerns: the peer of a direct message, those it mentions, the
// author of the message it replies to, a user added to a group. Whether
// they are told is decided when the notice is sent (ComposeNotification):
// not if they are online by then, muted the conversation, blocked the
// sender, or may not read the message.

// Notifies reports whether anything reads the outbox: the server sends
// pushes or email digests.
func (s *Service) Notifies() bool {
	return s.Push != nil || s.Email != nil && s.Email.DigestAfter > 0
}

// postNotices are the notices of msg, a post to a room or group, to the
// participants it mentions and to parentAuthor, who wrote the message it
// replies to (if any): a user mentioned and replied to gets one notice, the
// mention.
func (s *Service) postNotices(ctx context.Context, msg store.Message, kind store.RoomKind, members []store.UserRef, mentioned []string, parentAuthor string) []store.Notice {
	if !s.Notifies() {
		return nil // nobody reads the outbox
	}
	var notices []store.Notice
	add := func(login string, k store.NoticeKind) {
		if login == "" || login == msg.Author.Login || slices.ContainsFunc(notices, func(n store.Notice) bool { return n.Recipient == login }) {
			return
		}
		notices = append(notices, store.Notice{ID: msg.ID, Recipient: login, Kind: k, Room: msg.Room, From: msg.Author})
	}
	for _, login := range mentioned {
		add(login, store.NoticeMention)
	}
	if parentAuthor != "" && !slices.Contains(mentioned, parentAuthor) && s.takesPart(ctx, msg.Room, kind, members, parentAuthor) {
		add(parentAuthor, store.NoticeReply)
	}
	return notices
}

// takesPart reports whether login takes part in the room or group: a
// group's members are known; a public room's are read.
func (s *Service) takesPart(ctx context.Context, room string, kind store.RoomKind, members []store.UserRef, login string) bool {
	if kind == store.PrivateGroup {
		return slices.ContainsFunc(members, func(u store.UserRef) bool { return u.Login == login })
	}
	m, err := s.Store.Membership(ctx, room, login)
	return err == nil && m.Participant
}

// directNotices is the notice of a direct message to its peer.
func (s *Service) directNotices(msg store.Message, peer string) []store.Notice {
	if !s.Notifies() {
		return nil
	}
	return []store.Notice{{ID: msg.ID, Recipient: peer, Kind: store.NoticeDirectMessage, Room: msg.Room, From: msg.Author}}
}

// ComposeNotification words the notification of one recipient's notices
// of one conversation, unless they are not to be told: they are online
// (they see it live), muted the conversation, blocked every sender, or may
// no longer read any of the messages (they left, the message was deleted).
// The body has the newest message's text only if the recipient chose
// previews.
func (s *Service) ComposeNotification(ctx context.Context, notices []store.Notice) (notify.Notification, bool, error) {
	recipient := store.UserRef{Login: notices[0].Recipient}
	room := notices[0].Room
	if s.Presence != nil {
		online, err := s.Presence.Online(ctx, []string{recipient.Login})
		if err != nil {
			return notify.Notification{}, false, err
		}
		if online[0] {
			return notify.Notification{}, false, nil
		}
	}
	if muted, err := s.Store.Mutes(ctx, recipient.Login, room); err != nil || muted {
		return notify.Notification{}, false, err
	}
	var told []store.Notice
	var newest store.Message
	for _, n := range notices {
		if blocked, err := s.Store.Blocks(ctx, recipient.Login, n.From.Login); err != nil || blocked {
			if err != nil {
				return notify.Notification{}, false, err
			}
			continue
		}
		msg, err := s.readableMessage(ctx, n.ID.String(), recipient)
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrForbidden) {
			continue
		}
		if err != nil {
			return notify.Notification{}, false, err
		}
		if !ShowsContent(&msg, recipient) {
			continue
		}
		told, newest = append(told, n), msg
	}
	if len(told) == 0 {
		return notify.Notification{}, false, nil
	}
	previews, err := s.Store.PushPreviews(ctx, recipient.Login)
	if err != nil {
		return notify.Notification{}, false, err
	}
	last := told[len(told)-1]
	note := notify.Notification{Kind: last.Kind, Conversation: room, Count: len(told), Message: newest.ID.String()}
	for _, n := range told[max(len(told)-maxListedNotices, 0):] {
		note.Notices = append(note.Notices, n.ID.String())
	}
	from := s.UserName(ctx, last.From.Login)
	note.Title = s.notificationTitle(last, from, room)
	switch {
	case previews:
		note.Body = excerpt(newest)
	case len(told) > 1:
		note.Body = fmt.Sprintf("%d new messages", len(told))
	default:
		note.Body = "New message"
	}
	return note, true, nil
}

// notificationTitle says who wrote where: a direct message's sender's
// name, or the sender and the room.
func (s *Service) notificationTitle(n store.Notice, from store.UserRef, room string) string {
	name := strings.TrimSpace(from.Firstname + " " + from.Lastname)
	if name == "" {
		name = from.Login
	}
	switch n.Kind {
	case store.NoticeDirectMessage:
		return name
	case store.NoticeAddedToGroup:
		return name + " added you to " + room
	case store.NoticeReply:
		return name + " replied in " + room
	}
	return name + " in " + room
}

// maxListedNotices is how many notices' ids a notification lists at most,
// the newest: a push carries 3993 bytes (webpush.MaxPayload), and a
// notification of a backlog may stand for hundreds of notices (Count).
const maxListedNotices = 50

// maxExcerpt is how many characters of a message a notification shows.
const maxExcerpt = 200

// excerpt is the start of a message's text for a notification, or what it
// carries when it has no text.
func excerpt(m store.Message) string {
	text := m.Content
	if text == "" && len(m.Attachments) > 0 {
		return fmt.Sprintf("Sent %s", m.Attachments[0].Name)
	}
	if utf8.RuneCountInString(text) <= maxExcerpt {
		return text
	}
	runes := []rune(text)
	return string(runes[:maxExcerpt]) + "…"
}

// addedNotices is the notice of login's addition to a group by me.
func (s *Service) addedNotices(group, login string, me store.UserRef) []store.Notice {
	if !s.Notifies() {
		return nil
	}
	return []store.Notice{{Recipient: login, Kind: store.NoticeAddedToGroup, Room: group, From: me}}
}
