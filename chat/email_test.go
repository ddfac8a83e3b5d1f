package chat

import (
	"strings"
	"testing"
)

// TestUnsubscribeToken: a token names its login under the server's key;
// another key's, an altered one and garbage are refused.
func TestUnsubscribeToken(t *testing.T) {
	s := &Service{Email: NewEmail(Email{UnsubscribeKey: []byte("key one")})}
	token := s.Email.unsubscribeToken("alice")
	if got, err := s.UnsubscribeLogin(token); err != nil || got != "alice" {
		t.Fatalf("UnsubscribeLogin = %q, %v; want alice", got, err)
	}
	other := &Service{Email: NewEmail(Email{UnsubscribeKey: []byte("key two")})}
	l, mac, _ := strings.Cut(token, ".")
	bob := s.Email.unsubscribeToken("bob")
	_, bobMAC, _ := strings.Cut(bob, ".")
	for name, bad := range map[string]string{
		"other key":    other.Email.unsubscribeToken("alice"),
		"swapped MAC":  l + "." + bobMAC,
		"cut MAC":      l + "." + mac[:10],
		"no MAC":       l,
		"garbage":      "!!!.???",
		"empty":        "",
		"overlong":     strings.Repeat("a", 300),
		"login edited": strings.Replace(token, l, l+"x", 1),
	} {
		if got, err := s.UnsubscribeLogin(bad); err == nil {
			t.Errorf("%s: UnsubscribeLogin(%q) = %q, want an error", name, bad, got)
		}
	}
	if _, err := (&Service{}).UnsubscribeLogin(token); err == nil {
		t.Error("a server without email accepted a token")
	}
}

// TestLinkTokens: tokens are random and only their hash is kept.
func TestLinkTokens(t *testing.T) {
	a, ha := newLinkToken()
	b, hb := newLinkToken()
	if a == b || string(ha) == string(hb) || len(a) < 40 {
		t.Fatalf("tokens %q %q are not random 32-byte ones", a, b)
	}
	if string(linkHash(a)) != string(ha) || strings.Contains(string(ha), a) {
		t.Fatal("the hash is not the token's SHA-256")
	}
}
