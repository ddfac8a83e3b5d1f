package auth

import (
	"bytes"
	"errors"
	"image/png"
	"strings"
	"testing"
	"time"
)

// TestMatchTOTP: a code is accepted a step either side of now, never for a
// step at or before the last one accepted, and never when wrong.
func TestMatchTOTP(t *testing.T) {
	key, err := NewTOTPKey("chatql", "alice")
	if err != nil {
		t.Fatal(err)
	}
	secret := key.Secret
	now := time.Unix(1_800_000_000, 0)
	step := now.Unix() / totpPeriod
	for _, d := range []int64{-1, 0, 1} {
		code, _ := TOTPCode(secret, time.Unix((step+d)*totpPeriod, 0))
		if got, ok := MatchTOTP(secret, code, now, 0); !ok || got != step+d {
			t.Errorf("MatchTOTP(code of step %+d) = %d, %v; want step %d", d, got, ok, step+d)
		}
		if _, ok := MatchTOTP(secret, code, now, step+d); ok {
			t.Errorf("MatchTOTP(code of step %+d) after that step was used = ok, want refused", d)
		}
	}
	far, _ := TOTPCode(secret, now.Add(-2*totpPeriod*time.Second))
	for _, code := range []string{far, "", "12345", "1234567", "abcdef"} {
		if _, ok := MatchTOTP(secret, code, now, 0); ok {
			t.Errorf("MatchTOTP(%q) = ok, want refused", code)
		}
	}
}

// TestTOTPKeyQRCode: a key's QR code is a PNG of qrCodeSize pixels square,
// dark modules on light, that differs between keys (it encodes the URI,
// secret included).
func TestTOTPKeyQRCode(t *testing.T) {
	a, err := NewTOTPKey("chatql", "alice")
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewTOTPKey("chatql", "alice")
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(a.QRCode))
	if err != nil {
		t.Fatalf("the QR code is not a PNG: %v", err)
	}
	if r := img.Bounds(); r.Dx() != qrCodeSize || r.Dy() != qrCodeSize {
		t.Fatalf("the QR code is %v, want %d pixels square", r, qrCodeSize)
	}
	dark, light := 0, 0
	for y := range qrCodeSize {
		for x := range qrCodeSize {
			if l, _, _, _ := img.At(x, y).RGBA(); l < 0x8000 {
				dark++
			} else {
				light++
			}
		}
	}
	if dark < qrCodeSize*qrCodeSize/5 || light < qrCodeSize*qrCodeSize/5 {
		t.Errorf("the QR code has %d dark and %d light pixels, want modules of both", dark, light)
	}
	if !strings.HasPrefix(a.URI, "otpauth://totp/") || bytes.Equal(a.QRCode, b.QRCode) {
		t.Errorf("two keys' QR codes are the same, or the URI %q is not a TOTP one", a.URI)
	}
}

// TestRecoveryCodes: codes are distinct, and their hash ignores case,
// spaces and dashes.
func TestRecoveryCodes(t *testing.T) {
	codes, hashes := NewRecoveryCodes(10)
	seen := map[string]bool{}
	for i, c := range codes {
		if len(c) != 11 || seen[c] {
			t.Errorf("code %q: want 11 characters, all codes distinct", c)
		}
		seen[c] = true
		loose := strings.ToUpper(strings.ReplaceAll(c, "-", " "))
		if !bytes.Equal(HashRecoveryCode(loose), hashes[i]) {
			t.Errorf("HashRecoveryCode(%q) differs from the hash of %q", loose, c)
		}
	}
}

// TestSealAndChallenge: a sealed secret opens only for its login and under
// its JWT secret; a challenge is refused tampered, under another secret,
// and once expired.
func TestSealAndChallenge(t *testing.T) {
	st := testStore(t)
	a := testInstance(t, st, time.Hour, time.Second)
	sealed := a.Seal("alice", []byte("JBSWY3DPEHPK3PXP"))
	if got, err := a.Open("alice", sealed); err != nil || string(got) != "JBSWY3DPEHPK3PXP" {
		t.Errorf("Open = %q, %v; want the secret", got, err)
	}
	if _, err := a.Open("bob", sealed); err == nil {
		t.Error("Open of alice's secret as bob's succeeded")
	}
	other, _ := NewSessions(t.Context(), SessionConfig{Store: st, Tokens: a.tokens, Secret: []byte(strings.Repeat("o", 32)), RefreshTTL: time.Hour})
	if _, err := other.Open("alice", sealed); err == nil {
		t.Error("Open under another JWT secret succeeded")
	}

	tf := a.IssueChallenge(Challenge{Login: "alice", Method: "password"})
	c, err := a.ParseChallenge(tf.Challenge)
	if err != nil || c.Login != "alice" || c.Method != "password" {
		t.Fatalf("ParseChallenge = %+v, %v", c, err)
	}
	if !errors.Is(tf, ErrTwoFactorRequired) {
		t.Error("the challenge's error is not ErrTwoFactorRequired")
	}
	for _, bad := range []string{tf.Challenge + "x", strings.Replace(tf.Challenge, "chatql_2fa.", "", 1), "chatql_2fa.e30.AAAA", ""} {
		if _, err := a.ParseChallenge(bad); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("ParseChallenge(%q) = %v, want ErrUnauthenticated", bad, err)
		}
	}
	if _, err := other.ParseChallenge(tf.Challenge); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("ParseChallenge under another secret = %v, want ErrUnauthenticated", err)
	}
	a.now = func() time.Time { return time.Now().Add(ChallengeTTL + time.Second) }
	if _, err := a.ParseChallenge(tf.Challenge); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("ParseChallenge after its TTL = %v, want ErrUnauthenticated", err)
	}
}
