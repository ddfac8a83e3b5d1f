package e2e

import (
	"fmt"
	"testing"
)

// BenchmarkPostDuringRedisOutage posts through the API of a server whose
// broker is Redis, with Redis up and then stopped: a post is acknowledged
// once the store has it, and publishing to the broker does not hold it up,
// so both report about the same time per post. (Subscribers on other
// instances catch up from the log when Redis returns: see
// TestClusterResyncsEveryEventKind.)
func BenchmarkPostDuringRedisOutage(b *testing.B) {
	redisURL(b)
	rs := startPrivateRedis(b)
	cfg := testConfig(b)
	cfg.RedisURL = rs.url()
	ts := startServer(b, cfg)
	alice := ts.user(b, "alice")
	mustDo(b, alice, createRoom, map[string]any{"n": "outage"}, nil)
	post := func(b *testing.B) {
		n := 0
		for b.Loop() {
			n++
			mustDo(b, alice, postMessage, map[string]any{"r": "outage", "c": fmt.Sprint("m", n)}, nil)
		}
	}
	b.Run("redis=up", post)
	rs.stop(b)
	b.Run("redis=down", post)
}
