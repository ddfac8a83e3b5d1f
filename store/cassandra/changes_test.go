package cassandra

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/chatql/store"
)

// TestEditRacingDelete writes what an edit that read the message before a
// delete writes after it, later in time: every copy stays a tombstone, the
// inbox entries' last message included.
func TestEditRacingDelete(t *testing.T) {
	db, ctx, alice, bob, _ := convFixture(t)
	m := store.Message{Room: store.DirectConversationID(alice.Login, bob.Login), ID: store.NewMessageID(), Author: alice, Content: "the launch codes"}
	if err := db.SendDirect(ctx, m, bob); err != nil {
		t.Fatal(err)
	}
	if _, err := db.DeleteMessage(ctx, m, alice); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(time.Hour)
	for _, c := range messageCopies {
		stmt := fmt.Sprintf(`UPDATE %s USING TIMESTAMP ? SET content = ?, edited_at = ? WHERE %s`, c.table, c.where)
		if err := db.query(ctx, stmt, append([]any{at.UnixMicro(), "the launch codes, fixed", at}, c.key(m)...)...).Exec(); err != nil {
			t.Fatal(err)
		}
	}
	for _, login := range []string{alice.Login, bob.Login} {
		err := db.query(ctx, setLastEdit+summaryRow, writeTime(m.ID), gocql.UUID(m.ID), at, "the launch codes, fixed", login, m.Room, sentinelID).Exec()
		if err != nil {
			t.Fatal(err)
		}
	}

	tombstone := store.Message{Room: m.Room, ID: m.ID, Author: alice, Deleted: true}
	if got, err := db.Message(ctx, m.ID); err != nil || !reflect.DeepEqual(got, tombstone) {
		t.Errorf("Message = %+v, %v; want the tombstone", got, err)
	}
	if got, err := db.Messages(ctx, m.Room, store.MessageID{}, 1); err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], tombstone) {
		t.Errorf("Messages = %+v, %v; want the tombstone", got, err)
	}
	for _, login := range []string{alice.Login, bob.Login} {
		if c, err := db.Conversation(ctx, login, m.Room); err != nil || !reflect.DeepEqual(c.LastMessage, tombstone) {
			t.Errorf("%s's entry: last message %+v, %v; want the tombstone", login, c.LastMessage, err)
		}
	}
	var content *string
	if err := db.query(ctx, `SELECT content FROM messages_by_id WHERE message_id = ?`, gocql.UUID(m.ID)).Scan(&content); err != nil || content != nil {
		t.Errorf("stored content by id = %v, %v; want none", content, err)
	}
}
