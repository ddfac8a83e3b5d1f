package cassandra

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gocql/gocql"
)

// Config says where the cluster is and how to talk to it. The zero value of
// every field but Hosts has a working default for a development node.
type Config struct {
	// Hosts are the contact points; the driver discovers the rest of the ring.
	Hosts []string
	// Port is the CQL native port. Default 9042.
	Port int
	// Keyspace holds the chat tables. Default "chat".
	Keyspace string
	// Replication is used only when Open creates the keyspace:
	// "SimpleStrategy:1" (the default, for development) or
	// "NetworkTopologyStrategy:dc1=3,dc2=3" for production.
	Replication string
	// LocalDC, when set, keeps requests in that data center
	// (DC-aware round robin under the token-aware policy).
	LocalDC string
	// Consistency of ordinary reads and writes, and of the commit phase of
	// lightweight transactions. Default LOCAL_QUORUM.
	Consistency string
	// SerialConsistency of the Paxos phase of lightweight transactions and of
	// the reads that must see their results: SERIAL or LOCAL_SERIAL (default).
	SerialConsistency string
	// Username and Password enable PasswordAuthenticator when Username is set.
	Username string
	Password string
	// TLS encrypts the connections when TLS.Enabled.
	TLS TLSConfig
	// Timeout bounds one request on the client side. Default 11s, above the
	// server's own timeouts, so that a slow LWT fails with the server's
	// timeout, which says the request arrived, rather than the client's.
	Timeout time.Duration
	// ConnectTimeout bounds dialing and the connection handshake. Default 5s.
	ConnectTimeout time.Duration
	// Log receives what the store does in the background (settling joins
	// whose outcome a timeout left unknown). Nil logs nothing.
	Log *slog.Logger
}

// TLSConfig configures client TLS. Off unless Enabled.
type TLSConfig struct {
	Enabled bool
	// CAFile is a PEM bundle of the CAs that sign the nodes' certificates;
	// empty means the system roots.
	CAFile string
	// CertFile and KeyFile are the client certificate, for clusters that
	// require client authentication. Set both or neither.
	CertFile string
	KeyFile  string
	// InsecureSkipVerify disables verifying the nodes' certificates. Only for
	// development: it allows anyone on the path to read the traffic.
	InsecureSkipVerify bool
}

// Defaults for the zero fields of a Config.
const (
	DefaultKeyspace          = "chat"
	DefaultReplication       = "SimpleStrategy:1"
	DefaultConsistency       = "LOCAL_QUORUM"
	DefaultSerialConsistency = "LOCAL_SERIAL"
	DefaultTimeout           = 11 * time.Second
	DefaultConnectTimeout    = 5 * time.Second
)

// keyspacePattern is Cassandra's rule for unquoted names, lowercase since
// CQL folds unquoted names to it. The name is spliced into CQL, so nothing
// else may pass.
var keyspacePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,47}$`)

// settings is a Config validated and parsed into driver types.
type settings struct {
	Config
	consistency gocql.Consistency
	serial      gocql.SerialConsistency
	replication replication
}

func (c Config) parse() (settings, error) {
	s := settings{Config: c}
	if len(c.Hosts) == 0 {
		return s, fmt.Errorf("cassandra: no hosts configured")
	}
	if s.Port == 0 {
		s.Port = 9042
	}
	if s.Keyspace == "" {
		s.Keyspace = DefaultKeyspace
	}
	if !keyspacePattern.MatchString(s.Keyspace) {
		return s, fmt.Errorf("cassandra: invalid keyspace name %q: lowercase letters, digits and '_', at most 48, starting with a letter", s.Keyspace)
	}
	if s.Replication == "" {
		s.Replication = DefaultReplication
	}
	var err error
	if s.replication, err = parseReplication(s.Replication); err != nil {
		return s, err
	}
	if s.Consistency == "" {
		s.Consistency = DefaultConsistency
	}
	if s.consistency, err = gocql.ParseConsistencyWrapper(s.Consistency); err != nil {
		return s, fmt.Errorf("cassandra: consistency: %w", err)
	}
	if s.SerialConsistency == "" {
		s.SerialConsistency = DefaultSerialConsistency
	}
	if err := s.serial.UnmarshalText([]byte(strings.ToUpper(s.SerialConsistency))); err != nil {
		return s, fmt.Errorf("cassandra: serial consistency (SERIAL or LOCAL_SERIAL): %w", err)
	}
	if s.Timeout <= 0 {
		s.Timeout = DefaultTimeout
	}
	if s.ConnectTimeout <= 0 {
		s.ConnectTimeout = DefaultConnectTimeout
	}
	if t := s.TLS; t.Enabled && (t.CertFile == "") != (t.KeyFile == "") {
		return s, fmt.Errorf("cassandra: a TLS client certificate needs both CertFile and KeyFile")
	}
	return s, nil
}

// cluster returns the driver configuration of one session in keyspace
// (none if empty). Each session needs its own: a host selection policy
// cannot be shared.
func (s settings) cluster(keyspace string) *gocql.ClusterConfig {
	c := gocql.NewCluster(s.Hosts...)
	c.Keyspace = keyspace
	c.Port = s.Port
	c.Consistency = s.consistency
	c.SerialConsistency = s.serial
	c.Timeout = s.Timeout
	c.ConnectTimeout = s.ConnectTimeout
	// No retry policy: gocql v1.7 retries a failed query whether or not it
	// is idempotent, and a lightweight transaction must never be retried
	// blindly (see lwt.go).
	c.RetryPolicy = nil
	fallback := gocql.RoundRobinHostPolicy()
	if s.LocalDC != "" {
		fallback = gocql.DCAwareRoundRobinPolicy(s.LocalDC)
	}
	// Token-aware: each request goes straight to a replica of its partition.
	c.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(fallback)
	if s.Username != "" {
		c.Authenticator = gocql.PasswordAuthenticator{Username: s.Username, Password: s.Password}
	}
	if t := s.TLS; t.Enabled {
		// The driver loads the files and sets each node's ServerName.
		c.SslOpts = &gocql.SslOptions{
			Config:                 &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: t.InsecureSkipVerify},
			CaPath:                 t.CAFile,
			CertPath:               t.CertFile,
			KeyPath:                t.KeyFile,
			EnableHostVerification: !t.InsecureSkipVerify,
		}
	}
	return c
}

// replication is a parsed replication setting: SimpleStrategy with a
// factor, or NetworkTopologyStrategy with a factor per data center.
type replication struct {
	class   string
	factor  int            // SimpleStrategy
	perDC   map[string]int // NetworkTopologyStrategy
	dcNames []string       // perDC's keys, sorted, for stable CQL
}

var dcPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// parseReplication parses "SimpleStrategy:1" or
// "NetworkTopologyStrategy:dc1=3,dc2=3".
func parseReplication(s string) (replication, error) {
	bad := func(why string) (replication, error) {
		return replication{}, fmt.Errorf("cassandra: replication %q: %s (want SimpleStrategy:<rf> or NetworkTopologyStrategy:<dc>=<rf>,...)", s, why)
	}
	class, spec, ok := strings.Cut(s, ":")
	if !ok || spec == "" {
		return bad("missing factors")
	}
	switch class {
	case "SimpleStrategy":
		rf, err := strconv.Atoi(spec)
		if err != nil || rf < 1 {
			return bad("the replication factor must be a positive integer")
		}
		return replication{class: class, factor: rf}, nil
	case "NetworkTopologyStrategy":
		r := replication{class: class, perDC: map[string]int{}}
		for _, part := range strings.Split(spec, ",") {
			dc, f, ok := strings.Cut(strings.TrimSpace(part), "=")
			rf, err := strconv.Atoi(f)
			if !ok || !dcPattern.MatchString(dc) || err != nil || rf < 1 {
				return bad(fmt.Sprintf("bad data center factor %q", part))
			}
			if _, dup := r.perDC[dc]; dup {
				return bad(fmt.Sprintf("data center %q given twice", dc))
			}
			r.perDC[dc] = rf
			r.dcNames = append(r.dcNames, dc)
		}
		slices.Sort(r.dcNames)
		return r, nil
	}
	return bad("unknown strategy " + strconv.Quote(class))
}

// cql is the replication map literal of CREATE KEYSPACE. Names were
// checked by parseReplication, so quoting needs no escapes.
func (r replication) cql() string {
	if r.class == "SimpleStrategy" {
		return fmt.Sprintf("{'class': 'SimpleStrategy', 'replication_factor': %d}", r.factor)
	}
	var b strings.Builder
	b.WriteString("{'class': 'NetworkTopologyStrategy'")
	for _, dc := range r.dcNames {
		fmt.Fprintf(&b, ", '%s': %d", dc, r.perDC[dc])
	}
	b.WriteString("}")
	return b.String()
}
