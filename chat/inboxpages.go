package chat

import (
	"context"
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/killrchat/chatql/store"
)

// The inbox a page at a time (Query.conversations): the store keeps each
// user's conversations in the order of last activity (store.InboxOrder), a
// page is one read of that order, and then each entry of the page is read
// as Conversation reads it. The positions of conversations the user no
// longer has (a public room left, a group deleted) are passed over and
// dropped.
//
// An inbox from before the order (a store written by an older version)
// holds only the activities since: the first page filled it in, once, from
// the whole inbox (Inbox), and marks it complete (store.OrderInbox).

// Conversations: how many a page holds by default and at most.
const (
	DefaultInboxPage = 20
	MaxInboxPage     = 50
)

// inboxReads bounds the entries of a page read at once.
const inboxReads = 8

// ConversationsPage is a page of the inbox, newest activity first.
type ConversationsPage struct {
	// Entries are the conversations as Conversation shows them, and
	// Cursors the cursor of each, for `after`.
	Entries []store.Conversation
	Cursors []string
	// More says that conversations follow the page's last.
	More bool
}

// InboxCursor is the cursor of an inbox position: opaque to clients.
func InboxCursor(p store.InboxPosition) string {
	return base64.RawURLEncoding.EncodeToString([]byte(p.Activity.String() + "/" + p.Conversation))
}

// parseInboxCursor inverts InboxCursor; the empty cursor is the zero
// position, the start of the inbox.
func parseInboxCursor(cursor string) (store.InboxPosition, error) {
	if cursor == "" {
		return store.InboxPosition{}, nil
	}
	bad := store.Invalidf("invalid after: %q is no cursor of conversations", cursor)
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return store.InboxPosition{}, bad
	}
	activity, conversation, ok := strings.Cut(string(raw), "/")
	if !ok || conversation == "" {
		return store.InboxPosition{}, bad
	}
	id, err := store.ParseMessageID(activity)
	if err != nil {
		return store.InboxPosition{}, bad
	}
	return store.InboxPosition{Activity: id, Conversation: conversation}, nil
}

// Conversations returns up to first (1 to MaxInboxPage) of me's inbox
// entries after the cursor (empty: from the newest), newest activity first,
// each as Conversation shows it.
//
// The large rooms of me's order (store.LargeInboxRooms: past
// store.InboxFanoutLimit participants, whose posts write no positions) are
// read first, each at its last activity, and merged into the order's
// positions, which are read a range at a time: a range holds the order's
// positions after the last one's of the range before, and the large rooms
// between, sorted. The order's positions of a large room are passed over:
// the room's last activity is at least as new as any of them, so the room
// is listed once, there, and a cursor names the same place in every page.
func (s *Service) Conversations(ctx context.Context, me store.UserRef, first int, after string) (ConversationsPage, error) {
	if first < 1 || first > MaxInboxPage {
		return ConversationsPage{}, store.Invalidf("invalid first: %d; it must be between 1 and %d", first, MaxInboxPage)
	}
	pos, err := parseInboxCursor(after)
	if err != nil {
		return ConversationsPage{}, err
	}
	if err := s.orderInbox(ctx, me); err != nil {
		return ConversationsPage{}, err
	}
	large, err := s.largeRooms(ctx, me)
	if err != nil {
		return ConversationsPage{}, err
	}
	var page ConversationsPage
	for {
		want := first + 1 - len(page.Entries) // one more says whether more follow
		positions, err := s.Store.InboxPage(ctx, me.Login, pos, want)
		if err != nil {
			return ConversationsPage{}, err
		}
		exhausted := len(positions) < want
		var last store.InboxPosition
		if !exhausted {
			last = positions[len(positions)-1]
		}
		positions = slices.DeleteFunc(positions, func(p store.InboxPosition) bool { return large.has(p.Conversation) })
		entries, gone, err := s.inboxEntries(ctx, me, positions)
		if err != nil {
			return ConversationsPage{}, err
		}
		if err := s.Store.DropInboxPositions(ctx, me.Login, gone); err != nil {
			return ConversationsPage{}, err
		}
		var listed []inboxEntry
		for i, e := range entries {
			if e != nil {
				listed = append(listed, inboxEntry{positions[i], *e})
			}
		}
		for _, l := range large {
			if follows(l.at, pos) && (exhausted || !follows(l.at, last)) {
				listed = append(listed, l)
			}
		}
		slices.SortFunc(listed, func(a, b inboxEntry) int { return store.ComparePositions(a.at, b.at) })
		for _, l := range listed {
			page.Entries = append(page.Entries, l.entry)
			page.Cursors = append(page.Cursors, InboxCursor(l.at))
		}
		if exhausted || len(page.Entries) > first {
			break
		}
		pos = last
	}
	if page.More = len(page.Entries) > first; page.More {
		page.Entries, page.Cursors = page.Entries[:first], page.Cursors[:first]
	}
	return page, nil
}

// inboxEntry is an entry of a page at its place.
type inboxEntry struct {
	at    store.InboxPosition
	entry store.Conversation
}

// follows reports whether p comes after pos in the inbox's order; every
// position follows the zero one, the start.
func follows(p, pos store.InboxPosition) bool {
	return pos.Conversation == "" || store.ComparePositions(p, pos) > 0
}

// largeEntries are me's large rooms, each at its last activity.
type largeEntries []inboxEntry

func (l largeEntries) has(room string) bool {
	return slices.ContainsFunc(l, func(e inboxEntry) bool { return e.entry.ID == room })
}

// largeRooms reads the entry of each large room of me's order, at its last
// activity: a read per room (me takes part in few rooms of more than
// store.InboxFanoutLimit participants). The marks of rooms me no longer
// takes part in are dropped, but a mark made since the read began (me
// joined again).
func (s *Service) largeRooms(ctx context.Context, me store.UserRef) (largeEntries, error) {
	began := time.Now()
	rooms, err := s.Store.LargeInboxRooms(ctx, me.Login)
	if err != nil || len(rooms) == 0 {
		return nil, err
	}
	positions := make([]store.InboxPosition, len(rooms))
	for i, r := range rooms {
		positions[i].Conversation = r
	}
	entries, gone, err := s.inboxEntries(ctx, me, positions)
	if err != nil {
		return nil, err
	}
	if len(gone) > 0 {
		names := make([]string, len(gone))
		for i, g := range gone {
			names[i] = g.Conversation
		}
		if err := s.Store.DropLargeInboxRooms(ctx, me.Login, names, began); err != nil {
			return nil, err
		}
	}
	var large largeEntries
	for _, e := range entries {
		if e == nil {
			continue
		}
		activity, err := s.lastActivity(ctx, *e)
		if err != nil {
			return nil, err
		}
		large = append(large, inboxEntry{store.InboxPosition{Activity: activity, Conversation: e.ID}, *e})
	}
	return large, nil
}

// inboxEntries reads the entry of each position, inboxReads at a time: nil
// for the positions of conversations me no longer has, which gone lists.
func (s *Service) inboxEntries(ctx context.Context, me store.UserRef, positions []store.InboxPosition) (entries []*store.Conversation, gone []store.InboxPosition, err error) {
	muted, err := s.Store.Muted(ctx, me.Login)
	if err != nil {
		return nil, nil, err
	}
	entries = make([]*store.Conversation, len(positions))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(inboxReads)
	for i, p := range positions {
		g.Go(func() error {
			c, err := s.conversation(gctx, me, p.Conversation)
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			if slices.Contains(muted, c.ID) {
				mute(&c)
			}
			entries[i] = &c
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	for i, e := range entries {
		if e == nil {
			gone = append(gone, positions[i])
		}
	}
	return entries, gone, nil
}

// orderInbox fills in me's inbox order from the whole inbox, once: the
// inbox of a store written before the order.
func (s *Service) orderInbox(ctx context.Context, me store.UserRef) error {
	ordered, err := s.Store.InboxOrdered(ctx, me.Login)
	if err != nil || ordered {
		return err
	}
	inbox, err := s.inbox(ctx, me)
	if err != nil {
		return err
	}
	positions := make([]store.InboxPosition, 0, len(inbox))
	for _, c := range inbox {
		activity, err := s.lastActivity(ctx, c)
		if err != nil {
			return err
		}
		positions = append(positions, store.InboxPosition{Activity: activity, Conversation: c.ID})
	}
	return s.Store.OrderInbox(ctx, me.Login, positions)
}

// lastActivity is the last activity of an inbox entry as the inbox orders
// it (store.ByNewestMessage): its newest message, or its newest window's
// opening, or for a room without messages its creation.
func (s *Service) lastActivity(ctx context.Context, c store.Conversation) (store.MessageID, error) {
	if !c.LastMessage.ID.IsZero() {
		return c.LastMessage.ID, nil
	}
	if n := len(c.Windows); n > 0 {
		return store.MinMessageID(c.Windows[n-1].From), nil
	}
	r, err := s.Store.Room(ctx, c.ID)
	if errors.Is(err, store.ErrNotFound) {
		return store.MinMessageID(time.Unix(0, 0)), nil // a direct conversation without messages, which sending makes none of
	}
	if err != nil {
		return store.MessageID{}, err
	}
	return store.MinMessageID(r.CreatedAt), nil
}
