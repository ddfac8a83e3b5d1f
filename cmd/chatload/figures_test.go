package main

import (
	"maps"
	"math"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"
)

// The figures of a window are differences of two snapshots of the
// counters, divided by the window's length: these tests build the
// snapshots by hand, with counters that had already grown before the
// window, so that a figure taken from one snapshot alone, or divided by
// the wrong length, comes out wrong.

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// near reports whether got is want to 1e-9, relatively.
func near(got, want float64) bool {
	return got == want || math.Abs(got-want) <= 1e-9*math.Max(math.Abs(got), math.Abs(want))
}

func samplesOf(n int, from, step time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = from + time.Duration(i)*step
	}
	return out
}

// windowSnaps returns two snapshots of one set of counters, w apart, and
// the delivery latencies recorded between them: 10 µs to 10 ms (posts took
// twice as long, history pages three times); 500 latencies of 1 s or more
// came before.
func windowSnaps(w time.Duration) (s0, s1 *metricsSnap, window []time.Duration) {
	var delivery, post, read hist
	for _, d := range samplesOf(500, time.Second, time.Millisecond) {
		delivery.Record(d)
		post.Record(d)
		read.Record(d)
	}
	s0 = &metricsSnap{
		at:         t0.Add(3 * time.Second),
		deliveries: 100_000, deliveryBytes: 40_000_000, otherEvs: 7,
		posts: 1_000, reads: 60, errors: 5,
		delivery: delivery.Snapshot(), post: post.Snapshot(), read: read.Snapshot(),
		errCounts: map[string]int64{"post:timeout": 2, "messages:http-500": 3},
		serverCPU: 4 * time.Second, clientCPU: 3 * time.Second,
		machineBusy: 1000 * time.Second, machineTotal: 4000 * time.Second,
		redisCPU: 50 * time.Second,
	}
	window = samplesOf(1000, 10*time.Microsecond, 10*time.Microsecond)
	for _, d := range window {
		delivery.Record(d)
		post.Record(2 * d)
		read.Record(3 * d)
	}
	s1 = &metricsSnap{
		at:         s0.at.Add(w),
		deliveries: 100_000 + 980_000, deliveryBytes: 40_000_000 + 392_000_000, otherEvs: 7 + 20,
		posts: 1_000 + 9_900, reads: 60 + 400, errors: 5 + 4,
		delivery: delivery.Snapshot(), post: post.Snapshot(), read: read.Snapshot(),
		errCounts: map[string]int64{"post:timeout": 5, "messages:http-500": 3, "subscribe:eof": 1},
		serverCPU: 4*time.Second + 20*time.Second, clientCPU: 3*time.Second + 10*time.Second,
		machineBusy: 1000*time.Second + 30*time.Second, machineTotal: 4000*time.Second + 40*time.Second,
		redisCPU: 50*time.Second + 2*time.Second,
	}
	return s0, s1, window
}

// checkSummary compares a window's summary with the samples recorded in
// it: the count and mean exactly, the percentiles within the histogram's
// precision (and the rounding to a microsecond), the maximum within its
// bucket, which a window knows rather than the exact value.
func checkSummary(t *testing.T, name string, got pct, samples []time.Duration) {
	t.Helper()
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	var sum time.Duration
	for _, d := range sorted {
		sum += d
	}
	quantile := func(q float64) float64 {
		return ms(sorted[max(int(math.Ceil(q*float64(len(sorted)))), 1)-1])
	}
	within := func(got, want, precision float64) bool { return math.Abs(got-want) <= want*precision+0.001 }
	top := ms(sorted[len(sorted)-1])
	if got.Count != uint64(len(sorted)) || got.MeanMs != ms(sum/time.Duration(len(sorted))) ||
		!within(got.P50Ms, quantile(0.5), 1.0/128) || !within(got.P90Ms, quantile(0.9), 1.0/128) ||
		!within(got.P99Ms, quantile(0.99), 1.0/128) || !within(got.P999Ms, quantile(0.999), 1.0/128) ||
		got.MaxMs < top || !within(got.MaxMs, top, 1.0/64) {
		t.Errorf("%s = %+v; want %d samples, mean %v, p50 %v, p90 %v, p99 %v, p99.9 %v, max %v", name, got,
			len(sorted), ms(sum/time.Duration(len(sorted))), quantile(0.5), quantile(0.9), quantile(0.99), quantile(0.999), top)
	}
}

func scaled(ds []time.Duration, k time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = k * d
	}
	return out
}

// TestLoadResultFill: the measured window of a run of 1000 subscribers in
// 10 rooms at 500 posts/s offered, over 20 s: 9,900 posts accepted and
// 980,000 deliveries of the 990,000 due.
func TestLoadResultFill(t *testing.T) {
	cfg := &config{rate: 500, subscribers: 1000, rooms: 10}
	s0, s1, window := windowSnaps(20 * time.Second)
	r := &runner{cfg: cfg, m: &metrics{errs: newErrorCounts()}, start: t0}
	r.m.errs.Add("post", &statusError{status: 503})
	r.m.subsLive.Store(998)
	r.m.subsReceiving.Store(997)
	r.m.resubscribes.Store(4)
	var l LoadResult
	l.fill(cfg, s0, s1, r)

	for _, f := range []struct {
		name      string
		got, want float64
	}{
		{"window", l.WindowS, 20},
		{"window from", l.WindowFromS, 3},
		{"window to", l.WindowToS, 23},
		{"offered posts/s", l.OfferedPostsPerS, 500},
		{"accepted posts/s", l.AcceptedPostsPerS, 495},
		{"deliveries/s", l.DeliveriesPerS, 49_000},
		{"expected deliveries/s", l.ExpectedDeliveriesPerS, 49_500}, // 495 posts/s to 100 subscribers each
		{"delivered fraction", l.DeliveredFraction, 49_000.0 / 49_500},
		{"bytes per event", l.AvgEventBytes, 400},
		{"history reads/s", l.HistoryReadsPerS, 20},
		{"client cores", l.ClientCPUCores, 0.5},
		{"machine busy %", l.MachineBusyPct, 75},
		// 75 % of the cores, less chatload's 0.5 and the server's 1.0.
		{"other cores", l.OtherCPUCores, max(0.75*float64(runtime.NumCPU())-1.5, 0)},
	} {
		if !near(f.got, f.want) {
			t.Errorf("%s = %v, want %v", f.name, f.got, f.want)
		}
	}
	if l.Posts != 9_900 || l.Deliveries != 980_000 || l.OtherEvents != 20 {
		t.Errorf("posts %d, deliveries %d, other events %d; want 9900, 980000, 20", l.Posts, l.Deliveries, l.OtherEvents)
	}
	// The latencies are the window's alone, not the 1 s ones before it.
	checkSummary(t, "delivery latency", l.DeliveryLatency, window)
	checkSummary(t, "post latency", l.PostLatency, scaled(window, 2))
	checkSummary(t, "history latency", l.HistoryLatency, scaled(window, 3))
	if want := map[string]int64{"post:timeout": 3, "subscribe:eof": 1}; !maps.Equal(l.Errors, want) || l.ErrorsTotal != 4 {
		t.Errorf("errors in the window %v (total %d), want %v (4)", l.Errors, l.ErrorsTotal, want)
	}
	if l.ErrorsWholeRun["post:http-503"] != 1 || l.ErrorExamples["post:http-503"] == "" {
		t.Errorf("errors of the whole run %v, examples %v", l.ErrorsWholeRun, l.ErrorExamples)
	}
	if l.SubscriptionsLive != 998 || l.SubscriptionsReceiving != 997 || l.Resubscribes != 4 {
		t.Errorf("subscriptions live %d, receiving %d, resubscribes %d", l.SubscriptionsLive, l.SubscriptionsReceiving, l.Resubscribes)
	}

	// Nothing accepted: no fraction, no size, no division by zero.
	var idle LoadResult
	s1.posts, s1.deliveries, s1.deliveryBytes = s0.posts, s0.deliveries, s0.deliveryBytes
	s1.machineTotal = s0.machineTotal
	idle.fill(cfg, s0, s1, r)
	if idle.DeliveredFraction != 0 || idle.AvgEventBytes != 0 || idle.MachineBusyPct != 0 || idle.OtherCPUCores != 0 || idle.AcceptedPostsPerS != 0 {
		t.Errorf("idle window: %+v", idle)
	}
}

// TestServerCPU: the server's CPU over the window, in seconds and cores;
// Redis's only when it is the server's broker.
func TestServerCPU(t *testing.T) {
	s0, s1, _ := windowSnaps(20 * time.Second)
	var s ServerResult
	s.fillCPU(s0, s1, true, true)
	if s.CPUSeconds != 20 || s.CPUCores != 1 || s.RedisCPUSeconds != 2 {
		t.Errorf("server %v s, %v cores, Redis %v s; want 20, 1, 2", s.CPUSeconds, s.CPUCores, s.RedisCPUSeconds)
	}
	s = ServerResult{}
	s.fillCPU(s0, s1, false, false)
	if s != (ServerResult{}) {
		t.Errorf("without -server-pid nor Redis: %+v", s)
	}
}

// TestTimelineSample: one second of the timeline (here 1.25 s, a late
// tick), per second.
func TestTimelineSample(t *testing.T) {
	s0, s1, window := windowSnaps(1250 * time.Millisecond)
	s := timelineSample(s0, s1, t0, true)
	d := histOf(window)
	want := sample{
		T:              4.25,
		PostsPerS:      9_900 / 1.25,
		DeliveriesPerS: 980_000 / 1.25,
		ReadsPerS:      400 / 1.25,
		P50Ms:          ms(d.Quantile(0.5)),
		P99Ms:          ms(d.Quantile(0.99)),
		Errors:         4,
		ServerCores:    20 / 1.25,
		ClientCores:    10 / 1.25,
		MachineBusy:    75,
	}
	if s != want {
		t.Errorf("sample\n%+v, want\n%+v", s, want)
	}
	if s.P99Ms < 9.8 || s.P99Ms > 10.1 { // the window's p99 is 9.9 ms
		t.Errorf("p99 %v ms, want the window's 9.9", s.P99Ms)
	}
	if s := timelineSample(s0, s1, t0, false); s.ServerCores != 0 {
		t.Errorf("server cores %v without -server-pid", s.ServerCores)
	}
}

// TestCeilingStepOf: a step of the sweep at 500 posts/s over 3 s, each
// post due to 100 subscribers; the server's CPU counts Redis's when it is
// the server's broker.
func TestCeilingStepOf(t *testing.T) {
	s0, s1, window := windowSnaps(3 * time.Second)
	s1.posts = s0.posts + 1_500
	s1.deliveries = s0.deliveries + 148_500
	st := ceilingStepOf(500, 100, s0, s1, true, true)
	d := histOf(window)
	want := CeilingStep{
		OfferedPostsPerS: 500, AcceptedPostsPerS: 500,
		DeliveriesPerS: 49_500, ExpectedDeliveriesPerS: 50_000,
		P50Ms: ms(d.Quantile(0.5)), P99Ms: ms(d.Quantile(0.99)),
		ServerCores:            22.0 / 3, // 20 s of the server, 2 of Redis
		DeliveriesPerCPUSecond: 148_500.0 / 22,
		ClientCores:            10.0 / 3,
		KeptUp:                 true, // 99 % of the deliveries: within the slack
	}
	if !near(st.ServerCores, want.ServerCores) || !near(st.DeliveriesPerCPUSecond, want.DeliveriesPerCPUSecond) || !near(st.ClientCores, want.ClientCores) {
		t.Errorf("step CPU: %+v, want %+v", st, want)
	}
	st.ServerCores, st.DeliveriesPerCPUSecond, st.ClientCores = want.ServerCores, want.DeliveriesPerCPUSecond, want.ClientCores
	if st != want {
		t.Errorf("step\n%+v, want\n%+v", st, want)
	}

	// Redis there (-redis-url, for the baselines) but not the broker.
	st = ceilingStepOf(500, 100, s0, s1, true, false)
	if !near(st.ServerCores, 20.0/3) || !near(st.DeliveriesPerCPUSecond, 148_500.0/20) {
		t.Errorf("step of a server without Redis: %v cores, %v deliveries per CPU-second; want %v, %v", st.ServerCores, st.DeliveriesPerCPUSecond, 20.0/3, 148_500.0/20)
	}

	s1.deliveries = s0.deliveries + 140_000 // 93 % of those due
	st = ceilingStepOf(500, 100, s0, s1, false, false)
	if st.KeptUp || st.Why != "deliveries fell behind: 46667/s of 50000/s" || st.ServerCores != 0 || st.DeliveriesPerCPUSecond != 0 {
		t.Errorf("step behind, without -server-pid: %+v", st)
	}
}

// TestCeilingAdd: the sweep goes on while the server keeps up; Sustained
// is the last step it kept up with, Within50ms the last one under 50 ms.
func TestCeilingAdd(t *testing.T) {
	step := func(rate, p99 float64) CeilingStep {
		st := CeilingStep{OfferedPostsPerS: rate, AcceptedPostsPerS: rate, DeliveriesPerS: 100 * rate, ExpectedDeliveriesPerS: 100 * rate, P99Ms: p99}
		st.judge()
		return st
	}
	var c Ceiling
	for _, st := range []CeilingStep{step(600, 10), step(720, 30), step(864, 70)} {
		if !c.add(st) {
			t.Fatalf("the sweep stopped at %+v", st)
		}
	}
	behind := CeilingStep{OfferedPostsPerS: 1037, AcceptedPostsPerS: 900, DeliveriesPerS: 90_000, ExpectedDeliveriesPerS: 90_000, P99Ms: 40}
	behind.judge()
	if c.add(behind) {
		t.Fatal("the sweep goes on after a step the server fell behind on")
	}
	if len(c.Steps) != 4 || c.Sustained == nil || c.Sustained.OfferedPostsPerS != 864 || c.Within50ms == nil || c.Within50ms.OfferedPostsPerS != 720 {
		t.Fatalf("steps %d, sustained %+v, within 50 ms %+v; want 4, 864, 720", len(c.Steps), c.Sustained, c.Within50ms)
	}

	// A step over 50 ms ends the run of steps under 50 ms: a faster one
	// after it does not count.
	c = Ceiling{}
	for _, st := range []CeilingStep{step(600, 10), step(720, 60), step(864, 40)} {
		c.add(st)
	}
	if c.Within50ms == nil || c.Within50ms.OfferedPostsPerS != 600 || c.Sustained.OfferedPostsPerS != 864 {
		t.Errorf("p99 10, 60, 40 ms: within 50 ms %+v, sustained %+v; want 600, 864", c.Within50ms, c.Sustained)
	}
	// A first step over 50 ms: none within 50 ms, even if a later one is.
	c = Ceiling{}
	c.add(step(600, 60))
	c.add(step(720, 20))
	if c.Within50ms != nil || c.Sustained.OfferedPostsPerS != 720 {
		t.Errorf("within 50 ms %+v, sustained %+v; want none, 720", c.Within50ms, c.Sustained)
	}
	// A first step behind: nothing sustained.
	c = Ceiling{}
	if c.add(behind) || c.Sustained != nil || c.Within50ms != nil {
		t.Errorf("first step behind: sustained %+v, within 50 ms %+v", c.Sustained, c.Within50ms)
	}
}

// TestIdlePerSubscription: memory per idle subscription is the growth of
// the server's RSS over all of them; the marginal figure the growth over
// the second half, divided by the subscriptions that half opened.
func TestIdlePerSubscription(t *testing.T) {
	const mib = 1 << 20
	res := IdleResult{Count: 1000, Connections: 1000, RSSBefore: 100 * mib, RSSHalf: 104 * mib, RSSAfter: 108 * mib}
	res.perSubscription(1)
	if !near(res.BytesPerSub, 8*mib/1000.0) || !near(res.MarginalBytesPerSub, 4*mib/500.0) {
		t.Errorf("one per connection: %v and %v bytes each, want %v and %v", res.BytesPerSub, res.MarginalBytesPerSub, 8*mib/1000.0, 4*mib/500.0)
	}
	// 1000 over 3 per connection: 334 connections, the first 167 holding
	// 501, the second half 499 (the last connection holds one).
	res = IdleResult{Count: 1000, Connections: 334, RSSBefore: 100 * mib, RSSHalf: 104 * mib, RSSAfter: 108 * mib}
	res.perSubscription(3)
	if !near(res.MarginalBytesPerSub, 4*mib/499.0) {
		t.Errorf("three per connection: marginal %v bytes, want %v", res.MarginalBytesPerSub, 4*mib/499.0)
	}
	// One subscription: the first half opens none; the second half is all.
	res = IdleResult{Count: 1, Connections: 1, RSSBefore: mib, RSSHalf: mib, RSSAfter: mib + 8192}
	res.perSubscription(1)
	if res.BytesPerSub != 8192 || res.MarginalBytesPerSub != 8192 {
		t.Errorf("one subscription: %v, marginal %v", res.BytesPerSub, res.MarginalBytesPerSub)
	}
}

// TestDeliveryBaselineMeasured: the bare Redis loops' rates over 5 s, 1000
// receivers on 10 channels; CPU per delivery counts Redis's, and for the
// shared variant this process's fan-out.
func TestDeliveryBaselineMeasured(t *testing.T) {
	lat := histOf(samplesOf(100, time.Millisecond, time.Millisecond))
	fanout := DeliveryBaseline{Name: "redis-fanout", Subscribers: 1000, Channels: 10}
	fanout.measured(5, 2_500, 247_500, 3, lat, 2*time.Second, 7*time.Second)
	want := DeliveryBaseline{Name: "redis-fanout", Subscribers: 1000, Channels: 10, WindowS: 5, Published: 2_500, Deliveries: 247_500,
		DeliveriesPerS: 49_500, ExpectedDeliveriesPerS: 50_000, Latency: lat.Summary(), RedisCPUSeconds: 2, DeliveriesPerCPUSecond: 123_750, Errors: 3}
	if fanout != want {
		t.Errorf("fan-out\n%+v, want\n%+v", fanout, want)
	}
	shared := DeliveryBaseline{Name: "redis-shared", Subscribers: 1000, Channels: 10}
	shared.measured(5, 2_500, 247_500, 0, lat, 2*time.Second, 3*time.Second)
	if shared.FanoutCPUSeconds != 3 || shared.DeliveriesPerCPUSecond != 49_500 {
		t.Errorf("shared: fan-out %v s, %v deliveries per CPU-second; want 3, 49500", shared.FanoutCPUSeconds, shared.DeliveriesPerCPUSecond)
	}
	none := DeliveryBaseline{Name: "redis-fanout", Subscribers: 1000, Channels: 10}
	none.measured(5, 0, 0, 0, histOf(nil), 0, 0)
	if none.DeliveriesPerCPUSecond != 0 || none.DeliveriesPerS != 0 || none.ExpectedDeliveriesPerS != 0 {
		t.Errorf("no traffic: %+v", none)
	}
}

// TestThroughputBaselineMeasured: a closed loop's operations per second
// and CPU time per operation, of the server and of chatload.
func TestThroughputBaselineMeasured(t *testing.T) {
	lat := histOf(samplesOf(100, time.Millisecond, 10*time.Microsecond))
	var b ThroughputBaseline
	b.measured(5, 2_500, 7, lat, 1250*time.Millisecond, 100*time.Millisecond)
	if b.WindowS != 5 || b.Ops != 2_500 || b.OpsPerS != 500 || b.Errors != 7 || b.Latency != lat.Summary() ||
		b.ServerCPUPerOpUs != 500 || b.ChatloadCPUPerOpUs != 40 {
		t.Errorf("closed loop %+v; want 500 ops/s, 500 µs and 40 µs per op", b)
	}
	b = ThroughputBaseline{}
	b.measured(5, 0, 9, histOf(nil), time.Second, time.Second)
	if b.OpsPerS != 0 || b.ServerCPUPerOpUs != 0 || b.ChatloadCPUPerOpUs != 0 || b.Errors != 9 {
		t.Errorf("no operation: %+v", b)
	}
	for _, tc := range []struct {
		cpu  time.Duration
		ops  int64
		want float64
	}{
		{time.Second, 1000, 1000}, {1999 * time.Nanosecond, 1, 1}, {10 * time.Millisecond, 3, 10000.0 / 3}, {time.Second, 0, 0}, {time.Second, -1, 0},
	} {
		if got := cpuPerOpUs(tc.cpu, tc.ops); !near(got, tc.want) {
			t.Errorf("cpuPerOpUs(%v, %d) = %v, want %v", tc.cpu, tc.ops, got, tc.want)
		}
	}
}

// TestParseProc: the CPU and memory figures of /proc and of Redis's INFO.
func TestParseProc(t *testing.T) {
	// Fields 14 and 15 (utime, stime) count after a command name with
	// spaces and parentheses: 250 + 50 ticks of 10 ms.
	stat := "4242 (my (odd) server) S 1 4242 4242 0 -1 4194560 2000 0 0 0 250 50 0 0 20 0 12 0 100 1000000 500\n"
	if d, ok := parseProcStat([]byte(stat)); !ok || d != 3*time.Second {
		t.Errorf("parseProcStat = %v, %v; want 3s", d, ok)
	}
	for _, bad := range []string{"", "4242 no parenthesis 1 2 3", "4242 (short) S 1 2 3"} {
		if _, ok := parseProcStat([]byte(bad)); ok {
			t.Errorf("parseProcStat(%q) accepted", bad)
		}
	}

	status := "Name:\tchatql\nVmPeak:\t  900000 kB\nVmHWM:\t   524288 kB\nVmRSS:\t   262144 kB\nThreads:\t12\n"
	if rss, hwm := parseStatusRSS(status); rss != 256<<20 || hwm != 512<<20 {
		t.Errorf("parseStatusRSS = %d, %d; want 256 MiB, 512 MiB", rss, hwm)
	}
	if rss, hwm := parseStatusRSS("Name:\tzombie\n"); rss != 0 || hwm != 0 {
		t.Errorf("parseStatusRSS without VmRSS = %d, %d", rss, hwm)
	}

	// user nice system idle iowait irq softirq steal guest guest_nice:
	// busy is all but idle and iowait; guest time is already in user.
	machine := "cpu  100 20 30 400 50 6 7 8 900 900\ncpu0 50 10 15 200 25 3 3 4 0 0\n"
	if busy, total := parseMachineStat(machine); busy != 1710*time.Millisecond || total != 6210*time.Millisecond {
		t.Errorf("parseMachineStat = %v busy of %v; want 1.71s of 6.21s", busy, total)
	}
	if busy, total := parseMachineStat("intr 1 2 3\n"); busy != 0 || total != 0 {
		t.Errorf("parseMachineStat without a cpu line = %v, %v", busy, total)
	}

	info := "# CPU\r\nused_cpu_sys:1.500000\r\nused_cpu_user:2.250000\r\nused_cpu_sys_children:9.000000\r\nused_cpu_user_children:9.000000\r\n"
	if d := parseRedisCPU(info); d != 3750*time.Millisecond {
		t.Errorf("parseRedisCPU = %v, want 3.75s (not the children's)", d)
	}
}

// TestProcSelf reads this process's own /proc files: the CPU time in
// /proc/self/stat, in ticks of 1/clockTicks s, agrees with getrusage, so
// the tick is right.
func TestProcSelf(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	deadline := time.Now().Add(300 * time.Millisecond)
	for x := 0.0; time.Now().Before(deadline); x += math.Sqrt(x + 1) { // burn CPU
	}
	before := selfCPU()
	proc, err := procCPU(os.Getpid())
	after := selfCPU()
	if err != nil {
		t.Fatal(err)
	}
	// /proc counts whole ticks, and samples them: allow a few.
	if proc < before-50*time.Millisecond || proc > after+50*time.Millisecond {
		t.Errorf("CPU time from /proc %v, from getrusage %v to %v", proc, before, after)
	}
	// Every write(2) counts in syscw.
	w0, err := procWrites(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(t.TempDir() + "/writes")
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, err := f.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	_ = f.Close()
	if w1, err := procWrites(os.Getpid()); err != nil || w1-w0 < 10 {
		t.Errorf("procWrites went from %d to %d (%v) over 10 writes", w0, w1, err)
	}
	if rss, hwm, err := procRSS(os.Getpid()); err != nil || rss <= 0 || hwm < rss {
		t.Errorf("procRSS = %d, %d, %v", rss, hwm, err)
	}
	if busy, total := machineCPU(); busy <= 0 || total < busy {
		t.Errorf("machineCPU = %v busy of %v", busy, total)
	}
}

// TestParamsOf: the report's parameters; distinct subscriber users are the
// subscribers unless fewer are asked.
func TestParamsOf(t *testing.T) {
	cfg := &config{urls: []string{"http://a/query", "http://b/query"}, rooms: 10, subscribers: 1000, posters: 10, rate: 500,
		duration: 20 * time.Second, warmup: 3 * time.Second, baselineDuration: 5 * time.Second}
	for _, tc := range []struct{ users, want int }{{0, 1000}, {50, 50}, {1000, 1000}, {5000, 1000}, {-1, 1000}} {
		cfg.users = tc.users
		p := paramsOf(cfg)
		if p.Users != tc.want || p.URL != "http://a/query,http://b/query" || p.DurationS != 20 || p.WarmupS != 3 || p.BaselineDurationS != 5 {
			t.Errorf("users %d: %+v", tc.users, p)
		}
	}
}
