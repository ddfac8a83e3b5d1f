package mail

import (
	"context"
	"log/slog"
)

// Mailer sends digests and letters.
type Mailer interface {
	// SendDigest composes and sends d, returning once the relay accepted
	// it (or, for LogMailer, once it is logged).
	SendDigest(ctx context.Context, d Digest) error
	// SendLetter composes and sends l, likewise.
	SendLetter(ctx context.Context, l Letter) error
}

// New returns an SMTPMailer for the URL, or a LogMailer writing to logger
// if the URL is empty.
func New(smtpURL string, logger *slog.Logger) (Mailer, error) {
	if smtpURL == "" {
		return NewLogMailer(logger), nil
	}
	cfg, err := ParseURL(smtpURL)
	if err != nil {
		return nil, err
	}
	return NewSMTPMailer(cfg), nil
}

// LogMailer writes digests to a logger instead of sending them, for
// servers run without SMTP.
type LogMailer struct {
	logger *slog.Logger
}

// NewLogMailer returns a LogMailer; a nil logger means slog.Default().
func NewLogMailer(logger *slog.Logger) *LogMailer {
	if logger == nil {
		logger = slog.Default()
	}
	return &LogMailer{logger: logger}
}

// SendDigest logs the recipient, the number of items, the unsubscribe
// link and the text part of d at Info level.
func (m *LogMailer) SendDigest(ctx context.Context, d Digest) error {
	text, err := TextBody(d)
	if err != nil {
		return err
	}
	link, _ := d.unsubscribeLink()
	m.logger.InfoContext(ctx, "mail: digest not sent (no SMTP configured)",
		"to", d.To.Address, "items", len(d.Items), "unsubscribe", link, "text", text)
	return nil
}
