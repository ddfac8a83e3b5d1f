package disk

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/killrchat/chatql/files"
)

// An object's file starts with magic, the length of its content type (two
// bytes, big-endian) and the content type; its bytes follow.
const magic = "cqo1"

// maxContentType bounds the length of a content type or disposition.
const maxContentType = 1024

// errSize: a body had more or fewer bytes than announced.
var errSize = errors.New("body size differs from the announced size")

// writeTemp writes the file of an object of size bytes from r into tmp/,
// synced, and returns its path; on error nothing remains.
func (s *Store) writeTemp(ctx context.Context, r io.Reader, size int64, contentType string) (path string, err error) {
	f, err := os.CreateTemp(s.tmp, "put-*")
	if err != nil {
		return "", unavailable(err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = unavailable(cerr)
		}
		if err != nil {
			os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(header(contentType)); err != nil {
		return "", unavailable(err)
	}
	n, err := io.Copy(f, io.LimitReader(ctxReader{ctx, r}, size+1))
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fmt.Errorf("disk: reading the body: %w", err)
	}
	if n != size {
		return "", fmt.Errorf("disk: %w: got %d bytes or more, want %d", errSize, n, size)
	}
	if err := f.Sync(); err != nil {
		return "", unavailable(err)
	}
	return f.Name(), nil
}

// header is the start of the file of an object of contentType.
func header(contentType string) []byte {
	h := make([]byte, 0, len(magic)+2+len(contentType))
	h = append(h, magic...)
	h = binary.BigEndian.AppendUint16(h, uint16(len(contentType)))
	return append(h, contentType...)
}

// commit moves the synced temporary file tmp to key's place and syncs the
// directories it changed. With replace false, an existing object stays and
// commit returns os.ErrExist: the file is linked, which fails atomically
// when the name exists, rather than renamed.
func (s *Store) commit(tmp, key string, replace bool) error {
	p := s.path(key)
	var err error
	// A Delete emptying the directory may remove it between its making and
	// the rename: then it is made again.
	for range 8 {
		if err = s.mkdirs(filepath.Dir(p)); err == nil && replace {
			err = os.Rename(tmp, p)
		} else if err == nil {
			err = os.Link(tmp, p)
		}
		if !errors.Is(err, os.ErrNotExist) {
			break
		}
	}
	if errors.Is(err, os.ErrExist) {
		return os.ErrExist
	}
	if err != nil {
		return unavailable(err)
	}
	return unavailable(syncDir(filepath.Dir(p)))
}

// mkdirs creates dir and its missing parents below the store's root,
// syncing the parent of each directory it creates.
func (s *Store) mkdirs(dir string) error {
	if dir == s.root {
		return nil
	}
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	parent := filepath.Dir(dir)
	if err := s.mkdirs(parent); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o750); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return syncDir(parent)
}

// pruneDirs removes dir and its parents below the store's root while they
// are empty, syncing the parent of each one removed. It is best effort: a
// directory not empty, or one a Put fills meanwhile, stays.
func (s *Store) pruneDirs(dir string) {
	for dir != s.root && strings.HasPrefix(dir, s.root+string(filepath.Separator)) {
		if os.Remove(dir) != nil {
			return
		}
		dir = filepath.Dir(dir)
		if syncDir(dir) != nil {
			return
		}
	}
}

// syncDir fsyncs a directory, making the names in it durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// object is an open object's file: its bytes as an io.ReadSeeker.
type object struct {
	*io.SectionReader
	f       *os.File
	info    files.ObjectInfo
	modTime time.Time
}

// Close closes the file.
func (o *object) Close() error { return o.f.Close() }

// open opens key's object and reads its header.
func (s *Store) open(ctx context.Context, key string) (*object, error) {
	if err := files.CheckKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.Open(s.path(key))
	if errors.Is(err, os.ErrNotExist) {
		return nil, files.ErrNotFound
	}
	if err != nil {
		return nil, unavailable(err)
	}
	o, err := readObject(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return o, nil
}

// readObject reads the header of an object's file f.
func readObject(f *os.File) (*object, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, unavailable(err)
	}
	h := make([]byte, len(magic)+2)
	if _, err := io.ReadFull(f, h); err != nil || string(h[:len(magic)]) != magic {
		return nil, fmt.Errorf("disk: %s is not an object file", f.Name())
	}
	ct := make([]byte, binary.BigEndian.Uint16(h[len(magic):]))
	if _, err := io.ReadFull(f, ct); err != nil {
		return nil, fmt.Errorf("disk: %s is not an object file", f.Name())
	}
	off := int64(len(h) + len(ct))
	size := fi.Size() - off
	return &object{
		SectionReader: io.NewSectionReader(f, off, size),
		f:             f,
		info:          files.ObjectInfo{Size: size, ContentType: string(ct)},
		modTime:       fi.ModTime(),
	}, nil
}

// etag names an object's version: its size and modification time.
func (o *object) etag() string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(o.modTime.UnixNano()))
	return fmt.Sprintf(`"%x-%s"`, o.info.Size, hex.EncodeToString(b[:]))
}

// ctxReader reads r until ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

// Read reads from r unless ctx is done.
func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
