// Package disk is the embedded object store of package files: objects are
// files in a directory on local disk (by default <data-dir>/files), and the
// signed URLs point at the server itself, whose /files/ handler (Store's
// ServeHTTP) checks their HMAC-SHA256 signatures and serves or stores the
// bytes.
//
// Layout under the directory: objects/<key>.obj holds an object (a short
// header with its content type, then its bytes; the ".obj" suffix keeps a
// key from colliding with the directory of a longer key), and tmp/ holds
// writes in progress, which are renamed into place only once complete and
// synced.
package disk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/killrchat/chatql/files"
)

// Options are the optional settings of a Store.
type Options struct {
	// AllowedOrigins are the browser origins (scheme://host[:port]) that
	// may PUT and GET through signed URLs from another origin; "*" allows
	// any. Empty allows none: the handler then answers no CORS preflight.
	AllowedOrigins []string
	// MaxSize bounds the size of an upload URL's object (0: no bound).
	MaxSize int64
}

// Store is a files.Objects on local disk and the http.Handler that serves
// its signed URLs.
type Store struct {
	root    string // <dir>/objects
	tmp     string // <dir>/tmp
	secret  []byte
	base    func(context.Context) string
	prefix  string
	origins map[string]bool
	anyOrig bool
	maxSize int64
	now     func() time.Time
}

var _ files.Objects = (*Store)(nil)

// New opens (creating it if need be) the object store in dir. secret keys
// the signatures of its URLs (at least 32 bytes; every server sharing dir
// must share it). base returns the scheme://host the signed URLs start with,
// for the request in ctx (the server reads the request's host, or a
// configured public URL); prefix is the path at which the server mounts the
// Store as an http.Handler, such as "/files/".
func New(dir string, secret []byte, base func(context.Context) string, prefix string, opts Options) (*Store, error) {
	if len(secret) < 32 {
		return nil, errors.New("disk: the signing secret must be at least 32 bytes")
	}
	if base == nil {
		return nil, errors.New("disk: base is nil")
	}
	if !strings.HasPrefix(prefix, "/") || !strings.HasSuffix(prefix, "/") {
		return nil, fmt.Errorf("disk: prefix %q must start and end with /", prefix)
	}
	s := &Store{
		root:    filepath.Join(dir, "objects"),
		tmp:     filepath.Join(dir, "tmp"),
		secret:  append([]byte(nil), secret...),
		base:    base,
		prefix:  prefix,
		origins: map[string]bool{},
		maxSize: opts.MaxSize,
		now:     time.Now,
	}
	for _, o := range opts.AllowedOrigins {
		if o == "*" {
			s.anyOrig = true
		}
		s.origins[o] = true
	}
	for _, d := range []string{s.root, s.tmp} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return nil, fmt.Errorf("disk: %w", err)
		}
	}
	s.removeStaleTemp(staleTemp)
	return s, nil
}

// staleTemp is the age past which a temporary file is left over from a
// crash rather than a write in progress (of this or another server sharing
// the directory).
const staleTemp = 24 * time.Hour

// removeStaleTemp removes the temporary files older than age.
func (s *Store) removeStaleTemp(age time.Duration) {
	entries, err := os.ReadDir(s.tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && s.now().Sub(fi.ModTime()) > age {
			os.Remove(filepath.Join(s.tmp, e.Name()))
		}
	}
}

// path is the file of key's object.
func (s *Store) path(key string) string {
	return filepath.Join(s.root, filepath.FromSlash(key)+".obj")
}

// Put stores size bytes of r under key, replacing any object there, and
// syncs the file and its directory before it returns. A reader with more or
// fewer bytes leaves nothing stored.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) error {
	if err := checkPut(key, size, contentType); err != nil {
		return err
	}
	tmp, err := s.writeTemp(ctx, r, size, contentType)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	return s.commit(tmp, key, true)
}

// checkPut validates the arguments of a write.
func checkPut(key string, size int64, contentType string) error {
	if err := files.CheckKey(key); err != nil {
		return err
	}
	if size < 0 {
		return fmt.Errorf("disk: negative size %d", size)
	}
	return checkHeaderValue("content type", contentType, maxContentType)
}

// Open reads key's object.
func (s *Store) Open(ctx context.Context, key string) (io.ReadCloser, files.ObjectInfo, error) {
	o, err := s.open(ctx, key)
	if err != nil {
		return nil, files.ObjectInfo{}, err
	}
	return o, o.info, nil
}

// Stat reads key's object's size and content type.
func (s *Store) Stat(ctx context.Context, key string) (files.ObjectInfo, error) {
	o, err := s.open(ctx, key)
	if err != nil {
		return files.ObjectInfo{}, err
	}
	o.Close()
	return o.info, nil
}

// Delete removes key's object and syncs its directory, and removes the
// directories it leaves empty; a missing object is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := files.CheckKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	p := s.path(key)
	err := os.Remove(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return unavailable(err)
	}
	// A concurrent Delete may have removed the directory, synced.
	if err := syncDir(filepath.Dir(p)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return unavailable(err)
	}
	s.pruneDirs(filepath.Dir(p))
	return nil
}

// unavailable wraps a failure of the disk in files.ErrUnavailable.
func unavailable(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", files.ErrUnavailable, err)
}
