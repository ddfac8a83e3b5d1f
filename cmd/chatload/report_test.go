package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// fixedReport is the report of a run of 1000 subscribers in 10 rooms at
// 500 posts/s, with its baselines, as load and baselines leave it, before
// finish.
func fixedReport() (*Report, *config) {
	cfg := &config{rate: 500, subscribers: 1000, rooms: 10, serverStore: "embedded", serverPID: 4242, ceilingFrom: 600, ceilingFactor: 1.2}
	rep := &Report{
		Label:  "embedded+redis",
		Params: Params{Subscribers: 1000, Rooms: 10, Rate: 500, Posters: 10, Readers: 2, MsgSize: 120, WarmupS: 3},
		Load: LoadResult{
			WindowS: 20, WindowFromS: 3, WindowToS: 23,
			AcceptedPostsPerS: 495, Posts: 9_900,
			Deliveries: 980_000, DeliveriesPerS: 49_000, ExpectedDeliveriesPerS: 49_500, DeliveredFraction: 0.995,
			DeliveryLatency:  pct{Count: 980_000, MeanMs: 1.1, P50Ms: 0.8, P90Ms: 2, P99Ms: 4, P999Ms: 9.5, MaxMs: 31.25},
			PostLatency:      pct{Count: 9_900, P50Ms: 1.5, P99Ms: 6.25},
			HistoryLatency:   pct{Count: 400, P50Ms: 2.125, P99Ms: 7},
			HistoryReadsPerS: 20,
			Errors:           map[string]int64{"post:timeout": 3},
			ErrorsTotal:      3,
			ErrorsWholeRun:   map[string]int64{"post:timeout": 5, "subscribe:eof": 1},
			ErrorExamples:    map[string]string{"post:timeout": "context deadline exceeded", "subscribe:eof": "EOF"},
			ClientCPUCores:   0.5, MachineBusyPct: 75, OtherCPUCores: 1.25,
		},
		Server:   ServerResult{RSSPeak: 300 << 20, CPUSeconds: 9, CPUCores: 0.45, RedisCPUSeconds: 1, WriteSyscalls: 490_000},
		IdleSubs: &IdleResult{Count: 1000, Connections: 1000, BytesPerSub: 9000, MarginalBytesPerSub: 6144},
		Baselines: Baselines{
			Delivery: []DeliveryBaseline{
				{Name: "redis-fanout", DeliveriesPerS: 49_500, Latency: pct{Count: 1, P50Ms: 0.4, P99Ms: 1.6}, DeliveriesPerCPUSecond: 196_000},
				// Nothing delivered: only its latencies compare.
				{Name: "redis-shared", Latency: pct{Count: 1, P50Ms: 0.3, P99Ms: 2}},
			},
			Post: []ThroughputBaseline{
				{Name: "ours: postMessage", Ours: true, Concurrency: 10, OpsPerS: 2_000, Latency: pct{P50Ms: 5, P99Ms: 12}, ServerCPUPerOpUs: 250},
				{Name: "bare embedded PostMessage", Store: "embedded", Concurrency: 10, OpsPerS: 8_000, Latency: pct{P50Ms: 1.25, P99Ms: 3}, ChatloadCPUPerOpUs: 50},
				{Name: "bare cassandra PostMessage", Store: "cassandra", Concurrency: 10, OpsPerS: 3_000, Latency: pct{P50Ms: 3, P99Ms: 9}, ChatloadCPUPerOpUs: 90},
				{Name: "bare embedded Room+PostMessage", Store: "embedded", Concurrency: 10, Error: "store closed"},
			},
			History: []ThroughputBaseline{
				{Name: "ours: messages(first: 50)", Ours: true, Concurrency: 2, OpsPerS: 1_800, Latency: pct{P50Ms: 1.1, P99Ms: 3}, ServerCPUPerOpUs: 150},
				{Name: "ours: { __typename }", Ours: true, Floor: true, Concurrency: 2, OpsPerS: 9_000, Latency: pct{P50Ms: 0.2, P99Ms: 1}, ServerCPUPerOpUs: 60},
				{Name: "plain net/http + store.Messages", Concurrency: 2, OpsPerS: 2_000, Latency: pct{P50Ms: 1, P99Ms: 2.5}},
			},
		},
		Ceiling: &Ceiling{Steps: []CeilingStep{
			{OfferedPostsPerS: 600, AcceptedPostsPerS: 598, DeliveriesPerS: 59_700, ExpectedDeliveriesPerS: 59_800, P99Ms: 12.5, DeliveriesPerCPUSecond: 150_000, WritesPerDelivery: 0.875, KeptUp: true},
			{OfferedPostsPerS: 720, AcceptedPostsPerS: 650, DeliveriesPerS: 64_000, ExpectedDeliveriesPerS: 65_000, P99Ms: 55, DeliveriesPerCPUSecond: 170_000, WritesPerDelivery: 0.5, Why: "posts fell behind: 650/s accepted"},
		}},
	}
	rep.Ceiling.Sustained = &rep.Ceiling.Steps[0]
	rep.Ceiling.Within50ms = &rep.Ceiling.Steps[0]
	return rep, cfg
}

// TestReportRatios: each ratio is "higher is better, 1 = as fast as bare":
// ours / bare for throughputs, bare / ours for latencies and CPU costs,
// rounded to 3 decimals; a figure of 0 on either side compares nothing,
// nor does a bare store other than the server's.
func TestReportRatios(t *testing.T) {
	rep, cfg := fixedReport()
	rep.finish(cfg)
	if rep.Server.PID != 4242 || rep.Server.DeliveriesPerCPUSecond != 98_000 || rep.Server.WritesPerDelivery != 0.5 { // 980,000 / (9 + 1) s; 490,000 / 980,000
		t.Errorf("server pid %d, %v deliveries per CPU-second, %v writes per delivery; want 4242, 98000, 0.5", rep.Server.PID, rep.Server.DeliveriesPerCPUSecond, rep.Server.WritesPerDelivery)
	}
	type r struct {
		name       string
		ours, bare float64
		value      float64
	}
	want := []r{
		{"deliveries/s vs redis-fanout", 49_000, 49_500, 0.99},
		{"delivery p50 vs redis-fanout", 0.8, 0.4, 0.5},
		{"delivery p99 vs redis-fanout", 4, 1.6, 0.4},
		{"deliveries per CPU-second vs redis-fanout", 98_000, 196_000, 0.5},
		{"delivery p50 vs redis-shared", 0.8, 0.3, 0.375},
		{"delivery p99 vs redis-shared", 4, 2, 0.5},
		{"postMessage/s vs bare embedded PostMessage", 2_000, 8_000, 0.25},
		{"postMessage p50 vs bare embedded PostMessage", 5, 1.25, 0.25},
		{"postMessage CPU per op vs bare embedded PostMessage", 250, 50, 0.2},
		{"messages page/s vs plain net/http + store.Messages", 1_800, 2_000, 0.9},
		{"messages page p50 vs plain net/http + store.Messages", 1.1, 1, 0.909},
	}
	var got []r
	for _, x := range rep.Ratios {
		got = append(got, r{x.Name, x.Ours, x.Bare, x.Value})
	}
	if !slices.Equal(got, want) {
		t.Errorf("ratios\n%v\nwant\n%v", got, want)
	}
	if rt := rep.Ratios[6]; rt.Unit != "ops/s" || rt.How != "closed loop, 10 concurrent: ours / bare" {
		t.Errorf("ratio %+v", rt)
	}

	// A server of unknown store compares with every bare store.
	rep, cfg = fixedReport()
	cfg.serverStore = "unknown"
	rep.finish(cfg)
	var names []string
	for _, x := range rep.Ratios {
		if strings.Contains(x.Name, "cassandra") {
			names = append(names, x.Name)
		}
	}
	if want := []string{"postMessage/s vs bare cassandra PostMessage", "postMessage p50 vs bare cassandra PostMessage", "postMessage CPU per op vs bare cassandra PostMessage"}; !slices.Equal(names, want) {
		t.Errorf("ratios with cassandra, server store unknown: %v, want %v", names, want)
	}

	// No baseline: no ratio, no aim from one.
	rep, cfg = fixedReport()
	rep.Baselines = Baselines{}
	rep.finish(cfg)
	if len(rep.Ratios) != 0 {
		t.Errorf("ratios without baselines: %+v", rep.Ratios)
	}
}

func TestRound3(t *testing.T) {
	for in, want := range map[float64]float64{0.12345: 0.123, 0.9995: 1, 2.0 / 3: 0.667, 1e6 / 3: 333333.333, 0: 0} {
		if got := round3(in); got != want {
			t.Errorf("round3(%v) = %v, want %v", in, got, want)
		}
	}
	for _, v := range []float64{posInf(), -posInf(), posInf() - posInf()} {
		if got := round3(v); got != 0 {
			t.Errorf("round3(%v) = %v, want 0", v, got)
		}
	}
}

func posInf() float64 { var zero float64; return 1 / zero }

// TestReportAims: the aims, each with the run's figure, pass or
// fail against its target, and marked indicative when the run's scenario
// is not the aim's.
func TestReportAims(t *testing.T) {
	rep, cfg := fixedReport()
	rep.finish(cfg)
	type a struct {
		name    string
		value   float64
		pass    bool
		applies bool
	}
	want := []a{
		// No aim from the ceiling's CPU: fan-out's per CPU-second is there,
		// but the sustained step's is 150,000 / 196,000 = 0.765 < 0.85.
		{"deliveries per CPU-s at saturation", 150_000.0 / 196_000, false, true},
		{"sustained posts/s, p99 < 50 ms", 598, false, true},
		{"p99 delivery latency", 4, true, true},
		{"memory per idle subscription", 9000.0 / 1024, false, false},
		{"history reads", 0.9, true, true}, // exactly the target passes
	}
	var got []a
	for _, x := range rep.Aims {
		got = append(got, a{x.Name, x.Value, x.Pass, x.Applies})
	}
	if !slices.Equal(got, want) {
		t.Errorf("aims\n%v\nwant\n%v", got, want)
	}
	if n := rep.Aims[1].Note; n != "ceiling sweep from 600 posts/s, x1.20 per step; 100 subscribers per room" {
		t.Errorf("sweep note %q", n)
	}
	if n := rep.Aims[2].Note; n != "99.5% of expected deliveries arrived; 98000 deliveries per server CPU-second" {
		t.Errorf("latency note %q", n)
	}
	if n := rep.Aims[3].Note; n != "server RSS growth over 1000 idle subscriptions on 1000 connections; marginal 6.0 KiB" {
		t.Errorf("memory note %q", n)
	}

	// The latency aim fails when too few deliveries arrived, however fast,
	// and applies only to its scenario.
	rep, cfg = fixedReport()
	rep.Load.DeliveredFraction = 0.98
	cfg.rate = 200
	rep.finish(cfg)
	if x := rep.Aims[2]; x.Name != "p99 delivery latency" || x.Pass || x.Applies {
		t.Errorf("98%% delivered at 200 posts/s: %+v", x)
	}
	// Fast enough at saturation; the postMessage aim of a Cassandra server.
	rep, cfg = fixedReport()
	rep.Ceiling.Sustained.DeliveriesPerCPUSecond = 170_000
	rep.Ceiling.Within50ms = nil
	rep.IdleSubs = nil
	cfg.serverStore = "cassandra"
	rep.Baselines.Post[0].OpsPerS = 2_400
	rep.finish(cfg)
	got = nil
	for _, x := range rep.Aims {
		got = append(got, a{x.Name, x.Value, x.Pass, x.Applies})
	}
	want = []a{
		{"deliveries per CPU-s at saturation", 170_000.0 / 196_000, true, true},
		{"sustained posts/s, p99 < 50 ms", 0, false, true},
		{"p99 delivery latency", 4, true, true},
		{"postMessage on Cassandra", 0.8, true, true},
		{"history reads", 0.9, true, true},
	}
	if !slices.Equal(got, want) {
		t.Errorf("aims of a Cassandra server\n%v\nwant\n%v", got, want)
	}
}

// TestPrintSummary: the terminal summary of a fixed report shows each of
// its figures, formatted.
func TestPrintSummary(t *testing.T) {
	rep, cfg := fixedReport()
	rep.finish(cfg)
	var b bytes.Buffer
	rep.printSummary(&b)
	want := `
== chatload embedded+redis: 1000 subscribers, 10 rooms, 500 posts/s offered, 20s measured ==
accepted posts/s          495.0
deliveries/s            49000.0   (99.5% of expected 49500)
delivery latency     p50 0.80 ms  p99 4.00 ms  p99.9 9.50 ms  max 31.25 ms
postMessage latency  p50 1.50 ms  p99 6.25 ms
history page latency p50 2.12 ms  p99 7.00 ms  (20.0 reads/s)
errors               3 in the window
  post:timeout                                  3 in the window,      5 in the whole run, e.g. context deadline exceeded
  subscribe:eof                                 0 in the window,      1 in the whole run, e.g. EOF
server               RSS peak 300.0MiB, 0.45 cores, 98000 deliveries per CPU-second, 0.500 write syscalls per delivery (all its writes)
cpu                  chatload 0.50 cores, other processes 1.25 cores, machine 75% busy
idle subscription    8.8 KiB of server RSS each (1000 opened on 1000 connections)
baseline redis-fanout       49500 deliveries/s  p50 0.40 ms  p99 1.60 ms  196000 deliveries per CPU-second
baseline redis-shared           0 deliveries/s  p50 0.30 ms  p99 2.00 ms  0 deliveries per CPU-second
baseline ours: postMessage                    2000 ops/s  p50 5.00 ms  p99 12.00 ms  server CPU 250.0 µs/op
baseline bare embedded PostMessage            8000 ops/s  p50 1.25 ms  p99 3.00 ms
baseline bare cassandra PostMessage           3000 ops/s  p50 3.00 ms  p99 9.00 ms
baseline bare embedded Room+PostMessage  skipped: store closed
baseline ours: messages(first: 50)            1800 ops/s  p50 1.10 ms  p99 3.00 ms  server CPU 150.0 µs/op
baseline ours: { __typename }                 9000 ops/s  p50 0.20 ms  p99 1.00 ms  server CPU 60.0 µs/op
baseline plain net/http + store.Messages      2000 ops/s  p50 1.00 ms  p99 2.50 ms
ratios (1 = as fast as bare):
  deliveries/s vs redis-fanout                                 0.990
  delivery p50 vs redis-fanout                                 0.500
  delivery p99 vs redis-fanout                                 0.400
  deliveries per CPU-second vs redis-fanout                    0.500
  delivery p50 vs redis-shared                                 0.375
  delivery p99 vs redis-shared                                 0.500
  postMessage/s vs bare embedded PostMessage                   0.250
  postMessage p50 vs bare embedded PostMessage                 0.250
  postMessage CPU per op vs bare embedded PostMessage          0.200
  messages page/s vs plain net/http + store.Messages           0.900
  messages page p50 vs plain net/http + store.Messages         0.909
ceiling sweep (posts/s offered -> accepted, deliveries/s, p99):
     600 ->    598     59700/s  p99   12.50 ms  150000 deliveries per CPU-second  0.875 writes per delivery  kept up
     720 ->    650     64000/s  p99   55.00 ms  170000 deliveries per CPU-second  0.500 writes per delivery  posts fell behind: 650/s accepted
aims:
  deliveries per CPU-s at saturation           0.77 x             target >= 0.85x bare go-redis fan-out: FAIL
  sustained posts/s, p99 < 50 ms             598.00 posts/s       target >= 1,200 with 100 subscribers per room: FAIL
  p99 delivery latency                         4.00 ms            target < 10 ms at 500 posts/s, 1,000 subscribers over 10 rooms: pass
  memory per idle subscription                 8.79 KiB           target <= 8 KiB at 100,000: FAIL (scenario differs: indicative)
  history reads                                0.90 x             target >= 0.9x a plain net/http handler: pass
`
	if got := b.String(); got != want {
		t.Errorf("summary:\n%s\nwant:\n%s\ndiff at: %s", got, want, firstDiff(got, want))
	}

	// Without a server pid, idle subscriptions or a sweep, their lines go.
	rep.Server.PID, rep.IdleSubs, rep.Ceiling = 0, nil, nil
	b.Reset()
	rep.printSummary(&b)
	for _, gone := range []string{"server ", "idle subscription", "ceiling sweep"} {
		if strings.Contains(b.String(), "\n"+gone) {
			t.Errorf("summary without it has a %q line", gone)
		}
	}
}

// firstDiff returns the first line where got and want differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return "line " + g[i] + " | want " + w[i]
		}
	}
	return "one is a prefix of the other"
}

// TestReportJSON: report.json holds the figures under their documented
// names, ratios rounded.
func TestReportJSON(t *testing.T) {
	rep, cfg := fixedReport()
	rep.finish(cfg)
	path := filepath.Join(t.TempDir(), "report.json")
	if err := rep.write(path); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Load struct {
			Deliveries float64 `json:"deliveries_per_s"`
			Latency    struct {
				P99 float64 `json:"p99_ms"`
			} `json:"delivery_latency"`
		} `json:"load"`
		Server struct {
			PerCPU float64 `json:"deliveries_per_cpu_second"`
		} `json:"server"`
		Ratios []struct {
			Name  string  `json:"name"`
			Ratio float64 `json:"ratio"`
		} `json:"ratios"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if m.Load.Deliveries != 49_000 || m.Load.Latency.P99 != 4 || m.Server.PerCPU != 98_000 || len(m.Ratios) != 11 || m.Ratios[10].Ratio != 0.909 {
		t.Errorf("report.json: %+v", m)
	}
}

// TestChartHelpers: the chart's axis maxima, tick labels and thousands.
func TestChartHelpers(t *testing.T) {
	for in, want := range map[float64]float64{-1: 1, 0: 1, 0.07: 0.1, 0.2: 0.2, 0.3: 0.5, 1: 1, 1.5: 2, 2: 2, 3: 5, 7: 10, 1234: 2000, 49_000: 50_000, 51_000: 100_000} {
		if got := niceMax(in); got != want {
			t.Errorf("niceMax(%v) = %v, want %v", in, got, want)
		}
	}
	for in, want := range map[float64]string{0: "0", 0.05: "0.05", 0.125: "0.12", 1: "1", 2.5: "2.5", 1000: "1k", 2500: "2.5k", 1e6: "1M", 1.5e6: "1.5M"} {
		if got := fmtTick(in); got != want {
			t.Errorf("fmtTick(%v) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 1199.6: "1,200", 49_000: "49,000", 1_234_567: "1,234,567"} {
		if got := thousands(in); got != want {
			t.Errorf("thousands(%v) = %q, want %q", in, got, want)
		}
	}
	if got := truncate("abcdef", 3); got != "abc..." {
		t.Errorf("truncate = %q", got)
	}
}

// TestChart: the SVG is well-formed XML and its titles and tiles show the
// report's figures.
func TestChart(t *testing.T) {
	rep, cfg := fixedReport()
	rep.Timeline = []sample{
		{T: 1, Phase: "warmup", PostsPerS: 480, DeliveriesPerS: 47_000, P50Ms: 0.9, P99Ms: 5},
		{T: 2, Phase: "measure", PostsPerS: 500, DeliveriesPerS: 50_000, P50Ms: 0.8, P99Ms: 4},
	}
	rep.StartedAt = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	rep.finish(cfg)
	svg := chart(rep)
	d := xml.NewDecoder(bytes.NewReader(svg))
	var text strings.Builder
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("chart.svg is not well-formed: %v", err)
		}
		if c, ok := tok.(xml.CharData); ok {
			text.Write(c)
			text.WriteByte('\n')
		}
	}
	for _, want := range []string{
		"Throughput over time: 49000 deliveries/s, 495 posts/s accepted",
		"Delivery latency over time: p50 0.80 ms, p99 4.00 ms",
		"accepted posts/s × 100 subscribers per room",
		"598.00 posts/s", // the within-50 ms tile
		"4.00 ms",        // the latency tile
		"p99.9 9.50 ms",  // ours, in the percentile bars
		"0.909",          // the last ratio
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("chart.svg does not show %q", want)
		}
	}
}
