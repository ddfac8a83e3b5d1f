package cassandra

import (
	"context"
	_ "embed"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
)

// TestSchemaCurrentMatchesMigrations applies every migration to a fresh
// keyspace, and schema_current.cql to another: what system_schema holds of
// the two keyspaces (tables and their options, columns, types, indexes,
// views, triggers, functions, aggregates) is the same but for the
// keyspace's name and the tables' ids. Then it opens the second keyspace
// too, as a server started on a keyspace made by hand would: that
// succeeds, and changes nothing. Last, a server opening an empty keyspace
// (which it makes from schema_current.cql) makes the same schema and
// records every version.
func TestSchemaCurrentMatchesMigrations(t *testing.T) {
	cfg := testConfig(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	boot, err := gocql.NewCluster(cfg.Hosts...).CreateSession()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(boot.Close) // after the drops: cleanups run last in, first out
	migrated, current, fresh := testKeyspace+"_migrated", testKeyspace+"_current", testKeyspace+"_fresh"
	for _, ks := range []string{migrated, current, fresh} {
		drop := func() {
			if err := execDDL(context.Background(), boot, "DROP KEYSPACE IF EXISTS "+ks); err != nil {
				t.Errorf("drop keyspace %s: %v", ks, err)
			}
		}
		drop()
		t.Cleanup(drop)
	}

	open := func(ks string) {
		t.Helper()
		c := cfg
		c.Keyspace = ks
		db, err := Open(ctx, c)
		if err != nil {
			t.Fatalf("Open(%s) = %v", ks, err)
		}
		db.Close()
	}
	// session creates keyspace ks and connects to it.
	session := func(ks string) *gocql.Session {
		t.Helper()
		if err := execDDL(ctx, boot, "CREATE KEYSPACE "+ks+" WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"); err != nil {
			t.Fatal(err)
		}
		cluster := gocql.NewCluster(cfg.Hosts...)
		cluster.Keyspace = ks
		s, err := cluster.CreateSession()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}
	if err := migrateTo(ctx, session(migrated), migrated, migrations); err != nil {
		t.Fatal(err)
	}
	byHand := session(current)
	for _, stmt := range statements(schemaCurrent) {
		if err := execDDL(ctx, byHand, stmt); err != nil {
			t.Fatalf("schema_current.cql: %v\n%s", err, stmt)
		}
	}

	compare := func(when, current string) {
		t.Helper()
		for _, st := range []struct {
			table string
			key   []string // the columns that name a row
			least int      // rows the migrated keyspace must have
		}{
			{"tables", []string{"table_name"}, 19},
			{"columns", []string{"table_name", "column_name"}, 100},
			{"types", []string{"type_name"}, 1},
			{"indexes", []string{"table_name", "index_name"}, 0},
			{"views", []string{"view_name"}, 0},
			{"triggers", []string{"table_name", "trigger_name"}, 0},
			{"functions", []string{"function_name", "argument_types"}, 0},
			{"aggregates", []string{"aggregate_name", "argument_types"}, 0},
		} {
			want := schemaRows(t, ctx, boot, st.table, migrated, st.key)
			got := schemaRows(t, ctx, boot, st.table, current, st.key)
			if len(want) < st.least {
				t.Fatalf("system_schema.%s has %d rows of the migrated keyspace, want %d or more", st.table, len(want), st.least)
			}
			for _, k := range slices.Sorted(maps.Keys(want)) {
				if g, ok := got[k]; !ok {
					t.Errorf("%s: system_schema.%s: %s is not in schema_current.cql's keyspace; the migrations made\n\t%s", when, st.table, k, want[k])
				} else if g != want[k] {
					t.Errorf("%s: system_schema.%s: %s differs:\n\tcurrent:    %s\n\tmigrations: %s", when, st.table, k, g, want[k])
				}
			}
			for _, k := range slices.Sorted(maps.Keys(got)) {
				if _, ok := want[k]; !ok {
					t.Errorf("%s: system_schema.%s: %s is in schema_current.cql's keyspace, not the migrations':\n\t%s", when, st.table, k, got[k])
				}
			}
		}
	}
	compare("applied", current)
	if t.Failed() {
		return
	}
	open(current)
	compare("opened after", current)

	open(fresh)
	compare("a server's fresh keyspace", fresh)
	var recorded int
	if err := boot.Query("SELECT COUNT(*) FROM " + fresh + ".schema_migrations").Scan(&recorded); err != nil {
		t.Fatal(err)
	}
	if recorded != len(migrations) {
		t.Fatalf("the fresh keyspace records %d versions, want %d", recorded, len(migrations))
	}
}

// schemaRows returns the rows of system_schema.table of keyspace, by the
// values of their key columns, each as its other columns' values but the
// keyspace's name and the table's id, sorted by column name.
func schemaRows(t *testing.T, ctx context.Context, session *gocql.Session, table, keyspace string, key []string) map[string]string {
	t.Helper()
	iter := session.Query("SELECT * FROM system_schema."+table+" WHERE keyspace_name = ?", keyspace).WithContext(ctx).Iter()
	rows := map[string]string{}
	for {
		row := map[string]any{}
		if !iter.MapScan(row) {
			break
		}
		delete(row, "keyspace_name")
		delete(row, "id")
		var k []string
		for _, c := range key {
			k = append(k, fmt.Sprint(row[c]))
		}
		var fields []string
		for _, c := range slices.Sorted(maps.Keys(row)) {
			fields = append(fields, fmt.Sprintf("%s=%v", c, row[c]))
		}
		rows[strings.Join(k, ".")] = strings.Join(fields, " ")
	}
	if err := iter.Close(); err != nil {
		t.Fatalf("read system_schema.%s of %s: %v", table, keyspace, err)
	}
	return rows
}

// TestSchemaCurrentHasEveryMigration checks, without a Cassandra node, that
// schema_current.cql is the migrations applied in order: it replays their
// statements (CREATE TABLE, TYPE and INDEX, ALTER TABLE ADD and DROP,
// ALTER TYPE ADD, DROP) on a rough model of the schema, and compares it
// with the model of the file: the same tables with the same columns, types
// and keys and options, the same types with the same fields in the same
// order, the same indexes. The file says which version it is, and every
// statement of it is an idempotent CREATE with a comment above it.
func TestSchemaCurrentHasEveryMigration(t *testing.T) {
	want := newCQLModel()
	for _, m := range migrations {
		for _, stmt := range statements(m.cql) {
			if err := want.apply(stmt); err != nil {
				t.Fatalf("version %d: %v\n%s", m.version, err, stmt)
			}
		}
	}
	got := newCQLModel()
	for _, stmt := range statements(schemaCurrent) {
		if !regexp.MustCompile(`(?is)^CREATE\s+(TABLE|TYPE|(CUSTOM\s+)?INDEX)\s+IF\s+NOT\s+EXISTS\s`).MatchString(stmt) {
			t.Errorf("schema_current.cql: not an idempotent CREATE (IF NOT EXISTS):\n%s", stmt)
		}
		if err := got.apply(stmt); err != nil {
			t.Fatalf("schema_current.cql: %v\n%s", err, stmt)
		}
	}
	for _, d := range want.diff(got) {
		t.Error("schema_current.cql: " + d)
	}
	if len(want.tables) < 19 || len(want.types) < 1 {
		t.Fatalf("the migrations make %d tables and %d types, want 19 and 1 or more", len(want.tables), len(want.types))
	}

	last := migrations[len(migrations)-1].version
	if m := regexp.MustCompile(`schema version (\d+)`).FindStringSubmatch(schemaCurrent); m == nil || m[1] != strconv.Itoa(last) {
		t.Errorf("schema_current.cql does not say it is schema version %d, the last migration's (it says %v)", last, m)
	}
	lines := strings.Split(schemaCurrent, "\n")
	for i, line := range lines {
		if strings.HasPrefix(line, "CREATE ") && (i == 0 || !strings.HasPrefix(lines[i-1], "--")) {
			t.Errorf("schema_current.cql: no comment above %q", line)
		}
	}
}

// cqlModel is what a sequence of schema statements makes of a keyspace, to
// the precision the migrations need: column types and names lower-cased,
// spaces dropped from types.
type cqlModel struct {
	tables  map[string]*cqlTable
	types   map[string][]string // "field type", in order
	indexes map[string]string   // name: the rest of its statement
}

type cqlTable struct {
	columns map[string]string // name: type
	key     string            // partition key columns, then clustering columns
	options string            // what follows WITH
}

func newCQLModel() *cqlModel {
	return &cqlModel{tables: map[string]*cqlTable{}, types: map[string][]string{}, indexes: map[string]string{}}
}

var (
	cqlCreate     = regexp.MustCompile(`(?is)^CREATE\s+(TABLE|TYPE)\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)\s*\(`)
	cqlIndex      = regexp.MustCompile(`(?is)^CREATE\s+(?:CUSTOM\s+)?INDEX\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)\s+ON\s+(.*)$`)
	cqlAddColumn  = regexp.MustCompile(`(?is)^ALTER\s+(TABLE|TYPE)\s+(\w+)\s+ADD\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)\s+(.+)$`)
	cqlDropColumn = regexp.MustCompile(`(?is)^ALTER\s+TABLE\s+(\w+)\s+DROP\s+(?:IF\s+EXISTS\s+)?(\w+)$`)
	cqlDrop       = regexp.MustCompile(`(?is)^DROP\s+(TABLE|TYPE|INDEX)\s+(?:IF\s+EXISTS\s+)?(\w+)$`)
	cqlSpaces     = regexp.MustCompile(`\s+`)
)

// cqlType normalizes a type: lower case, no spaces.
func cqlType(s string) string { return strings.ToLower(cqlSpaces.ReplaceAllString(s, "")) }

// splitTop splits s at the commas outside parentheses and angle brackets.
func splitTop(s string) []string {
	var out []string
	depth, from := 0, 0
	for i, r := range s {
		switch r {
		case '(', '<':
			depth++
		case ')', '>':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[from:i]))
				from = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(s[from:]))
}

// cqlKey normalizes a primary key's columns, "(a, b), c" or "a, b":
// partition columns, then clustering columns.
func cqlKey(s string) string {
	parts := splitTop(s)
	partition := strings.Trim(parts[0], "() ")
	var p []string
	for _, c := range splitTop(partition) {
		p = append(p, strings.ToLower(c))
	}
	var c []string
	for _, x := range parts[1:] {
		c = append(c, strings.ToLower(x))
	}
	return "partition (" + strings.Join(p, ", ") + ") clustering (" + strings.Join(c, ", ") + ")"
}

func (m *cqlModel) apply(stmt string) error {
	if c := cqlCreate.FindStringSubmatchIndex(stmt); c != nil {
		kind, name := strings.ToUpper(stmt[c[2]:c[3]]), strings.ToLower(stmt[c[4]:c[5]])
		// The body runs from the '(' the pattern ends with to its match.
		open, depth, end := c[1]-1, 0, -1
		for i := open; i < len(stmt) && end < 0; i++ {
			switch stmt[i] {
			case '(':
				depth++
			case ')':
				if depth--; depth == 0 {
					end = i
				}
			}
		}
		if end < 0 {
			return fmt.Errorf("unbalanced parentheses")
		}
		body, rest := stmt[open+1:end], strings.TrimSpace(stmt[end+1:])
		if kind == "TYPE" {
			if _, ok := m.types[name]; ok {
				return nil // IF NOT EXISTS
			}
			var fields []string
			for _, f := range splitTop(body) {
				n, typ, _ := strings.Cut(f, " ")
				fields = append(fields, strings.ToLower(n)+" "+cqlType(typ))
			}
			m.types[name] = fields
			return nil
		}
		if _, ok := m.tables[name]; ok {
			return nil
		}
		tbl := &cqlTable{columns: map[string]string{}, options: strings.ToLower(cqlSpaces.ReplaceAllString(rest, " "))}
		for _, col := range splitTop(body) {
			if k, ok := cutPrefixFold(col, "PRIMARY KEY"); ok {
				tbl.key = cqlKey(strings.TrimSpace(k)[1 : len(strings.TrimSpace(k))-1])
				continue
			}
			n, typ, _ := strings.Cut(col, " ")
			if t, ok := cutSuffixFold(strings.TrimSpace(typ), "PRIMARY KEY"); ok {
				typ, tbl.key = t, cqlKey(n)
			}
			tbl.columns[strings.ToLower(n)] = cqlType(typ)
		}
		if tbl.key == "" {
			return fmt.Errorf("table %s has no primary key", name)
		}
		m.tables[name] = tbl
		return nil
	}
	if c := cqlIndex.FindStringSubmatch(stmt); c != nil {
		name := strings.ToLower(c[1])
		if _, ok := m.indexes[name]; !ok {
			m.indexes[name] = strings.ToLower(cqlSpaces.ReplaceAllString(c[2], " "))
		}
		return nil
	}
	if c := cqlAddColumn.FindStringSubmatch(stmt); c != nil {
		name, col, typ := strings.ToLower(c[2]), strings.ToLower(c[3]), cqlType(c[4])
		if strings.EqualFold(c[1], "TYPE") {
			if _, ok := m.types[name]; !ok {
				return fmt.Errorf("ALTER TYPE of a type that is not there: %s", name)
			}
			m.types[name] = append(m.types[name], col+" "+typ)
			return nil
		}
		tbl, ok := m.tables[name]
		if !ok {
			return fmt.Errorf("ALTER TABLE of a table that is not there: %s", name)
		}
		tbl.columns[col] = typ
		return nil
	}
	if c := cqlDropColumn.FindStringSubmatch(stmt); c != nil {
		tbl, ok := m.tables[strings.ToLower(c[1])]
		if !ok {
			return fmt.Errorf("ALTER TABLE of a table that is not there: %s", c[1])
		}
		delete(tbl.columns, strings.ToLower(c[2]))
		return nil
	}
	if c := cqlDrop.FindStringSubmatch(stmt); c != nil {
		name := strings.ToLower(c[2])
		switch strings.ToUpper(c[1]) {
		case "TABLE":
			delete(m.tables, name)
		case "TYPE":
			delete(m.types, name)
		case "INDEX":
			delete(m.indexes, name)
		}
		return nil
	}
	return fmt.Errorf("a statement this test does not know: teach cqlModel.apply")
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

func cutSuffixFold(s, suffix string) (string, bool) {
	if len(s) >= len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix) {
		return strings.TrimSpace(s[:len(s)-len(suffix)]), true
	}
	return s, false
}

// diff lists how got differs from m.
func (m *cqlModel) diff(got *cqlModel) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(m.tables)) {
		w, g := m.tables[name], got.tables[name]
		if g == nil {
			out = append(out, "table "+name+" is missing")
			continue
		}
		for _, col := range slices.Sorted(maps.Keys(w.columns)) {
			switch gt, ok := g.columns[col]; {
			case !ok:
				out = append(out, fmt.Sprintf("column %s.%s %s is missing", name, col, w.columns[col]))
			case gt != w.columns[col]:
				out = append(out, fmt.Sprintf("column %s.%s is %s, the migrations make it %s", name, col, gt, w.columns[col]))
			}
		}
		for _, col := range slices.Sorted(maps.Keys(g.columns)) {
			if _, ok := w.columns[col]; !ok {
				out = append(out, fmt.Sprintf("column %s.%s is not the migrations'", name, col))
			}
		}
		if g.key != w.key {
			out = append(out, fmt.Sprintf("table %s: primary key %s, the migrations make it %s", name, g.key, w.key))
		}
		if g.options != w.options {
			out = append(out, fmt.Sprintf("table %s: options %q, the migrations make them %q", name, g.options, w.options))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(got.tables)) {
		if m.tables[name] == nil {
			out = append(out, "table "+name+" is not the migrations'")
		}
	}
	for _, name := range slices.Sorted(maps.Keys(m.types)) {
		if g, ok := got.types[name]; !ok {
			out = append(out, "type "+name+" is missing")
		} else if !slices.Equal(g, m.types[name]) {
			out = append(out, fmt.Sprintf("type %s has fields %q, the migrations make them %q", name, g, m.types[name]))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(got.types)) {
		if _, ok := m.types[name]; !ok {
			out = append(out, "type "+name+" is not the migrations'")
		}
	}
	for _, name := range slices.Sorted(maps.Keys(m.indexes)) {
		if g, ok := got.indexes[name]; !ok || g != m.indexes[name] {
			out = append(out, fmt.Sprintf("index %s is %q, the migrations make it %q", name, g, m.indexes[name]))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(got.indexes)) {
		if _, ok := m.indexes[name]; !ok {
			out = append(out, "index "+name+" is not the migrations'")
		}
	}
	return out
}
