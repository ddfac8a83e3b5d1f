package chat

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/store"
)

// Room.readMarks: how many a page holds by default and at most.
const (
	DefaultReadMarks = 100
	MaxReadMarks     = 1000
)

// markRoomRead moves the caller's mark of a public room they take part in,
// up to the room's newest message at most, tells the room's subscribers
// (READ_UPTO, live only), and returns the room's inbox entry.
func (s *Service) markRoomRead(ctx context.Context, room string, m store.RoomMembership, upTo store.Message, me store.UserRef) (*store.Conversation, error) {
	if !m.Participant {
		return nil, fmt.Errorf("conversation %q: %w", room, store.ErrNotFound)
	}
	newest, err := s.Store.Messages(ctx, room, store.MessageID{}, 1)
	if err != nil {
		return nil, err
	}
	if len(newest) == 0 {
		return nil, store.Invalidf("invalid upTo: room %q has no messages", room)
	}
	if upTo.ID.Compare(newest[0].ID) > 0 {
		upTo = newest[0] // "read up to the future" would pre-read messages not yet sent
	}
	if err := s.Store.MarkRoomRead(ctx, room, me, upTo.ID); err != nil {
		return nil, err
	}
	ev := store.Event{Kind: store.ReadUpTo, Room: room, User: me, Message: &upTo}
	s.publishTo(ctx, broker.RoomTopic(room), ev) // no id: in no log
	entries, err := s.Store.RoomConversations(ctx, me.Login, []string{room})
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("conversation %q: %w", room, store.ErrNotFound)
	}
	return &entries[0], s.applyMute(ctx, me, &entries[0])
}

// formerMemberEntry is what a former member of a group reads of its inbox
// entry c: all of it, but for one banned from the group, who reads nothing
// of it (no last message, nothing unread).
func (s *Service) formerMemberEntry(ctx context.Context, me store.UserRef, c store.Conversation) (store.Conversation, error) {
	m, err := s.Store.Membership(ctx, c.ID, me.Login)
	if errors.Is(err, store.ErrNotFound) {
		return c, nil // deleted meanwhile
	}
	if err != nil {
		return store.Conversation{}, err
	}
	if m.Banned {
		c.LastMessage, c.Unread, c.Mentions = store.Message{}, 0, 0
	}
	return c, nil
}

// conversation is me's inbox entry of the conversation with this id: a
// direct conversation's or a group's, or a public room's they take part
// in, as inbox lists them. NOT_FOUND otherwise.
func (s *Service) conversation(ctx context.Context, me store.UserRef, id string) (store.Conversation, error) {
	conv, err := s.Store.Conversation(ctx, me.Login, id)
	if err == nil && conv.Kind == store.GroupConversation && len(conv.Windows) > 0 && !conv.Windows[len(conv.Windows)-1].To.IsZero() {
		return s.formerMemberEntry(ctx, me, conv)
	}
	if !errors.Is(err, store.ErrNotFound) || store.IsDirectConversation(id) {
		return conv, err
	}
	m, merr := s.Store.Membership(ctx, id, me.Login)
	if merr != nil && !errors.Is(merr, store.ErrNotFound) {
		return store.Conversation{}, merr
	}
	if merr != nil || m.Kind != store.PublicRoom || !m.Participant {
		return store.Conversation{}, err
	}
	entries, err := s.Store.RoomConversations(ctx, me.Login, []string{id})
	if err == nil && len(entries) == 0 {
		err = fmt.Errorf("conversation %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Conversation{}, err
	}
	return entries[0], nil
}

// inConversation checks that id names a message of the conversation: a
// read mark names a message of its own conversation (BAD_USER_INPUT
// otherwise, whether the message is elsewhere or nowhere).
func (s *Service) inConversation(ctx context.Context, id store.MessageID, conversation string) (store.Message, error) {
	msg, err := s.Store.Message(ctx, id)
	if err == nil && msg.Room == conversation {
		return msg, nil
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return store.Message{}, err
	}
	return store.Message{}, store.Invalidf("invalid upTo: %s is no message of %s", id, store.Quote(conversation))
}

// inbox is the caller's conversations and the public rooms they take part
// in, in the inbox's order (store.ByNewestMessage).
func (s *Service) inbox(ctx context.Context, me store.UserRef) ([]store.Conversation, error) {
	inbox, err := s.Store.Inbox(ctx, me.Login)
	if err != nil {
		return nil, err
	}
	user, err := s.Store.User(ctx, me.Login)
	if err != nil {
		return nil, err
	}
	for i, c := range inbox {
		if c.Kind == store.GroupConversation && !slices.Contains(user.ChatRooms, c.ID) {
			if inbox[i], err = s.formerMemberEntry(ctx, me, c); err != nil {
				return nil, err
			}
		}
	}
	var rooms []string
	for _, name := range user.ChatRooms {
		if !slices.ContainsFunc(inbox, func(c store.Conversation) bool { return c.ID == name }) {
			rooms = append(rooms, name) // the groups have entries already
		}
	}
	entries, err := s.Store.RoomConversations(ctx, me.Login, rooms)
	if err != nil {
		return nil, err
	}
	inbox = append(inbox, entries...)
	slices.SortFunc(inbox, store.ByNewestMessage)
	return inbox, nil
}

// MarkRead moves me's read mark of a conversation up to the message upTo,
// one of the conversation's, and no further than its newest message: a
// public room's mark, which its subscribers see (READ_UPTO), or the inbox
// entry's of a direct conversation or group. It returns the entry.
func (s *Service) MarkRead(ctx context.Context, me store.UserRef, conversation, upTo string) (*store.Conversation, error) {
	id, err := store.ParseMessageID(upTo)
	if err != nil {
		return nil, err
	}
	upToMsg, err := s.inConversation(ctx, id, conversation)
	if err != nil {
		return nil, err
	}
	if !store.IsDirectConversation(conversation) {
		if m, err := s.Store.Membership(ctx, conversation, me.Login); err == nil && m.Kind == store.PublicRoom {
			return s.markRoomRead(ctx, conversation, m, upToMsg, me)
		}
	}
	before, err := s.Store.Conversation(ctx, me.Login, conversation)
	if err != nil {
		return nil, err
	}
	if newest := before.LastMessage.ID; id.Compare(newest) > 0 {
		id = newest // "read up to the future" would pre-read messages not yet sent
	}
	ev, err := s.Store.MarkRead(ctx, me.Login, conversation, id)
	if err != nil {
		return nil, err
	}
	conv, err := s.Store.Conversation(ctx, me.Login, conversation)
	if err != nil {
		return nil, err
	}
	s.publishTo(ctx, broker.UserTopic(me.Login), ev)
	if id != upToMsg.ID {
		upToMsg = before.LastMessage
	}
	if err := s.sendReceipt(ctx, me, conv, upToMsg); err != nil {
		return nil, err
	}
	return &conv, s.applyMute(ctx, me, &conv)
}

// Read receipts of direct conversations and groups: a reader's mark, kept
// where a public room's are (RoomReads, a partition per conversation), is
// their receipt, shown to the others (the peer's Conversation.peerReadUpTo,
// a group's Room.readMarks) and told live (READ_UPTO: to the peer's inbox,
// to the group's subscribers). Who chose to send none (User.NoReadReceipts)
// sends none and, in return, sees none of others': receipts are mutual, as
// in the messaging apps people know. Marks sent before the choice stay as
// they were; the choice holds for the subscriptions opened after it.

// sendReceipt records me's receipt of the conversation c up to the message
// upTo and tells the others, unless me sends none, or (a direct
// conversation) the peer sees none.
func (s *Service) sendReceipt(ctx context.Context, me store.UserRef, c store.Conversation, upTo store.Message) error {
	sends, err := s.sendsReceipts(ctx, me.Login)
	if err != nil || !sends {
		return err
	}
	if c.Kind == store.GroupConversation {
		if m, err := s.Store.Membership(ctx, c.ID, me.Login); err != nil || !m.Participant {
			return err // a former member's reading is theirs alone
		}
	}
	if err := s.Store.MarkRoomRead(ctx, c.ID, me, upTo.ID); err != nil {
		return err
	}
	ev := store.Event{Kind: store.ReadUpTo, Room: c.ID, User: me, Message: &upTo} // no id: in no log
	if c.Kind == store.GroupConversation {
		s.publishTo(ctx, broker.RoomTopic(c.ID), ev)
		return nil
	}
	peerSees, err := s.sendsReceipts(ctx, c.Peer.Login)
	if err == nil && peerSees {
		s.publishTo(ctx, broker.UserTopic(c.Peer.Login), ev)
	}
	return err
}

// sendsReceipts reports whether login sends (and so sees) read receipts.
func (s *Service) sendsReceipts(ctx context.Context, login string) (bool, error) {
	u, err := s.Store.User(ctx, login)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil // a deleted account
	}
	return err == nil && !u.NoReadReceipts, err
}

// PeerReadUpTo is how far the peer of me's direct conversation c has read
// it (their receipt), the "seen" of me's messages up to it; zero when
// either of them sends no receipts, and for a group or room.
func (s *Service) PeerReadUpTo(ctx context.Context, me store.UserRef, c *store.Conversation) (store.MessageID, error) {
	if c.Kind != store.DirectConversation {
		return store.MessageID{}, nil
	}
	for _, login := range []string{me.Login, c.Peer.Login} {
		if sends, err := s.sendsReceipts(ctx, login); err != nil || !sends {
			return store.MessageID{}, err
		}
	}
	marks, err := s.Store.RoomReadMarks(ctx, c.ID, "", 2)
	if err != nil {
		return store.MessageID{}, err
	}
	for _, m := range marks {
		if m.User.Login == c.Peer.Login {
			return m.UpTo, nil
		}
	}
	return store.MessageID{}, nil
}

// Inbox is me's conversations and the public rooms they take part in, in
// the inbox's order (store.ByNewestMessage), as me sees them: a muted
// one with nothing unread.
func (s *Service) Inbox(ctx context.Context, me store.UserRef) ([]store.Conversation, error) {
	inbox, err := s.inbox(ctx, me)
	if err != nil {
		return nil, err
	}
	muted, err := s.Store.Muted(ctx, me.Login)
	if err != nil {
		return nil, err
	}
	for i := range inbox {
		if slices.Contains(muted, inbox[i].ID) {
			mute(&inbox[i])
		}
	}
	return inbox, nil
}

// Conversation is me's inbox entry of the conversation with this id, as
// Inbox shows it.
func (s *Service) Conversation(ctx context.Context, me store.UserRef, id string) (store.Conversation, error) {
	c, err := s.conversation(ctx, me, id)
	if err != nil {
		return store.Conversation{}, err
	}
	return c, s.applyMute(ctx, me, &c)
}

// applyMute shows c as muted if me muted it.
func (s *Service) applyMute(ctx context.Context, me store.UserRef, c *store.Conversation) error {
	muted, err := s.Store.Mutes(ctx, me.Login, c.ID)
	if muted {
		mute(c)
	}
	return err
}

// mute is what a muted conversation's entry shows: nothing unread, no
// mentions.
func mute(c *store.Conversation) {
	c.Muted, c.Unread, c.Mentions = true, 0, 0
}
