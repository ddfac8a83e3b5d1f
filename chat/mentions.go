package chat

import (
	"context"
	"slices"

	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/store"
)

// mentionedParticipants are the participants msg, a post of a room or
// group, mentions (but its author), read once per post for its notices and
// its MENTIONED events: a group's members are known, a public room's are
// checked one by one (at most store.MaxMentions).
func (s *Service) mentionedParticipants(ctx context.Context, msg store.Message, kind store.RoomKind, members []store.UserRef) []string {
	var logins []string
	for _, login := range store.Mentions(msg.Content) {
		if login != msg.Author.Login && s.takesPart(ctx, msg.Room, kind, members, login) {
			logins = append(logins, login)
		}
	}
	return logins
}

// notifyMentions logs and publishes MENTIONED to mentioned, the
// participants msg mentions (mentionedParticipants), but those who blocked
// the author or muted the conversation. The message is stored already, so
// a failure here is logged, not returned: the mentions still count in the
// inbox, which reads them from the stream.
func (s *Service) notifyMentions(ctx context.Context, msg store.Message, mentioned []string) {
	logins := slices.DeleteFunc(slices.Clone(mentioned), func(login string) bool { return !s.wantsMentions(ctx, login, msg) })
	if len(logins) == 0 {
		return
	}
	ev, err := s.Store.LogMention(ctx, msg, logins)
	if err != nil {
		s.Log.WarnContext(ctx, "logging mentions failed; the inbox still counts them", "message", msg.ID, "err", err)
		return
	}
	for _, login := range logins {
		s.publishTo(ctx, broker.UserTopic(login), ev)
	}
}

// wantsMentions reports whether login is notified of msg's mention of
// them: not if they blocked its author or muted its conversation. When
// that cannot be read, they are (a notice too many beats one lost).
func (s *Service) wantsMentions(ctx context.Context, login string, msg store.Message) bool {
	if blocked, err := s.Store.Blocks(ctx, login, msg.Author.Login); err == nil && blocked {
		return false
	}
	muted, err := s.Store.Mutes(ctx, login, msg.Room)
	return err != nil || !muted
}
