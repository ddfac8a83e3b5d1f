package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/httpapi"
	"github.com/killrchat/chatql/live"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/tracing"
)

// Sources are the parts of a server whose own counters are read at each
// scrape. A nil field is left out.
type Sources struct {
	// Websockets is the websocket transport (both subprotocols).
	Websockets *live.Transport
	// SSE counts the server-sent event streams.
	SSE *httpapi.StreamStats
	// Broker is read if it reports Stats (broker.Local and broker.Redis do).
	Broker broker.Broker
	// RateLimits are the server's limits.
	RateLimits *ratelimit.Set
	// Tracer exports the server's traces; nil when it exports none.
	Tracer *tracing.Tracer
}

// The transport label's values: the websocket subprotocols, and SSE.
const transportSSE = "sse"

// sourceCollector turns the Sources' counts into series at each scrape.
type sourceCollector struct {
	src Sources

	connections, connectionsOpen     *prometheus.Desc
	refused, writesSpaced            *prometheus.Desc
	subscriptions, subscriptionsOpen *prometheus.Desc
	delivered, dropped, slowConsumer *prometheus.Desc
	publishes, resyncs               *prometheus.Desc
	topics, subscribers              *prometheus.Desc
	channels, outbox, redisUp        *prometheus.Desc
	rejections, fallbacks            *prometheus.Desc
	renewals, spans                  *prometheus.Desc
}

func newSourceCollector(src Sources) *sourceCollector {
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", name), help, labels, nil)
	}
	return &sourceCollector{
		src:               src,
		connections:       desc("connections_total", "Live connections accepted, by transport: the websocket subprotocol (graphql-transport-ws, graphql-ws) or sse (an event stream).", "transport"),
		connectionsOpen:   desc("connections_open", "Live connections open now, by transport.", "transport"),
		refused:           desc("websocket_upgrades_refused_total", "Websocket upgrades refused with 503 (TOO_MANY_CONNECTIONS): too many websockets had no user (CHAT_MAX_UNAUTHENTICATED_WEBSOCKETS)."),
		writesSpaced:      desc("websocket_writes_spaced", "1 while websockets' writes are spaced (CHAT_WRITE_DELAY: always with a duration; with auto, while the cores are full), else 0."),
		subscriptions:     desc("subscriptions_total", "Subscriptions started, by transport.", "transport"),
		subscriptionsOpen: desc("subscriptions_open", "Subscriptions running now, by transport.", "transport"),
		delivered:         desc("events_delivered_total", "Subscription events written to clients, by transport.", "transport"),
		dropped:           desc("events_dropped_total", "Events the broker dropped, by reason: slow_subscriber (a subscriber's queue was full: it missed the event and was cut off), outbox_full and publish_failed (Redis: the event never reached Redis; its topic was resynced). Subscribers catch up from the store.", "reason"),
		slowConsumer:      desc("slow_consumer_disconnects_total", "Subscribers cut off for not keeping up, by cause: queue_full (more than CHAT_SUBSCRIBER_QUEUE events behind) or write_timeout (a websocket write waited 10 s: the client stopped reading).", "cause"),
		publishes:         desc("broker_publishes_total", "Events published to the broker."),
		resyncs:           desc("broker_resyncs_total", "Resyncs (subscribers told to catch up from the store), by cause: reconnect (this instance's Redis subscription came back after the pub/sub connection dropped), published (this instance told every instance after losing a topic's event), received (a resync published by an instance reached this one), undecodable (an event this instance could not decode).", "cause"),
		topics:            desc("broker_topics", "Topics (rooms, inboxes, presence feeds) with subscribers on this instance."),
		subscribers:       desc("broker_subscribers", "Broker subscriptions on this instance."),
		channels:          desc("broker_redis_channels", "Redis channels this instance is subscribed to (or subscribing)."),
		outbox:            desc("broker_outbox_events", "Published events waiting to be written to Redis."),
		redisUp:           desc("redis_up", "Whether Redis works for a client of this instance: broker_pubsub (the pub/sub connection), broker_publish (the last write of events), ratelimit (the last rate limit call). Absent without Redis.", "client"),
		rejections:        desc("ratelimit_rejections_total", "Actions refused with RATE_LIMITED, by action: post, room_change, direct_message, signup, login, login_address, typing, upload, email_to, email_request.", "action"),
		fallbacks:         desc("ratelimit_redis_fallbacks_total", "Rate-limited actions counted on this instance alone because Redis failed."),
		renewals:          desc("broker_pubsub_renewals_total", "Sharded pub/sub connections replaced because their node stopped serving their slot, failed (Redis Cluster), or went deaf (a probe published to itself did not come back): failovers, reshardings and network faults as this instance met them. Absent without Redis."),
		spans:             desc("trace_spans_total", "Trace spans by outcome: exported (taken by the OTLP endpoint), dropped (the export queue was full), failed (the endpoint refused or did not answer). Absent without CHAT_OTLP_ENDPOINT.", "outcome"),
	}
}

func (c *sourceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		c.connections, c.connectionsOpen, c.refused, c.writesSpaced, c.subscriptions, c.subscriptionsOpen, c.delivered,
		c.dropped, c.slowConsumer, c.publishes, c.resyncs, c.topics, c.subscribers,
		c.channels, c.outbox, c.redisUp, c.rejections, c.fallbacks, c.renewals, c.spans,
	} {
		ch <- d
	}
}

func (c *sourceCollector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	up := func(ok bool) float64 {
		if ok {
			return 1
		}
		return 0
	}

	var writeTimeouts uint64
	if t := c.src.Websockets; t != nil {
		s := t.Stats()
		writeTimeouts = s.WriteTimeouts
		counter(c.refused, s.Refused)
		gauge(c.writesSpaced, up(s.WritesSpaced))
		for _, p := range s.Protocols {
			counter(c.connections, p.Connections, p.Protocol)
			gauge(c.connectionsOpen, float64(p.ConnectionsOpen), p.Protocol)
			counter(c.subscriptions, p.Subscriptions, p.Protocol)
			gauge(c.subscriptionsOpen, float64(p.SubscriptionsOpen), p.Protocol)
			counter(c.delivered, p.Delivered, p.Protocol)
		}
	}
	if s := c.src.SSE; s != nil {
		counter(c.connections, s.Streams.Load(), transportSSE)
		gauge(c.connectionsOpen, float64(s.StreamsOpen.Load()), transportSSE)
		counter(c.subscriptions, s.Subscriptions.Load(), transportSSE)
		gauge(c.subscriptionsOpen, float64(s.SubscriptionsOpen.Load()), transportSSE)
		counter(c.delivered, s.Delivered.Load(), transportSSE)
	}

	var b broker.Stats
	if r, ok := c.src.Broker.(interface{ Stats() broker.Stats }); ok {
		b = r.Stats()
	}
	counter(c.slowConsumer, b.SlowSubscribers, "queue_full")
	counter(c.slowConsumer, writeTimeouts, "write_timeout")
	counter(c.dropped, b.SlowSubscribers, "slow_subscriber")
	counter(c.dropped, b.DroppedOutboxFull, "outbox_full")
	counter(c.dropped, b.DroppedPublishFailed, "publish_failed")
	counter(c.publishes, b.Published)
	counter(c.resyncs, b.ResyncsReconnect, "reconnect")
	counter(c.resyncs, b.ResyncsPublished, "published")
	counter(c.resyncs, b.ResyncsReceived, "received")
	counter(c.resyncs, b.ResyncsUndecodable, "undecodable")
	gauge(c.topics, float64(b.Topics))
	gauge(c.subscribers, float64(b.Subscribers))
	if b.Redis {
		gauge(c.channels, float64(b.Channels))
		gauge(c.outbox, float64(b.Outbox))
		gauge(c.redisUp, up(b.PubSubUp), "broker_pubsub")
		gauge(c.redisUp, up(b.PublishUp), "broker_publish")
		counter(c.renewals, b.Renewals)
	}
	if t := c.src.Tracer; t != nil {
		exported, dropped, failed := t.Stats()
		counter(c.spans, exported, "exported")
		counter(c.spans, dropped, "dropped")
		counter(c.spans, failed, "failed")
	}

	r := c.src.RateLimits.Stats() // a nil Set has counted nothing
	for _, a := range ratelimit.Actions() {
		counter(c.rejections, r.Rejected[a], a.Name())
	}
	counter(c.fallbacks, r.Fallbacks)
	if r.Redis {
		gauge(c.redisUp, up(!r.RedisDown), "ratelimit")
	}
}
