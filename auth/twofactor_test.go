package auth

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestMatchTOTP: a code is accepted a step either side of now, never for a
// step at or before the last one accepted, and never when wrong.
func TestMatchTOTP(t *testing.T) {
	secret, _, err := NewTOTPKey("chatql", "alice")
	if err != nil {
		t.Fatal(err)
	}
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
