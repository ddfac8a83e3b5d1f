package attack

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Operations that need a user: each must refuse a token the server should
// not honour, whichever transport carries it.
var authenticatedOps = []struct{ name, query string }{
	{"me", `{ me { login } }`},
	{"postMessage", `mutation { postMessage(room: "general", content: "hi") { id } }`},
	{"sendDirectMessage", `mutation { sendDirectMessage(to: "nobody-at-all", content: "hi") { id } }`},
}

// forgedTokens presents tokens that must be refused: unsigned, and, with
// the secret, well signed but naming no user, for someone else, issued in
// the future, with an exp that is not a number, expired.
func forgedTokens(ctx context.Context, t *Target) error {
	acc, err := t.newAccount(ctx)
	if err != nil {
		return err
	}
	claims, err := claimsOf(acc.Token)
	if err != nil {
		return err
	}
	forged := map[string]string{
		"garbage":  "not.a.token",
		"alg none": unsigned(with(claims, nil)),
	}
	if t.Secret != nil {
		now := time.Now().Unix()
		for name, change := range map[string]map[string]any{
			"unknown login":  {"sub": "nobody-" + acc.Login},
			"other audience": {"aud": "someone-else"},
			"future iat":     {"iat": now + 3600},
			"string exp":     {"exp": fmt.Sprint(now + 3600)},
			"expired":        {"exp": now - 60},
			"no exp":         {"exp": nil},
		} {
			if forged[name], err = t.sign(with(claims, change)); err != nil {
				return err
			}
		}
	}
	for name, token := range forged {
		for _, op := range authenticatedOps {
			a, err := t.query(ctx, token, op.query, nil)
			if err != nil {
				return err
			}
			if err := refused(a, "UNAUTHENTICATED"); err != nil {
				return fmt.Errorf("%s token, %s: %w", name, op.name, err)
			}
		}
		if err := t.websocketRefuses(ctx, token); err != nil {
			return fmt.Errorf("%s token over a websocket: %w", name, err)
		}
	}
	return nil
}

// claimsOf decodes a token's claims without verifying it.
func claimsOf(token string) (map[string]any, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("login returned a token that is not a JWT: %q", token)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, err
	}
	var claims map[string]any
	return claims, json.Unmarshal(raw, &claims)
}

// with returns a copy of claims with changes made (a nil value deletes).
func with(claims, changes map[string]any) map[string]any {
	out := make(map[string]any, len(claims))
	for k, v := range claims {
		out[k] = v
	}
	for k, v := range changes {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

func (t *Target) sign(claims map[string]any) (string, error) {
	return jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims(claims)).SignedString(t.Secret)
}

func unsigned(claims map[string]any) string {
	enc := func(v any) string {
		raw, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(raw)
	}
	return enc(map[string]string{"alg": "none", "typ": "JWT"}) + "." + enc(claims) + "."
}

// refreshTokenReuse replays a refresh token that was already exchanged, as
// a thief who copied it would: the server refuses it and revokes every
// token of that login's family, the thief's and the victim's alike.
func refreshTokenReuse(ctx context.Context, t *Target) error {
	acc, err := t.newAccount(ctx)
	if err != nil {
		return err
	}
	if acc.RefreshToken == "" {
		return errors.New("login returned no refresh token")
	}
	stolen := acc.RefreshToken
	fresh, err := t.refresh(ctx, stolen)
	if err != nil {
		return fmt.Errorf("first refresh: %w", err)
	}
	a, err := t.query(ctx, "", refreshMutation, map[string]any{"t": stolen})
	if err != nil {
		return err
	}
	if err := refused(a, "UNAUTHENTICATED"); err != nil {
		return fmt.Errorf("reused refresh token: %w", err)
	}
	a, err = t.query(ctx, "", refreshMutation, map[string]any{"t": fresh.RefreshToken})
	if err != nil {
		return err
	}
	if err := refused(a, "UNAUTHENTICATED"); err != nil {
		return fmt.Errorf("the family's newest refresh token after the reuse: %w", err)
	}
	return t.stopsWorking(ctx, fresh.Token)
}

const refreshMutation = `mutation($t: String!) { refreshToken(token: $t) { token refreshToken } }`

func (t *Target) refresh(ctx context.Context, token string) (account, error) {
	a, err := t.query(ctx, "", refreshMutation, map[string]any{"t": token})
	if err != nil {
		return account{}, err
	}
	var out struct {
		Data struct {
			RefreshToken struct{ Token, RefreshToken string }
		}
	}
	if err := json.Unmarshal(a.Body, &out); err != nil || out.Data.RefreshToken.Token == "" {
		return account{}, fmt.Errorf("HTTP %d %.300s", a.Status, a.Body)
	}
	return account{Token: out.Data.RefreshToken.Token, RefreshToken: out.Data.RefreshToken.RefreshToken}, nil
}

// stopsWorking checks that an access token of a revoked session is
// refused within the server's session check bound.
func (t *Target) stopsWorking(ctx context.Context, token string) error {
	if t.SessionCheck == 0 {
		return nil
	}
	deadline := time.Now().Add(t.SessionCheck + 2*time.Second)
	for {
		a, err := t.query(ctx, token, `{ me { login } }`, nil)
		if err != nil {
			return err
		}
		if refused(a, "UNAUTHENTICATED") == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("a revoked session's access token still works after %v", t.SessionCheck)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
