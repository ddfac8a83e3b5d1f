package mail

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	netmail "net/mail"
	"strings"
	"testing"
	"unicode/utf8"
)

var testFrom = netmail.Address{Name: "chatql", Address: "chat@example.com"}

func TestComposeRejects(t *testing.T) {
	cases := map[string]func(*Digest){
		"no items":             func(d *Digest) { d.Items = nil },
		"no recipient":         func(d *Digest) { d.To.Address = "" },
		"bad recipient":        func(d *Digest) { d.To.Address = "alice" },
		"header injection":     func(d *Digest) { d.To.Name = "Alice\r\nBcc: eve@example.com" },
		"no token":             func(d *Digest) { d.UnsubscribeToken = "" },
		"relative unsubscribe": func(d *Digest) { d.UnsubscribeURL = "/unsubscribe" },
		"mailto unsubscribe":   func(d *Digest) { d.UnsubscribeURL = "mailto:x@example.com" },
		"long unsubscribe":     func(d *Digest) { d.UnsubscribeToken = strings.Repeat("t", 1000) },
	}
	for name, change := range cases {
		d := testDigest()
		change(&d)
		if _, err := Compose(testFrom, d); !errors.Is(err, ErrDigest) {
			t.Errorf("%s: Compose = %v, want ErrDigest", name, err)
		}
	}
}

func TestComposeCutsAndCounts(t *testing.T) {
	d := testDigest()
	long := strings.Repeat("é", MaxExcerptRunes+50)
	d.Items = nil
	for range maxDigestItems + 3 {
		d.Items = append(d.Items, Item{Kind: Mention, Conversation: "#a\r\nb", From: "bob", Excerpt: long})
	}
	raw, err := Compose(testFrom, d)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := netmail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	text := parts(t, msg)["text/plain"]
	if !strings.Contains(text, "and 3 more") || strings.Count(text, "Mention in #a b from bob") != maxDigestItems {
		t.Fatalf("text part does not list %d items and count the rest:\n%.400s", maxDigestItems, text)
	}
	cut := strings.Repeat("é", MaxExcerptRunes) + "…"
	if !strings.Contains(text, cut) || strings.Contains(text, cut[:len(cut)-len("…")]+"é") {
		t.Fatalf("excerpt not cut to %d runes", MaxExcerptRunes)
	}
	for _, line := range bytes.Split(raw, []byte("\r\n")) {
		if len(line) > 998 || !utf8.Valid(line) {
			t.Fatalf("line of %d bytes in the message", len(line))
		}
	}
}

func TestLogMailer(t *testing.T) {
	var buf bytes.Buffer
	m, err := New("", slog.New(slog.NewJSONHandler(&buf, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SendDigest(context.Background(), testDigest()); err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("log is not one JSON record: %v\n%s", err, buf.String())
	}
	if rec["to"] != "alice@example.com" || rec["items"] != float64(2) ||
		rec["unsubscribe"] != "https://chat.example.com/email/unsubscribe?token=tok%2Ben%2F1" ||
		!strings.Contains(rec["text"].(string), "Mention in #general from bob") {
		t.Fatalf("log record %v", rec)
	}
	d := testDigest()
	d.Items = nil
	if err := m.SendDigest(context.Background(), d); !errors.Is(err, ErrDigest) {
		t.Fatalf("LogMailer accepted an empty digest: %v", err)
	}
}

func TestNewWithURL(t *testing.T) {
	m, err := New("smtp://smtp.example.com?from=chat@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.(*SMTPMailer); !ok {
		t.Fatalf("New with a URL returned %T", m)
	}
	if _, err := New("smtp://smtp.example.com", nil); !errors.Is(err, ErrConfig) {
		t.Fatalf("New without from: %v", err)
	}
}
