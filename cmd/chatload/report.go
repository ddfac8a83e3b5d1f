package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"time"
)

// Report is everything a run measured; it is written as report.json.
type Report struct {
	Tool      string       `json:"tool"`
	Label     string       `json:"label"`
	StartedAt time.Time    `json:"started_at"`
	Command   string       `json:"command"`
	Machine   Machine      `json:"machine"`
	Params    Params       `json:"params"`
	Setup     SetupResult  `json:"setup"`
	IdleSubs  *IdleResult  `json:"idle_subscriptions,omitempty"`
	Load      LoadResult   `json:"load"`
	Server    ServerResult `json:"server"`
	Baselines Baselines    `json:"baselines"`
	Ceiling   *Ceiling     `json:"ceiling,omitempty"`
	// Ratios compare our figures with the baselines'. Value is always
	// "higher is better, 1 = as fast as the bare baseline": ours/bare for
	// throughputs, bare/ours for latencies and CPU costs.
	Ratios   []Ratio  `json:"ratios"`
	Aims     []Aim    `json:"aims"`
	Timeline []sample `json:"timeline"`
}

// Params are the settings of the run.
type Params struct {
	URL               string   `json:"url"`
	Rooms             int      `json:"rooms"`
	Subscribers       int      `json:"subscribers"`
	Users             int      `json:"subscriber_users"`
	Posters           int      `json:"posters"`
	Rate              float64  `json:"rate_posts_per_s"`
	Readers           int      `json:"readers"`
	ReadRate          float64  `json:"read_rate_per_s"`
	MsgSize           int      `json:"msg_size_bytes"`
	DurationS         float64  `json:"duration_s"`
	WarmupS           float64  `json:"warmup_s"`
	IdleSubs          int      `json:"idle_subs"`
	ServerPID         int      `json:"server_pid"`
	ServerStore       string   `json:"server_store"`
	ServerBroker      string   `json:"server_broker"`
	BaselineStores    []string `json:"baseline_stores"`
	BaselineDurationS float64  `json:"baseline_duration_s"`
	Prefix            string   `json:"prefix"`
}

func paramsOf(c *config) Params {
	users := c.users
	if users <= 0 || users > c.subscribers {
		users = c.subscribers
	}
	return Params{
		URL: strings.Join(c.urls, ","), Rooms: c.rooms, Subscribers: c.subscribers, Users: users, Posters: c.posters,
		Rate: c.rate, Readers: c.readers, ReadRate: c.readRate, MsgSize: c.msgSize,
		DurationS: c.duration.Seconds(), WarmupS: c.warmup.Seconds(), IdleSubs: c.idleSubs,
		ServerPID: c.serverPID, ServerStore: c.serverStore, ServerBroker: c.serverBroker,
		BaselineStores: c.baselineStores, BaselineDurationS: c.baselineDuration.Seconds(), Prefix: c.prefix,
	}
}

type SetupResult struct {
	Users   int     `json:"users"`
	Rooms   int     `json:"rooms"`
	Joins   int     `json:"joins"`
	Seconds float64 `json:"seconds"`
}

// IdleResult is the server memory that idle subscriptions cost.
type IdleResult struct {
	Count       int     `json:"count"`
	Connections int     `json:"connections"` // the websockets they were opened on
	OpenSeconds float64 `json:"open_seconds"`
	RSSBefore   int64   `json:"rss_before_bytes"`
	RSSHalf     int64   `json:"rss_half_bytes"`
	RSSAfter    int64   `json:"rss_after_bytes"`
	// BytesPerSub is (after - before) / count: the headline figure.
	BytesPerSub float64 `json:"bytes_per_idle_subscription"`
	// MarginalBytesPerSub is (after - half) / (count/2): without the
	// one-time costs of the first connections.
	MarginalBytesPerSub float64 `json:"marginal_bytes_per_idle_subscription"`
}

// LoadResult is the main scenario's measured window.
type LoadResult struct {
	WindowS                float64           `json:"window_s"`
	WindowFromS            float64           `json:"window_from_s"` // on the timeline's clock
	WindowToS              float64           `json:"window_to_s"`
	SubscribeSeconds       float64           `json:"subscribe_seconds"`
	OfferedPostsPerS       float64           `json:"offered_posts_per_s"`
	Posts                  int64             `json:"posts_accepted"`
	AcceptedPostsPerS      float64           `json:"accepted_posts_per_s"`
	Deliveries             int64             `json:"deliveries"`
	DeliveriesPerS         float64           `json:"deliveries_per_s"`
	ExpectedDeliveriesPerS float64           `json:"expected_deliveries_per_s"`
	DeliveredFraction      float64           `json:"delivered_fraction"`
	AvgEventBytes          float64           `json:"avg_event_bytes"`
	DeliveryLatency        pct               `json:"delivery_latency"`
	PostLatency            pct               `json:"post_latency"`
	HistoryLatency         pct               `json:"history_latency"`
	HistoryReadsPerS       float64           `json:"history_reads_per_s"`
	Errors                 map[string]int64  `json:"errors"`
	ErrorsTotal            int64             `json:"errors_total"`
	ErrorsWholeRun         map[string]int64  `json:"errors_whole_run"`
	ErrorExamples          map[string]string `json:"error_examples"`
	SubscriptionsLive      int64             `json:"subscriptions_live_at_end"`
	SubscriptionsReceiving int64             `json:"subscriptions_receiving"`
	Resubscribes           int64             `json:"resubscribes"`
	OtherEvents            int64             `json:"other_events"`
	ClientCPUCores         float64           `json:"client_cpu_cores"`
	MachineBusyPct         float64           `json:"machine_busy_pct"`
	// OtherCPUCores is what the machine was busy with besides the server
	// and chatload (other processes: Redis, Cassandra, anything else): a
	// high figure means the run competed for the cores.
	OtherCPUCores float64 `json:"other_cpu_cores"`
}

func (l *LoadResult) fill(cfg *config, s0, s1 *metricsSnap, r *runner) {
	w := s1.at.Sub(s0.at).Seconds()
	l.WindowS = w
	l.WindowFromS, l.WindowToS = s0.at.Sub(r.start).Seconds(), s1.at.Sub(r.start).Seconds()
	l.OfferedPostsPerS = cfg.rate
	l.Posts = s1.posts - s0.posts
	l.AcceptedPostsPerS = float64(l.Posts) / w
	l.Deliveries = s1.deliveries - s0.deliveries
	l.DeliveriesPerS = float64(l.Deliveries) / w
	l.ExpectedDeliveriesPerS = l.AcceptedPostsPerS * float64(cfg.subscribers) / float64(cfg.rooms)
	if l.ExpectedDeliveriesPerS > 0 {
		l.DeliveredFraction = l.DeliveriesPerS / l.ExpectedDeliveriesPerS
	}
	if l.Deliveries > 0 {
		l.AvgEventBytes = float64(s1.deliveryBytes-s0.deliveryBytes) / float64(l.Deliveries)
	}
	l.DeliveryLatency = s1.delivery.Since(s0.delivery).Summary()
	l.PostLatency = s1.post.Since(s0.post).Summary()
	l.HistoryLatency = s1.read.Since(s0.read).Summary()
	l.HistoryReadsPerS = float64(s1.reads-s0.reads) / w
	l.Errors = map[string]int64{}
	for k, v := range s1.errCounts {
		if d := v - s0.errCounts[k]; d > 0 {
			l.Errors[k] = d
			l.ErrorsTotal += d
		}
	}
	l.ErrorsWholeRun, l.ErrorExamples = r.m.errs.Snapshot()
	l.SubscriptionsLive = r.m.subsLive.Load()
	l.SubscriptionsReceiving = r.m.subsReceiving.Load()
	l.Resubscribes = r.m.resubscribes.Load()
	l.OtherEvents = s1.otherEvs - s0.otherEvs
	l.ClientCPUCores = (s1.clientCPU - s0.clientCPU).Seconds() / w
	if total := s1.machineTotal - s0.machineTotal; total > 0 {
		l.MachineBusyPct = 100 * float64(s1.machineBusy-s0.machineBusy) / float64(total)
		busyCores := float64(s1.machineBusy-s0.machineBusy) / float64(total) * float64(r.ncpu())
		l.OtherCPUCores = max(busyCores-l.ClientCPUCores-(s1.serverCPU-s0.serverCPU).Seconds()/w, 0)
	}
}

// ServerResult is what /proc says about the server process.
type ServerResult struct {
	PID           int   `json:"pid"`
	RSSStart      int64 `json:"rss_start_bytes"`
	RSSAfterSetup int64 `json:"rss_after_setup_bytes"`
	RSSPeak       int64 `json:"rss_peak_during_load_bytes"`
	RSSEnd        int64 `json:"rss_end_bytes"`
	VmHWM         int64 `json:"vm_hwm_bytes"`
	// CPUSeconds is the server's CPU time during the measured window, and
	// CPUCores its average use of the machine's cores.
	CPUSeconds float64 `json:"cpu_seconds"`
	CPUCores   float64 `json:"cpu_cores"`
	// RedisCPUSeconds is Redis's CPU time during the window, when the
	// server's broker is Redis; it counts as part of our delivery path.
	RedisCPUSeconds float64 `json:"redis_cpu_seconds"`
	// DeliveriesPerCPUSecond is deliveries / (server + Redis CPU time): the
	// delivery capacity of one core.
	DeliveriesPerCPUSecond float64 `json:"deliveries_per_cpu_second"`
	// WriteSyscalls counts the server's write syscalls during the window
	// (syscw of /proc/<pid>/io: every write, not only the websockets':
	// HTTP responses, the store, logs), and WritesPerDelivery divides it by
	// the deliveries.
	WriteSyscalls     int64   `json:"write_syscalls"`
	WritesPerDelivery float64 `json:"writes_per_delivery"`
}

// Baselines are the bare loops measured in the same run.
type Baselines struct {
	Delivery []DeliveryBaseline   `json:"delivery"`
	Post     []ThroughputBaseline `json:"post"`
	History  []ThroughputBaseline `json:"history"`
}

type DeliveryBaseline struct {
	Name                   string  `json:"name"`
	Description            string  `json:"description"`
	Subscribers            int     `json:"subscribers"`
	Channels               int     `json:"channels"`
	Publishers             int     `json:"publishers"`
	Rate                   float64 `json:"rate_per_s"`
	PayloadBytes           int     `json:"payload_bytes"`
	WindowS                float64 `json:"window_s"`
	Published              int64   `json:"published"`
	Deliveries             int64   `json:"deliveries"`
	DeliveriesPerS         float64 `json:"deliveries_per_s"`
	ExpectedDeliveriesPerS float64 `json:"expected_deliveries_per_s"`
	Latency                pct     `json:"latency"`
	RedisCPUSeconds        float64 `json:"redis_cpu_seconds"`
	FanoutCPUSeconds       float64 `json:"fanout_cpu_seconds,omitempty"`
	DeliveriesPerCPUSecond float64 `json:"deliveries_per_cpu_second"`
	Errors                 int64   `json:"errors"`
}

type ThroughputBaseline struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Ours        bool   `json:"ours"`
	// Floor marks our request that does nothing: what any request costs.
	Floor       bool    `json:"floor,omitempty"`
	Concurrency int     `json:"concurrency"`
	WindowS     float64 `json:"window_s"`
	Ops         int64   `json:"ops"`
	OpsPerS     float64 `json:"ops_per_s"`
	Latency     pct     `json:"latency"`
	Errors      int64   `json:"errors"`
	Error       string  `json:"error,omitempty"`
	// CPU time per operation of the server process (ours) and of chatload
	// (which runs the bare loops in process, and the client side of ours).
	ServerCPUPerOpUs   float64 `json:"server_cpu_per_op_us"`
	ChatloadCPUPerOpUs float64 `json:"chatload_cpu_per_op_us"`
	// Store is the bare store of a post baseline.
	Store string `json:"store,omitempty"`
}

// Ratio compares one of our figures with a baseline's.
type Ratio struct {
	Name  string  `json:"name"`
	Ours  float64 `json:"ours"`
	Bare  float64 `json:"bare"`
	Unit  string  `json:"unit"`
	Value float64 `json:"ratio"` // higher is better; 1 = as fast as bare
	How   string  `json:"how"`
}

// Aim is one of the targets and this run's figure for it.
type Aim struct {
	Name   string  `json:"name"`
	Target string  `json:"target"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Pass   bool    `json:"pass"`
	// Applies is false when the run's scenario is not the aim's (fewer
	// subscribers, a lower rate), so the figure is only indicative.
	Applies bool   `json:"applies"`
	Note    string `json:"note,omitempty"`
}

func (rep *Report) finish(cfg *config) {
	l := &rep.Load
	s := &rep.Server
	s.PID = cfg.serverPID
	if cpu := s.CPUSeconds + s.RedisCPUSeconds; cpu > 0 {
		s.DeliveriesPerCPUSecond = float64(l.Deliveries) / cpu
	}
	if l.Deliveries > 0 {
		s.WritesPerDelivery = float64(s.WriteSyscalls) / float64(l.Deliveries)
	}
	add := func(r Ratio) {
		if r.Bare > 0 && r.Ours > 0 {
			rep.Ratios = append(rep.Ratios, r)
		}
	}
	for _, b := range rep.Baselines.Delivery {
		add(Ratio{Name: "deliveries/s vs " + b.Name, Ours: l.DeliveriesPerS, Bare: b.DeliveriesPerS, Unit: "deliveries/s",
			Value: l.DeliveriesPerS / b.DeliveriesPerS, How: "same subscribers, channels and offered rate: ours / bare"})
		add(Ratio{Name: "delivery p50 vs " + b.Name, Ours: l.DeliveryLatency.P50Ms, Bare: b.Latency.P50Ms, Unit: "ms",
			Value: b.Latency.P50Ms / l.DeliveryLatency.P50Ms, How: "bare / ours"})
		add(Ratio{Name: "delivery p99 vs " + b.Name, Ours: l.DeliveryLatency.P99Ms, Bare: b.Latency.P99Ms, Unit: "ms",
			Value: b.Latency.P99Ms / l.DeliveryLatency.P99Ms, How: "bare / ours"})
		add(Ratio{Name: "deliveries per CPU-second vs " + b.Name, Ours: s.DeliveriesPerCPUSecond, Bare: b.DeliveriesPerCPUSecond, Unit: "deliveries/CPU-s",
			Value: s.DeliveriesPerCPUSecond / b.DeliveriesPerCPUSecond, How: "capacity per core: ours (server [+ Redis]) / bare (Redis [+ fan-out process])"})
	}
	ratioOps := func(kind string, list []ThroughputBaseline) {
		var ours *ThroughputBaseline
		for i := range list {
			if list[i].Ours && !list[i].Floor {
				ours = &list[i]
			}
		}
		if ours == nil {
			return
		}
		for _, b := range list {
			if b.Ours || b.OpsPerS == 0 {
				continue
			}
			if kind == "postMessage" && b.Store != "" && cfg.serverStore != "unknown" && b.Store != cfg.serverStore {
				continue // a bare Cassandra write against an embedded server compares nothing
			}
			add(Ratio{Name: kind + "/s vs " + b.Name, Ours: ours.OpsPerS, Bare: b.OpsPerS, Unit: "ops/s",
				Value: ours.OpsPerS / b.OpsPerS, How: fmt.Sprintf("closed loop, %d concurrent: ours / bare", b.Concurrency)})
			add(Ratio{Name: kind + " p50 vs " + b.Name, Ours: ours.Latency.P50Ms, Bare: b.Latency.P50Ms, Unit: "ms",
				Value: b.Latency.P50Ms / ours.Latency.P50Ms, How: "bare / ours"})
			if kind == "postMessage" {
				// The bare store runs inside chatload, so its CPU per op is
				// the store's alone; ours is the server's.
				add(Ratio{Name: kind + " CPU per op vs " + b.Name, Ours: ours.ServerCPUPerOpUs, Bare: b.ChatloadCPUPerOpUs, Unit: "µs",
					Value: b.ChatloadCPUPerOpUs / ours.ServerCPUPerOpUs, How: "bare (store in process) / ours (server process)"})
			}
		}
	}
	ratioOps("postMessage", rep.Baselines.Post)
	ratioOps("messages page", rep.Baselines.History)

	rep.addAims(cfg)
	for i := range rep.Ratios {
		rep.Ratios[i].Value = round3(rep.Ratios[i].Value)
	}
}

// addAims adds the aims of the performance issue (17), each with this
// run's figure, marked indicative when the run's scenario is not the aim's.
func (rep *Report) addAims(cfg *config) {
	l, s := &rep.Load, &rep.Server
	perRoom := cfg.subscribers / max(cfg.rooms, 1)
	var fanout *DeliveryBaseline
	for i := range rep.Baselines.Delivery {
		if rep.Baselines.Delivery[i].Name == "redis-fanout" {
			fanout = &rep.Baselines.Delivery[i]
		}
	}
	if c := rep.Ceiling; c != nil {
		if fanout != nil && fanout.DeliveriesPerCPUSecond > 0 && c.Sustained != nil && c.Sustained.DeliveriesPerCPUSecond > 0 {
			v := c.Sustained.DeliveriesPerCPUSecond / fanout.DeliveriesPerCPUSecond
			rep.Aims = append(rep.Aims, Aim{
				Name: "deliveries per CPU-s at saturation", Target: ">= 0.85x bare go-redis fan-out", Value: v, Unit: "x",
				Pass: v >= 0.85, Applies: true,
				Note: fmt.Sprintf("ours %.0f at %.0f posts/s (the highest rate kept up with), bare %.0f", c.Sustained.DeliveriesPerCPUSecond, c.Sustained.OfferedPostsPerS, fanout.DeliveriesPerCPUSecond),
			})
		}
		v := 0.0
		if c.Within50ms != nil {
			v = c.Within50ms.AcceptedPostsPerS
		}
		rep.Aims = append(rep.Aims, Aim{
			Name: "sustained posts/s, p99 < 50 ms", Target: ">= 1,200 with 100 subscribers per room", Value: v, Unit: "posts/s",
			Pass: v >= 1200, Applies: perRoom == 100,
			Note: fmt.Sprintf("ceiling sweep from %.0f posts/s, x%.2f per step; %d subscribers per room", cfg.ceilingFrom, cfg.ceilingFactor, perRoom),
		})
	}
	rep.Aims = append(rep.Aims, Aim{
		Name: "p99 delivery latency", Target: "< 10 ms at 500 posts/s, 1,000 subscribers over 10 rooms",
		Value: l.DeliveryLatency.P99Ms, Unit: "ms", Pass: l.DeliveryLatency.Count > 0 && l.DeliveryLatency.P99Ms < 10 && l.DeliveredFraction > 0.99,
		Applies: cfg.subscribers >= 1000 && cfg.rooms <= 10 && cfg.rate >= 500,
		Note:    fmt.Sprintf("%.1f%% of expected deliveries arrived; %.0f deliveries per server CPU-second", 100*l.DeliveredFraction, s.DeliveriesPerCPUSecond),
	})
	if rep.IdleSubs != nil {
		rep.Aims = append(rep.Aims, Aim{
			Name: "memory per idle subscription", Target: "<= 8 KiB at 100,000", Value: rep.IdleSubs.BytesPerSub / 1024, Unit: "KiB",
			Pass: rep.IdleSubs.BytesPerSub <= 8*1024, Applies: rep.IdleSubs.Count >= 100000,
			Note: fmt.Sprintf("server RSS growth over %d idle subscriptions on %d connections; marginal %.1f KiB", rep.IdleSubs.Count, rep.IdleSubs.Connections, rep.IdleSubs.MarginalBytesPerSub/1024),
		})
	}
	for _, r := range rep.Ratios {
		switch {
		case r.Name == "postMessage/s vs bare cassandra PostMessage":
			rep.Aims = append(rep.Aims, Aim{Name: "postMessage on Cassandra", Target: ">= 0.8x a bare gocql write of the same rows", Value: r.Value, Unit: "x",
				Pass: r.Value >= 0.8, Applies: true, Note: r.How})
		case r.Name == "messages page/s vs plain net/http + store.Messages":
			rep.Aims = append(rep.Aims, Aim{Name: "history reads", Target: ">= 0.9x a plain net/http handler", Value: r.Value, Unit: "x",
				Pass: r.Value >= 0.9, Applies: true, Note: r.How})
		}
	}
}

func round3(v float64) float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return 0
	}
	return math.Round(v*1000) / 1000
}

func (rep *Report) write(path string) error {
	raw, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(raw, '\n'), 0o644)
}

// printSummary writes the headline figures for a person reading the
// terminal.
func (rep *Report) printSummary(w io.Writer) {
	l := rep.Load
	fmt.Fprintf(w, "\n== chatload %s: %d subscribers, %d rooms, %.0f posts/s offered, %.0fs measured ==\n",
		rep.Label, rep.Params.Subscribers, rep.Params.Rooms, rep.Params.Rate, l.WindowS)
	fmt.Fprintf(w, "accepted posts/s     %10.1f\n", l.AcceptedPostsPerS)
	fmt.Fprintf(w, "deliveries/s         %10.1f   (%.1f%% of expected %.0f)\n", l.DeliveriesPerS, 100*l.DeliveredFraction, l.ExpectedDeliveriesPerS)
	fmt.Fprintf(w, "delivery latency     p50 %.2f ms  p99 %.2f ms  p99.9 %.2f ms  max %.2f ms\n", l.DeliveryLatency.P50Ms, l.DeliveryLatency.P99Ms, l.DeliveryLatency.P999Ms, l.DeliveryLatency.MaxMs)
	fmt.Fprintf(w, "postMessage latency  p50 %.2f ms  p99 %.2f ms\n", l.PostLatency.P50Ms, l.PostLatency.P99Ms)
	fmt.Fprintf(w, "history page latency p50 %.2f ms  p99 %.2f ms  (%.1f reads/s)\n", l.HistoryLatency.P50Ms, l.HistoryLatency.P99Ms, l.HistoryReadsPerS)
	fmt.Fprintf(w, "errors               %d in the window\n", l.ErrorsTotal)
	for _, k := range sortedKeys(l.ErrorsWholeRun) {
		fmt.Fprintf(w, "  %-40s %6d in the window, %6d in the whole run, e.g. %s\n", k, l.Errors[k], l.ErrorsWholeRun[k], l.ErrorExamples[k])
	}
	if rep.Server.PID > 0 {
		fmt.Fprintf(w, "server               RSS peak %s, %.2f cores, %.0f deliveries per CPU-second, %.3f write syscalls per delivery (all its writes)\n", mib(rep.Server.RSSPeak), rep.Server.CPUCores, rep.Server.DeliveriesPerCPUSecond, rep.Server.WritesPerDelivery)
	}
	fmt.Fprintf(w, "cpu                  chatload %.2f cores, other processes %.2f cores, machine %.0f%% busy\n", l.ClientCPUCores, l.OtherCPUCores, l.MachineBusyPct)
	if rep.IdleSubs != nil {
		fmt.Fprintf(w, "idle subscription    %.1f KiB of server RSS each (%d opened on %d connections)\n", rep.IdleSubs.BytesPerSub/1024, rep.IdleSubs.Count, rep.IdleSubs.Connections)
	}
	for _, b := range rep.Baselines.Delivery {
		fmt.Fprintf(w, "baseline %-14s %9.0f deliveries/s  p50 %.2f ms  p99 %.2f ms  %.0f deliveries per CPU-second\n", b.Name, b.DeliveriesPerS, b.Latency.P50Ms, b.Latency.P99Ms, b.DeliveriesPerCPUSecond)
	}
	lists := [][]ThroughputBaseline{rep.Baselines.Post, rep.Baselines.History}
	width := 24 // at least; the longest name sets it, so the columns align
	for _, list := range lists {
		for _, b := range list {
			width = max(width, len(b.Name))
		}
	}
	for _, list := range lists {
		for _, b := range list {
			if b.Error != "" {
				fmt.Fprintf(w, "baseline %-*s skipped: %s\n", width, b.Name, b.Error)
				continue
			}
			fmt.Fprintf(w, "baseline %-*s %9.0f ops/s  p50 %.2f ms  p99 %.2f ms", width, b.Name, b.OpsPerS, b.Latency.P50Ms, b.Latency.P99Ms)
			if b.Ours && b.ServerCPUPerOpUs > 0 {
				fmt.Fprintf(w, "  server CPU %.1f µs/op", b.ServerCPUPerOpUs)
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintln(w, "ratios (1 = as fast as bare):")
	for _, r := range rep.Ratios {
		fmt.Fprintf(w, "  %-58s %7.3f\n", r.Name, r.Value)
	}
	if rep.Ceiling != nil {
		rep.Ceiling.print(w)
	}
	fmt.Fprintln(w, "aims:")
	for _, a := range rep.Aims {
		verdict := "FAIL"
		if a.Pass {
			verdict = "pass"
		}
		if !a.Applies {
			verdict += " (scenario differs: indicative)"
		}
		fmt.Fprintf(w, "  %-38s %10.2f %-13s target %s: %s\n", a.Name, a.Value, a.Unit, a.Target, verdict)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
