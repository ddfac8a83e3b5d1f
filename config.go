package main

import (
	"flag"
	"fmt"
	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/store/cassandra"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// Config is the server's configuration. Every field has a flag and a CHAT_*
// environment variable; a flag given on the command line wins.
type Config struct {
	Addr      string
	Store     string // "embedded" or "cassandra"
	DataDir   string
	JWTSecret string
	TokenTTL  time.Duration
	// RefreshTTL is the lifetime of a refresh token; each refresh issues a
	// new one.
	RefreshTTL time.Duration
	// SessionCheck is how long an instance trusts what it read of a
	// session: a revoked session stops working everywhere within it.
	SessionCheck time.Duration
	BcryptCost   int
	RedisURL     string
	// RedisChannelPrefix namespaces the Redis channels, so several
	// deployments can share one Redis.
	RedisChannelPrefix string
	MaxBodyBytes       int64
	MaxComplexity      int
	SubscriberQueue    int
	KeepAlive          time.Duration
	AllowedOrigins     []string
	ShutdownTimeout    time.Duration
	LogLevel           slog.Level

	// Cassandra selects and tunes the cluster when Store is "cassandra".
	Cassandra cassandra.Config
}

// ParseConfig reads flags from args, defaulting each to its CHAT_* variable
// from getenv, and to a built-in default after that.
func ParseConfig(args []string, getenv func(string) string) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("chatql", flag.ContinueOnError)
	env := envDefaults{getenv: getenv}

	fs.StringVar(&c.Addr, "addr", env.str("CHAT_ADDR", ":8080"), "listen address (CHAT_ADDR)")
	fs.StringVar(&c.Store, "store", env.str("CHAT_STORE", "embedded"), "store backend: embedded or cassandra (CHAT_STORE)")
	fs.StringVar(&c.DataDir, "data-dir", env.str("CHAT_DATA_DIR", "data"), "embedded store and generated secret directory (CHAT_DATA_DIR)")
	fs.StringVar(&c.JWTSecret, "jwt-secret", env.str("CHAT_JWT_SECRET", ""), "HS256 secret, at least 32 bytes; generated into the data dir when empty with the embedded store (CHAT_JWT_SECRET)")
	fs.DurationVar(&c.TokenTTL, "token-ttl", env.duration("CHAT_TOKEN_TTL", 15*time.Minute), "access token lifetime (CHAT_TOKEN_TTL)")
	fs.DurationVar(&c.RefreshTTL, "refresh-ttl", env.duration("CHAT_REFRESH_TTL", 30*24*time.Hour), "refresh token lifetime; each refresh issues a new one (CHAT_REFRESH_TTL)")
	fs.DurationVar(&c.SessionCheck, "session-check", env.duration("CHAT_SESSION_CHECK", auth.DefaultCheckInterval), "how long an instance trusts a session it read: revocations take effect everywhere within it (CHAT_SESSION_CHECK)")
	fs.IntVar(&c.BcryptCost, "bcrypt-cost", env.int("CHAT_BCRYPT_COST", 10), "bcrypt cost of password hashes (CHAT_BCRYPT_COST)")
	fs.StringVar(&c.RedisURL, "redis-url", env.str("CHAT_REDIS_URL", ""), "Redis URL for pub/sub across instances; in-process broker when empty (CHAT_REDIS_URL)")
	fs.StringVar(&c.RedisChannelPrefix, "redis-channel-prefix", env.str("CHAT_REDIS_CHANNEL_PREFIX", "chat:"), "prefix of the Redis channels of this deployment (CHAT_REDIS_CHANNEL_PREFIX)")
	fs.Int64Var(&c.MaxBodyBytes, "max-body-bytes", int64(env.int("CHAT_MAX_BODY_BYTES", 1<<20)), "largest accepted request body (CHAT_MAX_BODY_BYTES)")
	fs.IntVar(&c.MaxComplexity, "max-complexity", env.int("CHAT_MAX_COMPLEXITY", 200), "largest accepted query complexity (CHAT_MAX_COMPLEXITY)")
	fs.IntVar(&c.SubscriberQueue, "subscriber-queue", env.int("CHAT_SUBSCRIBER_QUEUE", 256), "events a subscriber may fall behind before it is cut off (CHAT_SUBSCRIBER_QUEUE)")
	fs.DurationVar(&c.KeepAlive, "keepalive", env.duration("CHAT_KEEPALIVE", 15*time.Second), "websocket keepalive interval (CHAT_KEEPALIVE)")
	origins := fs.String("allowed-origins", env.str("CHAT_ALLOWED_ORIGINS", "*"), "comma-separated browser origins allowed to call the API, * for any (CHAT_ALLOWED_ORIGINS)")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", env.duration("CHAT_SHUTDOWN_TIMEOUT", 15*time.Second), "how long shutdown waits for in-flight requests (CHAT_SHUTDOWN_TIMEOUT)")
	logLevel := fs.String("log-level", env.str("CHAT_LOG_LEVEL", "info"), "debug, info, warn or error (CHAT_LOG_LEVEL)")

	cass := &c.Cassandra
	hosts := fs.String("cassandra-hosts", env.str("CHAT_CASSANDRA_HOSTS", "127.0.0.1"), "comma-separated Cassandra contact points (CHAT_CASSANDRA_HOSTS)")
	fs.StringVar(&cass.Keyspace, "cassandra-keyspace", env.str("CHAT_CASSANDRA_KEYSPACE", "chat"), "keyspace (CHAT_CASSANDRA_KEYSPACE)")
	fs.StringVar(&cass.Replication, "cassandra-replication", env.str("CHAT_CASSANDRA_REPLICATION", "SimpleStrategy:1"), "keyspace replication when created: SimpleStrategy:<rf> or NetworkTopologyStrategy:<dc>=<rf>,... (CHAT_CASSANDRA_REPLICATION)")
	fs.StringVar(&cass.Consistency, "cassandra-consistency", env.str("CHAT_CASSANDRA_CONSISTENCY", "LOCAL_QUORUM"), "consistency of reads and writes (CHAT_CASSANDRA_CONSISTENCY)")
	fs.StringVar(&cass.SerialConsistency, "cassandra-serial-consistency", env.str("CHAT_CASSANDRA_SERIAL_CONSISTENCY", "LOCAL_SERIAL"), "SERIAL or LOCAL_SERIAL for lightweight transactions (CHAT_CASSANDRA_SERIAL_CONSISTENCY)")
	fs.StringVar(&cass.Username, "cassandra-username", env.str("CHAT_CASSANDRA_USERNAME", ""), "username, when the cluster authenticates (CHAT_CASSANDRA_USERNAME)")
	fs.StringVar(&cass.Password, "cassandra-password", env.str("CHAT_CASSANDRA_PASSWORD", ""), "password (CHAT_CASSANDRA_PASSWORD)")
	fs.BoolVar(&cass.TLS.Enabled, "cassandra-tls", env.bool("CHAT_CASSANDRA_TLS", false), "encrypt connections to the cluster (CHAT_CASSANDRA_TLS)")
	fs.StringVar(&cass.TLS.CAFile, "cassandra-tls-ca", env.str("CHAT_CASSANDRA_TLS_CA", ""), "PEM CA bundle of the nodes' certificates; system roots when empty (CHAT_CASSANDRA_TLS_CA)")
	fs.StringVar(&cass.TLS.CertFile, "cassandra-tls-cert", env.str("CHAT_CASSANDRA_TLS_CERT", ""), "client certificate file (CHAT_CASSANDRA_TLS_CERT)")
	fs.StringVar(&cass.TLS.KeyFile, "cassandra-tls-key", env.str("CHAT_CASSANDRA_TLS_KEY", ""), "client key file (CHAT_CASSANDRA_TLS_KEY)")
	fs.BoolVar(&cass.TLS.InsecureSkipVerify, "cassandra-tls-skip-verify", env.bool("CHAT_CASSANDRA_TLS_SKIP_VERIFY", false), "skip verifying the nodes' certificates, for development only (CHAT_CASSANDRA_TLS_SKIP_VERIFY)")
	fs.StringVar(&cass.LocalDC, "cassandra-local-dc", env.str("CHAT_CASSANDRA_LOCAL_DC", ""), "keep requests in this data center (CHAT_CASSANDRA_LOCAL_DC)")
	fs.DurationVar(&cass.Timeout, "cassandra-timeout", env.duration("CHAT_CASSANDRA_TIMEOUT", 11*time.Second), "client-side request timeout, above the cluster's own (CHAT_CASSANDRA_TIMEOUT)")

	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if env.err != nil {
		return c, env.err
	}
	if err := c.LogLevel.UnmarshalText([]byte(*logLevel)); err != nil {
		return c, fmt.Errorf("log level %q: %w", *logLevel, err)
	}
	c.AllowedOrigins = splitList(*origins)
	cass.Hosts = splitList(*hosts)
	switch c.Store {
	case "embedded", "cassandra":
	default:
		return c, fmt.Errorf("unknown store %q: want embedded or cassandra", c.Store)
	}
	return c, nil
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// envDefaults reads typed defaults from the environment, keeping the first
// malformed value's error.
type envDefaults struct {
	getenv func(string) string
	err    error
}

func (e *envDefaults) str(key, def string) string {
	if v := e.getenv(key); v != "" {
		return v
	}
	return def
}

func (e *envDefaults) parse(key string, parse func(string) error) {
	if v := e.getenv(key); v != "" {
		if err := parse(v); err != nil && e.err == nil {
			e.err = fmt.Errorf("%s=%q: %w", key, v, err)
		}
	}
}

func (e *envDefaults) int(key string, def int) int {
	e.parse(key, func(v string) (err error) { def, err = strconv.Atoi(v); return err })
	return def
}

func (e *envDefaults) bool(key string, def bool) bool {
	e.parse(key, func(v string) (err error) { def, err = strconv.ParseBool(v); return err })
	return def
}

func (e *envDefaults) duration(key string, def time.Duration) time.Duration {
	e.parse(key, func(v string) (err error) { def, err = time.ParseDuration(v); return err })
	return def
}
