package mail

import (
	"bytes"
	"context"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net/mail"
	"strings"
	"time"
)

// Letter is a plain-text email about the recipient's account, such as an
// address verification or a password reset: a subject and a text, which
// carries the link.
type Letter struct {
	To      mail.Address
	Subject string
	Text    string
	// Date is the message's date; zero means now.
	Date time.Time
}

// check refuses a letter without a valid recipient, or whose subject
// could inject a header.
func (l Letter) check() error {
	if strings.ContainsAny(l.To.Name+l.To.Address+l.Subject, "\r\n") {
		return fmt.Errorf("%w: recipient or subject contains a line break", ErrDigest)
	}
	if _, err := mail.ParseAddress(l.To.Address); err != nil || l.To.Address == "" {
		return fmt.Errorf("%w: recipient %q: %v", ErrDigest, l.To.Address, err)
	}
	if l.Subject == "" || l.Text == "" {
		return fmt.Errorf("%w: a letter needs a subject and a text", ErrDigest)
	}
	return nil
}

// ComposeLetter returns the RFC 5322 message of a letter: text/plain,
// UTF-8 in quoted-printable.
func ComposeLetter(from mail.Address, l Letter) ([]byte, error) {
	if err := l.check(); err != nil {
		return nil, err
	}
	date := l.Date
	if date.IsZero() {
		date = time.Now()
	}
	var buf bytes.Buffer
	for _, line := range []string{
		"From: " + from.String(),
		"To: " + l.To.String(),
		"Subject: " + mime.QEncoding.Encode("utf-8", l.Subject),
		"Date: " + date.Format(time.RFC1123Z),
		"Message-ID: " + messageID(from.Address),
		"MIME-Version: 1.0",
		"Auto-Submitted: auto-generated",
		"Content-Type: text/plain; charset=utf-8",
		"Content-Transfer-Encoding: quoted-printable",
	} {
		buf.WriteString(line + "\r\n")
	}
	buf.WriteString("\r\n")
	qp := quotedprintable.NewWriter(&buf)
	if _, err := qp.Write(crlf([]byte(l.Text))); err != nil {
		return nil, err
	}
	if err := qp.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// SendLetter composes l and sends it to l.To.
func (m *SMTPMailer) SendLetter(ctx context.Context, l Letter) error {
	msg, err := ComposeLetter(m.cfg.From, l)
	if err != nil {
		return err
	}
	return m.Send(ctx, l.To.Address, msg)
}

// SendLetter logs the recipient, the subject and the text of l (with its
// link, which a developer can then open) at Info level.
func (m *LogMailer) SendLetter(ctx context.Context, l Letter) error {
	if err := l.check(); err != nil {
		return err
	}
	m.logger.InfoContext(ctx, "mail: letter not sent (no SMTP configured)", "to", l.To.Address, "subject", l.Subject, "text", l.Text)
	return nil
}
