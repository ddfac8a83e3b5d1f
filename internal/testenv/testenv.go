// Package testenv decides what a test does when a service it needs (a
// Cassandra node, a Redis server) is not configured: skip on a developer's
// machine, fail in CI, where a missing service must never pass as a skip.
package testenv

import (
	"os"
	"testing"
)

// RequireVar is the variable that turns missing services into failures;
// `make test-integration` and .ci/run set it to 1.
const RequireVar = "CHAT_REQUIRE_BACKENDS"

// Missing skips t because of what is missing, or fails it when RequireVar
// is 1. tests names what is not run.
func Missing(t testing.TB, missing, tests string) {
	t.Helper()
	if os.Getenv(RequireVar) == "1" {
		t.Fatalf("%s, but %s=1 requires %s to run", missing, RequireVar, tests)
	}
	t.Skipf("%s: skipping %s (make test-integration runs them)", missing, tests)
}

// Service returns the value of the variable env, which addresses a service
// the tests need; when it is unset, it reports the service Missing.
func Service(t testing.TB, env, tests string) string {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		Missing(t, env+" is not set", tests)
	}
	return v
}

// RedisClusterVar names the seed nodes of a Redis Cluster, as
// `scripts/redis-cluster.sh url` prints them.
const RedisClusterVar = "CHAT_REDIS_CLUSTER_URL"

// RedisCluster returns the Redis Cluster URL of RedisClusterVar, or skips t:
// the cluster tests need six redis-server processes, which `make
// test-cluster` starts, so they never run, or fail, without it.
func RedisCluster(t testing.TB) string {
	t.Helper()
	v := os.Getenv(RedisClusterVar)
	if v == "" {
		t.Skipf("%s is not set: `make test-cluster` runs the Redis Cluster tests", RedisClusterVar)
	}
	return v
}
