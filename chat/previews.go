package chat

import (
	"context"
	"time"

	"github.com/killrchat/chatql/store"
)

// Previewer reads the card of the first link of a message's content.
type Previewer interface {
	// Preview fetches the card of the first link in content; ok is false
	// when content links nowhere or the page gave nothing to show.
	Preview(ctx context.Context, content string) (p store.LinkPreview, ok bool, err error)
}

// previewTimeout bounds a preview's fetch and store.
const previewTimeout = 15 * time.Second

// maxPreviewsAtOnce bounds the previews an instance fetches at once; a
// message posted while that many are under way gets none.
const maxPreviewsAtOnce = 64

// preview fetches the card of m's first link, in the background, and
// stores it as m's preview, which publishes MESSAGE_PREVIEWED. An edit
// made meanwhile wins: the store keeps no preview of an older content.
func (s *Service) preview(ctx context.Context, m store.Message) {
	if s.Previews == nil || m.Deleted || m.System || m.Content == "" {
		return
	}
	select {
	case s.previewSlots() <- struct{}{}:
	default:
		s.Log.DebugContext(ctx, "previews: too many under way; this message gets none", "message", m.ID)
		return
	}
	s.previewsRunning.Add(1)
	go func() {
		defer s.previewsRunning.Done()
		defer func() { <-s.previewSlots() }()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), previewTimeout)
		defer cancel()
		p, ok, err := s.Previews.Preview(ctx, m.Content)
		if err != nil {
			s.Log.DebugContext(ctx, "previews: fetch failed", "message", m.ID, "err", err)
		}
		if !ok {
			return
		}
		if _, err := s.inLine(ctx, m.Room, func() (store.Event, error) { return s.Store.SetPreview(ctx, m, p) }); err != nil {
			s.Log.WarnContext(ctx, "previews: store failed", "message", m.ID, "err", err)
		}
	}()
}

// previewSlots holds a token per preview under way.
func (s *Service) previewSlots() chan struct{} {
	s.previewsOnce.Do(func() { s.previewsUnderWay = make(chan struct{}, maxPreviewsAtOnce) })
	return s.previewsUnderWay
}

// WaitPreviews waits for the previews under way, which end within
// previewTimeout: before the store they write to is closed.
func (s *Service) WaitPreviews() { s.previewsRunning.Wait() }
