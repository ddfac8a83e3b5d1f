package pushtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"
)

// maxTokenLifetime is how far in the future a VAPID token may expire
// (RFC 8292 section 2).
const maxTokenLifetime = 24 * time.Hour

// vapidAuth is a checked VAPID authorization.
type vapidAuth struct {
	publicKey []byte // k, the uncompressed application server key
	contact   string // the sub claim
}

// parseVAPID checks an Authorization header of the form
// "vapid t=<JWT>, k=<public key>" (RFC 8292 section 3): the JWT must be an
// ES256 token signed by k, for audience origin, expiring within 24 hours
// of now, with a sub claim.
func parseVAPID(header, origin string, now time.Time) (vapidAuth, error) {
	token, key, err := splitVAPIDHeader(header)
	if err != nil {
		return vapidAuth{}, err
	}
	rawKey, err := decodeBase64URL(key)
	if err != nil {
		return vapidAuth{}, fmt.Errorf("k is not base64url: %v", err)
	}
	publicKey, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), rawKey)
	if err != nil {
		return vapidAuth{}, fmt.Errorf("k is not a P-256 public key: %v", err)
	}
	claims, err := verifyES256(token, publicKey)
	if err != nil {
		return vapidAuth{}, err
	}
	if err := claims.check(origin, now); err != nil {
		return vapidAuth{}, err
	}
	return vapidAuth{publicKey: rawKey, contact: claims.Subject}, nil
}

// splitVAPIDHeader returns the t and k parameters of a vapid header.
func splitVAPIDHeader(header string) (token, key string, err error) {
	scheme, params, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "vapid") {
		return "", "", errors.New("authorization scheme is not vapid")
	}
	for _, param := range strings.Split(params, ",") {
		name, value, _ := strings.Cut(strings.TrimSpace(param), "=")
		switch strings.ToLower(name) {
		case "t":
			token = value
		case "k":
			key = value
		}
	}
	if token == "" || key == "" {
		return "", "", errors.New("vapid authorization lacks t or k")
	}
	return token, key, nil
}

// jwtHeader is the JOSE header of a VAPID token.
type jwtHeader struct {
	Algorithm string `json:"alg"`
}

// vapidClaims are the claims of a VAPID token.
type vapidClaims struct {
	Audience   string `json:"aud"`
	Expiration int64  `json:"exp"`
	Subject    string `json:"sub"`
}

// verifyES256 checks the JWS signature of token (ECDSA P-256 over SHA-256,
// the signature being r and s as 32 bytes each) and returns its claims.
func verifyES256(token string, key *ecdsa.PublicKey) (vapidClaims, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return vapidClaims{}, errors.New("token is not a JWS of three parts")
	}
	var header jwtHeader
	if err := decodeJSONPart(parts[0], &header); err != nil {
		return vapidClaims{}, fmt.Errorf("token header: %v", err)
	}
	if header.Algorithm != "ES256" {
		return vapidClaims{}, fmt.Errorf("token algorithm %q is not ES256", header.Algorithm)
	}
	signature, err := decodeBase64URL(parts[2])
	if err != nil || len(signature) != 64 {
		return vapidClaims{}, errors.New("token signature is not 64 bytes of base64url")
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	r := new(big.Int).SetBytes(signature[:32])
	s := new(big.Int).SetBytes(signature[32:])
	if !ecdsa.Verify(key, digest[:], r, s) {
		return vapidClaims{}, errors.New("token signature does not verify with k")
	}
	var claims vapidClaims
	if err := decodeJSONPart(parts[1], &claims); err != nil {
		return vapidClaims{}, fmt.Errorf("token claims: %v", err)
	}
	return claims, nil
}

// check applies RFC 8292's rules to the claims.
func (c vapidClaims) check(origin string, now time.Time) error {
	if c.Audience != origin {
		return fmt.Errorf("token aud %q is not %q", c.Audience, origin)
	}
	exp := time.Unix(c.Expiration, 0)
	if !exp.After(now) {
		return fmt.Errorf("token expired at %s", exp.UTC())
	}
	if exp.Sub(now) > maxTokenLifetime {
		return fmt.Errorf("token expires at %s, more than 24 hours ahead", exp.UTC())
	}
	if !strings.HasPrefix(c.Subject, "mailto:") && !strings.HasPrefix(c.Subject, "https:") {
		return fmt.Errorf("token sub %q is neither mailto: nor https:", c.Subject)
	}
	return nil
}

// decodeJSONPart decodes a base64url JSON part of a JWS into v.
func decodeJSONPart(part string, v any) error {
	raw, err := decodeBase64URL(part)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, v)
}

// decodeBase64URL decodes base64url text with or without its padding.
func decodeBase64URL(text string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(text, "="))
}
