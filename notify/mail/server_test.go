package mail

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// serverOptions shape the behaviour of a test SMTP server.
type serverOptions struct {
	// user and pass, if user is set, are required with AUTH PLAIN before
	// MAIL FROM.
	user, pass string
	// refuseRcpt makes every RCPT TO fail with 550.
	refuseRcpt bool
	// holdData, if set, makes DATA wait until it is closed.
	holdData chan struct{}
	// tls, if set, offers STARTTLS with this configuration.
	tls *tls.Config
}

// transaction is what the test server recorded of one SMTP session.
type transaction struct {
	authUser string
	from     string
	rcpts    []string
	data     []byte
	tls      bool
}

// recorder is the backend of the test server.
type recorder struct {
	opts serverOptions
	mu   sync.Mutex
	txs  []*transaction
}

// startServer runs a go-smtp server on a loopback port until the test
// ends, returning its address and its recorder.
func startServer(t *testing.T, opts serverOptions) (string, *recorder) {
	t.Helper()
	rec := &recorder{opts: opts}
	s := smtp.NewServer(rec)
	s.Domain = "localhost"
	s.AllowInsecureAuth = true // loopback only, in tests
	s.ReadTimeout = 10 * time.Second
	s.WriteTimeout = 10 * time.Second
	s.TLSConfig = opts.tls
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return ln.Addr().String(), rec
}

// transactions returns what the server recorded so far.
func (r *recorder) transactions() []transaction {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]transaction, 0, len(r.txs))
	for _, tx := range r.txs {
		out = append(out, *tx)
	}
	return out
}

// NewSession starts recording a session.
func (r *recorder) NewSession(c *smtp.Conn) (smtp.Session, error) {
	_, isTLS := c.TLSConnectionState()
	tx := &transaction{tls: isTLS}
	r.mu.Lock()
	r.txs = append(r.txs, tx)
	r.mu.Unlock()
	return &session{rec: r, tx: tx, conn: c}, nil
}

// session is one recorded SMTP session.
type session struct {
	rec  *recorder
	tx   *transaction
	conn *smtp.Conn
}

// AuthMechanisms offers PLAIN.
func (s *session) AuthMechanisms() []string { return []string{sasl.Plain} }

// Auth checks PLAIN credentials against the server's options.
func (s *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != s.rec.opts.user || pass != s.rec.opts.pass {
			return smtp.ErrAuthFailed
		}
		s.record(func(tx *transaction) { tx.authUser = user })
		return nil
	}), nil
}

// record changes the transaction under the recorder's lock.
func (s *session) record(f func(*transaction)) {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	f(s.tx)
}

// Mail requires authentication if the server has credentials.
func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	s.rec.mu.Lock()
	authed := s.tx.authUser != ""
	s.rec.mu.Unlock()
	if s.rec.opts.user != "" && !authed {
		return smtp.ErrAuthRequired
	}
	_, isTLS := s.conn.TLSConnectionState()
	s.record(func(tx *transaction) { tx.from, tx.tls = from, isTLS })
	return nil
}

// Rcpt records or refuses a recipient.
func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if s.rec.opts.refuseRcpt {
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user here"}
	}
	s.record(func(tx *transaction) { tx.rcpts = append(tx.rcpts, to) })
	return nil
}

// Data records the message, after waiting for holdData if set.
func (s *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if s.rec.opts.holdData != nil {
		<-s.rec.opts.holdData
	}
	s.record(func(tx *transaction) { tx.data = b })
	return nil
}

// Reset does nothing: a session sends one message.
func (s *session) Reset() {}

// Logout does nothing.
func (s *session) Logout() error { return nil }

// testCert returns a server configuration with a self-signed certificate
// for 127.0.0.1 and a client configuration that trusts it.
func testCert(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "test smtp"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	server = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	client = &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	return server, client
}

// errorsAs is errors.As for tests that need the target back.
func errorsAs[T error](err error) (T, bool) {
	var target T
	ok := errors.As(err, &target)
	return target, ok
}
