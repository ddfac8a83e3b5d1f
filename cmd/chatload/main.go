// Command chatload drives a running chat server through its public API
// only (queries and mutations over HTTP, roomEvents over
// graphql-transport-ws websockets) and measures it: accepted posts/s,
// deliveries/s, end-to-end delivery latency (post sent to event received,
// one clock), history page latency, errors by kind, server RSS and memory
// per idle subscription.
//
// In the same run it measures baselines on the same machine, and reports
// our figures as ratios of theirs: a bare go-redis PUBLISH -> SUBSCRIBE
// loop for the delivery path, bare store writes (embedded, Cassandra) for
// postMessage, and a plain net/http JSON handler for the messages query.
//
// It writes report.json and chart.svg to -out, and a progress line to
// stderr every second. See BENCHMARKS.md for how `make bench` uses it.
//
//	chatload -url http://127.0.0.1:8080/query -subscribers 1000 -rooms 10 -rate 500 -duration 20s \
//	    -server-pid $(pgrep -n chatql) -redis-url redis://127.0.0.1:6379/0 -out bench-out/run
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/killrchat/chatql/internal/chatclient"
)

type config struct {
	target           string   // chatql or centrifugo
	apiKey           string   // Centrifugo's HTTP API key
	url              string   // the first of urls: setup's
	urls             []string // the endpoints the load is spread over
	rooms            int
	subscribers      int
	users            int
	posters          int
	rate             float64
	readers          int
	readRate         float64
	msgSize          int
	duration         time.Duration
	warmup           time.Duration
	idleSubs         int
	serverPID        int
	serverStore      string
	serverBroker     string
	redisURL         string
	baselineStores   []string
	cassandraHosts   []string
	cassandraKS      string
	baselineDuration time.Duration
	baselineKinds    map[string]bool
	out              string
	label            string
	prefix           string
	setupConcurrency int
	connectConc      int
	profileSignals   bool
	idleSources      int
	idleSubsPerConn  int
	ceilingSteps     int
	ceilingFrom      float64
	ceilingFactor    float64
	ceilingStep      time.Duration
}

func parseFlags(args []string) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("chatload", flag.ContinueOnError)
	fs.StringVar(&c.target, "target", "chatql", "the server under test: chatql (its GraphQL API), or centrifugo (its JSON protocol over websockets, publish and history over its HTTP API, driven with the same profile for a side-by-side comparison)")
	fs.StringVar(&c.apiKey, "api-key", "", "-target centrifugo: the HTTP API key (http_api.key)")
	urls := fs.String("url", "http://127.0.0.1:8080/query", "GraphQL endpoint of the server under test (-target centrifugo: its base URL, e.g. http://127.0.0.1:8000); several, comma-separated, for instances behind no balancer: posters, readers and subscriptions are spread over them in turn (setup uses the first)")
	fs.IntVar(&c.rooms, "rooms", 10, "rooms the subscribers and posters share")
	fs.IntVar(&c.subscribers, "subscribers", 1000, "roomEvents subscriptions, one websocket each, spread evenly over the rooms")
	fs.IntVar(&c.users, "users", 0, "distinct subscriber users (0: one per subscriber); a smaller number speeds up setup on a server with costly password hashing")
	fs.IntVar(&c.posters, "posters", 10, "posting users, each on its own ticker")
	fs.Float64Var(&c.rate, "rate", 500, "posts per second, all posters together (0: each poster posts as fast as the server answers)")
	fs.IntVar(&c.readers, "readers", 2, "history readers looping messages(room, first: 50)")
	fs.Float64Var(&c.readRate, "read-rate", 20, "history reads per second, all readers together (0: as fast as the server answers)")
	fs.IntVar(&c.msgSize, "msg-size", 120, "bytes of each posted message's content")
	fs.DurationVar(&c.duration, "duration", 20*time.Second, "measured load duration")
	fs.DurationVar(&c.warmup, "warmup", 3*time.Second, "load before the measurement starts, not counted")
	fs.IntVar(&c.idleSubs, "idle-subs", 1000, "extra idle subscriptions opened before the load to measure server memory per idle subscription (needs -server-pid; 0: skip)")
	fs.IntVar(&c.serverPID, "server-pid", 0, "pid of the server process, for its RSS and CPU time from /proc (0: not measured)")
	fs.StringVar(&c.serverStore, "server-store", "unknown", "store the server runs on (embedded or cassandra), to pick the matching bare store baseline")
	fs.StringVar(&c.serverBroker, "server-broker", "unknown", "broker the server runs with (in-process or redis); with redis, Redis CPU time counts as the server's")
	fs.StringVar(&c.redisURL, "redis-url", "", "Redis for the bare PUBLISH -> SUBSCRIBE baseline (empty: no delivery baseline)")
	stores := fs.String("baseline-store", "embedded", "bare store write baselines, comma-separated: embedded, cassandra, or none")
	hosts := fs.String("cassandra-hosts", "127.0.0.1", "Cassandra contact points for -baseline-store cassandra")
	fs.StringVar(&c.cassandraKS, "cassandra-keyspace", "chatload_bench", "keyspace of the Cassandra baseline (created if missing)")
	fs.DurationVar(&c.baselineDuration, "baseline-duration", 5*time.Second, "duration of each baseline measurement")
	kinds := fs.String("baselines", "delivery,post,history", "baselines to measure after the load, comma-separated: delivery (bare Redis, needs -redis-url), post (bare store writes), history (plain net/http handler), or none")
	fs.StringVar(&c.out, "out", "chatload-out", "directory for report.json and chart.svg")
	fs.StringVar(&c.label, "label", "", "a name for this run in the report and chart, e.g. embedded+in-process")
	fs.StringVar(&c.prefix, "prefix", "", "prefix of the logins and rooms this run creates (default: random)")
	fs.IntVar(&c.setupConcurrency, "setup-concurrency", 16, "concurrent signups and joins during setup")
	fs.IntVar(&c.connectConc, "connect-concurrency", 50, "concurrent websocket handshakes when subscribing")
	fs.BoolVar(&c.profileSignals, "profile-signals", false, "signal -server-pid to profile phases, for the profiling harness (BenchmarkServeForProfiling): SIGUSR2 starts/stops a CPU profile around the measured window and each closed-loop \"ours\" baseline, SIGUSR1 dumps the heap before and with the idle subscriptions open and at the end of the window. A real server would die of these signals")
	fs.IntVar(&c.idleSubsPerConn, "idle-subs-per-conn", 1, "idle subscriptions per websocket, each to a room of its own, as an app following several rooms on one connection: -idle-subs over this many connections (one process has at most as many connections as its open-file limit)")
	fs.IntVar(&c.idleSources, "idle-sources", 0, "loopback source addresses (127.0.0.2 and up) the idle subscriptions are opened from, since one address has ports for about 28,000 connections to the server (0: one per 20,000 idle subscriptions)")
	fs.IntVar(&c.ceilingSteps, "ceiling-steps", 0, "after the measured window, raise the post rate for at most this many steps until the server falls behind or its p99 delivery passes 100 ms, and report the highest rate it kept up with (0: no sweep)")
	fs.Float64Var(&c.ceilingFrom, "ceiling-from", 600, "the sweep's first post rate")
	fs.Float64Var(&c.ceilingFactor, "ceiling-factor", 1.2, "each step of the sweep offers this many times the last rate")
	fs.DurationVar(&c.ceilingStep, "ceiling-step", 3*time.Second, "measured window of each step of the sweep (after a second of settling)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	for _, u := range strings.Split(*urls, ",") {
		if u = strings.TrimSpace(u); u != "" {
			c.urls = append(c.urls, u)
		}
	}
	if len(c.urls) == 0 {
		return nil, errors.New("-url: no endpoint")
	}
	if c.target != "chatql" && c.target != "centrifugo" {
		return nil, fmt.Errorf("-target: unknown server %q: chatql or centrifugo", c.target)
	}
	c.url = c.urls[0]
	for _, s := range strings.Split(*stores, ",") {
		if s = strings.TrimSpace(s); s != "" && s != "none" {
			if s != "embedded" && s != "cassandra" {
				return nil, fmt.Errorf("-baseline-store: unknown store %q", s)
			}
			c.baselineStores = append(c.baselineStores, s)
		}
	}
	c.baselineKinds = map[string]bool{}
	for _, k := range strings.Split(*kinds, ",") {
		switch k = strings.TrimSpace(k); k {
		case "delivery", "post", "history":
			c.baselineKinds[k] = true
		case "", "none":
		default:
			return nil, fmt.Errorf("-baselines: unknown baseline %q", k)
		}
	}
	for _, h := range strings.Split(*hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			c.cassandraHosts = append(c.cassandraHosts, h)
		}
	}
	switch {
	case c.target == "centrifugo" && (c.baselineKinds["post"] || c.baselineKinds["history"]):
		return nil, errors.New("-target centrifugo: the post and history baselines measure chatql's store; use -baselines none or delivery")
	case c.target == "centrifugo" && c.apiKey == "":
		return nil, errors.New("-target centrifugo needs -api-key, its HTTP API key")
	case c.rooms < 1:
		return nil, errors.New("-rooms must be at least 1")
	case c.subscribers < 0 || c.posters < 1 || c.readers < 0:
		return nil, errors.New("-subscribers and -readers must not be negative, -posters must be at least 1")
	case c.msgSize < 40 || c.msgSize > 4000:
		return nil, errors.New("-msg-size must be between 40 and 4000")
	case c.idleSubsPerConn < 1 || c.idleSubsPerConn > 100:
		return nil, errors.New("-idle-subs-per-conn must be between 1 and 100 (the server's operations per connection)")
	case c.duration <= 0:
		return nil, errors.New("-duration must be positive")
	case c.ceilingSteps > 0 && (c.ceilingFrom <= 0 || c.ceilingFactor <= 1 || c.ceilingStep <= 0):
		return nil, errors.New("-ceiling-from and -ceiling-step must be positive, -ceiling-factor more than 1")
	}
	if c.prefix == "" {
		b := make([]byte, 3)
		_, _ = rand.Read(b)
		c.prefix = "cl" + hex.EncodeToString(b)
	}
	if c.label == "" {
		c.label = c.serverStore + "+" + c.serverBroker
	}
	return c, nil
}

// on returns c talking to the i-th endpoint in turn.
func (c *config) on(i int, client *chatclient.Client) *chatclient.Client {
	cp := *client
	cp.URL = c.urls[i%len(c.urls)]
	return &cp
}

var logMu sync.Mutex

// logf writes a line to stderr.
func logf(format string, args ...any) {
	logMu.Lock()
	defer logMu.Unlock()
	fmt.Fprintf(os.Stderr, "chatload: "+format+"\n", args...)
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "compare" {
		if err := compareMain(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "chatload compare:", err)
			os.Exit(2)
		}
		return
	}
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "chatload:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "chatload:", err)
		os.Exit(1)
	}
}

// runner holds the state of one run.
type runner struct {
	cfg    *config
	http   *http.Client
	target target
	w      *world
	m      *metrics
	redis  *redis.Client // for Redis's CPU time and the delivery baseline; nil without -redis-url

	phase    atomic.Value // string
	start    time.Time    // of the load phase
	tlMu     sync.Mutex
	timeline []sample
	rssPeak  atomic.Int64
}

func run(ctx context.Context, cfg *config) error {
	r := &runner{cfg: cfg, m: &metrics{errs: newErrorCounts()}}
	r.phase.Store("setup")
	r.http = newHTTPClient(cfg.posters + cfg.readers + 16)
	if cfg.target == "centrifugo" {
		r.target = &centrifugoTarget{cfg: cfg, http: r.http}
	} else {
		r.target = &chatqlTarget{cfg: cfg, api: &chatclient.Client{URL: cfg.url, HTTP: r.http}, http: r.http}
	}
	rep := &Report{
		Tool:      "chatload",
		Label:     cfg.label,
		StartedAt: time.Now().UTC(),
		Command:   strings.Join(os.Args, " "),
		Machine:   machineInfo(),
		Params:    paramsOf(cfg),
	}
	if cfg.redisURL != "" {
		o, err := redis.ParseURL(cfg.redisURL)
		if err != nil {
			return fmt.Errorf("-redis-url: %w", err)
		}
		o.PoolSize = max(cfg.posters*2, 20)
		r.redis = redis.NewClient(o)
		defer r.redis.Close()
		if err := r.redis.Ping(ctx).Err(); err != nil {
			return fmt.Errorf("redis at %s: %w", o.Addr, err)
		}
	}
	if err := r.target.ready(ctx); err != nil {
		return err
	}
	if cfg.serverPID > 0 {
		rss, _, err := procRSS(cfg.serverPID)
		if err != nil {
			return fmt.Errorf("-server-pid %d: %w", cfg.serverPID, err)
		}
		rep.Server.RSSStart = rss
	}

	logf("setup: prefix %s, %d posters, %d subscribers in %d rooms, against %s", cfg.prefix, cfg.posters, cfg.subscribers, cfg.rooms, strings.Join(cfg.urls, ", "))
	w, err := r.target.setup(ctx, r.m.errs)
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	r.w = w
	rep.Setup = SetupResult{Users: w.usersMade, Rooms: w.roomsMade, Joins: w.joinsMade, Seconds: w.setupTime.Seconds()}
	if cfg.serverPID > 0 {
		rep.Server.RSSAfterSetup, _, _ = procRSS(cfg.serverPID)
	}

	if cfg.idleSubs > 0 && cfg.serverPID > 0 {
		idle, err := r.idlePhase(ctx)
		if err != nil {
			return fmt.Errorf("idle subscriptions: %w", err)
		}
		rep.IdleSubs = idle
	}

	if err := r.load(ctx, rep); err != nil {
		return err
	}

	if len(cfg.baselineKinds) > 0 {
		r.phase.Store("baselines")
		if err := r.baselines(ctx, rep); err != nil {
			return err
		}
	}
	rep.Timeline = r.timeline
	rep.finish(cfg)

	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return err
	}
	if err := rep.write(filepath.Join(cfg.out, "report.json")); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cfg.out, "chart.svg"), chart(rep), 0o644); err != nil {
		return err
	}
	rep.printSummary(os.Stdout)
	logf("wrote %s and %s", filepath.Join(cfg.out, "report.json"), filepath.Join(cfg.out, "chart.svg"))
	return nil
}

// waitReady polls /readyz next to the GraphQL endpoint for up to 30 s.
func waitReady(ctx context.Context, hc *http.Client, url string) error {
	ready := strings.TrimSuffix(url, "/query") + "/readyz"
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ready, nil)
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("server at %s not ready after 30s: %w", ready, err)
		}
		if !sleepCtx(ctx, 200*time.Millisecond) {
			return ctx.Err()
		}
	}
}

// idleSources returns the HTTP clients the idle subscriptions are opened
// with: each dials from its own loopback source address (127.0.0.2 and up),
// as many as asked, or one per 20,000 subscriptions; one client of the
// default address if that is one.
func idleSources(asked, subs int) []*http.Client {
	n := asked
	if n <= 0 {
		n = (subs + 19999) / 20000
	}
	if n <= 1 {
		return []*http.Client{http.DefaultClient}
	}
	clients := make([]*http.Client, n)
	for k := range clients {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, byte((k+2)/256), byte((k+2)%256))}}
		clients[k] = &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	}
	return clients
}

// idlePhase opens -idle-subs subscriptions to a room nobody posts to, in
// two halves, and reads the server's RSS before, in between and after:
// memory per idle subscription is the growth divided by their number. They
// are closed before the load starts.
func (r *runner) idlePhase(ctx context.Context) (*IdleResult, error) {
	r.phase.Store("idle-subs")
	n := r.cfg.idleSubs
	pid := r.cfg.serverPID
	settle := func() int64 {
		// Let the server finish the handshakes and its GC cycles.
		sleepCtx(ctx, 2*time.Second)
		rss, _, _ := procRSS(pid)
		return rss
	}
	res := &IdleResult{Count: n}
	r.signal(syscall.SIGUSR1, "heap before the idle subscriptions")
	res.RSSBefore = settle()
	perConn := len(r.w.idleRooms)
	conns := (n + perConn - 1) / perConn
	res.Connections = conns
	subs := make([]stream, conns)
	sources := idleSources(r.cfg.idleSources, conns)
	open := func(from, to int) error {
		return parallel(ctx, r.cfg.connectConc, to-from, func(ctx context.Context, i int) error {
			i += from
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			sub, err := r.target.idle(cctx, i, sources[i%len(sources)], r.w.idleRooms[:min(perConn, n-i*perConn)])
			if err != nil {
				r.m.errs.Add("idle-subscribe", err)
				return err
			}
			subs[i] = sub
			return nil
		})
	}
	defer func() {
		for _, s := range subs {
			if s != nil {
				s.CloseNow()
			}
		}
	}()
	start := time.Now()
	if err := open(0, conns/2); err != nil {
		return nil, err
	}
	res.RSSHalf = settle()
	if err := open(conns/2, conns); err != nil {
		return nil, err
	}
	res.OpenSeconds = time.Since(start).Seconds()
	res.RSSAfter = settle()
	r.signal(syscall.SIGUSR1, "heap with the idle subscriptions open")
	res.perSubscription(perConn)
	logf("idle subscriptions: %d open on %d connections, server RSS %s -> %s -> %s: %.1f KiB per idle subscription (%.1f KiB marginal)",
		n, conns, mib(res.RSSBefore), mib(res.RSSHalf), mib(res.RSSAfter), res.BytesPerSub/1024, res.MarginalBytesPerSub/1024)
	return res, nil
}

// perSubscription computes the memory figures of the RSS readings: the
// growth over all Count subscriptions, and over those of the second half
// of the Connections, perConn on each but the last.
func (res *IdleResult) perSubscription(perConn int) {
	res.BytesPerSub = float64(res.RSSAfter-res.RSSBefore) / float64(res.Count)
	if half := res.Count - res.Connections/2*perConn; half > 0 {
		res.MarginalBytesPerSub = float64(res.RSSAfter-res.RSSHalf) / float64(half)
	}
}

// load runs the main scenario: subscribers on websockets, posters and
// readers over HTTP; warmup, then the measured window.
func (r *runner) load(ctx context.Context, rep *Report) error {
	cfg := r.cfg
	r.phase.Store("subscribe")
	subs := make([]*subscriber, cfg.subscribers)
	for j := range subs {
		subs[j] = &subscriber{m: r.m, open: r.target.subscriber(j, r.w.rooms[j%len(r.w.rooms)])}
	}
	connectStart := time.Now()
	var failed atomic.Int64
	_ = parallel(ctx, cfg.connectConc, len(subs), func(ctx context.Context, j int) error {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := subs[j].connect(cctx); err != nil {
			r.m.errs.Add("subscribe", err)
			failed.Add(1)
		}
		return nil
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var subsWG sync.WaitGroup
	subCtx, stopSubs := context.WithCancel(context.Background())
	defer stopSubs()
	for _, s := range subs {
		subsWG.Add(1)
		go func() { defer subsWG.Done(); s.loop(subCtx) }()
	}
	stopAll := func() {
		stopSubs()
		for _, s := range subs {
			s.stop()
		}
		subsWG.Wait()
	}
	logf("subscribe: %d/%d subscriptions open in %.1fs", int64(len(subs))-failed.Load(), len(subs), time.Since(connectStart).Seconds())
	rep.Load.SubscribeSeconds = time.Since(connectStart).Seconds()

	progCtx, stopProgress := context.WithCancel(ctx)
	progDone := make(chan struct{})
	r.start = time.Now()
	go func() { defer close(progDone); r.progress(progCtx) }()

	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	postInterval := paceInterval(cfg.posters, cfg.rate)
	readInterval := paceInterval(cfg.readers, cfg.readRate)
	for i := range cfg.posters {
		post := r.target.poster(i)
		wg.Add(1)
		go func() { defer wg.Done(); r.poster(loadCtx, i, cfg.posters, post, postInterval) }()
	}
	for i := range cfg.readers {
		read := r.target.reader(i)
		wg.Add(1)
		go func() { defer wg.Done(); r.reader(loadCtx, i, read, readInterval) }()
	}

	r.phase.Store("warmup")
	ok := sleepCtx(ctx, cfg.warmup)
	s0 := r.m.snapshot(r)
	r.phase.Store("measure")
	r.signal(syscall.SIGUSR2, "CPU profile of the measured window: start")
	ok = ok && sleepCtx(ctx, cfg.duration)
	s1 := r.m.snapshot(r)
	r.signal(syscall.SIGUSR2, "CPU profile of the measured window: stop")
	r.signal(syscall.SIGUSR1, "heap at the end of the measured window")
	r.phase.Store("drain")
	stopLoad()
	wg.Wait()
	if ok && cfg.ceilingSteps > 0 {
		rep.Ceiling = r.ceiling(ctx)
	}
	// Let the last posts reach the subscribers before closing them, so the
	// server does not count a storm of broken websockets.
	sleepCtx(ctx, time.Second)
	stopProgress()
	<-progDone
	stopAll()
	if !ok {
		return ctx.Err()
	}
	rep.Load.fill(cfg, s0, s1, r)
	if cfg.serverPID > 0 {
		rep.Server.RSSPeak = r.rssPeak.Load()
		rep.Server.RSSEnd, rep.Server.VmHWM, _ = procRSS(cfg.serverPID)
	}
	rep.Server.fillCPU(s0, s1, cfg.serverPID > 0, cfg.serverBroker == "redis" && r.redis != nil)
	return nil
}

// fillCPU takes the CPU figures of the window from s0 to s1: the server's,
// when it is measured (-server-pid), and Redis's, when it is the server's
// broker.
func (s *ServerResult) fillCPU(s0, s1 *metricsSnap, server, redis bool) {
	if server {
		s.CPUSeconds = (s1.serverCPU - s0.serverCPU).Seconds()
		s.CPUCores = s.CPUSeconds / s1.at.Sub(s0.at).Seconds()
		s.WriteSyscalls = s1.serverWrites - s0.serverWrites
	}
	if redis {
		s.RedisCPUSeconds = (s1.redisCPU - s0.redisCPU).Seconds()
	}
}

// sample is one second of the run, for the timeline chart.
type sample struct {
	T              float64 `json:"t_s"`
	Phase          string  `json:"phase"`
	PostsPerS      float64 `json:"posts_per_s"`
	DeliveriesPerS float64 `json:"deliveries_per_s"`
	ReadsPerS      float64 `json:"reads_per_s"`
	P50Ms          float64 `json:"delivery_p50_ms"`
	P99Ms          float64 `json:"delivery_p99_ms"`
	Errors         int64   `json:"errors"`
	SubsLive       int64   `json:"subscriptions_live"`
	ServerRSS      int64   `json:"server_rss_bytes,omitempty"`
	ServerCores    float64 `json:"server_cpu_cores,omitempty"`
	ClientCores    float64 `json:"client_cpu_cores"`
	MachineBusy    float64 `json:"machine_busy_pct"`
}

// progress prints a line and records a timeline sample every second.
func (r *runner) progress(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	prev := r.m.snapshot(r)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cur := r.m.snapshot(r)
		s := timelineSample(prev, cur, r.start, r.cfg.serverPID > 0)
		s.Phase = r.phase.Load().(string)
		s.SubsLive = r.m.subsLive.Load()
		rssText := ""
		if r.cfg.serverPID > 0 {
			s.ServerRSS, _, _ = procRSS(r.cfg.serverPID)
			for {
				peak := r.rssPeak.Load()
				if s.ServerRSS <= peak || r.rssPeak.CompareAndSwap(peak, s.ServerRSS) {
					break
				}
			}
			rssText = fmt.Sprintf("  server %s %.2f cores", mib(s.ServerRSS), s.ServerCores)
		}
		r.tlMu.Lock()
		r.timeline = append(r.timeline, s)
		r.tlMu.Unlock()
		logf("%5.0fs %-7s posts %5.0f/s  deliveries %7.0f/s  p50 %6.2fms p99 %7.2fms  reads %4.0f/s  subs %d  errors %d%s  client %.2f cores  machine %3.0f%%",
			s.T, s.Phase, s.PostsPerS, s.DeliveriesPerS, s.P50Ms, s.P99Ms, s.ReadsPerS, s.SubsLive, cur.errors, rssText, s.ClientCores, s.MachineBusy)
		prev = cur
	}
}

// timelineSample is the figures of the second from prev to cur, at its
// time since start; the server's CPU when it is measured.
func timelineSample(prev, cur *metricsSnap, start time.Time, server bool) sample {
	dt := cur.at.Sub(prev.at).Seconds()
	d := cur.delivery.Since(prev.delivery)
	s := sample{
		T:              cur.at.Sub(start).Seconds(),
		PostsPerS:      float64(cur.posts-prev.posts) / dt,
		DeliveriesPerS: float64(cur.deliveries-prev.deliveries) / dt,
		ReadsPerS:      float64(cur.reads-prev.reads) / dt,
		P50Ms:          ms(d.Quantile(0.5)),
		P99Ms:          ms(d.Quantile(0.99)),
		Errors:         cur.errors - prev.errors,
		ClientCores:    (cur.clientCPU - prev.clientCPU).Seconds() / dt,
	}
	if total := cur.machineTotal - prev.machineTotal; total > 0 {
		s.MachineBusy = 100 * float64(cur.machineBusy-prev.machineBusy) / float64(total)
	}
	if server {
		s.ServerCores = (cur.serverCPU - prev.serverCPU).Seconds() / dt
	}
	return s
}

// signal sends sig to the server for the profiling harness, with
// -profile-signals.
func (r *runner) signal(sig syscall.Signal, what string) {
	if !r.cfg.profileSignals || r.cfg.serverPID <= 0 {
		return
	}
	if err := syscall.Kill(r.cfg.serverPID, sig); err != nil {
		logf("profile signal %v (%s): %v", sig, what, err)
		return
	}
	logf("profile: %s (%v)", what, sig)
	if sig == syscall.SIGUSR1 {
		time.Sleep(time.Second) // the dump starts with a GC; keep it out of what follows
	}
}

func (r *runner) ncpu() int { return runtime.NumCPU() }

func mib(b int64) string { return fmt.Sprintf("%.1fMiB", float64(b)/(1<<20)) }
