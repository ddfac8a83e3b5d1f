//go:build unix

package embedded

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockDir takes the data directory for this process: an exclusive lock
// (flock) on dir/chatql.lock, which holds the process id, so that a second
// server on the same directory is refused with the id of the one using it.
// (Pebble's own lock would refuse it too, without saying who.) The lock
// goes with the process, however it ends.
func lockDir(dir string) (release func() error, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the data directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "chatql.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the data directory's lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(f.Name())
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("the data directory %s is in use by process %s: stop it, or give this server another directory (CHAT_DATA_DIR)", dir, strings.TrimSpace(string(holder)))
		}
		return nil, fmt.Errorf("locking the data directory %s: %w", dir, err)
	}
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() error {
		return errors.Join(syscall.Flock(int(f.Fd()), syscall.LOCK_UN), f.Close())
	}, nil
}
