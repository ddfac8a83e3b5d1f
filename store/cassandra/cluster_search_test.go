package cassandra

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/killrchat/chatql/store/storetest"
)

// TestClusterSearchConformance runs the search conformance suite on a
// three-node cluster (scripts/cassandra-cluster.sh): a fresh keyspace
// replicated three times, LOCAL_QUORUM, so that each SAI read of a
// partition is answered by two replicas' indexes. `make test-cluster` runs
// it; it skips unless CHAT_CASSANDRA_CLUSTER names the cluster's nodes.
func TestClusterSearchConformance(t *testing.T) {
	var hosts []string
	for _, h := range strings.Split(os.Getenv("CHAT_CASSANDRA_CLUSTER"), ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	if len(hosts) == 0 {
		t.Skip("CHAT_CASSANDRA_CLUSTER is not set: `make test-cluster` runs the search conformance tests on a three-node cluster")
	}
	keyspace := "chat_cluster_search" + os.Getenv("CHAT_TEST_KEYSPACE_TAG")
	// Creating the schema waits for the three nodes to agree on each
	// statement: minutes on a loaded two-core machine.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cluster := gocql.NewCluster(hosts...)
	cluster.Timeout = 30 * time.Second
	session, err := cluster.CreateSession()
	if err != nil {
		t.Fatalf("connect to the cluster at %v: %v", hosts, err)
	}
	err = execDDL(ctx, session, "DROP KEYSPACE IF EXISTS "+keyspace)
	session.Close()
	if err != nil {
		t.Fatalf("drop keyspace %s: %v", keyspace, err)
	}
	db, err := Open(ctx, Config{Hosts: hosts, Keyspace: keyspace, Replication: "NetworkTopologyStrategy:datacenter1=3"})
	if err != nil {
		t.Fatalf("Open(%s) = %v", keyspace, err)
	}
	defer db.Close()
	storetest.RunSearchTests(t, db)
}
