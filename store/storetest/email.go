package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// testEmailVerify: a new address is unverified; VerifyEmail marks it,
// unless it changed (ErrConflict); changing it clears the mark; the
// verified address finds its login; a deleted account loses all of it.
func testEmailVerify(t *testing.T, s store.Store) {
	ctx := newContext(t)
	a := mustCreateUser(t, ctx, s, "mailv")
	if u := mustUser(t, ctx, s, a.Login); u.EmailVerified || u.DigestsOff || !u.DigestSentAt.IsZero() {
		t.Fatalf("new user: verified %v, digests off %v, sent %v; want none", u.EmailVerified, u.DigestsOff, u.DigestSentAt)
	}
	addr := a.Login + "@Example.com"
	if err := s.SetEmail(ctx, a.Login, addr); err != nil {
		t.Fatalf("SetEmail = %v", err)
	}
	wantErr(t, "VerifyEmail(old address)", s.VerifyEmail(ctx, a.Login, a.Email), store.ErrConflict)
	if err := s.VerifyEmail(ctx, a.Login, addr); err != nil {
		t.Fatalf("VerifyEmail = %v", err)
	}
	if u := mustUser(t, ctx, s, a.Login); u.Email != addr || !u.EmailVerified {
		t.Fatalf("after VerifyEmail: %q verified %v", u.Email, u.EmailVerified)
	}
	if got, err := s.VerifiedEmailLogin(ctx, " "+a.Login+"@example.COM"); err != nil || got != a.Login {
		t.Fatalf("VerifiedEmailLogin = %q, %v; want %q", got, err, a.Login)
	}
	_, err := s.VerifiedEmailLogin(ctx, "nobody-"+a.Login+"@example.com")
	wantErr(t, "VerifiedEmailLogin(unknown)", err, store.ErrNotFound)
	if err := s.SetEmail(ctx, a.Login, "other-"+addr); err != nil {
		t.Fatal(err)
	}
	if u := mustUser(t, ctx, s, a.Login); u.EmailVerified {
		t.Fatal("a changed address is still verified")
	}
	wantErr(t, "SetEmail(nobody)", s.SetEmail(ctx, "nobody-"+a.Login, addr), store.ErrNotFound)
	wantErr(t, "VerifyEmail(nobody)", s.VerifyEmail(ctx, "nobody-"+a.Login, addr), store.ErrNotFound)

	sent := time.Now().UTC().Truncate(time.Millisecond)
	if err := s.SetEmailDigests(ctx, a.Login, false); err != nil {
		t.Fatal(err)
	}
	if err := s.SetDigestSent(ctx, a.Login, sent); err != nil {
		t.Fatal(err)
	}
	if u := mustUser(t, ctx, s, a.Login); !u.DigestsOff || !u.DigestSentAt.Equal(sent) {
		t.Fatalf("digests off %v, sent %v; want true, %v", u.DigestsOff, u.DigestSentAt, sent)
	}
	if err := s.SetEmailDigests(ctx, a.Login, true); err != nil {
		t.Fatal(err)
	}
	if u := mustUser(t, ctx, s, a.Login); u.DigestsOff {
		t.Fatal("digests still off")
	}
	if _, err := s.DeleteAccount(ctx, a.Login, a.PassHash); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "SetEmail(deleted)", s.SetEmail(ctx, a.Login, addr), store.ErrNotFound)
}

// newTokenHash is a random token hash.
func newTokenHash() []byte {
	h := make([]byte, 32)
	rand.Read(h)
	return h
}

// testEmailTokens: a token is used once, even by racing uses; an expired
// or unknown one is ErrNotFound.
func testEmailTokens(t *testing.T, s store.Store) {
	ctx := newContext(t)
	want := store.EmailToken{Hash: newTokenHash(), Purpose: store.ResetPasswordLink, Login: "tok", Email: "tok@example.com",
		ExpiresAt: time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)}
	if err := s.CreateEmailToken(ctx, want); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var won []store.EmailToken
	for range 4 {
		wg.Go(func() {
			got, err := s.UseEmailToken(ctx, want.Hash)
			if err == nil {
				mu.Lock()
				won = append(won, got)
				mu.Unlock()
			} else if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("UseEmailToken = %v", err)
			}
		})
	}
	wg.Wait()
	if len(won) != 1 {
		t.Fatalf("%d racing uses got the token, want 1", len(won))
	}
	got := won[0]
	if !bytes.Equal(got.Hash, want.Hash) || got.Purpose != want.Purpose || got.Login != want.Login || got.Email != want.Email || !got.ExpiresAt.Equal(want.ExpiresAt) {
		t.Fatalf("UseEmailToken = %+v, want %+v", got, want)
	}
	_, err := s.UseEmailToken(ctx, want.Hash)
	wantErr(t, "UseEmailToken(used)", err, store.ErrNotFound)
	expired := want
	expired.Hash, expired.ExpiresAt = newTokenHash(), time.Now().Add(-time.Second)
	if err := s.CreateEmailToken(ctx, expired); err != nil {
		t.Fatal(err)
	}
	_, err = s.UseEmailToken(ctx, expired.Hash)
	wantErr(t, "UseEmailToken(expired)", err, store.ErrNotFound)
	_, err = s.UseEmailToken(ctx, newTokenHash())
	wantErr(t, "UseEmailToken(unknown)", err, store.ErrNotFound)
}

// testDigests: notices kept once each, the first due time kept, listed
// when due, cleared; the cap holds.
func testDigests(t *testing.T, s store.Store) {
	ctx := newContext(t)
	a := mustCreateUser(t, ctx, s, "digest")
	shard := store.NoticeShard(a.Login)
	now := time.Now().UTC().Truncate(time.Millisecond)
	due := func(at time.Time) bool {
		t.Helper()
		logins, err := s.DueDigests(ctx, shard, at, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range logins {
			if l == a.Login {
				return true
			}
		}
		return false
	}
	n1 := store.Notice{ID: store.NewMessageID(), Recipient: a.Login, Kind: store.NoticeMention, Room: "r", From: store.UserRef{Login: "bob", Firstname: "Bob"}}
	n2 := store.Notice{ID: store.NewMessageID(), Recipient: a.Login, Kind: store.NoticeDirectMessage, Room: "dm", From: store.UserRef{Login: "carol"}}
	if err := s.AddDigestNotices(ctx, a.Login, now.Add(time.Minute), []store.Notice{n1}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddDigestNotices(ctx, a.Login, now.Add(time.Hour), []store.Notice{n1, n2}); err != nil {
		t.Fatal(err)
	}
	if due(now) || !due(now.Add(time.Minute)) {
		t.Fatalf("the digest is not due at the first due time only")
	}
	got, err := s.DigestNotices(ctx, a.Login)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != n1 || got[1] != n2 {
		t.Fatalf("DigestNotices = %+v, want %+v", got, []store.Notice{n1, n2})
	}
	if err := s.SetDigestDue(ctx, a.Login, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if due(now.Add(time.Minute)) || !due(now.Add(time.Hour)) {
		t.Fatalf("SetDigestDue did not move the due time")
	}
	if err := s.ClearDigest(ctx, a.Login, got); err != nil {
		t.Fatal(err)
	}
	if due(now.Add(24 * time.Hour)) {
		t.Fatal("a cleared digest is due")
	}
	if got, err := s.DigestNotices(ctx, a.Login); err != nil || len(got) != 0 {
		t.Fatalf("cleared digest: %v, %v", got, err)
	}
	var many []store.Notice
	for range store.MaxDigestNotices + 5 {
		many = append(many, store.Notice{ID: store.NewMessageID(), Recipient: a.Login, Kind: store.NoticeMention, Room: "r", From: n1.From})
	}
	if err := s.AddDigestNotices(ctx, a.Login, now, many); err != nil {
		t.Fatal(err)
	}
	if got, err := s.DigestNotices(ctx, a.Login); err != nil || len(got) != store.MaxDigestNotices {
		t.Fatalf("DigestNotices after %d = %d, %v; want %d", len(many), len(got), err, store.MaxDigestNotices)
	}
	if _, err := s.DeleteAccount(context.WithoutCancel(ctx), a.Login, a.PassHash); err != nil {
		t.Fatal(err)
	}
	if got, err := s.DigestNotices(ctx, a.Login); err != nil || len(got) != 0 || due(now.Add(time.Hour)) {
		t.Fatalf("a deleted account's digest: %d notices, %v", len(got), err)
	}
}
