//go:build unix

package live

import "syscall"

// canPeek: the socket can tell whether it has bytes to read without
// reading them (socket.awaitInput waits that way).
const canPeek = true

// peek reports whether the socket has bytes to read, or an end or error
// the next read reports: false only when a read would block. Bytes already
// in the socket when the wait begins count too: the runtime's poller only
// tells of bytes that arrive after.
func (c *socket) peek(fd uintptr) bool {
	_, _, err := syscall.Recvfrom(int(fd), c.peeked[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return err != syscall.EAGAIN && err != syscall.EWOULDBLOCK
}
