package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/store/cassandra"
	"github.com/killrchat/chatql/store/embedded"
)

// baselines measures, with the server otherwise idle, the bare loops our
// figures are compared with.
func (r *runner) baselines(ctx context.Context, rep *Report) error {
	if r.redis != nil && r.cfg.baselineKinds["delivery"] {
		payload := int(rep.Load.AvgEventBytes)
		if payload == 0 {
			payload = 400
		}
		for _, variant := range []string{"redis-fanout", "redis-shared"} {
			logf("baseline %s: %d subscribers on %d channels, %.0f publishes/s, %d-byte payloads", variant, r.cfg.subscribers, r.cfg.rooms, r.cfg.rate, payload)
			b, err := r.redisBaseline(ctx, variant, payload)
			if err != nil {
				return fmt.Errorf("baseline %s: %w", variant, err)
			}
			rep.Baselines.Delivery = append(rep.Baselines.Delivery, b)
			logf("baseline %s: %.0f deliveries/s, p50 %.2f ms, p99 %.2f ms, %.0f deliveries per CPU-second", variant, b.DeliveriesPerS, b.Latency.P50Ms, b.Latency.P99Ms, b.DeliveriesPerCPUSecond)
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if r.cfg.baselineKinds["post"] {
		rep.Baselines.Post = r.postBaselines(ctx)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if r.cfg.baselineKinds["history"] {
		perRoom := int(rep.Load.Posts)/max(r.cfg.rooms, 1) + 1
		rep.Baselines.History = r.historyBaselines(ctx, max(perRoom, 200))
	}
	return ctx.Err()
}

// serverCPU is the server's CPU time so far, 0 without -server-pid.
func (r *runner) serverCPU() time.Duration {
	if r.cfg.serverPID <= 0 {
		return 0
	}
	d, _ := procCPU(r.cfg.serverPID)
	return d
}

// redisCPU is Redis's CPU time so far (user + system), from INFO cpu.
func (r *runner) redisCPU() time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	info, err := r.redis.Info(ctx, "cpu").Result()
	if err != nil {
		return 0
	}
	return parseRedisCPU(info)
}

// parseRedisCPU adds up used_cpu_sys and used_cpu_user (seconds) of the
// answer to INFO cpu.
func parseRedisCPU(info string) time.Duration {
	var total float64
	for line := range strings.SplitSeq(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return time.Duration(total * float64(time.Second))
}

// redisBaseline is a bare go-redis PUBLISH -> SUBSCRIBE loop shaped like
// the run: as many publishers as posters at the same total rate, round
// robin over one channel per room, payloads the size of our websocket
// events with the send time in them, and as many receivers as subscribers.
//
//   - redis-fanout: every receiver has its own Redis connection and
//     SUBSCRIBE; Redis fans each message out to the room's receivers.
//   - redis-shared: one connection subscribes to every channel, as our
//     broker does; each message is parsed once and fanned out in process to
//     the receivers' goroutines over buffered channels (non-blocking, as
//     our hub does).
func (r *runner) redisBaseline(ctx context.Context, variant string, payloadBytes int) (DeliveryBaseline, error) {
	cfg := r.cfg
	b := DeliveryBaseline{Name: variant, Subscribers: cfg.subscribers, Channels: cfg.rooms, Publishers: cfg.posters, Rate: cfg.rate, PayloadBytes: payloadBytes}
	prefix := "chatload:" + cfg.prefix + ":" + variant + ":"
	channel := func(i int) string { return prefix + strconv.Itoa(i%cfg.rooms) }
	var (
		h          hist
		deliveries atomic.Int64
		errs       atomic.Int64
		wg         sync.WaitGroup
	)
	record := func(payload string, now int64) {
		if sent, ok := parseLeadingInt([]byte(strings.TrimPrefix(payload, contentMarker))); ok {
			h.Record(time.Duration(now - sent))
			deliveries.Add(1)
		}
	}
	opts := *r.redis.Options()
	opts.PoolSize = max(cfg.posters*2, 10)
	client := redis.NewClient(&opts)
	defer client.Close()

	var closers []func()
	defer func() {
		for _, c := range closers {
			c()
		}
		wg.Wait()
	}()
	switch variant {
	case "redis-fanout":
		b.Description = "bare go-redis: one SUBSCRIBE connection per receiver; Redis fans out"
		pss := make([]*redis.PubSub, cfg.subscribers)
		err := parallel(ctx, cfg.connectConc, cfg.subscribers, func(ctx context.Context, i int) error {
			ps := client.Subscribe(ctx, channel(i))
			if _, err := ps.Receive(ctx); err != nil { // the subscription's confirmation
				ps.Close()
				return err
			}
			pss[i] = ps
			return nil
		})
		for _, ps := range pss {
			if ps != nil {
				closers = append(closers, func() { ps.Close() })
			}
		}
		if err != nil {
			return b, err
		}
		for _, ps := range pss {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					m, err := ps.ReceiveMessage(context.Background())
					if err != nil {
						return
					}
					record(m.Payload, time.Now().UnixNano())
				}
			}()
		}
	case "redis-shared":
		b.Description = "bare go-redis: one SUBSCRIBE connection for all channels, parsed once, fanned out in process to one goroutine per receiver"
		chans := make([]string, cfg.rooms)
		for i := range chans {
			chans[i] = channel(i)
		}
		ps := client.Subscribe(ctx, chans...)
		closers = append(closers, func() { ps.Close() })
		for range chans {
			if _, err := ps.Receive(ctx); err != nil {
				return b, err
			}
		}
		fan := make(map[string][]chan int64, cfg.rooms)
		var receivers []chan int64
		for i := range cfg.subscribers {
			c := make(chan int64, 256)
			fan[channel(i)] = append(fan[channel(i)], c)
			receivers = append(receivers, c)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for sent := range c {
					h.Record(time.Duration(time.Now().UnixNano() - sent))
					deliveries.Add(1)
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				for _, c := range receivers {
					close(c)
				}
			}()
			for {
				m, err := ps.ReceiveMessage(context.Background())
				if err != nil {
					return
				}
				sent, ok := parseLeadingInt([]byte(strings.TrimPrefix(m.Payload, contentMarker)))
				if !ok {
					continue
				}
				for _, c := range fan[m.Channel] {
					select {
					case c <- sent:
					default:
						errs.Add(1) // a slow receiver: dropped, as our hub would cut it off
					}
				}
			}
		}()
	default:
		return b, fmt.Errorf("unknown variant %q", variant)
	}

	// Publishers, paced like the posters.
	var published atomic.Int64
	pubCtx, stopPub := context.WithCancel(ctx)
	var pubWG sync.WaitGroup
	interval := paceInterval(cfg.posters, cfg.rate)
	for i := range cfg.posters {
		pubWG.Add(1)
		go func() {
			defer pubWG.Done()
			var tick <-chan time.Time
			if interval > 0 {
				if !sleepCtx(pubCtx, interval*time.Duration(i)/time.Duration(cfg.posters)) {
					return
				}
				t := time.NewTicker(interval)
				defer t.Stop()
				tick = t.C
			}
			buf := make([]byte, 0, payloadBytes+32)
			for k := 0; ; k++ {
				if tick != nil {
					select {
					case <-pubCtx.Done():
						return
					case <-tick:
					}
				} else if pubCtx.Err() != nil {
					return
				}
				buf = content(buf, time.Now().UnixNano(), payloadBytes)
				if err := client.Publish(pubCtx, channel(i+k), buf).Err(); err != nil {
					if pubCtx.Err() == nil {
						errs.Add(1)
					}
					continue
				}
				published.Add(1)
			}
		}()
	}
	sleepCtx(ctx, time.Second) // warmup
	h0, d0, p0, e0 := h.Snapshot(), deliveries.Load(), published.Load(), errs.Load()
	rc0, pc0, t0 := r.redisCPU(), selfCPU(), time.Now()
	sleepCtx(ctx, cfg.baselineDuration)
	h1, d1, p1, e1 := h.Snapshot(), deliveries.Load(), published.Load(), errs.Load()
	rc1, pc1, t1 := r.redisCPU(), selfCPU(), time.Now()
	stopPub()
	pubWG.Wait()
	sleepCtx(ctx, 200*time.Millisecond)

	b.measured(t1.Sub(t0).Seconds(), p1-p0, d1-d0, e1-e0, h1.Since(h0), rc1-rc0, pc1-pc0)
	return b, ctx.Err()
}

// measured fills the figures of a delivery baseline's window of w seconds,
// in which published messages made deliveries with latencies lat and errs
// failed; Redis used redisCPU, and this process selfCPU.
func (b *DeliveryBaseline) measured(w float64, published, deliveries, errs int64, lat *histSnap, redisCPU, selfCPU time.Duration) {
	b.WindowS = w
	b.Published = published
	b.Deliveries = deliveries
	b.DeliveriesPerS = float64(b.Deliveries) / w
	b.ExpectedDeliveriesPerS = float64(b.Published) / w * float64(b.Subscribers) / float64(b.Channels)
	b.Latency = lat.Summary()
	b.RedisCPUSeconds = redisCPU.Seconds()
	b.Errors = errs
	cpu := b.RedisCPUSeconds
	if b.Name == "redis-shared" {
		// The in-process fan-out is part of this path; the publishers in
		// the same process are counted too, which flatters ours slightly.
		b.FanoutCPUSeconds = selfCPU.Seconds()
		cpu += b.FanoutCPUSeconds
	}
	if cpu > 0 {
		b.DeliveriesPerCPUSecond = float64(b.Deliveries) / cpu
	}
}

// profileWindow returns the hook that brackets a closed loop's window with
// a CPU profile of the server, with -profile-signals.
func (r *runner) profileWindow(what string) func(start bool) {
	return func(start bool) {
		if start {
			r.signal(syscall.SIGUSR2, "CPU profile of the "+what+": start")
		} else {
			r.signal(syscall.SIGUSR2, "CPU profile of the "+what+": stop")
		}
	}
}

// closedLoop runs op on conc goroutines, each calling it again as soon as
// it returns, for a short warmup and then for d, and measures the window.
func (r *runner) closedLoop(ctx context.Context, name, desc string, conc int, d time.Duration, window func(start bool), op func(ctx context.Context, worker, k int) error) ThroughputBaseline {
	res := ThroughputBaseline{Name: name, Description: desc, Concurrency: conc}
	var (
		h        hist
		ops, bad atomic.Int64
		lastErr  atomic.Value
		wg       sync.WaitGroup
	)
	loopCtx, stop := context.WithCancel(ctx)
	for w := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; loopCtx.Err() == nil; k++ {
				start := time.Now()
				if err := op(loopCtx, w, k); err != nil {
					if loopCtx.Err() == nil {
						bad.Add(1)
						lastErr.Store(err.Error())
					}
					continue
				}
				h.Record(time.Since(start))
				ops.Add(1)
			}
		}()
	}
	sleepCtx(ctx, min(d/5+200*time.Millisecond, time.Second))
	if window != nil {
		window(true)
	}
	h0, o0, e0, t0 := h.Snapshot(), ops.Load(), bad.Load(), time.Now()
	srv0, self0 := r.serverCPU(), selfCPU()
	sleepCtx(ctx, d)
	h1, o1, e1, t1 := h.Snapshot(), ops.Load(), bad.Load(), time.Now()
	srv1, self1 := r.serverCPU(), selfCPU()
	if window != nil {
		window(false)
	}
	stop()
	wg.Wait()
	res.measured(t1.Sub(t0).Seconds(), o1-o0, e1-e0, h1.Since(h0), srv1-srv0, self1-self0)
	if res.Errors > 0 {
		if s, ok := lastErr.Load().(string); ok {
			res.Error = truncate(s, 200)
		}
	}
	logf("baseline %-34s %8.0f ops/s  p50 %6.2f ms  p99 %6.2f ms  errors %d  CPU per op: server %.1f µs, chatload %.1f µs",
		name, res.OpsPerS, res.Latency.P50Ms, res.Latency.P99Ms, res.Errors, res.ServerCPUPerOpUs, res.ChatloadCPUPerOpUs)
	return res
}

// measured fills the figures of a closed loop's window of w seconds, in
// which ops operations succeeded with latencies lat and errs failed, and
// the server and this process used serverCPU and selfCPU.
func (res *ThroughputBaseline) measured(w float64, ops, errs int64, lat *histSnap, serverCPU, selfCPU time.Duration) {
	res.WindowS = w
	res.Ops = ops
	res.OpsPerS = float64(res.Ops) / res.WindowS
	res.Latency = lat.Summary()
	res.Errors = errs
	res.ServerCPUPerOpUs = cpuPerOpUs(serverCPU, res.Ops)
	res.ChatloadCPUPerOpUs = cpuPerOpUs(selfCPU, res.Ops)
}

// cpuPerOpUs is cpu per operation in microseconds (of whole microseconds
// of cpu: /proc counts in 10 ms ticks anyway), 0 without operations.
func cpuPerOpUs(cpu time.Duration, ops int64) float64 {
	if ops <= 0 {
		return 0
	}
	return float64(cpu/time.Microsecond) / float64(ops)
}

// postBaselines compares postMessage over the API with bare store writes
// at the same concurrency (one per poster), closed loop.
func (r *runner) postBaselines(ctx context.Context) []ThroughputBaseline {
	cfg := r.cfg
	conc := cfg.posters
	d := cfg.baselineDuration
	raw := content(nil, time.Now().UnixNano(), cfg.msgSize)
	text := string(raw)
	var out []ThroughputBaseline

	posts := make([]postFunc, conc)
	for w := range posts {
		posts[w] = r.target.poster(w)
	}
	ours := r.closedLoop(ctx, "ours: postMessage", "postMessage over HTTP to a room without subscribers: GraphQL, JWT, room read, store write, publish", conc, d,
		r.profileWindow("postMessage closed loop"), func(ctx context.Context, w, _ int) error {
			return posts[w](ctx, r.w.postRoom, raw)
		})
	ours.Ours = true
	out = append(out, ours)

	// The room of the bare writes has as many participants as the post
	// room, the posters, so a room read costs what it costs the server.
	author := store.UserRef{Login: cfg.prefix + "-p000", Firstname: "Load", Lastname: "Tester"}
	room := store.Room{Name: cfg.prefix + "-bare", Creator: author, CreatedAt: time.Now().UTC().Truncate(time.Millisecond), Banner: "chatload"}
	for i := range cfg.posters {
		login := fmt.Sprintf("%s-p%03d", cfg.prefix, i)
		room.Participants = append(room.Participants, store.UserRef{Login: login, Firstname: "Load", Lastname: "Tester " + login})
	}
	for _, kind := range cfg.baselineStores {
		st, cleanup, err := openBaselineStore(ctx, cfg, kind)
		if err != nil {
			logf("baseline store %s: %v", kind, err)
			out = append(out, ThroughputBaseline{Name: "bare " + kind + " PostMessage", Store: kind, Error: err.Error(), Concurrency: conc})
			continue
		}
		if err := createBareRoom(ctx, st, room); err != nil {
			logf("baseline store %s: %v", kind, err)
			out = append(out, ThroughputBaseline{Name: "bare " + kind + " PostMessage", Error: err.Error(), Concurrency: conc})
			cleanup()
			continue
		}
		post := func(ctx context.Context) error {
			return st.PostMessage(ctx, store.Message{Room: room.Name, ID: store.NewMessageID(), Author: author, Content: text})
		}
		bare := r.closedLoop(ctx, "bare "+kind+" PostMessage", "store.PostMessage called in process, "+kind+" store", conc, d,
			nil, func(ctx context.Context, _, _ int) error { return post(ctx) })
		withRoom := r.closedLoop(ctx, "bare "+kind+" Room+PostMessage", "store.Room, participant check, store.PostMessage: the resolver's store calls", conc, d,
			nil, func(ctx context.Context, _, _ int) error {
				rm, err := st.Room(ctx, room.Name)
				if err != nil {
					return err
				}
				if !rm.HasParticipant(author.Login) {
					return fmt.Errorf("not a participant")
				}
				return post(ctx)
			})
		bare.Store, withRoom.Store = kind, kind
		out = append(out, bare, withRoom)
		cleanup()
	}
	return out
}

func createBareRoom(ctx context.Context, st store.Store, room store.Room) error {
	u := store.Account{User: store.User{UserRef: room.Creator}, PassHash: []byte("x")}
	if err := st.CreateUser(ctx, u); err != nil && !isStoreConflict(err) {
		return err
	}
	first := room
	first.Participants = []store.UserRef{room.Creator}
	if err := st.CreateRoom(ctx, first); err != nil && !isStoreConflict(err) {
		return err
	}
	for _, p := range room.Participants[1:] {
		if err := st.CreateUser(ctx, store.Account{User: store.User{UserRef: p}, PassHash: []byte("x")}); err != nil && !isStoreConflict(err) {
			return err
		}
		if _, _, err := st.JoinRoom(ctx, room.Name, p); err != nil {
			return err
		}
	}
	return nil
}

func isStoreConflict(err error) bool { return errors.Is(err, store.ErrConflict) }

// openBaselineStore opens a fresh embedded store in a temporary directory,
// or the Cassandra baseline keyspace.
func openBaselineStore(ctx context.Context, cfg *config, kind string) (store.Store, func(), error) {
	switch kind {
	case "embedded":
		dir, err := os.MkdirTemp("", "chatload-store-")
		if err != nil {
			return nil, nil, err
		}
		db, err := embedded.Open(dir)
		if err != nil {
			os.RemoveAll(dir)
			return nil, nil, err
		}
		return db, func() { db.Close(); os.RemoveAll(dir) }, nil
	case "cassandra":
		octx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		db, err := cassandra.Open(octx, cassandra.Config{Hosts: cfg.cassandraHosts, Keyspace: cfg.cassandraKS, ConnectTimeout: 5 * time.Second})
		if err != nil {
			return nil, nil, err
		}
		return db, func() { db.Close() }, nil
	}
	return nil, nil, fmt.Errorf("unknown store %q", kind)
}

// historyBaselines compares the messages query over GraphQL with a plain
// net/http JSON handler that makes the same store call on an embedded store
// seeded with as many messages, through the same HTTP client at the same
// concurrency, closed loop.
func (r *runner) historyBaselines(ctx context.Context, seed int) []ThroughputBaseline {
	cfg := r.cfg
	conc := max(cfg.readers, 2)
	d := cfg.baselineDuration
	var out []ThroughputBaseline
	token := r.w.posters[0].Token
	ours := r.closedLoop(ctx, "ours: messages(first: 50)", "GraphQL messages query over HTTP: JWT, room read, store.Messages, gqlgen encoding", conc, d,
		r.profileWindow("messages closed loop"), func(ctx context.Context, w, k int) error {
			_, err := graphqlPage(ctx, r.http, cfg.url, token, r.w.rooms[(w+k)%len(r.w.rooms)], 50)
			return err
		})
	ours.Ours = true
	// What any request costs the server (the HTTP exchange, the token,
	// gqlgen's parse cache, the extensions): the part of a page's CPU that
	// no work on the page itself can take away.
	floor := r.closedLoop(ctx, "ours: { __typename }", "GraphQL query over HTTP with the same token and no resolver: any request's floor", conc, d,
		r.profileWindow("{ __typename } closed loop"),
		func(ctx context.Context, w, k int) error {
			var out struct {
				Data *struct {
					Typename string `json:"__typename"`
				} `json:"data"`
				Errors chatclient.Errors `json:"errors"`
			}
			if err := httpJSON(ctx, r.http, http.MethodPost, cfg.url, token, typenameRequest, &out); err != nil {
				return err
			}
			if len(out.Errors) > 0 {
				return out.Errors
			}
			if out.Data == nil || out.Data.Typename != "Query" {
				return errors.New("{ __typename }: no Query in the answer")
			}
			return nil
		})
	floor.Ours, floor.Floor = true, true
	out = append(out, ours, floor)

	dir, err := os.MkdirTemp("", "chatload-history-")
	if err != nil {
		return out
	}
	defer os.RemoveAll(dir)
	db, err := embedded.Open(dir)
	if err != nil {
		out = append(out, ThroughputBaseline{Name: "plain net/http + store.Messages", Error: err.Error()})
		return out
	}
	defer db.Close()
	author := store.UserRef{Login: cfg.prefix + "-p000", Firstname: "Load", Lastname: "Tester " + cfg.prefix + "-p000"}
	rooms := min(cfg.rooms, 10)
	for i := range rooms {
		room := fmt.Sprintf("%s-r%03d", cfg.prefix, i)
		for range seed {
			m := store.Message{Room: room, ID: store.NewMessageID(), Author: author, Content: string(content(nil, time.Now().UnixNano(), cfg.msgSize))}
			if err := db.PostMessage(ctx, m); err != nil {
				out = append(out, ThroughputBaseline{Name: "plain net/http + store.Messages", Error: err.Error()})
				return out
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		out = append(out, ThroughputBaseline{Name: "plain net/http + store.Messages", Error: err.Error()})
		return out
	}
	srv := &http.Server{Handler: plainMessagesHandler(db), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String() + "/messages?first=50&room="
	out = append(out, r.closedLoop(ctx, "plain net/http + store.Messages", "net/http handler: store.Messages, encoding/json; no auth, no room read", conc, d,
		nil, func(ctx context.Context, w, k int) error {
			var p page
			room := fmt.Sprintf("%s-r%03d", cfg.prefix, (w+k)%rooms)
			return httpJSON(ctx, r.http, http.MethodGet, base+room, token, nil, &p)
		}))
	return out
}

// typenameRequest is the least query: it reads nothing.
var typenameRequest = []byte(`{"query":"{ __typename }"}`)

// plainMessagesHandler serves GET /messages?room=&first= with the page the
// GraphQL query returns, encoded by encoding/json.
func plainMessagesHandler(st store.Store) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /messages", func(w http.ResponseWriter, req *http.Request) {
		n, err := strconv.Atoi(req.URL.Query().Get("first"))
		if err != nil || n < 1 || n > 100 {
			http.Error(w, `{"error":"bad first"}`, http.StatusBadRequest)
			return
		}
		msgs, err := st.Messages(req.Context(), req.URL.Query().Get("room"), store.MessageID{}, n+1)
		if err != nil {
			http.Error(w, `{"error":"store"}`, http.StatusInternalServerError)
			return
		}
		res := page{Edges: make([]pageEdge, 0, n), PageInfo: pageInfo{HasNextPage: len(msgs) > n}}
		for i := range msgs[:min(n, len(msgs))] {
			m := &msgs[i]
			id := m.ID.String()
			res.Edges = append(res.Edges, pageEdge{Cursor: id, Node: apiMessage{ID: id, Content: m.Content, System: m.System, PostedAt: m.PostedAt(),
				Author: apiAuthor{m.Author.Login, m.Author.Firstname, m.Author.Lastname}}})
			res.PageInfo.EndCursor = &id
		}
		var buf bytes.Buffer
		if err := json.NewEncoder(&buf).Encode(res); err != nil {
			http.Error(w, `{"error":"encode"}`, http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(buf.Bytes())
	})
	return mux
}
