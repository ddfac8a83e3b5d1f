package cassandra

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/gocql/gocql"
)

// schemaCurrent is the whole schema of the last version in one file: an
// empty keyspace is made from it (see migrate).
//
//go:embed schema_current.cql
var schemaCurrent string

// schemaV1 is the initial schema, kept as a .cql file so cqlsh can apply it.
//
//go:embed schema.cql
var schemaV1 string

// schemaV2 adds private groups, direct messages, inboxes and the message
// index.
//
//go:embed schema_v2.cql
var schemaV2 string

// schemaV3 adds sessions.
//
//go:embed schema_v3.cql
var schemaV3 string

// schemaV4 adds the event logs and the former members of a group.
//
//go:embed schema_v4.cql
var schemaV4 string

// schemaV5 adds the inboxes' read marks.
//
//go:embed schema_v5.cql
var schemaV5 string

// schemaV6 adds client message ids.
//
//go:embed schema_v6.cql
var schemaV6 string

// schemaV7 adds edited and deleted messages.
//
//go:embed schema_v7.cql
var schemaV7 string

// schemaV8 adds reactions.
//
//go:embed schema_v8.cql
var schemaV8 string

// schemaV9 adds replies.
//
//go:embed schema_v9.cql
var schemaV9 string

// schemaV10 adds the read marks of public rooms.
//
//go:embed schema_v10.cql
var schemaV10 string

// schemaV11 adds blocked users and muted conversations.
//
//go:embed schema_v11.cql
var schemaV11 string

// schemaV12 adds room moderation.
//
//go:embed schema_v12.cql
var schemaV12 string

// schemaV13 adds deleted accounts.
//
//go:embed schema_v13.cql
var schemaV13 string

// schemaV14 adds the thread of an inbox entry's last message.
//
//go:embed schema_v14.cql
var schemaV14 string

// schemaV15 adds files, and the attachments and link previews of messages.
//
//go:embed schema_v15.cql
var schemaV15 string

// schemaV16 adds the avatars of users and the icons of rooms.
//
//go:embed schema_v16.cql
var schemaV16 string

// schemaV17 adds the outbox of notices and push subscriptions.
//
//go:embed schema_v17.cql
var schemaV17 string

// schemaV18 adds the rooms' webhooks.
//
//go:embed schema_v18.cql
var schemaV18 string

// schemaV19 adds bot accounts and their API keys.
//
//go:embed schema_v19.cql
var schemaV19 string

// schemaV20 adds verified email addresses, emailed links and email
// digests, and the session of a push subscription.
//
//go:embed schema_v20.cql
var schemaV20 string

// schemaV21 adds what sessions show in the list of devices, two-factor
// sign-in, passkeys and OpenID Connect identities.
//
//go:embed schema_v21.cql
var schemaV21 string

// schemaV22 adds room settings, pins, slow mode, invite links and the
// choice not to send read receipts.
//
//go:embed schema_v22.cql
var schemaV22 string

// schemaV23 adds the terms message search finds messages by.
//
//go:embed schema_v23.cql
var schemaV23 string

// schemaV24 adds the push sends of the outbox.
//
//go:embed schema_v24.cql
var schemaV24 string

// schemaV25 adds the inbox in the order of last activity: inbox_order,
// room_inbox_activity, and the participant count and fan-out of chat_rooms.
//
//go:embed schema_v25.cql
var schemaV25 string

// A migration is one schema version: CQL statements separated by ';', then
// the conversion of the data, if any.
type migration struct {
	version     int
	description string
	cql         string
	convert     func(context.Context, *gocql.Session) error
}

// migrations are the schema versions in order. Only ever append: a keyspace
// records each version it applied and never runs that version again, so
// editing a shipped migration changes nothing on existing clusters. A new
// version changes schema_current.cql, the whole schema for readers, too:
// TestSchemaCurrentHasEveryMigration fails until it does.
var migrations = []migration{
	{version: 1, description: "initial schema: users, chat_rooms, chat_room_messages, messages_bucket", cql: schemaV1},
	{version: 2, description: "room kinds, message visibility, messages_by_id, messages_by_author, author_buckets, conversations_by_user", cql: schemaV2},
	{version: 3, description: "sessions", cql: schemaV3},
	{version: 4, description: "room_events, inbox_events, inbox_buckets, chat_rooms.former_members", cql: schemaV4},
	{version: 5, description: "conversations_by_user.read_upto, unread rows converted", cql: schemaV5, convert: convertUnreadRows},
	{version: 6, description: "client_messages", cql: schemaV6},
	{version: 7, description: "edited_at and deleted of messages, conversations_by_user.last_edit", cql: schemaV7},
	{version: 8, description: "message_reactions", cql: schemaV8},
	{version: 9, description: "reply_to of messages, message_replies", cql: schemaV9},
	{version: 10, description: "room_reads", cql: schemaV10},
	{version: 11, description: "user_blocks, user_mutes", cql: schemaV11},
	{version: 12, description: "chat_rooms.moderators, chat_rooms.banned", cql: schemaV12},
	{version: 13, description: "users.deleted", cql: schemaV13},
	{version: 14, description: "conversations_by_user.last_reply", cql: schemaV14},
	{version: 15, description: "files, file_sweep, file_sweep_days, attachments and previews of messages", cql: schemaV15},
	{version: 16, description: "users.avatar, chat_rooms.icon", cql: schemaV16},
	{version: 17, description: "notices, notice_hours, notice_cursors, notice_leases, push_subscriptions", cql: schemaV17},
	{version: 18, description: "webhooks, webhook_leases", cql: schemaV18},
	{version: 19, description: "users.bot, users.owner, bots_by_owner, bot_keys", cql: schemaV19},
	{version: 20, description: "users.email_verified, users.digests_off, users.digest_sent_at, email_tokens, email_logins, digest_due, digest_notices, push_subscriptions.session", cql: schemaV20},
	{version: 21, description: "sessions' devices, two_factor, passkeys, oidc_identities", cql: schemaV21},
	{version: 22, description: "chat_rooms.title, chat_rooms.slow_mode, users.no_read_receipts, room_pins, room_post_turns, group_invites, group_invites_by_room", cql: schemaV22},
	{version: 23, description: "chat_room_messages.search_terms, users.search_prefixes, chat_rooms.search_prefixes and their indexes", cql: schemaV23},
	{version: 24, description: "push_sends", cql: schemaV24},
	{version: 25, description: "inbox_order, room_inbox_activity, chat_rooms.participant_count and inbox_fanout", cql: schemaV25, convert: countParticipants},
}

// createMigrationsTable repeats schema.cql's statement: the table must exist
// before Open can ask which versions are applied.
const createMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version int PRIMARY KEY,
    applied_at timestamp,
    description text
)`

const (
	selectKeyspace = `SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?`
	selectVersions = `SELECT version FROM schema_migrations`
	selectColumn   = `SELECT column_name FROM system_schema.columns WHERE keyspace_name = ? AND table_name = ? AND column_name = ?`
	selectTables   = `SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?`
	selectTypes    = `SELECT type_name FROM system_schema.types WHERE keyspace_name = ?`
	// IF NOT EXISTS keeps the first applied_at when two servers start at once.
	insertVersion = `INSERT INTO schema_migrations (version, applied_at, description) VALUES (?, ?, ?) IF NOT EXISTS`
)

// createKeyspace creates the keyspace unless it exists. It looks first so
// that a role without CREATE permission can use a keyspace that operations
// provisioned.
func createKeyspace(ctx context.Context, session *gocql.Session, s settings) error {
	var name string
	err := session.Query(selectKeyspace, s.Keyspace).WithContext(ctx).Scan(&name)
	if err == nil {
		return nil
	}
	if err != gocql.ErrNotFound {
		return fmt.Errorf("cassandra: look up keyspace %s: %w", s.Keyspace, err)
	}
	stmt := fmt.Sprintf("CREATE KEYSPACE IF NOT EXISTS %s WITH replication = %s", s.Keyspace, s.replication.cql())
	if err := execDDL(ctx, session, stmt); err != nil {
		return fmt.Errorf("cassandra: create keyspace %s: %w", s.Keyspace, err)
	}
	return nil
}

// migrate applies, in order, the migrations the keyspace has not recorded.
// Servers starting at once may both apply a version; every statement is
// idempotent, and the version is recorded once.
//
// An empty keyspace (a new deployment, each test's) is made from
// schema_current.cql instead, a statement per table and type rather than
// every version's (each a schema change the cluster must agree on, a
// fraction of a second on one node), and every version is recorded: TestSchemaCurrentMatchesMigrations proves the two make the
// same schema. A keyspace with any table or type but schema_migrations,
// such as one a first start left half made, takes the migrations.
func migrate(ctx context.Context, session *gocql.Session, keyspace string) error {
	if err := execDDL(ctx, session, createMigrationsTable); err != nil {
		return fmt.Errorf("cassandra: create schema_migrations: %w", err)
	}
	empty, err := isEmpty(ctx, session, keyspace)
	if err != nil {
		return err
	}
	if !empty {
		return migrateTo(ctx, session, keyspace, migrations)
	}
	for _, stmt := range statements(schemaCurrent) {
		if err := execMigration(ctx, session, keyspace, stmt); err != nil {
			return fmt.Errorf("cassandra: schema_current.cql: %w\n%s", err, stmt)
		}
	}
	for _, m := range migrations {
		if err := recordVersion(ctx, session, m); err != nil {
			return err
		}
	}
	return nil
}

// isEmpty reports whether the keyspace holds no type and no table but
// schema_migrations.
func isEmpty(ctx context.Context, session *gocql.Session, keyspace string) (bool, error) {
	ks := strings.ToLower(keyspace)
	for _, q := range []string{selectTables, selectTypes} {
		iter := session.Query(q, ks).WithContext(ctx).Iter()
		var name string
		others := 0
		for iter.Scan(&name) {
			if name != "schema_migrations" {
				others++
			}
		}
		if err := iter.Close(); err != nil {
			return false, fmt.Errorf("cassandra: read the schema of keyspace %s: %w", keyspace, err)
		}
		if others > 0 {
			return false, nil
		}
	}
	return true, nil
}

// recordVersion records that the keyspace has m.
func recordVersion(ctx context.Context, session *gocql.Session, m migration) error {
	q := session.Query(insertVersion, m.version, time.Now(), m.description).WithContext(ctx)
	if _, err := execCAS(q, nil); err != nil {
		return fmt.Errorf("cassandra: record schema version %d: %w", m.version, err)
	}
	return nil
}

// migrateTo applies the given migrations; tests pass a prefix of migrations
// to make a keyspace of an older version.
func migrateTo(ctx context.Context, session *gocql.Session, keyspace string, ms []migration) error {
	if err := execDDL(ctx, session, createMigrationsTable); err != nil {
		return fmt.Errorf("cassandra: create schema_migrations: %w", err)
	}
	applied := map[int]bool{}
	iter := session.Query(selectVersions).WithContext(ctx).Iter()
	var v int
	for iter.Scan(&v) {
		applied[v] = true
	}
	if err := iter.Close(); err != nil {
		return fmt.Errorf("cassandra: read schema versions: %w", err)
	}
	for _, m := range ms {
		if applied[m.version] {
			continue
		}
		for _, stmt := range statements(m.cql) {
			if err := execMigration(ctx, session, keyspace, stmt); err != nil {
				return fmt.Errorf("cassandra: schema version %d: %w\n%s", m.version, err, stmt)
			}
		}
		if m.convert != nil {
			if err := m.convert(ctx, session); err != nil {
				return fmt.Errorf("cassandra: schema version %d: %w", m.version, err)
			}
		}
		if err := recordVersion(ctx, session, m); err != nil {
			return err
		}
	}
	return nil
}

// addColumn matches the one statement of the migrations that is not
// idempotent, ALTER TABLE t ADD c type, naming the table and the column.
var addColumn = regexp.MustCompile(`(?is)^ALTER\s+TABLE\s+(\w+)\s+ADD\s+(\w+)\s`)

// execMigration runs one statement of a migration. ALTER TABLE ... ADD
// fails on a column that exists, which a migration interrupted before it
// was recorded, or one run at once by another server, leaves behind; so the
// column is looked up first, and looked up again if the ALTER fails.
// (Cassandra 5.0 accepts ADD IF NOT EXISTS; older versions may not.)
func execMigration(ctx context.Context, session *gocql.Session, keyspace, stmt string) error {
	m := addColumn.FindStringSubmatch(stmt)
	if m == nil {
		return execDDL(ctx, session, stmt)
	}
	// Unquoted identifiers are case-insensitive: the schema stores them in
	// lower case.
	ks, table, column := strings.ToLower(keyspace), strings.ToLower(m[1]), strings.ToLower(m[2])
	exists := func() (bool, error) {
		var name string
		err := session.Query(selectColumn, ks, table, column).WithContext(ctx).Scan(&name)
		if err == gocql.ErrNotFound {
			return false, nil
		}
		return err == nil, err
	}
	switch ok, err := exists(); {
	case err != nil:
		return fmt.Errorf("look up column %s.%s: %w", table, column, err)
	case ok:
		return nil
	}
	err := execDDL(ctx, session, stmt)
	if err == nil {
		return nil
	}
	if ok, lerr := exists(); lerr == nil && ok {
		return nil // added meanwhile by another server
	}
	return err
}

// execDDL runs a schema change and waits until every node agrees on the
// schema, so the next statement may depend on it wherever it runs.
//
// A schema change a loaded node answers late (past the client's request
// timeout) may still be applied; every statement of the schema is
// idempotent (IF NOT EXISTS, IF EXISTS, and execMigration's check of an
// added column), so it is sent again, a second later, until ctx ends.
func execDDL(ctx context.Context, session *gocql.Session, stmt string) error {
	for {
		err := session.Query(stmt).WithContext(ctx).Exec()
		if err == nil {
			return session.AwaitSchemaAgreement(ctx)
		}
		if !ddlTimedOut(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// ddlTimedOut reports whether a schema change failed by taking too long,
// on the client's side or the coordinator's, rather than being refused.
func ddlTimedOut(err error) bool {
	var writeTimeout *gocql.RequestErrWriteTimeout
	return errors.Is(err, gocql.ErrTimeoutNoResponse) || errors.As(err, &writeTimeout)
}

// statements splits a .cql file into its statements, dropping comment lines.
func statements(cql string) []string {
	var b strings.Builder
	for _, line := range strings.Split(cql, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	var out []string
	for _, stmt := range strings.Split(b.String(), ";") {
		if stmt = strings.TrimSpace(stmt); stmt != "" {
			out = append(out, stmt)
		}
	}
	return out
}
