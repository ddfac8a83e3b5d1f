package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/killrchat/chatql/chat"
	"github.com/killrchat/chatql/notify"
	"github.com/killrchat/chatql/notify/webpush"
)

// vapidKey is the configured VAPID key; with the embedded store and none
// configured, the one kept in the data directory (made on first start).
// Nil, with no error, when push is off or has no key.
func vapidKey(cfg Config, log *slog.Logger) (*webpush.VAPIDKey, error) {
	switch {
	case !cfg.Push:
		return nil, nil
	case cfg.VAPIDPrivateKey != "":
		return webpush.ParseVAPIDKey(cfg.VAPIDPrivateKey)
	case cfg.Store == "embedded":
		return webpush.LoadOrCreateVAPIDKey(filepath.Join(cfg.DataDir, "vapid.pem"))
	}
	log.Warn("push notifications are off: set CHAT_VAPID_PRIVATE_KEY, the same on every instance, to send them")
	return nil, nil
}

// startNotifier starts reading the outbox, if push or email digests are
// on, until the server closes: it sends the notices as Web Push
// notifications, and keeps them for the digests it sends when due.
func (s *Server) startNotifier(ctx context.Context, core *chat.Service) error {
	s.stopNotifier = func() {}
	key, err := vapidKey(s.cfg, s.log)
	if err != nil {
		return err
	}
	var sender *webpush.Sender
	if key != nil {
		if sender, err = webpush.NewSender(webpush.Config{Key: key, Contact: s.cfg.VAPIDContact, AllowLoopback: s.cfg.PushAllowLoopback}); err != nil {
			return fmt.Errorf("push notifications: %w", err)
		}
		core.Push = &chat.Push{PublicKey: key.PublicKey(), AllowLoopback: s.cfg.PushAllowLoopback}
	}
	if !core.Notifies() {
		return nil
	}
	holder := make([]byte, 8)
	_, _ = rand.Read(holder)
	n := &notify.Notifier{
		Outbox: s.store, Subscriptions: chat.PushTargets{Service: core}, Push: sender, Compose: core.ComposeNotification,
		Holder: hex.EncodeToString(holder), Log: s.log, Poll: s.cfg.NotifyPoll, MaxBackoff: s.cfg.NotifyMaxBackoff,
	}
	if core.Email != nil && core.Email.DigestAfter > 0 {
		// A digest is due hours after its first message: its shard's due
		// digests are read a tenth of that apart, from every Poll to
		// every minute.
		n.Digests, n.DigestPoll = core, min(core.Email.DigestAfter/10, time.Minute)
	}
	ctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.Run(ctx)
	}()
	s.stopNotifier = func() {
		stop()
		<-done
		if sender != nil {
			sender.Close()
		}
	}
	s.notifier = n
	return nil
}

// NoticesHandled is how many notices this instance's notifier is done
// with (told, or not to be told): for tests that wait for it.
func (s *Server) NoticesHandled() uint64 {
	if s.notifier == nil {
		return 0
	}
	return s.notifier.Handled()
}
