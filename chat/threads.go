package chat

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/killrchat/chatql/store"
)

// A thread shows its reader the replies they may read: in a private
// group, those posted in the reader's membership windows, as the history
// does. A reader whose present window began before the root reads every
// reply, as stored; any other reads the thread's replies and keeps those
// of their windows (a reader who left, or joined after the root).

// limitingWindows is what limits a reader's view of a thread whose root
// was posted at from: the reader's windows, or nil when nothing does (a
// reader of the whole conversation, or a member since before the root,
// whose last window is open).
func limitingWindows(windows []store.Window, from time.Time) []store.Window {
	if n := len(windows); n > 0 && windows[n-1].To.IsZero() && !windows[n-1].From.After(from) {
		return nil
	}
	return windows
}

// threadReplies reads up to limit replies to root older than before, of
// those posted in windows (nil: all of them).
func (s *Service) threadReplies(ctx context.Context, root store.Message, windows []store.Window, before store.MessageID, limit int) ([]store.Message, error) {
	if windows == nil {
		return s.Store.ThreadReplies(ctx, root, before, limit)
	}
	out := []store.Message{}
	if len(windows) == 0 {
		return out, nil
	}
	if last := windows[len(windows)-1]; !last.To.IsZero() && (before.IsZero() || before.Time().After(last.To)) {
		before = store.MinMessageID(last.To) // nothing newer is in a window
	}
	for len(out) < limit {
		page, err := s.Store.ThreadReplies(ctx, root, before, threadScanPage)
		if err != nil {
			return nil, err
		}
		for _, m := range page {
			if store.InWindows(windows, m.ID.Time()) && len(out) < limit {
				out = append(out, m)
			}
		}
		if len(page) < threadScanPage || page[len(page)-1].ID.Time().Before(windows[0].From) {
			break
		}
		before = page[len(page)-1].ID
	}
	return out, nil
}

// threadRepliesAfter reads up to limit replies to root newer than after,
// oldest first, of those posted in windows (nil: all of them).
func (s *Service) threadRepliesAfter(ctx context.Context, root store.Message, windows []store.Window, after store.MessageID, limit int) ([]store.Message, error) {
	if windows == nil {
		return s.Store.ThreadRepliesAfter(ctx, root, after, limit)
	}
	out := []store.Message{}
	if len(windows) == 0 {
		return out, nil
	}
	last := windows[len(windows)-1]
	for len(out) < limit {
		page, err := s.Store.ThreadRepliesAfter(ctx, root, after, threadScanPage)
		if err != nil {
			return nil, err
		}
		for _, m := range page {
			if store.InWindows(windows, m.ID.Time()) && len(out) < limit {
				out = append(out, m)
			}
		}
		// Past the end of the last window nothing is the reader's.
		if len(page) < threadScanPage || !last.To.IsZero() && !page[len(page)-1].ID.Time().Before(last.To) {
			break
		}
		after = page[len(page)-1].ID
	}
	return out, nil
}

// threadScanPage is how many replies a windowed thread read asks for at a
// time.
const threadScanPage = 100

// threadInWindows sums up the replies to root posted in windows.
func (s *Service) threadInWindows(ctx context.Context, root store.Message, windows []store.Window) (store.Thread, error) {
	var t store.Thread
	var before store.MessageID
	for {
		page, err := s.threadReplies(ctx, root, windows, before, threadScanPage)
		if err != nil {
			return store.Thread{}, err
		}
		for _, m := range page {
			t.Replies++
			if len(t.LatestRepliers) < store.MaxLatestRepliers && !slices.ContainsFunc(t.LatestRepliers, func(u store.UserRef) bool { return u.Login == m.Author.Login }) {
				t.LatestRepliers = append(t.LatestRepliers, m.Author)
			}
		}
		if len(page) < threadScanPage {
			return t, nil
		}
		before = page[len(page)-1].ID
	}
}

// threadsFor is what me sees of the threads of msgs: the summaries as
// stored, but for a reader limited by windows, who gets those of the
// replies in their windows, and for one who may no longer read a
// message's conversation (their own message, in myMessages), none.
func (s *Service) threadsFor(ctx context.Context, msgs []store.Message, stored map[store.MessageID]store.Thread, me store.UserRef) (map[store.MessageID]store.Thread, error) {
	readers := map[string]*Reader{} // by conversation; nil: reads none of it
	for _, m := range msgs {
		t, ok := stored[m.ID]
		if !ok || t.Replies == 0 {
			continue
		}
		r, known := readers[m.Room]
		if !known {
			got, err := s.reader(ctx, me, m.Room)
			switch {
			case err == nil:
				r = &got
			case !errors.Is(err, store.ErrForbidden) && !errors.Is(err, store.ErrNotFound):
				return nil, err
			}
			readers[m.Room] = r
		}
		if r == nil {
			delete(stored, m.ID)
			continue
		}
		windows := limitingWindows(r.Windows, m.ID.Time())
		if windows == nil {
			continue
		}
		seen, err := s.threadInWindows(ctx, m, windows)
		if err != nil {
			return nil, err
		}
		stored[m.ID] = seen
	}
	return stored, nil
}
