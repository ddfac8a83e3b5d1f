package mail

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// ErrTimeout reports an exchange that did not finish within the
// SendTimeout (or the context's deadline); the error wraps the cause too.
var ErrTimeout = errors.New("mail: timed out")

// SMTPMailer sends digests through an SMTP relay, one connection per
// message. It is safe for concurrent use.
type SMTPMailer struct {
	cfg Config
}

// NewSMTPMailer returns a mailer for cfg; zero timeouts get the defaults.
func NewSMTPMailer(cfg Config) *SMTPMailer {
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	if cfg.SendTimeout <= 0 {
		cfg.SendTimeout = DefaultSendTimeout
	}
	return &SMTPMailer{cfg: cfg}
}

// SendDigest composes d and sends it to d.To.
func (m *SMTPMailer) SendDigest(ctx context.Context, d Digest) error {
	msg, err := Compose(m.cfg.From, d)
	if err != nil {
		return err
	}
	return m.Send(ctx, d.To.Address, msg)
}

// Send sends a composed message to one recipient. The whole exchange is
// bounded by the config's SendTimeout. An error from the server wraps an
// *smtp.SMTPError; see IsPermanent.
func (m *SMTPMailer) Send(ctx context.Context, to string, msg []byte) error {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.SendTimeout)
	defer cancel()
	err := m.send(ctx, to, msg)
	if err != nil && (ctx.Err() != nil || isNetTimeout(err)) {
		return fmt.Errorf("%w: %w", ErrTimeout, err)
	}
	return err
}

// isNetTimeout reports whether err is a network timeout, such as the
// client's per-command deadline running out.
func isNetTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// send connects, runs the transaction and quits. The connection is closed
// as soon as the context ends, whatever the exchange is waiting for.
func (m *SMTPMailer) send(ctx context.Context, to string, msg []byte) error {
	conn, err := m.dial(ctx)
	if err != nil {
		return fmt.Errorf("mail: connecting to %s: %w", m.cfg.addr(), err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	c, err := m.newClient(conn)
	if err != nil {
		return fmt.Errorf("mail: greeting %s: %w", m.cfg.addr(), err)
	}
	if err := m.auth(c); err != nil {
		return err
	}
	if err := m.transact(c, to, msg); err != nil {
		return err
	}
	if err := c.Quit(); err != nil {
		return fmt.Errorf("mail: QUIT: %w", err)
	}
	return nil
}

// dial opens the connection, in TLS for smtps.
func (m *SMTPMailer) dial(ctx context.Context) (net.Conn, error) {
	nd := &net.Dialer{Timeout: m.cfg.DialTimeout}
	if m.cfg.ImplicitTLS {
		td := &tls.Dialer{NetDialer: nd, Config: m.cfg.tlsConfig()}
		return td.DialContext(ctx, "tcp", m.cfg.addr())
	}
	return nd.DialContext(ctx, "tcp", m.cfg.addr())
}

// newClient wraps the connection in an SMTP client, upgrading it with
// STARTTLS if configured (which reads the greeting and sends EHLO).
func (m *SMTPMailer) newClient(conn net.Conn) (*smtp.Client, error) {
	if m.cfg.ImplicitTLS || !m.cfg.StartTLS {
		c := smtp.NewClient(conn)
		m.setTimeouts(c)
		return c, nil
	}
	c, err := smtp.NewClientStartTLS(conn, m.cfg.tlsConfig())
	if err != nil {
		return nil, err
	}
	m.setTimeouts(c)
	return c, nil
}

// setTimeouts bounds each command by the whole exchange's timeout; the
// context closes the connection when that runs out anyway.
func (m *SMTPMailer) setTimeouts(c *smtp.Client) {
	c.CommandTimeout = m.cfg.SendTimeout
	c.SubmissionTimeout = m.cfg.SendTimeout
}

// auth authenticates with AUTH PLAIN if the config has credentials,
// refusing to do so in clear except with a loopback relay.
func (m *SMTPMailer) auth(c *smtp.Client) error {
	if m.cfg.Username == "" {
		return nil
	}
	if _, isTLS := c.TLSConnectionState(); !isTLS && !isLoopback(m.cfg.Host) {
		return fmt.Errorf("mail: refusing to send credentials without TLS to %s", m.cfg.Host)
	}
	if err := c.Auth(sasl.NewPlainClient("", m.cfg.Username, m.cfg.Password)); err != nil {
		return fmt.Errorf("mail: AUTH PLAIN as %q: %w", m.cfg.Username, err)
	}
	return nil
}

// transact sends MAIL FROM, RCPT TO and DATA.
func (m *SMTPMailer) transact(c *smtp.Client, to string, msg []byte) error {
	if err := c.Mail(m.cfg.From.Address, nil); err != nil {
		return fmt.Errorf("mail: MAIL FROM:<%s> refused: %w", m.cfg.From.Address, err)
	}
	if err := c.Rcpt(to, nil); err != nil {
		return fmt.Errorf("mail: RCPT TO:<%s> refused: %w", to, err)
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("mail: DATA refused: %w", err)
	}
	if _, err := w.Write(msg); err != nil {
		w.Close()
		return fmt.Errorf("mail: writing the message: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("mail: message refused after DATA: %w", err)
	}
	return nil
}

// IsPermanent reports whether err carries a permanent (5xx) SMTP reply, so
// that sending the same message again is pointless.
func IsPermanent(err error) bool {
	var se *smtp.SMTPError
	return errors.As(err, &se) && se.Code >= 500 && se.Code < 600
}
