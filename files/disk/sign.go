package disk

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/killrchat/chatql/files"
)

// The query parameters of a signed URL.
const (
	qExpires     = "exp"  // expiry, Unix seconds
	qType        = "ct"   // upload: the content type
	qSize        = "size" // upload: the size in bytes
	qRespType    = "rct"  // download: the response's Content-Type
	qRespDisp    = "rcd"  // download: the response's Content-Disposition
	qSignature   = "sig"  // HMAC-SHA256, base64url
	maxTTL       = 7 * 24 * time.Hour
	signatureLen = sha256.Size
)

// grant is what a signed URL allows: one method on one key until expires,
// with the upload's or the download's parameters.
type grant struct {
	method      string
	key         string
	expires     int64
	contentType string // upload
	size        int64  // upload
	resp        files.ResponseHeaders
}

// UploadURL signs a PUT of exactly size bytes of contentType to key through
// the Store's handler, valid for ttl (rounded up to a second, at most 7
// days). The request must carry the Content-Type of its Headers; the
// Content-Length there is informative (browsers set it from the body).
func (s *Store) UploadURL(ctx context.Context, key, contentType string, size int64, ttl time.Duration) (files.SignedRequest, error) {
	if err := checkPut(key, size, contentType); err != nil {
		return files.SignedRequest{}, err
	}
	if s.maxSize > 0 && size > s.maxSize {
		return files.SignedRequest{}, fmt.Errorf("disk: size %d is over the limit %d", size, s.maxSize)
	}
	exp, err := s.expiry(ttl)
	if err != nil {
		return files.SignedRequest{}, err
	}
	g := grant{method: "PUT", key: key, expires: exp, contentType: contentType, size: size}
	return files.SignedRequest{
		Method: "PUT",
		URL:    s.url(ctx, g),
		Headers: map[string]string{
			"Content-Type":   contentType,
			"Content-Length": strconv.FormatInt(size, 10),
		},
	}, nil
}

// DownloadURL signs a GET of key through the Store's handler, valid for ttl
// (rounded up to a second, at most 7 days), whose response carries the
// headers of h (the stored content type when h's is empty).
func (s *Store) DownloadURL(ctx context.Context, key string, ttl time.Duration, h files.ResponseHeaders) (string, error) {
	if err := files.CheckKey(key); err != nil {
		return "", err
	}
	if err := checkHeaderValue("content type", h.ContentType, maxContentType); err != nil {
		return "", err
	}
	if err := checkHeaderValue("content disposition", h.ContentDisposition, maxContentType); err != nil {
		return "", err
	}
	exp, err := s.expiry(ttl)
	if err != nil {
		return "", err
	}
	return s.url(ctx, grant{method: "GET", key: key, expires: exp, resp: h}), nil
}

// expiry is the Unix second at which a URL signed now for ttl expires: the
// first second at or after now+ttl.
func (s *Store) expiry(ttl time.Duration) (int64, error) {
	if ttl <= 0 || ttl > maxTTL {
		return 0, fmt.Errorf("disk: ttl %v is not in (0, %v]", ttl, maxTTL)
	}
	end := s.now().Add(ttl).UnixNano()
	return (end + int64(time.Second) - 1) / int64(time.Second), nil
}

// url is the signed URL of g.
func (s *Store) url(ctx context.Context, g grant) string {
	q := url.Values{}
	q.Set(qExpires, strconv.FormatInt(g.expires, 10))
	if g.method == "PUT" {
		q.Set(qType, g.contentType)
		q.Set(qSize, strconv.FormatInt(g.size, 10))
	} else {
		setIf(q, qRespType, g.resp.ContentType)
		setIf(q, qRespDisp, g.resp.ContentDisposition)
	}
	q.Set(qSignature, base64.RawURLEncoding.EncodeToString(s.sign(g)))
	base := strings.TrimSuffix(s.base(ctx), "/")
	return base + s.prefix + g.key + "?" + q.Encode()
}

// setIf sets q's name to v unless v is empty.
func setIf(q url.Values, name, v string) {
	if v != "" {
		q.Set(name, v)
	}
}

// sign is the HMAC-SHA256 of g's fields, each length-prefixed so that no
// two grants sign the same bytes.
func (s *Store) sign(g grant) []byte {
	m := hmac.New(sha256.New, s.secret)
	for _, f := range []string{
		"chatql-files-v1", g.method, g.key, strconv.FormatInt(g.expires, 10),
		g.contentType, strconv.FormatInt(g.size, 10),
		g.resp.ContentType, g.resp.ContentDisposition,
	} {
		fmt.Fprintf(m, "%d:%s\n", len(f), f)
	}
	return m.Sum(nil)
}

// errExpired and errSignature are the refusals of verify.
var (
	errExpired   = errors.New("URL expired")
	errSignature = errors.New("invalid signature")
)

// verify reads the grant of a request for key with query q and checks its
// signature and expiry.
func (s *Store) verify(method, key string, q url.Values) (grant, error) {
	g := grant{method: method, key: key}
	var err error
	if g.expires, err = strconv.ParseInt(q.Get(qExpires), 10, 64); err != nil {
		return g, errSignature
	}
	if method == "PUT" {
		g.contentType = q.Get(qType)
		if g.size, err = strconv.ParseInt(q.Get(qSize), 10, 64); err != nil || g.size < 0 {
			return g, errSignature
		}
	} else {
		g.resp = files.ResponseHeaders{ContentType: q.Get(qRespType), ContentDisposition: q.Get(qRespDisp)}
	}
	sig, err := base64.RawURLEncoding.DecodeString(q.Get(qSignature))
	if err != nil || len(sig) != signatureLen || !hmac.Equal(sig, s.sign(g)) {
		return g, errSignature
	}
	if s.now().Unix() >= g.expires {
		return g, errExpired
	}
	return g, nil
}

// checkHeaderValue refuses a header value with control characters or over
// max bytes.
func checkHeaderValue(what, v string, max int) error {
	if len(v) > max {
		return fmt.Errorf("disk: %s longer than %d bytes", what, max)
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] == 0x7f {
			return fmt.Errorf("disk: %s %q has a control character", what, v)
		}
	}
	return nil
}
