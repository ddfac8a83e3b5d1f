package live

import "sync/atomic"

// Stats are what a Transport has served since it started, for monitoring
// (the server's /metrics reads them at each scrape). Counting costs an
// atomic add per connection, per subscription, and per batch of events
// written: nothing on the idle path, next to nothing on the delivering one.
type Stats struct {
	// Protocols holds the counts of each subprotocol.
	Protocols []ProtocolStats
	// WriteTimeouts counts the connections closed because one write waited
	// longer than the write timeout: the client stopped reading.
	WriteTimeouts uint64
	// Refused counts the upgrades refused with 503 (TOO_MANY_CONNECTIONS)
	// because too many connections had no user.
	Refused uint64
	// WritesSpaced says whether the write delay applies now: always with
	// a fixed one, while the cores are full with WriteDelayWhenBusy.
	WritesSpaced bool
}

// ProtocolStats are the counts of the connections of one subprotocol.
type ProtocolStats struct {
	// Protocol is the subprotocol's name (graphql-transport-ws, graphql-ws).
	Protocol string
	// Connections counts the websockets accepted; ConnectionsOpen those
	// open now.
	Connections     uint64
	ConnectionsOpen int64
	// Subscriptions counts the subscriptions started (roomEvents and the
	// others); SubscriptionsOpen those running now.
	Subscriptions     uint64
	SubscriptionsOpen int64
	// Delivered counts the subscription events written to clients.
	Delivered uint64
}

// protocolCounts are the live counters of one subprotocol.
type protocolCounts struct {
	connections       atomic.Uint64
	connectionsOpen   atomic.Int64
	subscriptions     atomic.Uint64
	subscriptionsOpen atomic.Int64
	delivered         atomic.Uint64
}

func (c *protocolCounts) subscribed() {
	c.subscriptions.Add(1)
	c.subscriptionsOpen.Add(1)
}

func (c *protocolCounts) unsubscribed() { c.subscriptionsOpen.Add(-1) }

// Stats returns the transport's counts now.
func (t *Transport) Stats() Stats {
	s := Stats{Protocols: make([]ProtocolStats, len(protocols)), WriteTimeouts: t.writeTimeouts.Load(), Refused: t.refused.Load(),
		WritesSpaced: t.delayed.holding()}
	for i, p := range protocols {
		c := &t.counts[i]
		s.Protocols[i] = ProtocolStats{
			Protocol:          p.name,
			Connections:       c.connections.Load(),
			ConnectionsOpen:   c.connectionsOpen.Load(),
			Subscriptions:     c.subscriptions.Load(),
			SubscriptionsOpen: c.subscriptionsOpen.Load(),
			Delivered:         c.delivered.Load(),
		}
	}
	return s
}
