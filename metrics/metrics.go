// Package metrics is the server's Prometheus instrumentation: one registry
// per server (so several servers in one process do not collide), the Go
// runtime and process collectors, and the chat's own series.
//
// Three kinds of source feed it:
//   - the GraphQL extension (GraphQL) and the store decorator (Store),
//     which observe Prometheus histograms and counters directly, resolved
//     once at construction;
//   - counters the other packages keep themselves as plain atomics (live,
//     httpapi's SSE, broker, ratelimit, stream), read at each scrape by a
//     collector (see Sources), so those packages need no Prometheus
//     dependency and pay one atomic add where they count.
//
// No label takes a value chosen by a client or a user: operations are
// labeled by their root field (bounded by the schema), store calls by
// method, transports, causes, codes and actions by fixed lists. Room names,
// logins and operation names never become labels.
package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Namespace prefixes every chat series.
const Namespace = "chatql"

// Metrics is one server's instrumentation.
type Metrics struct {
	// Registry holds every series the server exposes.
	Registry *prometheus.Registry
	// GraphQL is the gqlgen extension that counts and times operations and
	// counts errors.
	GraphQL *GraphQL
	store   *storeMetrics
}

// New returns a server's metrics: a fresh registry with the Go runtime and
// process collectors and the chat's operation and store series. Register
// the other sources with Watch.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	m := &Metrics{Registry: reg, GraphQL: newGraphQL(reg), store: newStoreMetrics(reg)}
	return m
}

// Watch registers the sources read at each scrape.
func (m *Metrics) Watch(s Sources) {
	m.Registry.MustRegister(newSourceCollector(s))
}

// Handler serves the registry in the Prometheus text format (or
// OpenMetrics, when the scraper asks for it).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{
		Registry:          m.Registry, // counts its own errors in promhttp_metric_handler_errors_total
		EnableOpenMetrics: true,
	})
}
