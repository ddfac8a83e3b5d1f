// Package files keeps the bytes of the files people send (attachments,
// avatars, room icons) in an object store, behind one interface with two
// backends: a directory on local disk served by the server itself
// (files/disk, the embedded default) and any S3-compatible store (files/s3).
// Clients never send or fetch bytes through the GraphQL API: they get
// short-lived signed URLs and talk to the object store (or the server's
// /files/ handler) directly.
package files

import (
	"context"
	"errors"
	"io"
	"time"
)

// ErrNotFound: no object has the key.
var ErrNotFound = errors.New("object not found")

// ErrUnavailable wraps a failure of the object store itself (down, slow,
// refusing): the request may succeed if retried later.
var ErrUnavailable = errors.New("object store unavailable")

// Objects is an object store: named byte strings, written whole, read
// whole, and signed URLs that let a client write or read one object
// directly for a short time. Keys are made by this package: a few path
// segments of [a-z0-9-] (CheckKey); every method refuses another key with
// ErrInvalidKey.
type Objects interface {
	// UploadURL signs a request that stores exactly size bytes of
	// contentType under key, valid for ttl (rounded up to a whole second;
	// at most 7 days). A request with another size, type or key, after ttl
	// or with a changed signature is refused, and so is one whose key
	// already holds an object: a signed URL never replaces an object. The
	// client sends the request's headers as given, except Content-Length,
	// which HTTP clients set from the body.
	UploadURL(ctx context.Context, key, contentType string, size int64, ttl time.Duration) (SignedRequest, error)
	// DownloadURL signs a GET of key valid for ttl (rounded up to a whole
	// second; at most 7 days); the response carries the headers of h (the
	// stored content type when h's is empty).
	DownloadURL(ctx context.Context, key string, ttl time.Duration, h ResponseHeaders) (string, error)
	// Put stores size bytes read from r under key, replacing any object
	// there, durably before it returns. If r ends before size bytes,
	// nothing is stored.
	Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) error
	// Open reads the object under key (ErrNotFound). The caller closes it.
	Open(ctx context.Context, key string) (io.ReadCloser, ObjectInfo, error)
	// Stat reads what is known of key's object without its bytes.
	Stat(ctx context.Context, key string) (ObjectInfo, error)
	// Delete removes key's object; deleting a missing one succeeds.
	Delete(ctx context.Context, key string) error
}

// SignedRequest is an HTTP request a client makes as given: the method, the
// URL and the headers (which the signature covers).
type SignedRequest struct {
	Method  string
	URL     string
	Headers map[string]string
}

// ObjectInfo is what an object store says of an object.
type ObjectInfo struct {
	Size        int64
	ContentType string
}

// ResponseHeaders are the headers a download's response carries, whatever
// the object was stored with.
type ResponseHeaders struct {
	ContentType        string
	ContentDisposition string
}
