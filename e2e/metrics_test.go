package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/server"
)

// dashboardFile is the Grafana dashboard built on the server's series.
const dashboardFile = "ops/grafana-dashboard.json"

// /metrics is scraped while a message is posted and delivered over a real
// websocket subscription: the series of connections, subscriptions,
// operations, store calls, the broker, deliveries, errors and rate limits
// move as they should, and no label carries a room name or a login.
func TestMetrics(t *testing.T) {
	forEachStore(t, testMetrics)
	t.Run("redis", func(t *testing.T) {
		cfg := testConfig(t)
		cfg.RedisURL = redisURL(t)
		cfg.RedisChannelPrefix = "test-" + randomHex(4) + ":"
		testMetrics(t, cfg)
	})
}

func testMetrics(t *testing.T, cfg server.Config) {
	// One post a day each: the second is refused, for the rejection series.
	cfg.RateLimits[ratelimit.Post] = ratelimit.Limit{Rate: 1, Period: 24 * time.Hour, Burst: 1}
	ts := startServer(t, cfg)
	const room, login = "metrics-secret-room", "metricsuser"
	alice := ts.user(t, login)
	mustDo(t, alice, createRoom, map[string]any{"n": room}, nil)

	const ws = chatclient.GraphQLTransportWS
	before := scrape(t, ts)
	sub, err := alice.Subscribe(testContext(t), ws, roomEvents, map[string]any{"r": room})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	// The subscription starts after connection_ack: wait for it to count.
	live := waitScrape(t, ts, func(m metricSet) bool {
		return m.value("chatql_subscriptions_open", "transport", ws) == 1
	})
	if got := live.value("chatql_connections_open", "transport", ws); got != 1 {
		t.Errorf("connections_open{%s} = %v, want 1", ws, got)
	}
	// CHAT_WRITE_DELAY is auto: no spacing while the cores have room.
	if _, ok := live["chatql_websocket_writes_spaced"]; !ok || live.value("chatql_websocket_writes_spaced") != 0 {
		t.Errorf("websocket_writes_spaced = %v (exposed: %v), want 0", live.value("chatql_websocket_writes_spaced"), ok)
	}
	// And the same room over server-sent events.
	sse := ts.openSSE(t, alice.Token, fmt.Sprintf(`subscription { roomEvents(room: \"%s\") { kind message { id } } }`, room))
	sseEvents := bufio.NewScanner(sse.Body)
	if got := scrape(t, ts).value("chatql_subscriptions_open", "transport", "sse"); got != 1 {
		t.Errorf("subscriptions_open{sse} = %v, want 1", got)
	}

	var posted struct{ PostMessage struct{ ID string } }
	mustDo(t, alice, postMessage, map[string]any{"r": room, "c": "counted"}, &posted)
	ev, err := sub.Next(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		RoomEvents struct {
			Kind    string
			Message struct{ ID string }
		}
	}
	if err := json.Unmarshal(ev.Data, &got); err != nil || got.RoomEvents.Message.ID != posted.PostMessage.ID {
		t.Fatalf("event %s (%v), want the message %s", ev.Data, err, posted.PostMessage.ID)
	}
	for sseEvents.Scan() && !strings.Contains(sseEvents.Text(), posted.PostMessage.ID) {
	}
	if err := sseEvents.Err(); err != nil {
		t.Fatalf("SSE stream: %v", err)
	}
	wantCode(t, alice, "RATE_LIMITED", postMessage, map[string]any{"r": room, "c": "over the limit"})
	wantCode(t, alice, "GRAPHQL_PARSE_FAILED", `{ me `, nil)
	// An error is labeled by its root field's name, through aliases and
	// fragments: never by what the client wrote.
	wantCode(t, alice, "NOT_FOUND", `mutation Chosen { anything: joinRoom(room: "no-such-room") { name } }`, nil)
	wantCode(t, alice, "NOT_FOUND", `mutation { ...J } fragment J on Mutation { j: joinRoom(room: "no-such-room") { name } }`, nil)

	after := waitScrape(t, ts, func(m metricSet) bool {
		return m.value("chatql_events_delivered_total", "transport", ws) > before.value("chatql_events_delivered_total", "transport", ws)
	})
	moved := func(name string, want float64, labels ...string) {
		t.Helper()
		if d := after.value(name, labels...) - before.value(name, labels...); d != want {
			t.Errorf("%s%v moved by %v, want %v", name, labels, d, want)
		}
	}
	grew := func(name string, labels ...string) {
		t.Helper()
		if d := after.value(name, labels...) - before.value(name, labels...); d <= 0 {
			t.Errorf("%s%v moved by %v, want more", name, labels, d)
		}
	}
	moved("chatql_connections_total", 1, "transport", ws)
	moved("chatql_subscriptions_total", 1, "transport", ws)
	grew("chatql_events_delivered_total", "transport", ws)
	moved("chatql_connections_total", 1, "transport", "sse")
	moved("chatql_subscriptions_total", 1, "transport", "sse")
	grew("chatql_events_delivered_total", "transport", "sse")
	moved("chatql_graphql_operations_total", 2, "type", "subscription", "operation", "roomEvents")
	moved("chatql_graphql_operation_duration_seconds", 2, "type", "subscription", "operation", "roomEvents")
	moved("chatql_graphql_operations_total", 2, "type", "mutation", "operation", "postMessage")
	moved("chatql_graphql_operation_duration_seconds", 2, "type", "mutation", "operation", "postMessage")
	moved("chatql_graphql_errors_total", 1, "operation", "postMessage", "code", "RATE_LIMITED")
	moved("chatql_graphql_errors_total", 1, "operation", "none", "code", "GRAPHQL_PARSE_FAILED")
	moved("chatql_graphql_errors_total", 2, "operation", "joinRoom", "code", "NOT_FOUND")
	moved("chatql_graphql_operations_total", 2, "type", "mutation", "operation", "joinRoom")
	moved("chatql_ratelimit_rejections_total", 1, "action", "post")
	moved("chatql_store_call_duration_seconds", 1, "method", "PostMessage")
	grew("chatql_store_call_duration_seconds", "method", "Membership")
	grew("chatql_broker_publishes_total")
	for _, name := range []string{"go_goroutines", "go_memstats_heap_inuse_bytes", "process_resident_memory_bytes", "process_cpu_seconds_total"} {
		if _, ok := after[name]; !ok {
			t.Errorf("%s is not exposed", name)
		}
	}
	if cfg.RedisURL != "" && after.value("chatql_redis_up", "client", "broker_pubsub") != 1 {
		t.Errorf("redis_up{broker_pubsub} = %v, want 1", after.value("chatql_redis_up", "client", "broker_pubsub"))
	}

	// Bounded labels: nothing a user named is a label value.
	for name, f := range after {
		for _, m := range f.Metric {
			for _, l := range m.Label {
				if v := l.GetValue(); strings.Contains(v, room) || strings.Contains(v, login) || v == "Chosen" || v == "anything" || v == "j" || strings.Contains(v, "no-such-room") {
					t.Errorf("%s has the label %s=%q: a user's name", name, l.GetName(), v)
				}
			}
		}
	}

	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	sse.Body.Close()
	waitScrape(t, ts, func(m metricSet) bool {
		return m.value("chatql_connections_open", "transport", ws) == 0 && m.value("chatql_subscriptions_open", "transport", ws) == 0 &&
			m.value("chatql_connections_open", "transport", "sse") == 0 && m.value("chatql_subscriptions_open", "transport", "sse") == 0
	})
}

// CHAT_METRICS_ADDR serves /metrics on a listener of its own, and the API's
// listener no longer does.
func TestMetricsOnTheirOwnAddress(t *testing.T) {
	cfg := testConfig(t)
	cfg.MetricsAddr = "127.0.0.1:0"
	ts := startServer(t, cfg)
	resp, err := http.Get(strings.TrimSuffix(ts.URL, "/query") + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(body), "chatql_connections_open") {
		t.Fatal("the API's listener serves /metrics though CHAT_METRICS_ADDR is set")
	}
	stop, addr, err := ts.ServeMetrics(cfg.MetricsAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	m := scrapeURL(t, "http://"+addr+"/metrics")
	if _, ok := m["chatql_connections_open"]; !ok {
		t.Fatal("the metrics listener does not serve chatql_connections_open")
	}
}

// Every series the dashboard's queries name is one the server exposes, so
// that the dashboard cannot fall behind a renamed metric.
func TestMetricsDashboardUsesExposedSeries(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, dashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	var dash any
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var exprs []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && (k == "expr" || k == "query") {
					exprs = append(exprs, s)
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(dash)
	if len(exprs) < 10 {
		t.Fatalf("%s has %d queries; the walk found too few", dashboardFile, len(exprs))
	}

	ts := startServer(t, testConfig(t))
	exposed := describedNames(ts.Metrics().Registry)
	series := regexp.MustCompile(`\b((?:chatql|go|process)_[a-zA-Z0-9_]+)`)
	used := map[string]bool{}
	for _, e := range exprs {
		for _, m := range series.FindAllStringSubmatch(e, -1) {
			used[m[1]] = true
		}
	}
	var unknown []string
	for name := range used {
		base := name
		for _, suffix := range []string{"_bucket", "_count", "_sum"} {
			if b, ok := strings.CutSuffix(name, suffix); ok && exposed[b] {
				base = b
			}
		}
		if !exposed[base] {
			unknown = append(unknown, name)
		}
	}
	slices.Sort(unknown)
	if len(unknown) > 0 {
		t.Fatalf("%s queries series the server does not expose: %v", dashboardFile, unknown)
	}
	// And the other way: every chat series has a panel.
	var unused []string
	for name := range exposed {
		if strings.HasPrefix(name, "chatql_") && !used[name] && !used[name+"_bucket"] && !used[name+"_count"] {
			unused = append(unused, name)
		}
	}
	slices.Sort(unused)
	if len(unused) > 0 {
		t.Errorf("%s has no panel for %v", dashboardFile, unused)
	}
}

// describedNames are the names of every series the registry can expose,
// whether or not it has a value now (a series labeled by Redis clients
// exists only with Redis).
func describedNames(reg *prometheus.Registry) map[string]bool {
	ch := make(chan *prometheus.Desc)
	go func() {
		reg.Describe(ch)
		close(ch)
	}()
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	names := map[string]bool{}
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			names[m[1]] = true
		}
	}
	return names
}

// metricSet is a scrape, by family name.
type metricSet map[string]*dto.MetricFamily

// value sums the series of name whose labels include the pairs given; a
// histogram counts its observations.
func (m metricSet) value(name string, pairs ...string) float64 {
	f := m[name]
	if f == nil {
		return 0
	}
	var sum float64
next:
	for _, s := range f.Metric {
		for i := 0; i+1 < len(pairs); i += 2 {
			if !slices.ContainsFunc(s.Label, func(l *dto.LabelPair) bool { return l.GetName() == pairs[i] && l.GetValue() == pairs[i+1] }) {
				continue next
			}
		}
		switch {
		case s.Counter != nil:
			sum += s.Counter.GetValue()
		case s.Gauge != nil:
			sum += s.Gauge.GetValue()
		case s.Histogram != nil:
			sum += float64(s.Histogram.GetSampleCount())
		case s.Untyped != nil:
			sum += s.Untyped.GetValue()
		}
	}
	return sum
}

func scrape(t testing.TB, ts *testServer) metricSet {
	t.Helper()
	return scrapeURL(t, strings.TrimSuffix(ts.URL, "/query")+"/metrics")
}

func scrapeURL(t testing.TB, url string) metricSet {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return families
}

// waitScrape scrapes until ok holds (10 s at most).
func waitScrape(t testing.TB, ts *testServer, ok func(metricSet) bool) metricSet {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		m := scrape(t, ts)
		if ok(m) {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatal(fmt.Errorf("the metrics never got there"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
