package mail

import (
	"errors"
	"testing"
	"time"
)

func TestParseURL(t *testing.T) {
	cfg, err := ParseURL("smtp://user:p%40ss@smtp.example.com?from=chatql%20%3Cchat@example.com%3E&dial_timeout=2s&timeout=1m")
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Host: "smtp.example.com", Port: 587, Username: "user", Password: "p@ss", StartTLS: true,
		DialTimeout: 2 * time.Second, SendTimeout: time.Minute}
	want.From.Name, want.From.Address = "chatql", "chat@example.com"
	if cfg != want {
		t.Fatalf("ParseURL = %+v, want %+v", cfg, want)
	}
	cfg, err = ParseURL("smtps://mail.example.com?from=chat@example.com")
	if err != nil || !cfg.ImplicitTLS || cfg.StartTLS || cfg.Port != 465 || cfg.SendTimeout != DefaultSendTimeout {
		t.Fatalf("smtps: %+v, %v", cfg, err)
	}
	cfg, err = ParseURL("smtp://127.0.0.1:2525?from=chat@example.com&starttls=false")
	if err != nil || cfg.StartTLS || cfg.Port != 2525 {
		t.Fatalf("plain: %+v, %v", cfg, err)
	}
}

func TestParseURLRejects(t *testing.T) {
	for _, raw := range []string{
		"",
		"http://smtp.example.com?from=chat@example.com",
		"smtp://smtp.example.com",                                   // no from
		"smtp://smtp.example.com?from=not-an-address",               // bad from
		"smtp://?from=chat@example.com",                             // no host
		"smtp://smtp.example.com:99999?from=chat@example.com",       // bad port
		"smtp://smtp.example.com?from=chat@example.com&starttls=1x", // bad bool
		"smtps://smtp.example.com?from=chat@example.com&starttls=false",
		"smtp://smtp.example.com?from=chat@example.com&timeout=-1s",
		"smtp://smtp.example.com?from=chat@example.com&dial_timeout=soon",
		"smtp://u:p@smtp.example.com?from=chat@example.com&starttls=false", // credentials in clear
	} {
		if _, err := ParseURL(raw); !errors.Is(err, ErrConfig) {
			t.Errorf("ParseURL(%q) = %v, want ErrConfig", raw, err)
		}
	}
}
