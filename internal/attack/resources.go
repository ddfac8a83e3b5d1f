package attack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// slowHeaders sends a request's headers a byte a second, which a server
// without a header timeout waits for forever (slowloris).
func slowHeaders(ctx context.Context, t *Target) error {
	if t.HeaderTimeout == 0 {
		return ErrSkipped
	}
	conn, err := t.dial(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	start := time.Now()
	deadline := start.Add(t.HeaderTimeout + 5*time.Second)
	head := "POST /query HTTP/1.1\r\nHost: chat\r\nX-Slow: " + strings.Repeat("a", 1000)
	for i := 0; i < len(head); i++ {
		_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
		if _, err := conn.Write([]byte{head[i]}); err != nil {
			return nil // cut off
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("still sending headers after %v; the header timeout is %v", time.Since(start), t.HeaderTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
		// The server closes the connection, possibly with a 408 first.
		_ = conn.SetReadDeadline(time.Now().Add(time.Millisecond))
		if _, err := conn.Read(make([]byte, 512)); err != nil && !isTimeout(err) {
			return nil
		}
	}
	return fmt.Errorf("the server took %d header bytes over %v", len(head), time.Since(start))
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func (t *Target) dial(ctx context.Context) (net.Conn, error) {
	u, err := url.Parse(t.Base)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	if t.local != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(t.local)}
	}
	return d.DialContext(ctx, "tcp", u.Host)
}

// connectionFlood opens more idle connections from one address than the
// server allows and checks that the excess is refused while a request on
// an allowed connection is still answered.
func connectionFlood(ctx context.Context, t *Target) error {
	if t.ConnsPerAddress == 0 {
		return ErrSkipped
	}
	t = t.flooder()
	n := t.ConnsPerAddress + 20
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := t.dial(ctx)
		if err != nil {
			break // refused outright: fine
		}
		conns = append(conns, c)
	}
	// Ask on each: a refused connection is closed (or answers 429/503).
	served := 0
	for _, c := range conns {
		_ = c.SetDeadline(time.Now().Add(3 * time.Second))
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: chat\r\n\r\n"); err != nil {
			continue
		}
		buf := make([]byte, 64)
		m, _ := io.ReadAtLeast(c, buf, 12)
		if m >= 12 && string(buf[9:12]) == "200" {
			served++
		}
	}
	if served > t.ConnsPerAddress {
		return fmt.Errorf("%d connections from one address were served, the cap is %d", served, t.ConnsPerAddress)
	}
	if served == 0 {
		return errors.New("no connection was served at all")
	}
	return nil
}

// signupFlood hashes passwords as fast as the server lets it (from the
// flood address) while the liveness probe (from the usual one) must keep
// answering.
func signupFlood(ctx context.Context, t *Target) error {
	const signups = 500
	flood := t.flooder()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	var failures, refusedConns atomic.Int64
	var firstFailure atomic.Value
	for i := range signups {
		wg.Go(func() {
			a, err := flood.query(ctx, "", `mutation($in: SignupInput!) { signup(input: $in) { login } }`,
				map[string]any{"in": map[string]any{"login": fmt.Sprintf("flood%d%d", time.Now().UnixNano()%1e9, i), "password": "flood-password", "firstname": "F", "lastname": "L"}})
			if err != nil {
				// Over the per-address cap the server answers 429 and
				// closes, sometimes before the request is sent: a
				// refusal, as long as the server still serves (probed).
				refusedConns.Add(1)
				return
			}
			if len(a.Errors) > 0 {
				err = refused(a, "RATE_LIMITED", "TOO_MANY_CONNECTIONS")
			}
			if err == nil && a.Status >= 500 {
				err = fmt.Errorf("HTTP %d", a.Status)
			}
			if err != nil {
				failures.Add(1)
				firstFailure.CompareAndSwap(nil, err)
			}
		})
	}
	// Probe while the flood runs.
	var slowest time.Duration
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	probes := 0
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-time.After(100 * time.Millisecond):
			pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
			a, err := t.send(pctx, http.MethodGet, "/healthz", nil, nil)
			pcancel()
			if err != nil || a.Status != http.StatusOK {
				wg.Wait()
				return fmt.Errorf("/healthz failed during the signup flood: %v (HTTP %d)", err, a.Status)
			}
			slowest = max(slowest, a.Took)
			probes++
		}
	}
	if refusedConns.Load() == signups {
		return errors.New("no signup of the flood was answered")
	}
	if f := failures.Load(); f > 0 {
		return fmt.Errorf("%d of %d signups failed badly, first: %v", f, signups, firstFailure.Load())
	}
	if slowest > quick {
		return fmt.Errorf("/healthz took %v during the signup flood (%d probes)", slowest, probes)
	}
	return nil
}
