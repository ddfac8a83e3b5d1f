package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names of the specification.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// Tolerance is how far the timestamp of a message may be from the
// receiver's clock, in either direction, for Verify to accept it.
const Tolerance = 5 * time.Minute

// signatureVersion marks the symmetric HMAC-SHA256 signatures.
const signatureVersion = "v1"

// Errors returned by Verify.
var (
	// ErrMissingHeader reports a request without one of the three headers.
	ErrMissingHeader = errors.New("webhook: missing header")
	// ErrTimestamp reports a timestamp that is malformed or too far from now.
	ErrTimestamp = errors.New("webhook: timestamp outside tolerance")
	// ErrSignature reports that no signature matched.
	ErrSignature = errors.New("webhook: no matching signature")
)

// Sign returns the signature "v1,<base64>" of a message: the HMAC-SHA256,
// under the secret's key, of "{id}.{timestamp}.{body}" with the timestamp
// in Unix seconds.
func Sign(secret Secret, id string, timestamp time.Time, body []byte) string {
	mac := computeMAC(secret, id, timestamp.Unix(), body)
	return signatureVersion + "," + base64.StdEncoding.EncodeToString(mac)
}

// computeMAC returns the raw HMAC-SHA256 of the signed content.
func computeMAC(secret Secret, id string, unix int64, body []byte) []byte {
	h := hmac.New(sha256.New, secret.key)
	h.Write([]byte(id))
	h.Write([]byte("."))
	h.Write([]byte(strconv.FormatInt(unix, 10)))
	h.Write([]byte("."))
	h.Write(body)
	return h.Sum(nil)
}

// Verify checks the headers of a received message against its raw body:
// the timestamp must be within Tolerance of now, and at least one of the
// space-separated "v1," signatures must match (compared in constant time).
// Signatures of other versions are ignored.
func Verify(secret Secret, header http.Header, body []byte, now time.Time) error {
	id, ts, sigs := header.Get(HeaderID), header.Get(HeaderTimestamp), header.Get(HeaderSignature)
	if id == "" || ts == "" || sigs == "" {
		return fmt.Errorf("%w: need %s, %s and %s", ErrMissingHeader, HeaderID, HeaderTimestamp, HeaderSignature)
	}
	unix, err := checkTimestamp(ts, now)
	if err != nil {
		return err
	}
	want := computeMAC(secret, id, unix, body)
	if !anySignatureMatches(sigs, want) {
		return ErrSignature
	}
	return nil
}

// checkTimestamp parses a timestamp header and checks it against now.
func checkTimestamp(ts string, now time.Time) (int64, error) {
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not Unix seconds", ErrTimestamp, ts)
	}
	skew := now.Sub(time.Unix(unix, 0))
	if skew > Tolerance || skew < -Tolerance {
		return 0, fmt.Errorf("%w: %s away from now", ErrTimestamp, skew.Round(time.Second))
	}
	return unix, nil
}

// anySignatureMatches reports whether one of the v1 signatures in the
// header value decodes to want. Every candidate is compared, so the time
// taken does not depend on which one matches.
func anySignatureMatches(header string, want []byte) bool {
	matched := false
	for _, sig := range strings.Fields(header) {
		version, encoded, ok := strings.Cut(sig, ",")
		if !ok || version != signatureVersion {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(encoded)
		if err == nil && hmac.Equal(got, want) {
			matched = true
		}
	}
	return matched
}
