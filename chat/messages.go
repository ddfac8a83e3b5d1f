package chat

import (
	"context"
	"fmt"
	"time"

	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
)

// A Pager reads one reader's pages of a list of messages: up to n messages
// older than before (zero: from the newest), newest first, of those the
// reader may read.
type Pager func(ctx context.Context, before store.MessageID, n int) ([]store.Message, error)

// Pages reads one reader's list of messages both ways, to open it
// anywhere (at the first unread message, a reply's parent, a search hit)
// and scroll either way from there. Both directions apply the same view
// of the reader: a former member of a group reads nothing newer than their
// windows.
type Pages struct {
	// Older reads toward the oldest, as a Pager.
	Older Pager
	// Newer reads up to n messages newer than after (zero: from the
	// oldest), oldest first, of those the reader may read; nil for a list
	// read toward the oldest only (MyMessages), which has no At either.
	Newer func(ctx context.Context, after store.MessageID, n int) ([]store.Message, error)
	// At returns the message of the id if it is one of the list's that the
	// reader may read; ErrNotFound otherwise.
	At func(ctx context.Context, id string) (store.Message, error)
}

// Draft is a message as its sender gives it.
type Draft struct {
	Content string
	// Attachments are the ids of files the sender uploaded (see
	// files.Service), sent with the message.
	Attachments []string
	// ClientMessageID makes a retried send return the first one (see
	// sendOnce).
	ClientMessageID *string
	// ReplyTo names a message of the conversation the sender may read,
	// whose thread the message joins.
	ReplyTo *string
}

// validate checks what can be checked of a draft without the store: its
// content, which may be empty when files carry the message.
func (d Draft) validate() error {
	if d.Content == "" && len(d.Attachments) > 0 {
		return nil
	}
	return store.ValidateContent(d.Content)
}

// Post stores me's message in a room or group and publishes it: to the
// room's subscribers, to the group's members' inboxes, to those it
// mentions.
func (s *Service) Post(ctx context.Context, me store.UserRef, room string, d Draft) (*store.Message, error) {
	if err := s.limit(ctx, ratelimit.Post, me); err != nil {
		return nil, err
	}
	if err := d.validate(); err != nil {
		return nil, err
	}
	kind, members, slow, err := s.postAudience(ctx, room, me)
	if err != nil {
		return nil, err
	}
	root, parentAuthor, err := s.replyRoot(ctx, d.ReplyTo, room, me)
	if err != nil {
		return nil, err
	}
	prepared, err := s.prepareFiles(ctx, me, d.Attachments)
	if err != nil {
		return nil, err
	}
	w := s.beginRoomWrite(ctx, room)
	defer w.end()
	msg := store.Message{Room: room, ID: s.newMessageID(), Author: me, Content: d.Content, ReplyTo: root}
	posted, err := s.sendOnce(ctx, d.ClientMessageID, msg, func(msg *store.Message) error {
		if slow > 0 {
			// Taken for a first send only: a retry of a stored post is
			// no new post.
			if err := s.Store.TakePostTurn(ctx, room, me.Login, s.now(), slow); err != nil {
				return err
			}
		}
		if err := s.claimFiles(ctx, msg, prepared); err != nil {
			return err
		}
		mentioned := s.mentionedParticipants(ctx, *msg, kind, members)
		notices := s.postNotices(ctx, *msg, kind, members, mentioned, parentAuthor)
		if kind == store.PrivateGroup {
			if err := s.Store.PostGroupMessage(ctx, *msg, members, notices...); err != nil {
				return err
			}
			unread := store.Event{ID: msg.ID, Kind: store.UnreadChanged, Room: room, Message: msg, User: me}
			for _, p := range members {
				if p.Login != me.Login {
					s.publishTo(ctx, broker.UserTopic(p.Login), unread)
				}
			}
		} else if err := s.Store.PostMessage(ctx, *msg, notices...); err != nil {
			return err
		}
		s.attachedFiles(ctx, msg)
		s.Typists.Stop(room, me.Login)
		w.publish(store.PostedEvent(*msg))
		s.notifyMentions(ctx, *msg, mentioned)
		return nil
	}, func(stored store.Message) { w.publish(store.PostedEvent(stored)) })
	if err == nil {
		s.preview(ctx, *posted)
	}
	return posted, err
}

// SendDirect stores me's direct message to another user and publishes it
// to both inboxes, unless either blocked the other.
func (s *Service) SendDirect(ctx context.Context, me store.UserRef, to string, d Draft) (*store.Message, error) {
	if err := s.limit(ctx, ratelimit.DirectMessage, me); err != nil {
		return nil, err
	}
	if err := d.validate(); err != nil {
		return nil, err
	}
	if err := store.ValidateLoginIn("to", to); err != nil {
		return nil, err
	}
	if to == me.Login {
		return nil, store.Invalidf("invalid recipient: you cannot send a direct message to yourself")
	}
	peer, err := s.Store.User(ctx, to)
	if err != nil {
		return nil, err
	}
	if err := s.mayWriteTo(ctx, me, to, "direct messages"); err != nil {
		return nil, err
	}
	conv := store.DirectConversationID(me.Login, to)
	root, _, err := s.replyRoot(ctx, d.ReplyTo, conv, me)
	if err != nil {
		return nil, err
	}
	prepared, err := s.prepareFiles(ctx, me, d.Attachments)
	if err != nil {
		return nil, err
	}
	msg := store.Message{Room: conv, ID: s.newMessageID(), Author: me, Content: d.Content, ReplyTo: root}
	announce := func(msg store.Message) {
		s.publishEvent(ctx, store.Event{ID: msg.ID, Kind: store.DirectMessage, Room: conv, Message: &msg, User: me})
	}
	sent, err := s.sendOnce(ctx, d.ClientMessageID, msg, func(msg *store.Message) error {
		if err := s.claimFiles(ctx, msg, prepared); err != nil {
			return err
		}
		if err := s.Store.SendDirect(ctx, *msg, peer.UserRef, s.directNotices(*msg, to)...); err != nil {
			return err
		}
		s.attachedFiles(ctx, msg)
		s.Typists.Stop(conv, me.Login)
		announce(*msg)
		return nil
	}, announce)
	if err == nil {
		s.preview(ctx, *sent)
	}
	return sent, err
}

// Edit replaces the content of me's message id.
func (s *Service) Edit(ctx context.Context, me store.UserRef, id, content string) (*store.Message, error) {
	if err := s.limit(ctx, ratelimit.Post, me); err != nil {
		return nil, err
	}
	msg, err := s.readableMessage(ctx, id, me)
	if err != nil {
		return nil, err
	}
	if err := (Draft{Content: content, Attachments: attachmentIDs(msg.Attachments)}).validate(); err != nil {
		return nil, err
	}
	switch {
	case msg.Deleted:
		return nil, fmt.Errorf("message %s was deleted: %w", id, store.ErrNotFound)
	case msg.Author.Login != me.Login:
		return nil, fmt.Errorf("%w: only its author may edit a message", store.ErrForbidden)
	case msg.System:
		return nil, fmt.Errorf("%w: the server's messages of joins and leaves cannot be edited", store.ErrForbidden)
	}
	ev, err := s.inLine(ctx, msg.Room, func() (store.Event, error) {
		return s.Store.EditMessage(ctx, msg, me, content, time.Now())
	})
	if err != nil {
		return nil, err
	}
	edited, err := s.changedMessage(ctx, ev, msg.ID)
	if err == nil && !ev.ID.IsZero() {
		s.preview(ctx, *edited)
	}
	return edited, err
}

// moderated returns the message id for me to delete or hide (the verb
// says which): its author may, and the room's creator and moderators.
func (s *Service) moderated(ctx context.Context, me store.UserRef, id, verb string) (store.Message, error) {
	if err := s.limit(ctx, ratelimit.RoomChange, me); err != nil {
		return store.Message{}, err
	}
	msg, err := s.readableMessage(ctx, id, me)
	if err != nil {
		return store.Message{}, err
	}
	return msg, s.mayModerate(ctx, msg, me, verb)
}

// Delete erases the message id, leaving a tombstone.
func (s *Service) Delete(ctx context.Context, me store.UserRef, id string) (*store.Message, error) {
	msg, err := s.moderated(ctx, me, id, "delete")
	if err != nil {
		return nil, err
	}
	if msg.Deleted {
		return &msg, nil // deleted already: nothing changes, nothing is logged
	}
	ev, err := s.inLine(ctx, msg.Room, func() (store.Event, error) { return s.Store.DeleteMessage(ctx, msg, me) })
	if err != nil {
		return nil, err
	}
	s.discardFiles(ctx, msg)
	return s.changedMessage(ctx, ev, msg.ID)
}

// Hide hides the message id's content from everyone but its author.
func (s *Service) Hide(ctx context.Context, me store.UserRef, id string) (*store.Message, error) {
	msg, err := s.moderated(ctx, me, id, "hide")
	if err != nil {
		return nil, err
	}
	if msg.Hidden {
		return &msg, nil // hidden already: nothing changes, nothing is logged
	}
	if _, err := s.inLine(ctx, msg.Room, func() (store.Event, error) { return s.Store.HideMessage(ctx, msg, me) }); err != nil {
		return nil, err
	}
	msg.Hidden = true
	return &msg, nil
}

// Message is the message id, if me may read it; NOT_FOUND otherwise, so
// ids do not reveal what exists.
func (s *Service) Message(ctx context.Context, me store.UserRef, id string) (store.Message, error) {
	return s.readableMessage(ctx, id, me)
}

// History is me's reader of a room's or group's messages: a participant
// of a public room reads them all, a member of a group those of their
// membership windows (a former member too), unless banned (see Reader).
func (s *Service) History(ctx context.Context, me store.UserRef, room string) (Pages, error) {
	r, err := s.reader(ctx, me, room)
	if err != nil {
		return Pages{}, err
	}
	at := s.listedIn(me, func(m store.Message) bool { return m.Room == room })
	if r.Windows != nil {
		return Pages{
			Older: func(ctx context.Context, before store.MessageID, n int) ([]store.Message, error) {
				return s.Store.GroupMessages(ctx, room, r.Windows, before, n)
			},
			Newer: func(ctx context.Context, after store.MessageID, n int) ([]store.Message, error) {
				return s.Store.GroupMessagesAfter(ctx, room, r.Windows, after, n)
			},
			At: at,
		}, nil
	}
	return Pages{
		Older: func(ctx context.Context, before store.MessageID, n int) ([]store.Message, error) {
			return s.history.read(ctx, historyPage{room, before, n}, s.Store.Messages)
		},
		Newer: func(ctx context.Context, after store.MessageID, n int) ([]store.Message, error) {
			return s.Store.MessagesAfter(ctx, room, after, n)
		},
		At: at,
	}, nil
}

// DirectHistory is me's reader of their direct conversation with another
// user.
func (s *Service) DirectHistory(me store.UserRef, with string) Pages {
	conv := store.DirectConversationID(me.Login, with)
	return Pages{
		Older: func(ctx context.Context, before store.MessageID, n int) ([]store.Message, error) {
			return s.Store.Messages(ctx, conv, before, n)
		},
		Newer: func(ctx context.Context, after store.MessageID, n int) ([]store.Message, error) {
			return s.Store.MessagesAfter(ctx, conv, after, n)
		},
		At: s.listedIn(me, func(m store.Message) bool { return m.Room == conv }),
	}
}

// Thread is me's reader of the replies to the message id, which me must be
// able to read: in a group, the replies of me's membership windows.
func (s *Service) Thread(ctx context.Context, me store.UserRef, id string) (Pages, error) {
	root, err := s.readableMessage(ctx, id, me)
	if err != nil {
		return Pages{}, err
	}
	r, err := s.reader(ctx, me, root.Room)
	if err != nil {
		return Pages{}, err
	}
	windows := limitingWindows(r.Windows, root.ID.Time())
	return Pages{
		Older: func(ctx context.Context, before store.MessageID, n int) ([]store.Message, error) {
			return s.threadReplies(ctx, root, windows, before, n)
		},
		Newer: func(ctx context.Context, after store.MessageID, n int) ([]store.Message, error) {
			return s.threadRepliesAfter(ctx, root, windows, after, n)
		},
		At: s.listedIn(me, func(m store.Message) bool { return m.ReplyTo == root.ID }),
	}, nil
}

// listedIn returns the At of a list: the message id if me may read it and
// it belongs to the list (in), NOT_FOUND otherwise, as for an id me may
// not read.
func (s *Service) listedIn(me store.UserRef, in func(store.Message) bool) func(context.Context, string) (store.Message, error) {
	return func(ctx context.Context, id string) (store.Message, error) {
		msg, err := s.readableMessage(ctx, id, me)
		if err != nil {
			return store.Message{}, err
		}
		if !in(msg) {
			return store.Message{}, fmt.Errorf("message %s is not in this list: %w", id, store.ErrNotFound)
		}
		return msg, nil
	}
}

// MyMessages is me's reader of their own messages, in every conversation.
func (s *Service) MyMessages(me store.UserRef) Pager {
	return func(ctx context.Context, before store.MessageID, n int) ([]store.Message, error) {
		return s.Store.MessagesByAuthor(ctx, me.Login, before, n)
	}
}

// Threads is what me sees of the threads of msgs: their summaries, of the
// replies me may read.
func (s *Service) Threads(ctx context.Context, me store.UserRef, msgs []store.Message) (map[store.MessageID]store.Thread, error) {
	got, err := s.Store.ThreadSummaries(ctx, msgs)
	if err != nil {
		return nil, err
	}
	return s.threadsFor(ctx, msgs, got, me)
}
