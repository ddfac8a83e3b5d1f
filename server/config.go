package server

import (
	"flag"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/chat"
	"github.com/killrchat/chatql/files"
	"github.com/killrchat/chatql/files/images"
	"github.com/killrchat/chatql/live"
	"github.com/killrchat/chatql/notify/mail"
	"github.com/killrchat/chatql/presence"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/store/cassandra"
)

// Config is the server's configuration. Every field but RateClock has a
// flag and a CHAT_* environment variable; a flag given on the command line
// wins.
type Config struct {
	Addr string
	// MetricsAddr, if set, serves /metrics on a listener of its own, and
	// not on Addr; otherwise /metrics is on Addr with the API.
	MetricsAddr string
	// OTLPEndpoint, when set, is where traces go (OTLP/HTTP, JSON).
	OTLPEndpoint string
	Store        string // "embedded" or "cassandra"
	DataDir      string
	JWTSecret    string
	TokenTTL     time.Duration
	// RefreshTTL is the lifetime of a refresh token; each refresh issues a
	// new one.
	RefreshTTL time.Duration
	// SessionCheck is how long an instance trusts what it read of a
	// session: a revoked session stops working everywhere within it.
	SessionCheck time.Duration
	BcryptCost   int
	RedisURL     string
	// RedisCluster: RedisURL names seed nodes of a Redis Cluster.
	// RedisPubSub is "broadcast" (PUBLISH, SUBSCRIBE) or "sharded"
	// (SPUBLISH, SSUBSCRIBE: a room's traffic stays on one shard), which a
	// cluster needs.
	RedisCluster bool
	RedisPubSub  string
	// RedisChannelPrefix namespaces the Redis channels, so several
	// deployments can share one Redis.
	RedisChannelPrefix string
	MaxBodyBytes       int64
	MaxComplexity      int
	// MaxQueryTokens caps the lexical tokens of a GraphQL document.
	MaxQueryTokens int
	// ReadTimeout bounds the time a client takes to send a request's
	// headers, and then its body; WriteTimeout the time a response other
	// than a stream takes; IdleTimeout the wait for a connection's next
	// request.
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	IdleTimeout  time.Duration
	// MaxConnsPerClient caps the connections open at once from one client
	// IP address; 0 disables the cap (behind a proxy, every client has
	// the proxy's address).
	MaxConnsPerClient int
	// MaxRoomsPerUser caps the rooms and groups a user takes part in.
	MaxRoomsPerUser int
	// MaxSyncsPerUser caps the syncs a user has open at once on an
	// instance.
	MaxSyncsPerUser int
	SubscriberQueue int
	KeepAlive       time.Duration
	// WriteDelay spaces a websocket's writes of events
	// (live.Config.WriteDelay): CPU for latency; 0 writes at once.
	// WriteDelayWhenBusy applies it only while deliveries wait for a CPU
	// (live.Config.WriteDelayWhenBusy): "auto", the default.
	WriteDelay         time.Duration
	WriteDelayWhenBusy bool
	// PresenceTTL is how long an instance's presence records outlive its
	// last heartbeat (every third of it) in Redis: a dead instance's users
	// go offline within PresenceTTL and a heartbeat. PresenceGrace is how
	// long a user stays online after their last connection closed.
	PresenceTTL, PresenceGrace time.Duration
	// ProfileTTL is how long an instance shows the names it read of a user
	// at most: changes are announced to every instance at once, and this
	// bounds what a lost announcement costs.
	ProfileTTL time.Duration
	// MembershipTTL is how long an instance lets a user post to (and read)
	// a public room on the strength of a membership it read at most: the
	// end of a membership drops it on this instance at once, and is
	// announced to the others, which may still accept the user's posts
	// until the announcement arrives; this bounds what a lost one costs.
	// 0: every post and page reads the membership (the default with
	// Redis, that is with several instances).
	MembershipTTL   time.Duration
	AllowedOrigins  []string
	ShutdownTimeout time.Duration
	LogLevel        slog.Level

	// RateLimits limit writes per user and per client address; a limit
	// that is off (zero) allows everything.
	RateLimits ratelimit.Limits
	// TrustedProxies are the proxies whose X-Forwarded-For header tells
	// the client address; otherwise it is the connection's remote address.
	TrustedProxies []netip.Prefix
	// RateClock is the clock of the in-process rate limits (time.Now when
	// nil); tests set it. It has no flag.
	RateClock func() time.Time
	// IDClock makes the ids of the messages posted through this instance
	// (this machine's clock when nil); tests of instances whose clocks
	// disagree set it. It has no flag.
	IDClock *store.IDClock
	// SSEReservationTTL is how long a single-connection event stream
	// reserved with PUT waits to be opened (httpapi's default when 0);
	// tests shorten it. It has no flag.
	SSEReservationTTL time.Duration
	// MaxUnauthenticatedWebsockets caps the websockets open without a
	// user (before connection_init, or anonymous).
	MaxUnauthenticatedWebsockets int

	// Files is where the bytes of sent files live: "disk" (under
	// DataDir/files, served by the server at /files/) or "s3" (S3URL).
	Files string
	// S3URL names the S3-compatible object store when Files is "s3".
	S3URL string
	// PublicURL is the scheme://host[:port] clients reach the server at,
	// which the signed URLs of files on disk start with; empty: the host
	// each request came to.
	PublicURL string
	// OIDC configures sign-in with an OpenID Connect provider (Issuer
	// empty: none).
	OIDC auth.OIDCConfig
	// FileLimits bound files: their size, the quota, images' pixels, and
	// how long signed URLs and unsent files last.
	FileLimits files.Limits
	// FileSweepInterval is how often the instance sweeps files that are
	// due: unsent ones after FileLimits.UnattachedTTL, and those of deleted
	// messages and accounts it could not remove at once.
	FileSweepInterval time.Duration
	// LinkPreviews turns on the cards of links in messages, fetched by the
	// server from the pages they link to.
	LinkPreviews bool
	// LinkPreviewsAllowLoopback lets previews be fetched from loopback
	// addresses, which are refused otherwise (as private and link-local
	// ones always are): for tests, whose pages are on loopback
	// (-allow-loopback-targets).
	LinkPreviewsAllowLoopback bool

	// Push turns on Web Push notifications to people who are away.
	// VAPIDPrivateKey is the server's VAPID key (every instance shares it);
	// with the embedded store and none given, one is kept in the data
	// directory. VAPIDContact is how push services reach the operator.
	Push            bool
	VAPIDPrivateKey string
	VAPIDContact    string
	// PushAllowLoopback accepts push subscriptions on loopback (the push
	// service of the tests; -allow-loopback-targets). NotifyPoll is how
	// often the notifier reads the outbox when idle (notify.DefaultPoll
	// when 0), NotifyMaxBackoff the longest a push service that fails
	// rests (notify.DefaultMaxBackoff when 0); they have no flag.
	PushAllowLoopback bool
	NotifyPoll        time.Duration
	NotifyMaxBackoff  time.Duration

	// WebhooksAllowLoopback accepts webhook URLs on loopback over http, and
	// delivers to them (the receivers of tests). WebhookPoll is how often
	// the deliverer reads the listing of webhooks (notify.DefaultPoll when
	// 0). WebhookRetryDelay, when set, replaces the retry schedule of
	// webhook.Next (5 s to 10 h) by that one delay, for tests; the number
	// of attempts stays webhook.MaxAttempts. None has a flag.
	WebhooksAllowLoopback bool
	WebhookPoll           time.Duration
	WebhookRetryDelay     time.Duration

	// SMTPURL is the relay email goes through (see notify/mail.ParseURL);
	// empty: every email (with its links) is logged instead.
	// EmailLinkTTL is how long an emailed link (verification, password
	// reset) works. EmailDigestAfter is how long someone is away with
	// unread mentions or direct messages before a digest of them is
	// emailed (0: no digests); EmailDigestEvery the least time between two
	// digests to one person.
	SMTPURL          string
	EmailLinkTTL     time.Duration
	EmailDigestAfter time.Duration
	EmailDigestEvery time.Duration

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
	fs.StringVar(&c.MetricsAddr, "metrics-addr", env.str("CHAT_METRICS_ADDR", ""), "serve /metrics on this address alone, not on the API's; empty: on the API's listener (CHAT_METRICS_ADDR)")
	fs.StringVar(&c.OTLPEndpoint, "otlp-endpoint", env.str("CHAT_OTLP_ENDPOINT", ""), "OTLP/HTTP endpoint (such as http://127.0.0.1:4318) to export traces of queries and mutations to; none when empty (CHAT_OTLP_ENDPOINT)")
	fs.StringVar(&c.Store, "store", env.str("CHAT_STORE", "embedded"), "store backend: embedded or cassandra (CHAT_STORE)")
	fs.StringVar(&c.DataDir, "data-dir", env.str("CHAT_DATA_DIR", "data"), "embedded store and generated secret directory (CHAT_DATA_DIR)")
	fs.StringVar(&c.JWTSecret, "jwt-secret", env.str("CHAT_JWT_SECRET", ""), "HS256 secret, at least 32 bytes; generated into the data dir when empty with the embedded store (CHAT_JWT_SECRET)")
	fs.DurationVar(&c.TokenTTL, "token-ttl", env.duration("CHAT_TOKEN_TTL", 15*time.Minute), "access token lifetime (CHAT_TOKEN_TTL)")
	fs.DurationVar(&c.RefreshTTL, "refresh-ttl", env.duration("CHAT_REFRESH_TTL", 30*24*time.Hour), "refresh token lifetime; each refresh issues a new one (CHAT_REFRESH_TTL)")
	fs.DurationVar(&c.SessionCheck, "session-check", env.duration("CHAT_SESSION_CHECK", auth.DefaultCheckInterval), "how long an instance trusts a session it read: revocations take effect everywhere within it (CHAT_SESSION_CHECK)")
	fs.IntVar(&c.BcryptCost, "bcrypt-cost", env.int("CHAT_BCRYPT_COST", 10), "bcrypt cost of password hashes (CHAT_BCRYPT_COST)")
	fs.StringVar(&c.RedisURL, "redis-url", env.str("CHAT_REDIS_URL", ""), "Redis URL for pub/sub across instances; in-process broker when empty (CHAT_REDIS_URL)")
	fs.BoolVar(&c.RedisCluster, "redis-cluster", env.bool("CHAT_REDIS_CLUSTER", false), "the Redis URL names seed nodes of a Redis Cluster: redis://host:port?addr=host2:port2&addr=host3:port3 (CHAT_REDIS_CLUSTER)")
	fs.StringVar(&c.RedisPubSub, "redis-pubsub", env.str("CHAT_REDIS_PUBSUB", ""), "broadcast (PUBLISH) or sharded (SPUBLISH, Redis 7: a room's traffic stays on one shard); a cluster needs sharded, the default there; broadcast otherwise; every instance must use the same (CHAT_REDIS_PUBSUB)")
	fs.StringVar(&c.RedisChannelPrefix, "redis-channel-prefix", env.str("CHAT_REDIS_CHANNEL_PREFIX", "chat:"), "prefix of the Redis channels of this deployment (CHAT_REDIS_CHANNEL_PREFIX)")
	fs.Int64Var(&c.MaxBodyBytes, "max-body-bytes", int64(env.int("CHAT_MAX_BODY_BYTES", 1<<20)), "largest accepted request body (CHAT_MAX_BODY_BYTES)")
	fs.IntVar(&c.MaxComplexity, "max-complexity", env.int("CHAT_MAX_COMPLEXITY", 2000), "largest accepted query complexity; a page counts its selection once per item (CHAT_MAX_COMPLEXITY)")
	fs.IntVar(&c.MaxQueryTokens, "max-query-tokens", env.int("CHAT_MAX_QUERY_TOKENS", 15000), "largest accepted GraphQL document, in lexical tokens (CHAT_MAX_QUERY_TOKENS)")
	fs.DurationVar(&c.ReadTimeout, "read-timeout", env.duration("CHAT_READ_TIMEOUT", 10*time.Second), "time a client has to send a request's headers, and then its body (CHAT_READ_TIMEOUT)")
	fs.DurationVar(&c.WriteTimeout, "write-timeout", env.duration("CHAT_WRITE_TIMEOUT", 30*time.Second), "time a response may take to be written; streams are exempt (CHAT_WRITE_TIMEOUT)")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", env.duration("CHAT_IDLE_TIMEOUT", 2*time.Minute), "how long an idle keep-alive connection stays open (CHAT_IDLE_TIMEOUT)")
	fs.IntVar(&c.MaxConnsPerClient, "max-conns-per-client", env.int("CHAT_MAX_CONNS_PER_CLIENT", 256), "connections open at once from one client IP; 0 for no cap, e.g. behind a proxy (CHAT_MAX_CONNS_PER_CLIENT)")
	fs.IntVar(&c.MaxRoomsPerUser, "max-rooms-per-user", env.int("CHAT_MAX_ROOMS_PER_USER", chat.DefaultMaxRoomsPerUser), "rooms and groups a user may take part in at once; each costs their inbox reads and presence changes (CHAT_MAX_ROOMS_PER_USER)")
	fs.IntVar(&c.MaxSyncsPerUser, "max-syncs-per-user", env.int("CHAT_MAX_SYNCS_PER_USER", chat.DefaultMaxSyncsPerUser), "sync subscriptions (and changes polls under way) a user may have open at once on one instance; each follows every room of theirs (CHAT_MAX_SYNCS_PER_USER)")
	fs.IntVar(&c.SubscriberQueue, "subscriber-queue", env.int("CHAT_SUBSCRIBER_QUEUE", 256), "events a subscriber may fall behind before it is cut off (CHAT_SUBSCRIBER_QUEUE)")
	fs.DurationVar(&c.PresenceTTL, "presence-ttl", env.duration("CHAT_PRESENCE_TTL", presence.DefaultTTL), "how long a dead instance's users stay online in Redis; instances heartbeat every third of it (CHAT_PRESENCE_TTL)")
	fs.DurationVar(&c.ProfileTTL, "profile-ttl", env.duration("CHAT_PROFILE_TTL", chat.DefaultProfileTTL), "how long an instance shows the names it read of a user at most, should the announcement of a change be lost (CHAT_PROFILE_TTL)")
	membershipTTL := fs.String("membership-ttl", env.str("CHAT_MEMBERSHIP_TTL", "auto"), "how long an instance lets a user post to (and read) a public room on the strength of a membership it read at most; 0 reads it every time; auto: "+chat.DefaultMembershipTTL.String()+" with the in-process broker (one instance: the end of a membership drops it at once), 0 with Redis (another instance would accept a removed user's posts until the announcement reaches it) (CHAT_MEMBERSHIP_TTL)")
	fs.DurationVar(&c.PresenceGrace, "presence-grace", env.duration("CHAT_PRESENCE_GRACE", presence.DefaultGrace), "how long a user stays online after their last connection closed (CHAT_PRESENCE_GRACE)")
	fs.DurationVar(&c.KeepAlive, "keepalive", env.duration("CHAT_KEEPALIVE", 15*time.Second), "websocket keepalive interval (CHAT_KEEPALIVE)")
	writeDelay := fs.String("write-delay", env.str("CHAT_WRITE_DELAY", "auto"), "spaces a websocket's writes: an event within this long of the connection's last write waits this long at most, and what came meanwhile goes out in one write (fewer syscalls for later events), up to 1s; 0 writes every event at once; auto: "+live.DefaultWriteDelay.String()+" while the server's cores are full (deliveries wait for one), 0 otherwise (CHAT_WRITE_DELAY)")
	fs.IntVar(&c.MaxUnauthenticatedWebsockets, "max-unauthenticated-websockets", env.int("CHAT_MAX_UNAUTHENTICATED_WEBSOCKETS", 1000), "websockets open without a user (before connection_init, or anonymous) before upgrades are refused with 503 (CHAT_MAX_UNAUTHENTICATED_WEBSOCKETS)")
	origins := fs.String("allowed-origins", env.str("CHAT_ALLOWED_ORIGINS", "*"), "comma-separated browser origins allowed to call the API, * for any (CHAT_ALLOWED_ORIGINS)")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", env.duration("CHAT_SHUTDOWN_TIMEOUT", 15*time.Second), "how long shutdown waits for in-flight requests (CHAT_SHUTDOWN_TIMEOUT)")
	fs.StringVar(&c.Files, "files", env.str("CHAT_FILES", "disk"), "where sent files are kept: disk (under the data dir, served by the server) or s3 (CHAT_FILES)")
	fs.StringVar(&c.S3URL, "s3-url", env.str("CHAT_S3_URL", ""), "the S3-compatible object store of -files s3: "+s3URLForm+" (CHAT_S3_URL)")
	fs.StringVar(&c.PublicURL, "public-url", env.str("CHAT_PUBLIC_URL", ""), "scheme://host[:port] clients reach this server at, for the signed URLs of files on disk; empty: the host each request names (CHAT_PUBLIC_URL)")
	c.FileLimits = files.DefaultLimits
	fs.Int64Var(&c.FileLimits.MaxFileBytes, "max-file-bytes", int64(env.int("CHAT_MAX_FILE_BYTES", int(files.DefaultLimits.MaxFileBytes))), "largest file accepted, in bytes (CHAT_MAX_FILE_BYTES)")
	fs.Int64Var(&c.FileLimits.QuotaBytes, "file-quota-bytes", int64(env.int("CHAT_FILE_QUOTA_BYTES", int(files.DefaultLimits.QuotaBytes))), "bytes of files one user may keep (CHAT_FILE_QUOTA_BYTES)")
	fs.Int64Var(&c.FileLimits.MaxImagePixels, "max-image-pixels", int64(env.int("CHAT_MAX_IMAGE_PIXELS", int(files.DefaultLimits.MaxImagePixels))), "largest image accepted, in pixels (width x height), checked before decoding (CHAT_MAX_IMAGE_PIXELS)")
	fs.DurationVar(&c.FileLimits.UploadURLTTL, "upload-url-ttl", env.duration("CHAT_UPLOAD_URL_TTL", files.DefaultLimits.UploadURLTTL), "how long a signed upload URL is valid (CHAT_UPLOAD_URL_TTL)")
	fs.DurationVar(&c.FileLimits.DownloadURLTTL, "download-url-ttl", env.duration("CHAT_DOWNLOAD_URL_TTL", files.DefaultLimits.DownloadURLTTL), "how long a signed download URL is valid at least; a file keeps one URL for a while so browsers cache it (CHAT_DOWNLOAD_URL_TTL)")
	fs.DurationVar(&c.FileLimits.UnattachedTTL, "unsent-file-ttl", env.duration("CHAT_UNSENT_FILE_TTL", files.DefaultLimits.UnattachedTTL), "how long an uploaded file may wait to be sent with a message before it is removed (CHAT_UNSENT_FILE_TTL)")
	fs.DurationVar(&c.FileSweepInterval, "file-sweep-interval", env.duration("CHAT_FILE_SWEEP_INTERVAL", 5*time.Minute), "how often unsent files and those of deleted messages are swept (CHAT_FILE_SWEEP_INTERVAL)")
	fs.BoolVar(&c.LinkPreviews, "link-previews", env.bool("CHAT_LINK_PREVIEWS", true), "fetch the card (title, description, image) of the first link in each message; private, loopback and link-local addresses are never fetched (CHAT_LINK_PREVIEWS)")
	loopback := fs.Bool("allow-loopback-targets", env.bool("CHAT_ALLOW_LOOPBACK_TARGETS", false), "for tests only: let link previews, push notifications and webhooks reach loopback addresses, which are refused otherwise (CHAT_ALLOW_LOOPBACK_TARGETS)")
	fs.BoolVar(&c.Push, "push", env.bool("CHAT_PUSH", true), "send Web Push notifications of direct messages, mentions, replies and group additions to people who are offline (CHAT_PUSH)")
	fs.StringVar(&c.VAPIDPrivateKey, "vapid-private-key", env.str("CHAT_VAPID_PRIVATE_KEY", ""), "the VAPID private key of Web Push (PEM, or the 32-byte scalar in base64url), shared by every instance; generated into the data dir when empty with the embedded store, push off when empty with Cassandra (CHAT_VAPID_PRIVATE_KEY)")
	fs.StringVar(&c.VAPIDContact, "vapid-contact", env.str("CHAT_VAPID_CONTACT", "https://github.com/killrchat/chatql"), "how push services reach this server's operator: mailto:address or an https URL (CHAT_VAPID_CONTACT)")
	fs.StringVar(&c.SMTPURL, "smtp-url", env.str("CHAT_SMTP_URL", ""), "the SMTP relay email goes through: smtp://user:pass@host:587?from=chat@example.com (STARTTLS), smtps://... (TLS), starttls=false for a relay on a trusted network; empty: emails and their links are logged (CHAT_SMTP_URL)")
	fs.DurationVar(&c.EmailLinkTTL, "email-link-ttl", env.duration("CHAT_EMAIL_LINK_TTL", chat.DefaultLinkTTL), "how long an emailed verification or password reset link works (CHAT_EMAIL_LINK_TTL)")
	digestAfter := fs.String("email-digest-after", env.str("CHAT_EMAIL_DIGEST_AFTER", chat.DefaultDigestAfter.String()), "how long someone is away with unread mentions or direct messages before a digest of them is emailed to their verified address; 0 or off: no digests (CHAT_EMAIL_DIGEST_AFTER)")
	fs.DurationVar(&c.EmailDigestEvery, "email-digest-every", env.duration("CHAT_EMAIL_DIGEST_EVERY", chat.DefaultDigestEvery), "the least time between two email digests to one person (CHAT_EMAIL_DIGEST_EVERY)")
	fs.StringVar(&c.OIDC.Issuer, "oidc-issuer", env.str("CHAT_OIDC_ISSUER", ""), "the OpenID Connect provider's issuer URL, to sign in with it; empty: no single sign-on (CHAT_OIDC_ISSUER)")
	fs.StringVar(&c.OIDC.ClientID, "oidc-client-id", env.str("CHAT_OIDC_CLIENT_ID", ""), "this server's client id at the OpenID Connect provider (CHAT_OIDC_CLIENT_ID)")
	fs.StringVar(&c.OIDC.ClientSecret, "oidc-client-secret", env.str("CHAT_OIDC_CLIENT_SECRET", ""), "this server's client secret at the OpenID Connect provider (CHAT_OIDC_CLIENT_SECRET)")
	fs.StringVar(&c.OIDC.RedirectURL, "oidc-redirect-url", env.str("CHAT_OIDC_REDIRECT_URL", ""), "where the provider sends the browser back with the code, registered there; empty: the public URL's /?oidc (CHAT_OIDC_REDIRECT_URL)")
	c.RateLimits = ratelimit.DefaultLimits
	for _, f := range rateFlags {
		l := &c.RateLimits[f.action]
		env.parse(f.env, l.Set)
		fs.Var(l, f.flag, fmt.Sprintf("%s: RATE/PERIOD[:BURST] such as 10/s:20, or 0 for no limit (%s)", f.usage, f.env))
	}
	proxies := fs.String("trusted-proxies", env.str("CHAT_TRUSTED_PROXIES", ""), "comma-separated addresses or CIDR prefixes of proxies whose X-Forwarded-For header tells the client address (CHAT_TRUSTED_PROXIES)")
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
	c.LinkPreviewsAllowLoopback, c.PushAllowLoopback, c.WebhooksAllowLoopback = *loopback, *loopback, *loopback
	if err := c.LogLevel.UnmarshalText([]byte(*logLevel)); err != nil {
		return c, fmt.Errorf("log level %q: %w", *logLevel, err)
	}
	c.AllowedOrigins = splitList(*origins)
	trusted, err := ratelimit.ParseTrustedProxies(splitList(*proxies))
	if err != nil {
		return c, err
	}
	c.TrustedProxies = trusted
	cass.Hosts = splitList(*hosts)
	if c.MaxRoomsPerUser < 1 {
		return c, fmt.Errorf("max rooms per user %d: must be at least 1", c.MaxRoomsPerUser)
	}
	if c.MaxSyncsPerUser < 1 {
		return c, fmt.Errorf("max syncs per user %d: must be at least 1", c.MaxSyncsPerUser)
	}
	if c.MaxUnauthenticatedWebsockets < 1 {
		return c, fmt.Errorf("max unauthenticated websockets %d: must be at least 1", c.MaxUnauthenticatedWebsockets)
	}
	if *writeDelay == "auto" {
		c.WriteDelay, c.WriteDelayWhenBusy = live.DefaultWriteDelay, true
	} else if d, err := time.ParseDuration(*writeDelay); err != nil || d < 0 || d > time.Second {
		return c, fmt.Errorf("write delay %q: want auto, or a duration from 0 to 1s such as 20ms", *writeDelay)
	} else {
		c.WriteDelay = d
	}
	if c.ProfileTTL <= 0 {
		return c, fmt.Errorf("profile TTL %v: must be positive", c.ProfileTTL)
	}
	switch *membershipTTL {
	case "auto":
		if c.RedisURL == "" {
			c.MembershipTTL = chat.DefaultMembershipTTL
		}
	default:
		ttl, err := time.ParseDuration(*membershipTTL)
		if err != nil || ttl < 0 {
			return c, fmt.Errorf("membership TTL %q: want auto, 0 or a positive duration such as 5s", *membershipTTL)
		}
		c.MembershipTTL = ttl
	}
	if c.PresenceTTL < 300*time.Millisecond || c.PresenceGrace < 0 {
		return c, fmt.Errorf("presence TTL %v, grace %v: the TTL must be at least 300ms and the grace not negative", c.PresenceTTL, c.PresenceGrace)
	}
	switch c.RedisPubSub {
	case "":
		c.RedisPubSub = "broadcast"
		if c.RedisCluster {
			c.RedisPubSub = "sharded"
		}
	case "broadcast", "sharded":
		if c.RedisCluster && c.RedisPubSub == "broadcast" {
			return c, fmt.Errorf("Redis pub/sub mode broadcast on a Redis Cluster: a room's events published through different nodes could arrive out of order; use sharded")
		}
	default:
		return c, fmt.Errorf("unknown Redis pub/sub mode %q: want broadcast or sharded", c.RedisPubSub)
	}
	switch c.Store {
	case "embedded", "cassandra":
	default:
		return c, fmt.Errorf("unknown store %q: want embedded or cassandra", c.Store)
	}
	switch {
	case c.Files != "disk" && c.Files != "s3":
		return c, fmt.Errorf("unknown files backend %q: want disk or s3", c.Files)
	case c.Files == "s3" && c.S3URL == "":
		return c, fmt.Errorf("files on s3 need -s3-url (CHAT_S3_URL): %s", s3URLForm)
	case c.FileLimits.MaxFileBytes < 1 || c.FileLimits.QuotaBytes < c.FileLimits.MaxFileBytes:
		return c, fmt.Errorf("file limits: the largest file (%d bytes) must be at least 1 byte and at most the quota (%d)", c.FileLimits.MaxFileBytes, c.FileLimits.QuotaBytes)
	case c.FileLimits.MaxImagePixels < 1 || c.FileLimits.MaxImagePixels > images.DefaultLimits.MaxPixels:
		return c, fmt.Errorf("max image pixels %d: want 1 to %d", c.FileLimits.MaxImagePixels, images.DefaultLimits.MaxPixels)
	case c.FileLimits.UploadURLTTL < time.Second || c.FileLimits.DownloadURLTTL < time.Second || c.FileLimits.UnattachedTTL < time.Second || c.FileSweepInterval <= 0:
		return c, fmt.Errorf("file durations: the URLs' TTLs and the unsent files' must be at least 1s, and the sweep interval positive")
	}
	if *digestAfter == "off" {
		*digestAfter = "0"
	}
	if c.EmailDigestAfter, err = time.ParseDuration(*digestAfter); err != nil || c.EmailDigestAfter < 0 {
		return c, fmt.Errorf("email digest after %q: want off, 0 or a positive duration such as 1h", *digestAfter)
	}
	if c.EmailLinkTTL < time.Second || c.EmailDigestEvery < 0 {
		return c, fmt.Errorf("email link TTL %v, digest every %v: the TTL must be at least 1s and the period not negative", c.EmailLinkTTL, c.EmailDigestEvery)
	}
	if c.SMTPURL != "" {
		if _, err := mail.ParseURL(c.SMTPURL); err != nil {
			return c, err
		}
	}
	if c.PublicURL != "" {
		if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return c, fmt.Errorf("public URL %q: want scheme://host[:port], such as https://chat.example.com", c.PublicURL)
		}
		c.PublicURL = strings.TrimSuffix(c.PublicURL, "/")
	}
	return c, nil
}

// rateFlags are the settings of the rate limits, one per limited action.
var rateFlags = []struct {
	action    ratelimit.Action
	flag, env string
	usage     string
}{
	{ratelimit.Post, "rate-posts", "CHAT_RATE_POSTS", "postMessage per user"},
	{ratelimit.RoomChange, "rate-room-changes", "CHAT_RATE_ROOM_CHANGES", "createRoom, joinRoom, leaveRoom, deleteRoom, addGroupMember, hideMessage, deleteMessage, blockUser, unblockUser and muteConversation per user"},
	{ratelimit.DirectMessage, "rate-direct-messages", "CHAT_RATE_DIRECT_MESSAGES", "sendDirectMessage per user"},
	{ratelimit.Typing, "rate-typing", "CHAT_RATE_TYPING", "typing per user"},
	{ratelimit.Upload, "rate-uploads", "CHAT_RATE_UPLOADS", "createUpload and completeUpload per user"},
	{ratelimit.Search, "rate-searches", "CHAT_RATE_SEARCHES", "searchMessages, searchUsers and searchRooms per user"},
	{ratelimit.Signup, "rate-signups-per-address", "CHAT_RATE_SIGNUPS_PER_ADDRESS", "signups per client address"},
	{ratelimit.Login, "rate-logins-per-login", "CHAT_RATE_LOGINS_PER_LOGIN", "login attempts per login tried"},
	{ratelimit.LoginAddress, "rate-logins-per-address", "CHAT_RATE_LOGINS_PER_ADDRESS", "login attempts per client address"},
	{ratelimit.EmailTo, "rate-emails-per-recipient", "CHAT_RATE_EMAILS_PER_RECIPIENT", "emailed links (verification, password reset) per recipient address"},
	{ratelimit.EmailRequest, "rate-email-requests-per-address", "CHAT_RATE_EMAIL_REQUESTS_PER_ADDRESS", "requests for an emailed link, and uses of one, per client address"},
	{ratelimit.Account, "rate-account-changes", "CHAT_RATE_ACCOUNT_CHANGES", "changes to how one signs in (endSession, two-factor, passkeys, identities) per user"},
	{ratelimit.SecondFactor, "rate-codes-per-login", "CHAT_RATE_CODES_PER_LOGIN", "one-time codes tried (two-factor) per login"},
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
