package e2e

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"golang.org/x/crypto/bcrypt"

	"github.com/killrchat/chatql/internal/testenv"
	"github.com/killrchat/chatql/server"
)

// forEachStore runs an end-to-end test on the embedded store and, when
// CHAT_CASSANDRA_HOSTS names a node, on Cassandra.
func forEachStore(t *testing.T, test func(t *testing.T, cfg server.Config)) {
	t.Run("embedded", func(t *testing.T) { test(t, testConfig(t)) })
	t.Run("cassandra", func(t *testing.T) { test(t, cassandraConfig(t)) })
}

// cassandraConfig is a server configuration on a fresh keyspace of the node
// CHAT_CASSANDRA_HOSTS names. Without it the test skips, unless
// CHAT_REQUIRE_BACKENDS=1 (CI) makes that a failure.
func cassandraConfig(t *testing.T) server.Config {
	t.Helper()
	hosts := testenv.Service(t, "CHAT_CASSANDRA_HOSTS", "the end-to-end tests on Cassandra")
	cfg := testConfig(t)
	cfg.Store = "cassandra"
	cfg.JWTSecret = strings.Repeat("k", 32)
	cfg.BcryptCost = bcrypt.MinCost
	cfg.Cassandra.Hosts = splitList(hosts)
	cfg.Cassandra.Keyspace = testKeyspace(t.Name())
	dropKeyspace(t, cfg.Cassandra.Hosts, cfg.Cassandra.Keyspace)
	t.Cleanup(func() { dropKeyspace(t, cfg.Cassandra.Hosts, cfg.Cassandra.Keyspace) })
	return cfg
}

var notKeyspaceChar = regexp.MustCompile(`[^a-z0-9_]+`)

// testKeyspace derives a valid keyspace name (at most 48 characters) from a
// test name, after CHAT_TEST_KEYSPACE_TAG (see store/cassandra's tests).
func testKeyspace(testName string) string {
	name := "e2e" + os.Getenv("CHAT_TEST_KEYSPACE_TAG") + "_" + notKeyspaceChar.ReplaceAllString(strings.ToLower(testName), "_")
	return name[:min(len(name), 48)]
}

func dropKeyspace(t *testing.T, hosts []string, keyspace string) {
	t.Helper()
	cluster := gocql.NewCluster(hosts...)
	cluster.Timeout = 30 * time.Second
	session, err := cluster.CreateSession()
	if err != nil {
		t.Fatalf("connect to cassandra at %v: %v", hosts, err)
	}
	defer session.Close()
	if err := session.Query("DROP KEYSPACE IF EXISTS " + keyspace).Exec(); err != nil {
		t.Fatalf("drop keyspace %s: %v", keyspace, err)
	}
}

// splitList splits a comma-separated list of hosts as the server's
// configuration does: spaces trimmed, empty parts dropped.
func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
