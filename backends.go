package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/store"
)

// openCassandra connects to the configured Cassandra cluster.
func openCassandra(ctx context.Context, cfg CassandraConfig, log *slog.Logger) (store.Store, error) {
	return nil, errors.New("the cassandra store is not wired yet")
}

// openRedis connects the Redis broker.
func openRedis(ctx context.Context, cfg Config) (broker.Broker, error) {
	return nil, errors.New("the redis broker is not wired yet")
}
