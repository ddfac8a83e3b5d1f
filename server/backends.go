package server

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/store/cassandra"
)

// openCassandra connects to the configured cluster and applies the schema.
func openCassandra(ctx context.Context, cfg cassandra.Config, log *slog.Logger) (store.Store, error) {
	cfg.Log = log
	db, err := cassandra.Open(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open cassandra store at %v: %w", cfg.Hosts, err)
	}
	log.Info("cassandra store open", "hosts", cfg.Hosts, "keyspace", cfg.Keyspace, "consistency", cfg.Consistency)
	return db, nil
}

// openRedis connects the Redis broker, which carries events between
// instances; local subscribers share one Redis subscription per room.
func openRedis(ctx context.Context, cfg Config, log *slog.Logger) (broker.Broker, error) {
	redis.SetLogger(redisLogger{log})
	opts := []broker.RedisOption{
		broker.WithBufferSize(cfg.SubscriberQueue),
		broker.WithChannelPrefix(cfg.RedisChannelPrefix),
		broker.WithLogger(log),
	}
	if cfg.RedisCluster {
		opts = append(opts, broker.WithCluster())
	}
	opts = append(opts, broker.WithSharded(cfg.RedisPubSub == "sharded"))
	b, err := broker.NewRedis(ctx, cfg.RedisURL, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect the redis broker: %w", err)
	}
	return b, nil
}

// openRateLimits builds the limits of writes: shared by every instance
// through Redis when the server has one (with a client of its own), in
// process otherwise. The client is nil without Redis.
func openRateLimits(cfg Config, log *slog.Logger) (*ratelimit.Set, redis.UniversalClient, error) {
	o := ratelimit.Options{Prefix: cfg.RedisChannelPrefix, Log: log, Now: cfg.RateClock}
	if cfg.RedisURL != "" && cfg.RateLimits != (ratelimit.Limits{}) {
		client, err := broker.NewRedisClient(cfg.RedisURL, cfg.RedisCluster, true)
		if err != nil {
			return nil, nil, fmt.Errorf("rate limits: %w", err)
		}
		o.Redis = client
	}
	return ratelimit.New(cfg.RateLimits, o), o.Redis, nil
}

// redisLogger sends go-redis's own messages (reconnects, dial failures) to
// the server's log instead of bare stderr.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, "redis client: "+fmt.Sprintf(format, v...))
}
