//go:build !unix

package live

// canPeek: the socket cannot wait for input without reading it here, so
// the reader waits in the websocket library's read.
const canPeek = false

func (c *socket) peek(uintptr) bool { return true }
