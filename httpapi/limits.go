package httpapi

import (
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/killrchat/chatql/apierror"
)

// Limits bounds what one HTTP request may hold: its body's size and the
// time the client may take to send it, and the time a response other
// than a stream may take to be written. The server's ReadHeaderTimeout
// bounds the headers, its IdleTimeout the wait for the next request.
type Limits struct {
	MaxBody      int64
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
}

// Handler applies the limits to next. The read deadline is lifted once the
// transports have read the body (readBody), so that it cannot end a long
// request or an event stream afterwards; the write deadline is not set on
// streams (server-sent events, websockets).
func (l Limits) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if l.MaxBody > 0 && r.ContentLength > l.MaxBody {
			media, ok := accepted(r.Header.Get("Accept"))
			if !ok {
				media = mediaJSON
			}
			w.Header().Set("Connection", "close")
			fail(w, media, http.StatusRequestEntityTooLarge, apierror.PayloadTooLarge, "the request body is larger than %d bytes", l.MaxBody)
			return
		}
		if l.MaxBody > 0 {
			r.Body = http.MaxBytesReader(w, r.Body, l.MaxBody)
		}
		rc := http.NewResponseController(w)
		if l.ReadTimeout > 0 && r.Body != http.NoBody && r.ContentLength != 0 {
			_ = rc.SetReadDeadline(time.Now().Add(l.ReadTimeout))
		}
		if l.WriteTimeout > 0 && !streaming(r) {
			_ = rc.SetWriteDeadline(time.Now().Add(l.WriteTimeout))
			// The connection may serve another request: no deadline may
			// outlive this one.
			defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
		}
		next.ServeHTTP(w, r)
	})
}

// bodyRead lifts the body's read deadline (see Limits.Handler).
func bodyRead(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
}

// streaming tells the requests that stay open: websocket upgrades and
// server-sent events (as transport.SSE recognizes them, and SSEStreams,
// which opens a stream only for a request that accepts text/event-stream).
func streaming(r *http.Request) bool {
	return r.Header.Get("Upgrade") != "" || strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

// LimitConnections caps the connections open at once from one client
// address (the remote IP) at max; max 0 or less leaves ln as it is.
//
// A connection over the cap is answered at once with 429 and a
// TOO_MANY_CONNECTIONS error, then closed: the client learns why (a plain
// close looks like a network fault, and gets retried at once), and the
// server reads nothing from it and starts no handler for it. 429 rather
// than 503 because the client exceeded its own share; the instance itself
// is healthy, and a proxy should not take it out of rotation.
//
// Behind a proxy or load balancer every connection comes from its
// address: raise the cap, or disable it there and cap per client at the
// proxy.
func LimitConnections(ln net.Listener, max int) net.Listener {
	if max <= 0 {
		return ln
	}
	return &connLimiter{Listener: ln, max: max, open: map[string]int{}}
}

type connLimiter struct {
	net.Listener
	max  int
	mu   sync.Mutex
	open map[string]int
}

// Accept implements net.Listener.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		host := remoteHost(c)
		l.mu.Lock()
		if l.open[host] >= l.max {
			l.mu.Unlock()
			go refuse(c)
			continue
		}
		l.open[host]++
		l.mu.Unlock()
		return &countedConn{Conn: c, release: func() { l.release(host) }}, nil
	}
}

func (l *connLimiter) release(host string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[host]--; l.open[host] <= 0 {
		delete(l.open, host)
	}
}

func remoteHost(c net.Conn) string {
	addr := c.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}

// tooManyConnections is the whole HTTP response to a refused connection.
var tooManyConnections = func() []byte {
	body := `{"errors":[{"message":"too many connections from your address: close some before opening more","extensions":{"code":"` + apierror.TooManyConnections + `"}}]}`
	return []byte("HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\nRetry-After: 1\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}()

// refuse answers a connection over the cap and closes it. It lingers a
// moment reading what the client sends, so that closing with unread data
// does not reset the connection before the client reads the answer.
func refuse(c net.Conn) {
	defer c.Close()
	deadline := time.Now().Add(time.Second)
	_ = c.SetDeadline(deadline)
	if _, err := c.Write(tooManyConnections); err != nil {
		return
	}
	if tcp, ok := c.(*net.TCPConn); ok {
		_ = tcp.CloseWrite()
	}
	buf := make([]byte, 4096)
	for {
		if _, err := c.Read(buf); err != nil {
			return
		}
	}
}

// countedConn gives its place back under the cap when closed.
type countedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

// Close implements net.Conn.
func (c *countedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}
