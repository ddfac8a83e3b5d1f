//go:build !linux

package live

// poller is Linux's (epoll): elsewhere each connection keeps a reader
// goroutine.
type poller struct{}

func idleConns() *poller { return nil }

func (*poller) await(*conn) bool { return false }

func (*poller) wake(*conn) {}
