// Command chatql serves the chat GraphQL API: queries and mutations over
// HTTP, live room events over websockets and server-sent events.
//
// With no configuration it runs on an embedded on-disk store and an
// in-process broker; in production, CHAT_STORE=cassandra and CHAT_REDIS_URL
// select a Cassandra cluster and Redis pub/sub across instances.
package main

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
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/99designs/gqlgen/graphql/playground"
	"github.com/coder/websocket"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/graph"
	"github.com/killrchat/chatql/live"
	"github.com/killrchat/chatql/resolvers"
	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/store/embedded"
)

func main() {
	cfg, err := ParseConfig(os.Args[1:], os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chatql:", err)
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	if err := run(cfg, log); err != nil {
		log.Error("chatql stopped", "err", err)
		os.Exit(1)
	}
}

// run serves until SIGINT or SIGTERM, then shuts down gracefully.
func run(cfg Config, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	srv, err := NewServer(ctx, cfg, log)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		_ = srv.Close(context.Background())
		return err
	}
	log.Info("chatql serving", "playground", "http://"+displayAddr(ln.Addr())+"/", "store", cfg.Store, "broker", srv.brokerName())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return errors.Join(err, srv.Close(context.Background()))
	case <-ctx.Done():
	}
	log.Info("shutting down: finishing in-flight requests", "timeout", cfg.ShutdownTimeout)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	return srv.Close(shutdownCtx)
}

// Server is one instance of the chat API: the store, the broker and the
// HTTP handler built on them.
type Server struct {
	cfg    Config
	log    *slog.Logger
	store  store.Store
	broker broker.Broker
	http   *http.Server
	// stopStreams cancels the context of every request, which ends the
	// websocket and SSE streams that http.Server.Shutdown does not wait for.
	stopStreams context.CancelFunc
	closing     atomic.Bool
	ownsStore   bool
	passwords   *auth.Passwords
}

// NewServer opens the configured store and broker and builds the handler.
func NewServer(ctx context.Context, cfg Config, log *slog.Logger) (*Server, error) {
	st, err := openStore(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	s, err := newServer(ctx, cfg, log, st)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	s.ownsStore = true
	return s, nil
}

// newServer builds an instance on an open store, which it does not close:
// tests run several instances on one store, as a cluster would.
func newServer(ctx context.Context, cfg Config, log *slog.Logger, st store.Store) (*Server, error) {
	s := &Server{cfg: cfg, log: log, store: st}
	var err error
	if s.broker, err = openBroker(ctx, cfg, log); err != nil {
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
	streams, stopStreams := context.WithCancel(context.Background())
	sessions, err := auth.NewSessions(streams, auth.SessionConfig{
		Store: s.store, Tokens: tokens, Secret: secret, RefreshTTL: cfg.RefreshTTL, CheckInterval: cfg.SessionCheck,
	})
	if err != nil {
		stopStreams()
		_ = s.broker.Close()
		return nil, err
	}
	s.passwords = passwords
	res := &resolvers.Resolver{Store: s.store, Broker: s.broker, Tokens: tokens, Sessions: sessions, Passwords: passwords, Log: log}
	s.stopStreams = stopStreams
	s.http = &http.Server{
		Handler:           s.routes(streams, res, sessions),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return streams },
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return s, nil
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

func (s *Server) brokerName() string {
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

// routes builds the HTTP surface: the API at /query, the playground at /,
// and health probes. Websockets end when streams does.
func (s *Server) routes(streams context.Context, res *resolvers.Resolver, sessions *auth.Sessions) http.Handler {
	gql := handler.New(graph.NewExecutableSchema(graph.Config{Resolvers: res}))
	gql.AddTransport(live.New(live.Config{
		Rooms:          res,
		Authenticate:   websocketAuth(sessions, s.log),
		SessionEnd:     sessions.Watch,
		ErrorPresenter: res.ErrorPresenter,
		Accept: websocket.AcceptOptions{
			OriginPatterns:     s.websocketOrigins(),
			InsecureSkipVerify: slices.Contains(s.cfg.AllowedOrigins, "*"),
		},
		InitTimeout: 10 * time.Second,
		KeepAlive:   s.cfg.KeepAlive,
		ReadLimit:   s.cfg.MaxBodyBytes,
		Context:     streams,
		Log:         s.log,
	}))
	gql.AddTransport(transport.SSE{})
	gql.AddTransport(transport.Options{})
	gql.AddTransport(transport.GET{})
	gql.AddTransport(transport.POST{})
	gql.SetQueryCache(lru.New[*ast.QueryDocument](1000))
	gql.Use(extension.Introspection{})
	gql.Use(resolvers.StreamErrors{Resolver: res})
	gql.Use(extension.AutomaticPersistedQuery{Cache: lru.New[string](100)})
	gql.Use(extension.FixedComplexityLimit(s.cfg.MaxComplexity))
	gql.SetErrorPresenter(res.ErrorPresenter)
	gql.SetRecoverFunc(res.Recover)

	mux := http.NewServeMux()
	mux.Handle("/", playground.Handler("chatql", "/query"))
	mux.Handle("/query", s.cors(limitBody(s.cfg.MaxBodyBytes, sessions.Middleware(gql))))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", s.readyz)
	return mux
}

// websocketAuth authenticates a websocket from the token in its
// connection_init payload ("token", or "Authorization": "Bearer ...", as
// GraphiQL sends its headers). A connection without one stays anonymous; a
// bad one is refused.
func websocketAuth(sessions *auth.Sessions, log *slog.Logger) func(context.Context, map[string]any) (context.Context, error) {
	return func(ctx context.Context, init map[string]any) (context.Context, error) {
		token, _ := init["token"].(string)
		if token == "" {
			header, _ := init["Authorization"].(string)
			if header == "" {
				header, _ = init["authorization"].(string)
			}
			token = strings.TrimSpace(strings.TrimPrefix(header, "Bearer "))
		}
		if token == "" {
			return ctx, nil
		}
		authed := sessions.Authenticate(ctx, token)
		if _, err := auth.UserFrom(authed); err != nil {
			if !errors.Is(err, auth.ErrUnauthenticated) {
				// The store failed: the close reason must not tell how.
				log.ErrorContext(ctx, "websocket authentication failed", "err", err)
				return ctx, errors.New("the session could not be checked; try again")
			}
			return ctx, err
		}
		return authed, nil
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
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
			h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
			h.Add("Vary", "Origin")
		}
		next.ServeHTTP(w, r)
	})
}

// limitBody caps request bodies so a client cannot make the server buffer
// an arbitrarily large document.
func limitBody(limit int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > limit {
			http.Error(w, fmt.Sprintf(`{"errors":[{"message":"request body is larger than %d bytes","extensions":{"code":"BAD_USER_INPUT"}}]}`, limit), http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
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

// Handler returns the HTTP handler, for tests that serve it themselves.
func (s *Server) Handler() http.Handler { return s.http.Handler }

// Serve accepts connections on ln until Close.
func (s *Server) Serve(ln net.Listener) error {
	if err := s.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Close shuts down gracefully: it stops accepting, waits (up to ctx) for
// in-flight requests, so accepted writes finish, ends live streams, and
// then closes the broker and the store, which flushes pending writes.
func (s *Server) Close(ctx context.Context) error {
	s.closing.Store(true)
	err := s.http.Shutdown(ctx)
	s.stopStreams()
	err = errors.Join(err, s.broker.Close())
	if s.ownsStore {
		err = errors.Join(err, s.store.Close())
	}
	return err
}

func displayAddr(a net.Addr) string {
	if tcp, ok := a.(*net.TCPAddr); ok && tcp.IP.IsUnspecified() {
		return fmt.Sprintf("localhost:%d", tcp.Port)
	}
	return a.String()
}
