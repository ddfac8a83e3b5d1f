package mail

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	netmail "net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

// testDigest is a digest with an item whose text tries to inject HTML.
func testDigest() Digest {
	return Digest{
		To: netmail.Address{Name: "Alice Example", Address: "alice@example.com"},
		Items: []Item{
			{Kind: Mention, Conversation: "#general", From: "bob", Excerpt: `hey @alice <script>alert("x")</script> & more`,
				Link: "https://chat.example.com/r/general/m/1", At: time.Date(2026, 11, 26, 22, 0, 0, 0, time.UTC)},
			{Kind: DirectMessage, Conversation: "carol", From: "<b>carol</b>", Excerpt: "lunch?",
				Link: "javascript:alert(1)"},
		},
		UnsubscribeURL:   "https://chat.example.com/email/unsubscribe",
		UnsubscribeToken: "tok+en/1",
	}
}

// mailerFor returns an SMTPMailer for the test server at addr.
func mailerFor(t *testing.T, rawURL string) *SMTPMailer {
	t.Helper()
	cfg, err := ParseURL(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return NewSMTPMailer(cfg)
}

// parts reads the two parts of a multipart/alternative message, decoding
// quoted-printable, keyed by content type.
func parts(t *testing.T, msg *netmail.Message) map[string]string {
	t.Helper()
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mediaType != "multipart/alternative" {
		t.Fatalf("Content-Type %q: %v", msg.Header.Get("Content-Type"), err)
	}
	out := map[string]string{}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := mr.NextRawPart()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if cte := p.Header.Get("Content-Transfer-Encoding"); cte != "quoted-printable" {
			t.Fatalf("part encoding %q", cte)
		}
		body, err := io.ReadAll(quotedprintable.NewReader(p))
		if err != nil {
			t.Fatal(err)
		}
		ct, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type"))
		out[ct] = string(body)
	}
}

func TestSendDigest(t *testing.T) {
	addr, rec := startServer(t, serverOptions{})
	m := mailerFor(t, "smtp://"+addr+"?from=chat@example.com&starttls=false")
	if err := m.SendDigest(context.Background(), testDigest()); err != nil {
		t.Fatal(err)
	}
	txs := rec.transactions()
	if len(txs) != 1 {
		t.Fatalf("server saw %d sessions, want 1", len(txs))
	}
	tx := txs[0]
	if tx.from != "chat@example.com" || len(tx.rcpts) != 1 || tx.rcpts[0] != "alice@example.com" {
		t.Fatalf("MAIL FROM %q, RCPT TO %q", tx.from, tx.rcpts)
	}
	msg, err := netmail.ReadMessage(bytes.NewReader(tx.data))
	if err != nil {
		t.Fatalf("the message does not parse: %v", err)
	}
	checkHeaders(t, msg.Header)
	p := parts(t, msg)
	checkText(t, p["text/plain"])
	checkHTML(t, p["text/html"])
}

// checkHeaders checks the addressing and unsubscribe headers.
func checkHeaders(t *testing.T, h netmail.Header) {
	t.Helper()
	want := map[string]string{
		"From":                  "<chat@example.com>",
		"To":                    `"Alice Example" <alice@example.com>`,
		"Subject":               "2 unread messages on chatql",
		"List-Unsubscribe":      "<https://chat.example.com/email/unsubscribe?token=tok%2Ben%2F1>",
		"List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
		"MIME-Version":          "1.0",
	}
	for name, v := range want {
		if got := h.Get(name); got != v {
			t.Errorf("%s = %q, want %q", name, got, v)
		}
	}
	if _, err := h.Date(); err != nil {
		t.Errorf("Date: %v", err)
	}
	if !strings.HasSuffix(h.Get("Message-ID"), "@example.com>") {
		t.Errorf("Message-ID = %q", h.Get("Message-ID"))
	}
}

// checkText checks the plain text part.
func checkText(t *testing.T, text string) {
	t.Helper()
	for _, s := range []string{"Hello Alice Example", "Mention in #general from bob (2026-11-26 22:00 UTC)",
		`<script>alert("x")</script>`, "https://chat.example.com/r/general/m/1", "Direct message in carol",
		"Unsubscribe: https://chat.example.com/email/unsubscribe?token=tok%2Ben%2F1"} {
		if !strings.Contains(text, s) {
			t.Errorf("text part lacks %q:\n%s", s, text)
		}
	}
	if strings.Contains(text, "javascript:") {
		t.Errorf("text part shows a javascript: link")
	}
}

// checkHTML checks that the HTML part escapes every user text.
func checkHTML(t *testing.T, html string) {
	t.Helper()
	for _, s := range []string{"&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; more", "&lt;b&gt;carol&lt;/b&gt;",
		`href="https://chat.example.com/r/general/m/1"`, `href="https://chat.example.com/email/unsubscribe?token=tok%2Ben%2F1"`} {
		if !strings.Contains(html, s) {
			t.Errorf("HTML part lacks %q:\n%s", s, html)
		}
	}
	for _, s := range []string{"<script>", "<b>carol", "javascript:"} {
		if strings.Contains(html, s) {
			t.Errorf("HTML part contains %q unescaped", s)
		}
	}
}

func TestAuthPlain(t *testing.T) {
	addr, rec := startServer(t, serverOptions{user: "chatql", pass: "s3cret"})
	m := mailerFor(t, "smtp://chatql:s3cret@"+addr+"?from=chat@example.com&starttls=false")
	if err := m.SendDigest(context.Background(), testDigest()); err != nil {
		t.Fatal(err)
	}
	if txs := rec.transactions(); len(txs) != 1 || txs[0].authUser != "chatql" || txs[0].data == nil {
		t.Fatalf("server recorded %+v, want one authenticated message", txs)
	}
}

func TestAuthRefused(t *testing.T) {
	addr, rec := startServer(t, serverOptions{user: "chatql", pass: "s3cret"})
	wrong := mailerFor(t, "smtp://chatql:guess@"+addr+"?from=chat@example.com&starttls=false")
	err := wrong.SendDigest(context.Background(), testDigest())
	if err == nil || !strings.Contains(err.Error(), "AUTH") || !IsPermanent(err) {
		t.Fatalf("wrong password: err = %v, want a permanent AUTH error", err)
	}
	anonymous := mailerFor(t, "smtp://"+addr+"?from=chat@example.com&starttls=false")
	err = anonymous.SendDigest(context.Background(), testDigest())
	if se, ok := errorsAs[*smtp.SMTPError](err); !ok || se.Code/100 != 5 || !strings.Contains(err.Error(), "MAIL FROM") {
		t.Fatalf("no credentials: err = %v, want MAIL FROM refused with 5xx", err)
	}
	for _, tx := range rec.transactions() {
		if tx.data != nil {
			t.Fatalf("a message was accepted without authentication")
		}
	}
}

func TestStartTLS(t *testing.T) {
	serverTLS, clientTLS := testCert(t)
	addr, rec := startServer(t, serverOptions{user: "chatql", pass: "s3cret", tls: serverTLS})
	cfg, err := ParseURL("smtp://chatql:s3cret@" + addr + "?from=chat@example.com")
	if err != nil {
		t.Fatal(err)
	}
	cfg.TLSConfig = clientTLS
	if err := NewSMTPMailer(cfg).SendDigest(context.Background(), testDigest()); err != nil {
		t.Fatal(err)
	}
	// The server starts a new session after STARTTLS; the message must
	// arrive in one that is encrypted, and nothing in any other.
	delivered := 0
	for _, tx := range rec.transactions() {
		switch {
		case tx.data != nil && tx.tls && tx.authUser == "chatql":
			delivered++
		case tx.from != "" || tx.authUser != "":
			t.Fatalf("server recorded %+v outside TLS", tx)
		}
	}
	if delivered != 1 {
		t.Fatalf("%d messages delivered over TLS, want 1", delivered)
	}
}

func TestStartTLSRequiredByDefault(t *testing.T) {
	addr, rec := startServer(t, serverOptions{})
	m := mailerFor(t, "smtp://"+addr+"?from=chat@example.com")
	err := m.SendDigest(context.Background(), testDigest())
	if err == nil || !strings.Contains(err.Error(), "STARTTLS") {
		t.Fatalf("err = %v, want a STARTTLS error", err)
	}
	for _, tx := range rec.transactions() {
		if tx.from != "" {
			t.Fatalf("MAIL FROM was sent in clear")
		}
	}
}

func TestRcptRefused(t *testing.T) {
	addr, rec := startServer(t, serverOptions{refuseRcpt: true})
	m := mailerFor(t, "smtp://"+addr+"?from=chat@example.com&starttls=false")
	err := m.SendDigest(context.Background(), testDigest())
	if err == nil || !strings.Contains(err.Error(), "RCPT TO:<alice@example.com> refused") ||
		!strings.Contains(err.Error(), "no such user here") || !IsPermanent(err) {
		t.Fatalf("err = %v, want a permanent RCPT error naming the address", err)
	}
	if txs := rec.transactions(); len(txs) != 1 || txs[0].data != nil {
		t.Fatalf("server recorded %+v, want no DATA", txs)
	}
}

func TestHangingServerTimesOut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() { // accepts, then never greets
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	for _, q := range []string{"starttls=false", "starttls=true"} {
		m := mailerFor(t, "smtp://"+ln.Addr().String()+"?from=chat@example.com&timeout=300ms&"+q)
		start := time.Now()
		err = m.SendDigest(context.Background(), testDigest())
		if !errors.Is(err, ErrTimeout) {
			t.Fatalf("%s: err = %v, want ErrTimeout", q, err)
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Fatalf("%s: took %v with a 300ms timeout", q, took)
		}
	}
}

func TestServerHangingInDataTimesOut(t *testing.T) {
	hold := make(chan struct{})
	addr, _ := startServer(t, serverOptions{holdData: hold})
	t.Cleanup(func() { close(hold) })
	m := mailerFor(t, "smtp://"+addr+"?from=chat@example.com&starttls=false&timeout=300ms")
	start := time.Now()
	err := m.SendDigest(context.Background(), testDigest())
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("took %v with a 300ms timeout", took)
	}
}
