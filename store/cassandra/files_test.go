package cassandra

import (
	"context"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/chatql/store"
)

// TestDueFilesAfterCrashedAttach: an attached file whose day row
// AttachFiles left behind (a crash between its two writes) is not due, and
// DueFiles deletes the row.
func TestDueFilesAfterCrashedAttach(t *testing.T) {
	db := mustOpen(t, testConfig(t))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	owner := unique("crashed")
	made := time.Date(1985, 3, 4, 5, 6, 7, 0, time.UTC)
	f := store.File{Attachment: store.Attachment{ID: store.MessageIDAt(made), Size: 3}, Owner: owner}
	if err := db.CreateFile(ctx, f, 100); err != nil {
		t.Fatal(err)
	}
	defer db.RemoveFile(context.Background(), owner, f.ID)
	if err := db.CompleteFile(ctx, owner, f.Attachment); err != nil {
		t.Fatal(err)
	}
	if err := db.ClaimFiles(ctx, owner, []store.FileID{f.ID}, "room", store.NewMessageID()); err != nil {
		t.Fatal(err)
	}
	if err := db.AttachFiles(ctx, owner, []store.FileID{f.ID}); err != nil {
		t.Fatal(err)
	}
	day := int(store.BucketOf(made))
	if err := db.write(ctx, insertSweep, day, gocql.UUID(f.ID), owner).Exec(); err != nil {
		t.Fatal(err)
	}
	due, err := db.DueFiles(ctx, made.Add(time.Hour), 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range due {
		if d.ID == f.ID {
			t.Fatalf("DueFiles lists the attached file: %+v", d)
		}
	}
	var n int
	if err := db.query(ctx, `SELECT COUNT(*) FROM file_sweep WHERE day = ? AND file_id = ?`, day, gocql.UUID(f.ID)).Scan(&n); err != nil || n != 0 {
		t.Errorf("the attached file's day row: %d rows, %v; want none", n, err)
	}
}
