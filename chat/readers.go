package chat

import (
	"context"
	"errors"
	"fmt"

	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/stream"
)

// The reader's view: what one viewer may see of a conversation's messages.
// Every path to a message goes through it: the history, a thread and its
// summary, a message by id (and so every change to one: edit, delete,
// hide, react, reply), and a room's subscription, live and replayed
// (FollowRoom).
//
//   - A direct conversation's messages are its two parties'.
//   - A public room's are its participants', all of them.
//   - A private group's are its members', each those posted while they were
//     a member (their windows: a former member keeps reading what was
//     posted while they were in); a banned user reads none, and someone
//     never a member learns nothing, not even that the group exists
//     (NOT_FOUND).
//   - A hidden message's content is its author's alone; everyone else who
//     reads it sees it blank (SeesHiddenContent).
//   - A deleted message is a tombstone for everyone: the store erased its
//     content. An edited one shows its current text: the store keeps no
//     other.
//   - A block hides nothing: the blocker reads the blocked user's messages,
//     which the API flags (Message.authorBlocked) for apps to collapse.

// A Reader is one viewer's access to one conversation, read once.
type Reader struct {
	Viewer       store.UserRef
	Conversation string
	// Windows are the viewer's membership windows of a private group, the
	// only times whose messages they read; nil in a direct conversation or
	// a public room, whose messages a reader reads all of.
	Windows []store.Window
	// Participant: the viewer takes part now (a group's former member
	// reads their windows, but follows nothing new).
	Participant bool
}

// Sees reports whether the reader may read m.
func (r Reader) Sees(m store.Message) bool {
	return m.Room == r.Conversation && (r.Windows == nil || store.InWindows(r.Windows, m.ID.Time()))
}

// SeesContent reports whether the reader may read m and is shown its
// content (ShowsContent): what a search result, a pin, a notification or
// a digest shows, on its own, of a message.
func (r Reader) SeesContent(m store.Message) bool {
	return r.Sees(m) && ShowsContent(&m, r.Viewer)
}

// ShowsContent reports whether viewer, who may read m, is shown its
// content: m is not deleted, nor hidden unless viewer wrote it.
func ShowsContent(m *store.Message, viewer store.UserRef) bool {
	return !m.Deleted && (!m.Hidden || SeesHiddenContent(m, viewer))
}

// SeesHiddenContent reports whether viewer may read the content of the
// hidden message m: only its author may. Everyone else sees it blank.
func SeesHiddenContent(m *store.Message, viewer store.UserRef) bool {
	return viewer.Login != "" && viewer.Login == m.Author.Login
}

// Content is what viewer reads of m's content, and of everything read
// from it (its mentions): blank if m is hidden from them. A deleted
// message's content is blank for everyone already.
func Content(m *store.Message, viewer store.UserRef) string {
	if m.Hidden && !SeesHiddenContent(m, viewer) {
		return ""
	}
	return m.Content
}

// Attachments are the files of m that viewer may see: those of Content.
func Attachments(m *store.Message, viewer store.UserRef) []store.Attachment {
	if m.Hidden && !SeesHiddenContent(m, viewer) {
		return nil
	}
	return m.Attachments
}

// reader returns me's Reader of the conversation, or why me may read none
// of it: FORBIDDEN (not a participant of a public room, banned from a
// group, not a party of a direct conversation) or NOT_FOUND (no such room,
// or a group me never was in).
func (s *Service) reader(ctx context.Context, me store.UserRef, conversation string) (Reader, error) {
	r := Reader{Viewer: me, Conversation: conversation, Participant: true}
	if store.IsDirectConversation(conversation) {
		if a, b := store.DirectParties(conversation); a != me.Login && b != me.Login {
			return Reader{}, fmt.Errorf("%w: %s is not a party of conversation %q", store.ErrForbidden, me.Login, conversation)
		}
		return r, nil
	}
	known, epoch := s.knownPoster(conversation, me.Login) // a participant of a public room
	if known {
		return r, nil
	}
	m, err := s.Store.Membership(ctx, conversation, me.Login)
	if err != nil {
		return Reader{}, err
	}
	s.rememberMembership(epoch, m)
	if m.Kind != store.PrivateGroup {
		if !m.Participant {
			return Reader{}, notParticipant(conversation, me)
		}
		return r, nil
	}
	conv, err := s.Store.Conversation(ctx, me.Login, conversation)
	if errors.Is(err, store.ErrNotFound) || err == nil && len(conv.Windows) == 0 {
		return Reader{}, fmt.Errorf("room %q: %w", conversation, store.ErrNotFound)
	}
	if err != nil {
		return Reader{}, err
	}
	if m.Banned {
		return Reader{}, fmt.Errorf("%w: %s is banned from group %q", store.ErrForbidden, me.Login, conversation)
	}
	r.Windows, r.Participant = conv.Windows, m.Participant
	return r, nil
}

// FollowRoom opens me's stream of room's events after the cursor (the zero
// cursor: from now on): those of me's reader's view, refused as reader
// refuses, and to who does not take part now. A private group's member never replays from before their
// current membership window. A direct conversation is followed in the
// inbox (inboxEvents), not here.
func (s *Service) FollowRoom(ctx context.Context, me store.UserRef, room string, after store.Cursor) (*stream.Room, error) {
	if store.IsDirectConversation(room) {
		return nil, fmt.Errorf("room %q: %w; a direct conversation's events come in inboxEvents", room, store.ErrNotFound)
	}
	rd, err := s.reader(ctx, me, room)
	if err != nil {
		return nil, err
	}
	if !rd.Participant {
		return nil, notParticipant(room, me)
	}
	return s.openRoomStream(ctx, rd, after)
}

// openRoomStream opens the stream of rd's room for its viewer after the
// cursor, through their reader's view: FollowRoom's, for a reader the
// caller cleared (a sync also replays a group's former member's windows up
// to their leave).
func (s *Service) openRoomStream(ctx context.Context, rd Reader, after store.Cursor) (*stream.Room, error) {
	me, room := rd.Viewer, rd.Conversation
	if w := rd.Windows; len(w) > 0 && !after.ID.IsZero() {
		if start := store.MinMessageID(w[len(w)-1].From); after.ID.Compare(start) < 0 {
			after = store.Cursor{ID: start}
		}
	}
	var sees func(store.Message) bool // nil: every message of the room, and no call per event
	if rd.Windows != nil {
		sees = rd.Sees
	}
	st, err := s.Streams.OpenRoom(ctx, room, me, after, sees)
	if err != nil || rd.Windows == nil {
		return st, err
	}
	if sends, err := s.sendsReceipts(ctx, me.Login); err != nil || !sends {
		// A group's member who sends no receipts sees none (sendReceipt).
		st.LeaveOut(func(ev *store.Event) bool { return ev.Kind == store.ReadUpTo })
		if err != nil {
			st.Close()
			return nil, err
		}
	}
	return st, nil
}

// FollowInbox opens me's stream of their inbox events after the cursor
// (the zero id: from now on); its replay leaves out what me's reader's
// view no longer lets them read.
func (s *Service) FollowInbox(ctx context.Context, me store.UserRef, after store.MessageID) (*stream.Inbox, error) {
	return s.Streams.OpenInbox(ctx, me, after, func(ctx context.Context, conversation string) (func(store.Message) bool, error) {
		rd, err := s.reader(ctx, me, conversation)
		switch {
		case errors.Is(err, store.ErrForbidden) || errors.Is(err, store.ErrNotFound):
			return nil, nil
		case err != nil:
			return nil, err
		}
		return rd.Sees, nil
	})
}

// Reactions are the reactions of msgs, messages viewer reads, with which
// of them are viewer's own ("": nobody's, for an event's encoding shared
// by its subscribers).
func (s *Service) Reactions(ctx context.Context, viewer string, msgs []store.Message) (map[store.MessageID][]store.Reaction, error) {
	return s.Store.Reactions(ctx, msgs, viewer)
}

// Blocks reports whether viewer blocked author, for apps to collapse
// author's messages: a block hides nothing.
func (s *Service) Blocks(ctx context.Context, viewer, author string) (bool, error) {
	return s.Store.Blocks(ctx, viewer, author)
}

// EventThreads are the threads of msgs as a room event's shared encoding
// shows them to all its subscribers, the room's current participants: as
// stored. (A group member who joined after a root was posted is shown the
// count of its earlier replies too; a query shows them theirs, Threads.)
func (s *Service) EventThreads(ctx context.Context, msgs []store.Message) (map[store.MessageID]store.Thread, error) {
	return s.Store.ThreadSummaries(ctx, msgs)
}
