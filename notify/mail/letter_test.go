package mail

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"mime/quotedprintable"
	netmail "net/mail"
	"strings"
	"testing"
)

func TestSendLetter(t *testing.T) {
	addr, rec := startServer(t, serverOptions{})
	m := mailerFor(t, "smtp://"+addr+"?from=chat@example.com&starttls=false")
	link := "https://chat.example.com/email/verify?token=" + strings.Repeat("x", 80)
	l := Letter{To: netmail.Address{Address: "alice@example.com"}, Subject: "Vérifiez", Text: "Open:\n" + link + "\n"}
	if err := m.SendLetter(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	txs := rec.transactions()
	if len(txs) != 1 || len(txs[0].rcpts) != 1 || txs[0].rcpts[0] != "alice@example.com" {
		t.Fatalf("transactions %+v", txs)
	}
	msg, err := netmail.ReadMessage(bytes.NewReader(txs[0].data))
	if err != nil {
		t.Fatal(err)
	}
	if subj, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject")); err != nil || subj != "Vérifiez" {
		t.Fatalf("Subject %q, %v", subj, err)
	}
	body, err := io.ReadAll(quotedprintable.NewReader(msg.Body))
	if err != nil || !strings.Contains(string(body), link) {
		t.Fatalf("body %q, %v: no link", body, err)
	}
	for _, bad := range []Letter{
		{To: netmail.Address{Address: "alice"}, Subject: "s", Text: "t"},
		{To: l.To, Subject: "s\r\nBcc: eve@example.com", Text: "t"},
		{To: l.To, Subject: "s"},
	} {
		if err := m.SendLetter(context.Background(), bad); !errors.Is(err, ErrDigest) {
			t.Errorf("SendLetter(%+v) = %v, want ErrDigest", bad, err)
		}
	}
}
