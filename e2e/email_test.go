package e2e

import (
	"bytes"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/http"
	netmail "net/mail"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/server"
	"github.com/killrchat/chatql/store"
)

// A mailbox is an SMTP server on loopback that keeps every message it
// receives: the server under test talks real SMTP to it.
type mailbox struct {
	addr string
	mu   sync.Mutex
	msgs []received
}

// received is one message as the mailbox got it.
type received struct {
	to     string
	header netmail.Header
	text   string // the text/plain part, decoded
}

// startMailbox runs a mailbox until the test ends.
func startMailbox(t *testing.T) *mailbox {
	t.Helper()
	mb := &mailbox{}
	s := smtp.NewServer(mb)
	s.Domain = "localhost"
	s.ReadTimeout, s.WriteTimeout = 10*time.Second, 10*time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	mb.addr = ln.Addr().String()
	return mb
}

// smtpURL is the server's CHAT_SMTP_URL for the mailbox.
func (mb *mailbox) smtpURL() string {
	return "smtp://" + mb.addr + "?from=chatql%20%3Cchat@example.com%3E&starttls=false"
}

func (mb *mailbox) NewSession(*smtp.Conn) (smtp.Session, error) { return &mailSession{mb: mb}, nil }

// mailSession receives one message.
type mailSession struct {
	mb *mailbox
	to []string
}

func (s *mailSession) Mail(string, *smtp.MailOptions) error { return nil }
func (s *mailSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.to = append(s.to, to)
	return nil
}
func (s *mailSession) Reset()        {}
func (s *mailSession) Logout() error { return nil }

// Data parses the message and keeps it once per recipient.
func (s *mailSession) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	msg, err := netmail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	text, err := textPart(msg)
	if err != nil {
		return err
	}
	s.mb.mu.Lock()
	defer s.mb.mu.Unlock()
	for _, to := range s.to {
		s.mb.msgs = append(s.mb.msgs, received{to: to, header: msg.Header, text: text})
	}
	return nil
}

// textPart is the decoded text/plain of a message, alone or in a
// multipart/alternative.
func textPart(msg *netmail.Message) (string, error) {
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		return "", err
	}
	if mediaType == "text/plain" {
		b, err := io.ReadAll(quotedprintable.NewReader(msg.Body))
		return string(b), err
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := mr.NextRawPart()
		if err != nil {
			return "", err
		}
		if strings.HasPrefix(p.Header.Get("Content-Type"), "text/plain") {
			b, err := io.ReadAll(quotedprintable.NewReader(p))
			return string(b), err
		}
	}
}

// to lists the messages to an address, in the order received.
func (mb *mailbox) to(addr string) []received {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	var out []received
	for _, m := range mb.msgs {
		if m.to == addr {
			out = append(out, m)
		}
	}
	return out
}

// wait waits for the n-th message to addr and returns it. It waits up to
// 30 seconds: a restarted server first waits for the outbox leases of the
// one killed to run out.
func (mb *mailbox) wait(t *testing.T, addr string, n int) received {
	t.Helper()
	var got []received
	eventually(t, 30*time.Second, "mail to "+addr, func() (bool, any) {
		got = mb.to(addr)
		return len(got) >= n, len(got)
	})
	return got[n-1]
}

var linkToken = regexp.MustCompile(`/email/(verify|reset)\?token=([A-Za-z0-9_-]+)`)

// token is the token of the link of purpose ("verify" or "reset") in m.
func (m received) token(t *testing.T, purpose string) string {
	t.Helper()
	match := linkToken.FindStringSubmatch(m.text)
	if match == nil || match[1] != purpose {
		t.Fatalf("no %s link in the mail to %s:\n%s", purpose, m.to, m.text)
	}
	return match[2]
}

// emailConfig sends mail to mb, reads the outbox often, and counts no one
// online once their connections closed.
func emailConfig(cfg server.Config, mb *mailbox) server.Config {
	cfg.SMTPURL = mb.smtpURL()
	cfg.PublicURL = "https://chat.example.com"
	cfg.NotifyPoll = 20 * time.Millisecond
	cfg.PresenceGrace = 0
	return cfg
}

const (
	meEmailQ      = `{ me { email emailVerified emailDigests } }`
	setEmailQ     = `mutation($e: String!) { setEmail(email: $e) { email emailVerified } }`
	verifyEmailQ  = `mutation($t: String!) { verifyEmail(token: $t) }`
	requestResetQ = `mutation($e: String!) { requestPasswordReset(email: $e) }`
	resetQ        = `mutation($t: String!, $p: String!) { resetPassword(token: $t, newPassword: $p) }`
)

// emailState is what me says of the caller's email.
type emailState struct {
	Email         string
	EmailVerified bool
	EmailDigests  bool
}

func myEmail(t *testing.T, c *chatclient.Client) emailState {
	t.Helper()
	var out struct{ Me emailState }
	mustDo(t, c, meEmailQ, nil, &out)
	return out.Me
}

// verifiedEmail gives c the address and verifies it with the link mailed
// to it (the n-th mail to it).
func verifiedEmail(t *testing.T, c *chatclient.Client, mb *mailbox, addr string, n int) {
	t.Helper()
	mustDo(t, c, setEmailQ, map[string]any{"e": addr}, nil)
	mustDo(t, c, verifyEmailQ, map[string]any{"t": mb.wait(t, addr, n).token(t, "verify")}, nil)
}

func TestEmailVerification(t *testing.T) { forEachStore(t, testEmailVerification) }

// testEmailVerification: an address given at signup is mailed a link,
// through real SMTP; the link verifies it once; a changed address is
// unverified again and its old link refused; the link's page only shows
// a form until it is posted.
func testEmailVerification(t *testing.T, cfg server.Config) {
	mb := startMailbox(t)
	ts := startServer(t, emailConfig(cfg, mb))
	mustDo(t, ts.Client, `mutation($in: SignupInput!) { signup(input: $in) { login } }`,
		map[string]any{"in": map[string]any{"login": "bob", "password": "password-bob", "firstname": "Bob", "lastname": "Tester", "email": "bob@example.com"}}, nil)
	var login struct{ Login struct{ Token string } }
	mustDo(t, ts.Client, `mutation { login(login: "bob", password: "password-bob") { token } }`, nil, &login)
	bob := ts.Client.WithToken(login.Login.Token)

	m := mb.wait(t, "bob@example.com", 1)
	if got := m.header.Get("Subject"); got != "Confirm your email address on chatql" {
		t.Fatalf("Subject %q", got)
	}
	if !strings.Contains(m.text, "https://chat.example.com/email/verify?token=") {
		t.Fatalf("the link does not start with the public URL:\n%s", m.text)
	}
	if st := myEmail(t, bob); st.Email != "bob@example.com" || st.EmailVerified || !st.EmailDigests {
		t.Fatalf("after signup: %+v", st)
	}
	token := m.token(t, "verify")

	// The page of the link shows a form and uses nothing up.
	base := strings.TrimSuffix(ts.URL, "/query")
	resp, err := http.Get(base + "/email/verify?token=" + token)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `method="post"`) || myEmail(t, bob).EmailVerified {
		t.Fatalf("GET of the link: %d %s", resp.StatusCode, body)
	}
	resp, err = http.PostForm(base+"/email/verify", url.Values{"token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !myEmail(t, bob).EmailVerified {
		t.Fatalf("POST of the link: %d; verified %v", resp.StatusCode, myEmail(t, bob).EmailVerified)
	}
	wantCode(t, ts.Client, "BAD_USER_INPUT", verifyEmailQ, map[string]any{"t": token})
	wantCode(t, ts.Client, "BAD_USER_INPUT", verifyEmailQ, map[string]any{"t": "made-up"})

	// A new address is unverified, mailed a link of its own; the link to
	// an address the account no longer has is refused.
	mustDo(t, bob, setEmailQ, map[string]any{"e": "bob@work.example"}, nil)
	if st := myEmail(t, bob); st.Email != "bob@work.example" || st.EmailVerified {
		t.Fatalf("after setEmail: %+v", st)
	}
	work := mb.wait(t, "bob@work.example", 1).token(t, "verify")
	mustDo(t, bob, setEmailQ, map[string]any{"e": "bob@home.example"}, nil)
	wantCode(t, ts.Client, "BAD_USER_INPUT", verifyEmailQ, map[string]any{"t": work})
	mustDo(t, bob, `mutation { requestEmailVerification }`, nil, nil)
	mustDo(t, ts.Client, verifyEmailQ, map[string]any{"t": mb.wait(t, "bob@home.example", 2).token(t, "verify")}, nil)
	if st := myEmail(t, bob); !st.EmailVerified {
		t.Fatalf("after the second link: %+v", st)
	}
	for _, bad := range []string{"not-an-address", "Bob <bob@example.com>", "bob@", strings.Repeat("b", 250) + "@example.com"} {
		wantCode(t, bob, "BAD_USER_INPUT", setEmailQ, map[string]any{"e": bad})
	}
	wantCode(t, ts.Client, "UNAUTHENTICATED", setEmailQ, map[string]any{"e": "x@example.com"})
}

func TestPasswordReset(t *testing.T) { forEachStore(t, testPasswordReset) }

// testPasswordReset: a reset asked for any address answers the same; only
// a verified address is mailed a link; a bad new password leaves the link
// usable; using it changes the password and ends every session of the
// account, its live socket included; the link works once.
func testPasswordReset(t *testing.T, cfg server.Config) {
	mb := startMailbox(t)
	ts := startServer(t, emailConfig(cfg, mb))
	bob, carol := ts.user(t, "bob"), ts.user(t, "carol")
	verifiedEmail(t, bob, mb, "bob@example.com", 1)
	mustDo(t, carol, setEmailQ, map[string]any{"e": "carol@example.com"}, nil) // never verified
	mb.wait(t, "carol@example.com", 1)
	var second struct{ Login struct{ Token string } }
	mustDo(t, ts.Client, `mutation { login(login: "bob", password: "password-bob") { token } }`, nil, &second)
	bobToo := ts.Client.WithToken(second.Login.Token)
	live := ts.live(t, bobToo, `subscription { inboxEvents { kind } }`, nil)

	// The same answer for an unknown address, an unverified one, and a
	// verified one. The letters go in order, so once bob's has arrived
	// the others would have.
	for _, addr := range []string{"nobody@example.com", "carol@example.com", "BOB@example.com"} {
		var out struct{ RequestPasswordReset bool }
		mustDo(t, ts.Client, requestResetQ, map[string]any{"e": addr}, &out)
		if !out.RequestPasswordReset {
			t.Fatalf("requestPasswordReset(%s) = false", addr)
		}
	}
	m := mb.wait(t, "bob@example.com", 2)
	if n := len(mb.to("nobody@example.com")) + len(mb.to("carol@example.com")); n != 1 {
		t.Fatalf("%d mails to the unknown and unverified addresses, want carol's verification alone", n)
	}
	token := m.token(t, "reset")
	wantCode(t, ts.Client, "BAD_USER_INPUT", resetQ, map[string]any{"t": token, "p": "short"})
	mustDo(t, ts.Client, resetQ, map[string]any{"t": token, "p": "new-password-bob"}, nil)

	wantCode(t, bob, "UNAUTHENTICATED", meEmailQ, nil)
	wantCode(t, bobToo, "UNAUTHENTICATED", meEmailQ, nil)
	wantClosed4401(t, live)
	wantCode(t, ts.Client, "UNAUTHENTICATED", `mutation { login(login: "bob", password: "password-bob") { token } }`, nil)
	mustDo(t, ts.Client, `mutation { login(login: "bob", password: "new-password-bob") { token } }`, nil, nil)
	wantCode(t, ts.Client, "BAD_USER_INPUT", resetQ, map[string]any{"t": token, "p": "newer-password-bob"})
	if st := myEmail(t, carol); st.EmailVerified {
		t.Fatal("carol's address got verified")
	}
	wantCode(t, ts.Client, "BAD_USER_INPUT", requestResetQ, map[string]any{"e": "no address"})
}

func TestEmailRateLimits(t *testing.T) { forEachStore(t, testEmailRateLimits) }

// testEmailRateLimits: requests for links are limited per address asked
// about (whether or not it is anyone's) and per client address.
func testEmailRateLimits(t *testing.T, cfg server.Config) {
	mb := startMailbox(t)
	cfg = emailConfig(cfg, mb)
	cfg.RateLimits[ratelimit.EmailTo] = ratelimit.Limit{Rate: 2, Period: time.Hour, Burst: 2}
	cfg.RateLimits[ratelimit.EmailRequest] = ratelimit.Limit{Rate: 5, Period: time.Hour, Burst: 5}
	ts := startServer(t, cfg)
	for range 2 {
		mustDo(t, ts.Client, requestResetQ, map[string]any{"e": "nobody@example.com"}, nil)
	}
	wantCode(t, ts.Client, "RATE_LIMITED", requestResetQ, map[string]any{"e": "Nobody@Example.com"})
	mustDo(t, ts.Client, requestResetQ, map[string]any{"e": "someone@example.com"}, nil)
	mustDo(t, ts.Client, requestResetQ, map[string]any{"e": "someone-else@example.com"}, nil)
	wantCode(t, ts.Client, "RATE_LIMITED", requestResetQ, map[string]any{"e": "fresh@example.com"})
	wantCode(t, ts.Client, "RATE_LIMITED", verifyEmailQ, map[string]any{"t": "guess"})
}

func TestEmailDigest(t *testing.T) { forEachStore(t, testEmailDigest) }

// testEmailDigest: someone away with a verified address is mailed one
// digest of their unread direct message and mention, with a one-click
// unsubscribe that works; someone with an unverified address gets none;
// a second digest waits for the period.
func testEmailDigest(t *testing.T, cfg server.Config) {
	mb := startMailbox(t)
	cfg = emailConfig(cfg, mb)
	// Long enough for the mention to be read from the outbox within it of
	// the direct message, however slow the machine: both are in one digest.
	cfg.EmailDigestAfter = 2 * time.Second
	cfg.EmailDigestEvery = time.Hour
	ts, alice, bob, carol := teaParty(t, cfg)
	mustDo(t, carol, joinRoom, map[string]any{"r": "tea-party"}, nil)
	verifiedEmail(t, bob, mb, "bob@example.com", 1)
	mustDo(t, carol, setEmailQ, map[string]any{"e": "carol@example.com"}, nil)
	mb.wait(t, "carol@example.com", 1)

	handled := ts.NoticesHandled()
	mustDo(t, alice, `mutation { sendDirectMessage(to: "bob", content: "lunch at noon?") { id } }`, nil, nil)
	mustDo(t, alice, `mutation { sendDirectMessage(to: "carol", content: "lunch at one?") { id } }`, nil, nil)
	mustDo(t, alice, `mutation { postMessage(room: "tea-party", content: "@bob @carol the <b>tea</b> is ready") { id } }`, nil, nil)

	m := mb.wait(t, "bob@example.com", 2)
	if got := m.header.Get("Subject"); got != "2 unread messages on chatql" {
		t.Fatalf("digest Subject %q\n%s", got, m.text)
	}
	for _, want := range []string{"Direct message in your conversation with Alice Tester from Alice Tester", "lunch at noon?", "Mention in #tea-party from Alice Tester", "the <b>tea</b> is ready"} {
		if !strings.Contains(m.text, want) {
			t.Fatalf("the digest lacks %q:\n%s", want, m.text)
		}
	}
	if m.header.Get("List-Unsubscribe-Post") != "List-Unsubscribe=One-Click" {
		t.Fatalf("List-Unsubscribe-Post %q", m.header.Get("List-Unsubscribe-Post"))
	}

	// Carol's notices were handled without keeping a digest for her.
	waitFor(t, func() bool { return ts.NoticesHandled() >= handled+4 })
	ctx := testContext(t)
	if kept, err := ts.Store().DigestNotices(ctx, "carol"); err != nil || len(kept) != 0 {
		t.Fatalf("carol, unverified, has a digest of %d notices (%v)", len(kept), err)
	}
	if n := len(mb.to("carol@example.com")); n != 1 {
		t.Fatalf("%d mails to carol, want her verification alone", n)
	}

	// The next message waits for the period: due in an hour, not now.
	mustDo(t, alice, `mutation { sendDirectMessage(to: "bob", content: "still there?") { id } }`, nil, nil)
	shard := store.NoticeShard("bob")
	eventually(t, 10*time.Second, "bob's next digest is scheduled", func() (bool, any) {
		due, err := ts.Store().DueDigests(ctx, shard, time.Now().Add(2*time.Hour), 1000)
		return err == nil && contains(due, "bob"), due
	})
	if due, err := ts.Store().DueDigests(ctx, shard, time.Now().Add(time.Minute), 1000); err != nil || contains(due, "bob") {
		t.Fatalf("bob's second digest is due within the period: %v, %v", due, err)
	}
	if n := len(mb.to("bob@example.com")); n != 2 {
		t.Fatalf("%d mails to bob, want the verification and one digest", n)
	}

	// The unsubscribe link: a GET shows a form, the one-click POST of RFC
	// 8058 turns digests off; setEmailDigests turns them back on.
	link := strings.Trim(m.header.Get("List-Unsubscribe"), "<>")
	u, err := url.Parse(link)
	if err != nil || !strings.HasPrefix(link, "https://chat.example.com/email/unsubscribe?token=") {
		t.Fatalf("List-Unsubscribe %q", link)
	}
	local := strings.TrimSuffix(ts.URL, "/query") + u.RequestURI()
	resp, err := http.Get(local)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !myEmail(t, bob).EmailDigests {
		t.Fatalf("GET of the unsubscribe link: %d, digests %v", resp.StatusCode, myEmail(t, bob).EmailDigests)
	}
	resp, err = http.Post(local, "application/x-www-form-urlencoded", strings.NewReader("List-Unsubscribe=One-Click"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || myEmail(t, bob).EmailDigests {
		t.Fatalf("one-click unsubscribe: %d, digests %v", resp.StatusCode, myEmail(t, bob).EmailDigests)
	}
	resp, err = http.Post(local+"x", "application/x-www-form-urlencoded", strings.NewReader("List-Unsubscribe=One-Click"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a forged unsubscribe link: %d, want 400", resp.StatusCode)
	}
	var on struct{ SetEmailDigests emailState }
	mustDo(t, bob, `mutation { setEmailDigests(on: true) { emailDigests } }`, nil, &on)
	if !on.SetEmailDigests.EmailDigests {
		t.Fatal("setEmailDigests(on: true) left them off")
	}
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }

// TestEmailConfig: CHAT_EMAIL_DIGEST_AFTER takes a duration, 0 or off;
// a bad one, a bad SMTP URL or a link TTL under a second is refused.
func TestEmailConfig(t *testing.T) {
	for _, c := range []struct {
		env   map[string]string
		after time.Duration
		bad   bool
	}{
		{nil, time.Hour, false},
		{map[string]string{"CHAT_EMAIL_DIGEST_AFTER": "off"}, 0, false},
		{map[string]string{"CHAT_EMAIL_DIGEST_AFTER": "0"}, 0, false},
		{map[string]string{"CHAT_EMAIL_DIGEST_AFTER": "30m", "CHAT_SMTP_URL": "smtps://u:p@smtp.example.com?from=chat@example.com"}, 30 * time.Minute, false},
		{map[string]string{"CHAT_EMAIL_DIGEST_AFTER": "-1m"}, 0, true},
		{map[string]string{"CHAT_EMAIL_DIGEST_AFTER": "soon"}, 0, true},
		{map[string]string{"CHAT_SMTP_URL": "smtp://smtp.example.com"}, 0, true}, // no from
		{map[string]string{"CHAT_SMTP_URL": "http://smtp.example.com?from=chat@example.com"}, 0, true},
		{map[string]string{"CHAT_EMAIL_LINK_TTL": "10ms"}, 0, true},
	} {
		cfg, err := server.ParseConfig(nil, func(k string) string { return c.env[k] })
		if (err != nil) != c.bad || err == nil && cfg.EmailDigestAfter != c.after {
			t.Errorf("%v: digest after %v, error %v; want %v, error %v", c.env, cfg.EmailDigestAfter, err, c.after, c.bad)
		}
	}
}
