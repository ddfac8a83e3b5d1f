package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/killrchat/chatql/chat"
	"github.com/killrchat/chatql/notify"
	"github.com/killrchat/chatql/notify/webhook"
)

// startWebhooks starts delivering the rooms' events to their webhooks, in
// the background, until the server closes.
func (s *Server) startWebhooks(ctx context.Context, core *chat.Service) {
	core.WebhooksAllowLoopback = s.cfg.WebhooksAllowLoopback
	sender := webhook.NewSender(webhook.Options{AllowLoopback: s.cfg.WebhooksAllowLoopback})
	holder := make([]byte, 8)
	_, _ = rand.Read(holder)
	d := &notify.Deliverer{
		Store: s.store, Sender: sender, Body: chat.WebhookBody, Holder: hex.EncodeToString(holder),
		Log: s.log, Poll: s.cfg.WebhookPoll, Retry: retrySchedule(s.cfg.WebhookRetryDelay),
	}
	ctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Run(ctx)
	}()
	s.stopWebhooks = func() { stop(); <-done; sender.Close() }
	s.deliverer = d
}

// retrySchedule is webhook.Next's schedule (nil), or, for tests, one
// that waits delay before each retry and gives up after as many attempts.
func retrySchedule(delay time.Duration) func(int, webhook.Result) (time.Duration, bool) {
	if delay <= 0 {
		return nil
	}
	return func(attempt int, r webhook.Result) (time.Duration, bool) {
		if _, again := webhook.Next(attempt, r); !again {
			return 0, false
		}
		return delay, true
	}
}

// WebhookEventsDelivered is how many events this instance delivered to
// webhooks (acknowledged by their receivers): for tests.
func (s *Server) WebhookEventsDelivered() uint64 {
	if s.deliverer == nil {
		return 0
	}
	return s.deliverer.Delivered()
}
