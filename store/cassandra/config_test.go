package cassandra

import (
	"strings"
	"testing"

	"github.com/gocql/gocql"
)

func TestParseReplication(t *testing.T) {
	ok := map[string]string{
		"SimpleStrategy:1":                     "{'class': 'SimpleStrategy', 'replication_factor': 1}",
		"SimpleStrategy:3":                     "{'class': 'SimpleStrategy', 'replication_factor': 3}",
		"NetworkTopologyStrategy:dc2=3, dc1=2": "{'class': 'NetworkTopologyStrategy', 'dc1': 2, 'dc2': 3}",
		"NetworkTopologyStrategy:eu-west.1=3":  "{'class': 'NetworkTopologyStrategy', 'eu-west.1': 3}",
	}
	for in, want := range ok {
		r, err := parseReplication(in)
		if err != nil {
			t.Errorf("parseReplication(%q) = %v", in, err)
			continue
		}
		if got := r.cql(); got != want {
			t.Errorf("parseReplication(%q).cql() = %s, want %s", in, got, want)
		}
	}
	for _, in := range []string{
		"", "SimpleStrategy", "SimpleStrategy:", "SimpleStrategy:0", "SimpleStrategy:x",
		"NetworkTopologyStrategy:dc1", "NetworkTopologyStrategy:dc1=3,dc1=2",
		"NetworkTopologyStrategy:dc1'=3", "EverywhereStrategy:1",
	} {
		if _, err := parseReplication(in); err == nil {
			t.Errorf("parseReplication(%q) = nil error, want one", in)
		}
	}
}

func TestConfigParse(t *testing.T) {
	t.Run("Defaults", func(t *testing.T) {
		s, err := Config{Hosts: []string{"127.0.0.1"}}.parse()
		if err != nil {
			t.Fatal(err)
		}
		if s.Keyspace != "chat" || s.Port != 9042 || s.consistency != gocql.LocalQuorum ||
			s.serial != gocql.LocalSerial || s.replication.factor != 1 {
			t.Errorf("defaults = %+v", s)
		}
	})
	t.Run("Names", func(t *testing.T) {
		s, err := Config{Hosts: []string{"h"}, Consistency: "quorum", SerialConsistency: "serial"}.parse()
		if err != nil {
			t.Fatal(err)
		}
		if s.consistency != gocql.Quorum || s.serial != gocql.Serial {
			t.Errorf("consistency %v/%v, want QUORUM/SERIAL", s.consistency, s.serial)
		}
	})
	bad := map[string]Config{
		"no hosts":           {},
		"keyspace":           {Hosts: []string{"h"}, Keyspace: "chat; DROP"},
		"consistency":        {Hosts: []string{"h"}, Consistency: "MOST"},
		"serial":             {Hosts: []string{"h"}, SerialConsistency: "QUORUM"},
		"half a certificate": {Hosts: []string{"h"}, TLS: TLSConfig{Enabled: true, CertFile: "c.pem"}},
		"replication":        {Hosts: []string{"h"}, Replication: "SimpleStrategy:-1"},
	}
	for name, c := range bad {
		if _, err := c.parse(); err == nil {
			t.Errorf("%s: parse() = nil error, want one", name)
		}
	}
}

// TestSchemaStatements checks the splitting of schema.cql.
func TestSchemaStatements(t *testing.T) {
	stmts := statements(schemaV1)
	if len(stmts) != 6 {
		t.Fatalf("schema.cql has %d statements, want 6:\n%s", len(stmts), strings.Join(stmts, "\n---\n"))
	}
	for _, s := range stmts {
		if !strings.HasPrefix(s, "CREATE ") || !strings.Contains(s, " IF NOT EXISTS ") {
			t.Errorf("statement is not an idempotent CREATE: %s", s)
		}
	}
	if !strings.Contains(schemaV1, createMigrationsTable) {
		t.Errorf("schema.cql lacks Go's createMigrationsTable statement, verbatim")
	}
}
