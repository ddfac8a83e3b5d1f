package mail

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"strconv"
	"time"
)

// Defaults of a Config parsed from a URL.
const (
	DefaultDialTimeout = 10 * time.Second
	DefaultSendTimeout = 30 * time.Second
)

// ErrConfig reports an SMTP URL that cannot be used.
var ErrConfig = errors.New("mail: bad SMTP configuration")

// Config tells an SMTPMailer how to reach its relay.
type Config struct {
	// Host and Port locate the relay.
	Host string
	Port int
	// Username and Password, if Username is set, are sent with AUTH PLAIN.
	Username string
	Password string
	// From is the sender of every message.
	From mail.Address
	// ImplicitTLS speaks TLS from the first byte (smtps).
	ImplicitTLS bool
	// StartTLS upgrades the connection with STARTTLS and fails if the
	// server does not offer it. It is ignored with ImplicitTLS.
	StartTLS bool
	// DialTimeout bounds connecting; SendTimeout bounds the whole
	// exchange, connecting included.
	DialTimeout time.Duration
	SendTimeout time.Duration
	// TLSConfig, if set, is used for TLS instead of one verifying Host
	// against the system's roots (tests set it to trust their server).
	TLSConfig *tls.Config
}

// ParseURL reads a Config from an smtp:// or smtps:// URL; see the package
// documentation for its form.
func ParseURL(raw string) (Config, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Config{}, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	cfg := Config{Host: u.Hostname(), DialTimeout: DefaultDialTimeout, SendTimeout: DefaultSendTimeout}
	if err := cfg.setScheme(u.Scheme); err != nil {
		return Config{}, err
	}
	if err := cfg.setPort(u.Port()); err != nil {
		return Config{}, err
	}
	if u.User != nil {
		cfg.Username = u.User.Username()
		cfg.Password, _ = u.User.Password()
	}
	if err := cfg.setQuery(u.Query()); err != nil {
		return Config{}, err
	}
	return cfg, cfg.check()
}

// setScheme sets the TLS mode and default port of a scheme.
func (c *Config) setScheme(scheme string) error {
	switch scheme {
	case "smtp":
		c.StartTLS, c.Port = true, 587
	case "smtps":
		c.ImplicitTLS, c.Port = true, 465
	default:
		return fmt.Errorf("%w: scheme %q is not smtp or smtps", ErrConfig, scheme)
	}
	return nil
}

// setPort sets an explicit port.
func (c *Config) setPort(port string) error {
	if port == "" {
		return nil
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("%w: port %q", ErrConfig, port)
	}
	c.Port = p
	return nil
}

// setQuery reads from, starttls, dial_timeout and timeout.
func (c *Config) setQuery(q url.Values) error {
	from, err := mail.ParseAddress(q.Get("from"))
	if err != nil {
		return fmt.Errorf("%w: from=%q: %v", ErrConfig, q.Get("from"), err)
	}
	c.From = *from
	if v := q.Get("starttls"); v != "" {
		if c.StartTLS, err = strconv.ParseBool(v); err != nil || c.ImplicitTLS {
			return fmt.Errorf("%w: starttls=%q (only a boolean, and only with smtp)", ErrConfig, v)
		}
	}
	if c.DialTimeout, err = durationParam(q, "dial_timeout", c.DialTimeout); err != nil {
		return err
	}
	c.SendTimeout, err = durationParam(q, "timeout", c.SendTimeout)
	return err
}

// durationParam reads a positive duration, or returns def if it is absent.
func durationParam(q url.Values, name string, def time.Duration) (time.Duration, error) {
	v := q.Get(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%w: %s=%q is not a positive duration", ErrConfig, name, v)
	}
	return d, nil
}

// check refuses a config without a host or that would send credentials in
// clear to another machine.
func (c Config) check() error {
	if c.Host == "" {
		return fmt.Errorf("%w: no host", ErrConfig)
	}
	if c.Username != "" && !c.ImplicitTLS && !c.StartTLS && !isLoopback(c.Host) {
		return fmt.Errorf("%w: credentials without TLS are only sent to loopback", ErrConfig)
	}
	return nil
}

// addr returns "host:port".
func (c Config) addr() string {
	return net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
}

// tlsConfig returns the TLS configuration to use.
func (c Config) tlsConfig() *tls.Config {
	if c.TLSConfig != nil {
		return c.TLSConfig
	}
	return &tls.Config{ServerName: c.Host, MinVersion: tls.VersionTLS12}
}

// isLoopback reports whether host is "localhost" or a loopback address.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
