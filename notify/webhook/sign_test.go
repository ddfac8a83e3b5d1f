package webhook

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSignKnownVector checks Sign against the example published with the
// reference libraries of the specification.
func TestSignKnownVector(t *testing.T) {
	secret, err := ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	got := Sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	if got != want {
		t.Fatalf("Sign = %q, want %q", got, want)
	}
}

func TestSecretRoundTrip(t *testing.T) {
	s, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	text := s.Encode()
	if !strings.HasPrefix(text, "whsec_") {
		t.Fatalf("Encode = %q, want whsec_ prefix", text)
	}
	back, err := ParseSecret(text)
	if err != nil {
		t.Fatal(err)
	}
	if back.Encode() != text {
		t.Fatalf("round trip changed the secret")
	}
	if strings.Contains(s.String(), text[6:]) {
		t.Fatalf("String leaks the key: %q", s.String())
	}
	other, _ := NewSecret()
	if other.Encode() == text {
		t.Fatalf("two new secrets are equal")
	}
}

func TestParseSecretRejects(t *testing.T) {
	for _, s := range []string{
		"",
		"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",        // no prefix
		"whsec_not base64!",                       // bad base64
		"whsec_c2hvcnQ=",                          // 5 bytes
		"whsec_" + strings.Repeat("QUFB", 22),     // 66 bytes
		"whsk_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",   // wrong prefix
		"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw=", // bad padding
	} {
		if _, err := ParseSecret(s); !errors.Is(err, ErrBadSecret) {
			t.Errorf("ParseSecret(%q) = %v, want ErrBadSecret", s, err)
		}
	}
}

// signedHeader returns the headers Deliver would send for a message.
func signedHeader(secret Secret, id string, ts time.Time, body []byte, extraSigs ...string) http.Header {
	h := http.Header{}
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	sigs := append(extraSigs, Sign(secret, id, ts, body))
	h.Set(HeaderSignature, strings.Join(sigs, " "))
	return h
}

func TestVerify(t *testing.T) {
	secret, _ := NewSecret()
	wrong, _ := NewSecret()
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"type":"message.created"}`)
	cases := []struct {
		name   string
		secret Secret
		header http.Header
		body   []byte
		want   error
	}{
		{"valid", secret, signedHeader(secret, "msg_1", now, body), body, nil},
		{"one of several", secret, signedHeader(secret, "msg_1", now, body, "v1,AAAA", "v1a,xyz", "garbage"), body, nil},
		{"tampered body", secret, signedHeader(secret, "msg_1", now, body), []byte(`{"type":"message.deleted"}`), ErrSignature},
		{"wrong secret", wrong, signedHeader(secret, "msg_1", now, body), body, ErrSignature},
		{"other id", secret, withHeader(signedHeader(secret, "msg_1", now, body), HeaderID, "msg_2"), body, ErrSignature},
		{"old", secret, signedHeader(secret, "msg_1", now.Add(-6*time.Minute), body), body, ErrTimestamp},
		{"future", secret, signedHeader(secret, "msg_1", now.Add(6*time.Minute), body), body, ErrTimestamp},
		{"within tolerance", secret, signedHeader(secret, "msg_1", now.Add(-4*time.Minute), body), body, nil},
		{"bad timestamp", secret, withHeader(signedHeader(secret, "msg_1", now, body), HeaderTimestamp, "soon"), body, ErrTimestamp},
		{"no signature", secret, withHeader(signedHeader(secret, "msg_1", now, body), HeaderSignature, ""), body, ErrMissingHeader},
		{"other version only", secret, withHeader(signedHeader(secret, "msg_1", now, body), HeaderSignature, "v2,"+strings.TrimPrefix(Sign(secret, "msg_1", now, body), "v1,")), body, ErrSignature},
	}
	for _, c := range cases {
		err := Verify(c.secret, c.header, c.body, now)
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: Verify = %v, want %v", c.name, err, c.want)
		}
	}
}

// withHeader returns h with one header replaced.
func withHeader(h http.Header, name, value string) http.Header {
	h.Set(name, value)
	return h
}
