// Package server is one instance of the chat GraphQL API: queries and
// mutations over HTTP, live room events over websockets and server-sent
// events, on the configured store and broker. The chatql command (the
// module's root) parses a Config, builds a Server and serves it; the
// end-to-end tests (e2e/) run instances of their own.
//
// With no configuration an instance runs on an embedded on-disk store and
// an in-process broker; in production, CHAT_STORE=cassandra and
// CHAT_REDIS_URL select a Cassandra cluster and Redis pub/sub across
// instances.
package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/redis/go-redis/v9"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/chat"
	"github.com/killrchat/chatql/graph"
	"github.com/killrchat/chatql/httpapi"
	"github.com/killrchat/chatql/linkpreview"
	"github.com/killrchat/chatql/live"
	"github.com/killrchat/chatql/metrics"
	"github.com/killrchat/chatql/notify"
	"github.com/killrchat/chatql/playground"
	"github.com/killrchat/chatql/presence"
	"github.com/killrchat/chatql/querylimit"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/resolvers"
	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/store/embedded"
	"github.com/killrchat/chatql/stream"
	"github.com/killrchat/chatql/tracing"
	"github.com/killrchat/chatql/webapp"
)

// Server is one instance of the chat API: the store, the broker and the
// HTTP handler built on them.
type Server struct {
	cfg    Config
	log    *slog.Logger
	store  store.Store
	broker broker.Broker
	http   *http.Server
	// endRequests cancels the context of every request still running when
	// shutdown gives up waiting, before the store closes under it.
	endRequests context.CancelFunc
	closing     atomic.Bool
	ownsStore   bool
	// limitsRedis is the Redis client of the rate limits, nil without one.
	limitsRedis redis.UniversalClient
	// presence tracks who is online; presenceRedis is its Redis client (nil
	// without Redis); stopPresence ends its heartbeats and waits.
	presence      *presence.Tracker
	presenceRedis redis.UniversalClient
	stopPresence  func()
	// files serves the signed URLs of files on disk (nil on S3);
	// stopSweeper ends the sweep of files and waits; previews fetches
	// link previews (nil when off), which core runs in the background.
	files        http.Handler
	stopSweeper  func()
	stopNotifier func()
	stopEmail    func()
	notifier     *notify.Notifier
	// stopWebhooks ends the delivery to webhooks and waits.
	stopWebhooks func()
	deliverer    *notify.Deliverer
	previews     *linkpreview.Fetcher
	core         *chat.Service
	passwords    *auth.Passwords
	profiles     *chat.Profiles
	streams      *stream.Source
	live         *live.Transport
	// metrics is the server's Prometheus registry and instruments, served
	// at /metrics (see metricsHandler).
	metrics *metrics.Metrics
	// tracer exports traces when an OTLP endpoint is configured; nil
	// otherwise.
	tracer *tracing.Tracer
	sse    httpapi.StreamStats
}

// Metrics returns the server's instrumentation.
func (s *Server) Metrics() *metrics.Metrics { return s.metrics }

// Streams is the source of this server's subscription streams, which
// counts those open.
func (s *Server) Streams() *stream.Source { return s.streams }

// Store is the store this instance runs on, as its requests see it
// (counted by its metrics): what it writes, the API reads, and an
// instance started on it with NewOnStore shares it.
func (s *Server) Store() store.Store { return s.store }

// Profiles is this instance's cache of its users' names.
func (s *Server) Profiles() *chat.Profiles { return s.profiles }

// Passwords hashes and checks this instance's passwords, at most a few at
// once.
func (s *Server) Passwords() *auth.Passwords { return s.passwords }

// Released reports whether the server holds nothing for subscribers: no
// open stream, websocket or shared encoder.
func (s *Server) Released() bool {
	conns, encoders := s.live.Held()
	return s.streams.Open() == 0 && conns == 0 && encoders == 0
}

// New opens the configured store and broker and builds the handler.
func New(ctx context.Context, cfg Config, log *slog.Logger) (*Server, error) {
	st, err := openStore(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	s, err := NewOnStore(ctx, cfg, log, st)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	s.ownsStore = true
	return s, nil
}

// NewOnStore builds an instance on an open store, which it does not close:
// tests run several instances on one store, as a cluster would.
func NewOnStore(ctx context.Context, cfg Config, log *slog.Logger, st store.Store) (*Server, error) {
	m := metrics.New()
	s := &Server{cfg: cfg, log: log, store: m.Store(st), metrics: m}
	var err error
	if cfg.OTLPEndpoint != "" {
		if s.tracer, err = tracing.New(cfg.OTLPEndpoint, "chatql", log); err != nil {
			return nil, err
		}
	}
	if s.broker, err = openBroker(ctx, cfg, log); err != nil {
		_ = s.tracer.Close(ctx)
		return nil, err
	}
	secret, err := jwtSecret(cfg)
	if err != nil {
		_ = s.broker.Close()
		return nil, err
	}
	tokens, err := auth.NewTokens(secret, cfg.TokenTTL)
	if err != nil {
		_ = s.broker.Close()
		return nil, err
	}
	passwords, err := auth.NewPasswords(cfg.BcryptCost)
	if err != nil {
		_ = s.broker.Close()
		return nil, err
	}
	limits, limitsRedis, err := openRateLimits(cfg, log)
	if err != nil {
		_ = s.broker.Close()
		return nil, err
	}
	s.limitsRedis = limitsRedis
	// Live streams end as soon as shutdown starts; other requests run on
	// until they finish, or until shutdown stops waiting for them.
	streams, endStreams := context.WithCancel(context.Background())
	requests, endRequests := context.WithCancel(context.Background())
	s.endRequests = endRequests
	sessions, err := auth.NewSessions(streams, auth.SessionConfig{
		Store: s.store, Tokens: tokens, Secret: secret, RefreshTTL: cfg.RefreshTTL, CheckInterval: cfg.SessionCheck, Limits: limits,
	})
	if err != nil {
		endStreams()
		_ = s.broker.Close()
		return nil, err
	}
	s.passwords = passwords
	s.streams = &stream.Source{Store: s.store, Broker: s.broker}
	passkeys, err := auth.NewPasskeys(sessions, cfg.PublicURL)
	if err != nil {
		endStreams()
		_ = s.broker.Close()
		return nil, err
	}
	var sso *auth.OIDC
	if cfg.OIDC.Issuer != "" {
		oc := cfg.OIDC
		if oc.RedirectURL == "" && cfg.PublicURL != "" {
			oc.RedirectURL = strings.TrimSuffix(cfg.PublicURL, "/") + "/?oidc"
		}
		if sso, err = auth.NewOIDC(sessions, oc); err != nil {
			endStreams()
			_ = s.broker.Close()
			return nil, err
		}
	}
	core := &chat.Service{Store: s.store, Broker: s.broker, Streams: s.streams, Sessions: sessions, PasskeyCeremonies: passkeys, OIDC: sso, Passwords: passwords, Log: log, Limits: limits, MaxRoomsPerUser: cfg.MaxRoomsPerUser, MaxSyncsPerUser: cfg.MaxSyncsPerUser, Clock: cfg.IDClock}
	core.Typists = core.NewTyping()
	core.Profiles = chat.NewProfiles(s.store, log, 0, cfg.ProfileTTL)
	s.profiles = core.Profiles
	if cfg.MembershipTTL > 0 {
		core.Memberships = chat.NewMemberships(0, cfg.MembershipTTL)
	}
	if core.Files, s.files, err = openFiles(ctx, cfg, s.store, secret, log); err != nil {
		endStreams()
		_ = s.broker.Close()
		return nil, err
	}
	if s.previews = openPreviews(cfg); s.previews != nil {
		core.Previews = s.previews
	}
	s.core = core
	if err := s.startEmail(streams, core, secret); err != nil {
		endStreams()
		_ = s.broker.Close()
		return nil, err
	}
	s.startSweeper(streams)
	res := &resolvers.Resolver{Service: core, Tokens: tokens}
	if err := res.FollowAnnouncements(streams, sessions.EndUser); err != nil {
		endStreams()
		_ = s.broker.Close()
		return nil, fmt.Errorf("following the instances' announcements: %w", err)
	}
	if err := s.startPresence(res); err != nil {
		endStreams()
		_ = s.broker.Close()
		return nil, err
	}
	// After presence: the notifier tells only those who are offline.
	if err := s.startNotifier(streams, core); err != nil {
		s.stopPresence()
		s.stopSweeper()
		s.stopEmail()
		endStreams()
		_ = s.broker.Close()
		return nil, err
	}
	s.startWebhooks(streams, core)
	s.http = &http.Server{
		Handler:           s.routes(streams, res, sessions),
		ReadHeaderTimeout: cfg.ReadTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		BaseContext:       func(net.Listener) context.Context { return requests },
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	s.http.RegisterOnShutdown(endStreams)
	s.metrics.Watch(metrics.Sources{Websockets: s.live, SSE: &s.sse, Broker: s.broker, RateLimits: limits, Tracer: s.tracer})
	return s, nil
}

// startPresence starts tracking who is online: through Redis when the
// server has one, so that every instance sees every user, in process
// otherwise.
func (s *Server) startPresence(res *resolvers.Resolver) error {
	var registry presence.Registry = &presence.Local{}
	if s.cfg.RedisURL != "" {
		client, err := broker.NewRedisClient(s.cfg.RedisURL, s.cfg.RedisCluster, true)
		if err != nil {
			return fmt.Errorf("presence: %w", err)
		}
		s.presenceRedis = client
		registry = presence.NewRedis(s.presenceRedis, s.cfg.RedisChannelPrefix, s.cfg.PresenceTTL, s.log)
	}
	s.presence = res.NewPresence(registry)
	s.presence.Grace = s.cfg.PresenceGrace
	res.Presence = s.presence
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.presence.Run(ctx, res.UserName)
	}()
	s.stopPresence = func() { stop(); <-done }
	return nil
}

// connected counts an event stream of a user as a connection, for
// presence, until ctx ends.
func (s *Server) connected(ctx context.Context) {
	if leave := s.joined(ctx); leave != nil {
		context.AfterFunc(ctx, leave)
	}
}

// joined counts a websocket of a user as a connection, for presence, until
// the websocket calls disconnected.
func (s *Server) joined(ctx context.Context) (disconnected func()) {
	if u, err := auth.UserFrom(ctx); err == nil {
		return s.presence.Join(u)
	}
	return nil
}

func openStore(ctx context.Context, cfg Config, log *slog.Logger) (store.Store, error) {
	switch cfg.Store {
	case "cassandra":
		return openCassandra(ctx, cfg.Cassandra, log)
	default:
		return embedded.Open(filepath.Join(cfg.DataDir, "store"))
	}
}

func openBroker(ctx context.Context, cfg Config, log *slog.Logger) (broker.Broker, error) {
	if cfg.RedisURL == "" {
		return broker.NewLocal(cfg.SubscriberQueue), nil
	}
	return openRedis(ctx, cfg, log)
}

// BrokerName names the broker the instance publishes through: "redis" or
// "in-process".
func (s *Server) BrokerName() string {
	if s.cfg.RedisURL != "" {
		return "redis"
	}
	return "in-process"
}

// jwtSecret returns the configured secret or, for a single embedded
// instance, one generated once and kept in the data directory. Instances
// sharing a cluster must share a configured secret.
func jwtSecret(cfg Config) ([]byte, error) {
	if cfg.JWTSecret != "" {
		return []byte(cfg.JWTSecret), nil
	}
	if cfg.Store != "embedded" {
		return nil, errors.New("CHAT_JWT_SECRET is required with a shared store: every instance must verify the same tokens")
	}
	path := filepath.Join(cfg.DataDir, "jwt-secret")
	if b, err := os.ReadFile(path); err == nil {
		return []byte(strings.TrimSpace(string(b))), nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	secret := hex.EncodeToString(raw)
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("keep generated JWT secret: %w", err)
	}
	return []byte(secret), nil
}

// Fixed bounds on one GraphQL document and response (see querylimit):
// far above what the app's queries and GraphiQL's introspection need.
const (
	maxQueryFields    = 5000
	maxQueryOverlaps  = 10000
	maxQueryDepth     = 32
	maxResponseErrors = 20
)

// routes builds the HTTP surface: the API at /query, the playground at /,
// and health probes. Websockets and subscriptions end when streams does.
func (s *Server) routes(streams context.Context, res *resolvers.Resolver, sessions *auth.Sessions) http.Handler {
	es := querylimit.Costed(graph.NewExecutableSchema(graph.Config{Resolvers: res}))
	gql := handler.New(es)
	s.live = live.New(live.Config{
		Rooms:             s.metrics.GraphQL.Rooms(res),
		FeedSchema:        res.FeedSchema,
		SeesHiddenContent: chat.SeesHiddenContent,
		StreamError:       resolvers.WithStreamError,
		ProfileEpoch:      res.Profiles.Epoch,
		Scope:             requestBaseScope,
		ConnectionContext: websocketContext,
		Authenticate:      websocketAuth(sessions),
		SessionEnd:        sessions.OnEnd,
		Connected:         s.joined,
		ErrorPresenter:    res.ErrorPresenter,
		Origins: live.Origins{
			Any:   slices.Contains(s.cfg.AllowedOrigins, "*"),
			Hosts: s.websocketOrigins(),
		},
		InitTimeout:        10 * time.Second,
		KeepAlive:          s.cfg.KeepAlive,
		WriteDelay:         s.cfg.WriteDelay,
		WriteDelayWhenBusy: s.cfg.WriteDelayWhenBusy,
		ReadLimit:          s.cfg.MaxBodyBytes,
		MaxUnauthenticated: s.cfg.MaxUnauthenticatedWebsockets,
		Context:            streams,
		Log:                s.log,
	})
	gql.AddTransport(s.live)
	gql.AddTransport(httpapi.SSE{Connected: s.connected, Stats: &s.sse})
	gql.AddTransport(httpapi.NewSSEStreams(httpapi.SSEStreamsConfig{
		Context:        streams,
		Connected:      s.connected,
		Stats:          &s.sse,
		ReservationTTL: s.cfg.SSEReservationTTL,
		KeepAlive:      s.cfg.KeepAlive,
	}))
	gql.AddTransport(transport.Options{AllowedMethods: []string{"OPTIONS", "GET", "POST", "PUT", "DELETE"}})
	gql.AddTransport(httpapi.GET{})
	gql.AddTransport(httpapi.POST{})
	gql.AddTransport(httpapi.Unsupported{})
	validated := lru.New[*ast.QueryDocument](1000)
	gql.SetQueryCache(validated)
	gql.SetParserTokenLimit(s.cfg.MaxQueryTokens)
	gql.Use(s.metrics.GraphQL)
	gql.Use(tracing.GraphQL{Tracer: s.tracer})
	gql.Use(extension.Introspection{})
	gql.Use(resolvers.StreamErrors{Resolver: res})
	gql.Use(httpapi.PersistedQueries{AutomaticPersistedQuery: extension.AutomaticPersistedQuery{Cache: lru.New[string](100)}})
	gql.Use(querylimit.Limits{
		Tokens:    s.cfg.MaxQueryTokens,
		Fields:    maxQueryFields,
		Overlaps:  maxQueryOverlaps,
		Depth:     maxQueryDepth,
		Errors:    maxResponseErrors,
		Validated: validated,
	})
	gql.Use(extension.FixedComplexityLimit(s.cfg.MaxComplexity, querylimit.Options(es.Schema())...))
	gql.AroundOperations(endSubscriptionsWith(streams))
	gql.AroundOperations(resolvers.WithPageLoader)
	gql.AroundResponses(res.AwaitPublished)
	gql.AroundFields(resolvers.EveryInvalidField)
	gql.SetErrorPresenter(res.ErrorPresenter)
	gql.SetRecoverFunc(res.Recover)

	mux := http.NewServeMux()
	mux.Handle("/", webapp.Handler(s.fileOrigins()...))
	mux.Handle(playground.Path, playground.Page("chatql", "/query"))
	mux.Handle(playground.Prefix, playground.Assets())
	addresses := ratelimit.NewAddresses(s.cfg.TrustedProxies)
	limits := httpapi.Limits{MaxBody: s.cfg.MaxBodyBytes, ReadTimeout: s.cfg.ReadTimeout, WriteTimeout: s.cfg.WriteTimeout}
	mux.Handle("/query", s.cors(limits.Handler(withRequestValues(addresses, sessions, gql))))
	if s.files != nil {
		mux.Handle(filesPath, s.files)
	}
	s.emailRoutes(mux, func(h http.Handler) http.Handler { return limits.Handler(addresses.Middleware(h)) })
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", s.readyz)
	if s.cfg.MetricsAddr == "" {
		mux.Handle("/metrics", s.metrics.Handler())
	}
	return mux
}

// withRequestValues has next's requests carry the client's address, the
// caller of an Authorization header, the user agent and origin, and the
// request's base: every value the middlewares of /query put in a request's
// context, which websocketContext keeps for a websocket's life. The client
// address comes first: a bad API key counts against it.
func withRequestValues(addresses *ratelimit.Addresses, sessions *auth.Sessions, next http.Handler) http.Handler {
	return addresses.Middleware(sessions.Middleware(withRequestBase(next)))
}

// websocketContext is what a websocket connection keeps of its upgrade
// request's context (live.Config.ConnectionContext), on a context of its
// own: what the middlewares of /query put there (the client's address, an
// Authorization header's caller, the user agent and origin, the request's
// base), and nothing of net/http's and gqlgen's state of the request.
func websocketContext(r *http.Request) context.Context {
	from := r.Context()
	ctx := ratelimit.WithAddressOf(context.Background(), from)
	ctx = auth.WithRequestOf(ctx, from)
	if base := from.Value(requestBaseKey{}); base != nil {
		ctx = context.WithValue(ctx, requestBaseKey{}, base)
	}
	return ctx
}

// endSubscriptionsWith ends every subscription when streams ends, whichever
// transport carries it: an SSE stream, or a subscription sent as a plain
// POST, which waits for its first event. http.Server.Shutdown waits for
// every request, so these would hold it for its whole timeout. Queries and
// mutations keep the request's context: in flight, they finish.
func endSubscriptionsWith(streams context.Context) graphql.OperationMiddleware {
	return func(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
		if graphql.GetOperationContext(ctx).Operation.Operation != ast.Subscription {
			return next(ctx)
		}
		ctx, cancel := context.WithCancel(ctx)
		unregister := context.AfterFunc(streams, cancel)
		context.AfterFunc(ctx, func() { unregister() })
		return next(ctx)
	}
}

// websocketAuth authenticates a websocket from the token in its
// connection_init payload ("token", or "Authorization": "Bearer ...", as
// GraphiQL sends its headers). A connection without one stays anonymous; a
// bad one is refused.
func websocketAuth(sessions *auth.Sessions) func(context.Context, map[string]any) (context.Context, bool, error) {
	return func(ctx context.Context, init map[string]any) (context.Context, bool, error) {
		token, _ := init["token"].(string)
		if token == "" {
			header, _ := init["Authorization"].(string)
			if header == "" {
				header, _ = init["authorization"].(string)
			}
			token = strings.TrimSpace(strings.TrimPrefix(header, "Bearer "))
		}
		if token == "" {
			return ctx, false, nil
		}
		authed := sessions.Authenticate(ctx, token)
		if _, err := auth.UserFrom(authed); err != nil {
			// Refused: 4401. A store failure is INTERNAL: logged by the
			// error presenter, closed 4500 without its details.
			return ctx, false, err
		}
		return authed, true, nil
	}
}

func (s *Server) websocketOrigins() []string {
	var out []string
	for _, o := range s.cfg.AllowedOrigins {
		if o != "*" {
			out = append(out, strings.TrimPrefix(strings.TrimPrefix(o, "https://"), "http://"))
		}
	}
	return out
}

// cors lets browser apps on the allowed origins call the API. Tokens travel
// in headers, not cookies, so allowing origins does not expose sessions.
func (s *Server) cors(next http.Handler) http.Handler {
	anyOrigin := slices.Contains(s.cfg.AllowedOrigins, "*")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && (anyOrigin || slices.Contains(s.cfg.AllowedOrigins, origin)) {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, "+httpapi.TokenHeader)
			h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, OPTIONS")
			h.Add("Vary", "Origin")
		}
		next.ServeHTTP(w, r)
	})
}

// readyz reports whether this instance should get traffic: the store
// answers a read, and the server is not shutting down.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.closing.Load() {
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if _, err := s.store.Rooms(ctx, "", 1); err != nil {
		s.log.Warn("readiness check failed", "err", err)
		http.Error(w, "store unavailable", http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ready")
}

// ServeMetrics serves /metrics alone on addr (CHAT_METRICS_ADDR), apart
// from the API, until stop; bound is the address it listens on.
func (s *Server) ServeMetrics(addr string) (stop func(), bound string, err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("metrics listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", s.metrics.Handler())
	hs := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	go func() {
		if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("metrics listener stopped", "err", err)
		}
	}()
	s.log.Info("metrics served apart", "url", "http://"+DisplayAddr(ln.Addr())+"/metrics")
	return func() { _ = hs.Close() }, ln.Addr().String(), nil
}

// Handler returns the HTTP handler, for tests that serve it themselves.
func (s *Server) Handler() http.Handler { return s.http.Handler }

// Serve accepts connections on ln until Close.
func (s *Server) Serve(ln net.Listener) error {
	if err := s.http.Serve(httpapi.LimitConnections(ln, s.cfg.MaxConnsPerClient)); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Close shuts down gracefully: it stops accepting, ends the live streams
// (websockets, SSE, subscriptions), waits (up to ctx) for the other
// requests in flight, so accepted writes finish, and then closes the broker
// and the store.
func (s *Server) Close(ctx context.Context) error {
	s.closing.Store(true)
	err := s.http.Shutdown(ctx) // ends the streams first: see RegisterOnShutdown in NewOnStore
	s.endRequests()
	err = errors.Join(err, s.presence.Close(ctx))
	s.stopPresence()
	s.stopSweeper()
	s.stopNotifier()
	s.stopEmail()
	s.stopWebhooks()
	s.core.WaitPreviews()
	if s.previews != nil {
		s.previews.Close()
	}
	if s.presenceRedis != nil {
		err = errors.Join(err, s.presenceRedis.Close())
	}
	err = errors.Join(err, s.broker.Close())
	if s.limitsRedis != nil {
		err = errors.Join(err, s.limitsRedis.Close())
	}
	if s.ownsStore {
		err = errors.Join(err, s.store.Close())
	}
	return errors.Join(err, s.tracer.Close(ctx))
}

// DisplayAddr is how the logs show a listener's address: an unspecified IP
// (listening on every interface) as localhost.
func DisplayAddr(a net.Addr) string {
	if tcp, ok := a.(*net.TCPAddr); ok && tcp.IP.IsUnspecified() {
		return fmt.Sprintf("localhost:%d", tcp.Port)
	}
	return a.String()
}
