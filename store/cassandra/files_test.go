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
	f := claimedFile(t, ctx, db, owner, made)
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

// TestDueFilesSkipsAttachedToTheLimit: an attached file still listed
// before a due one does not make a sweep of one file come back empty (the
// conformance suite saw it, its files attached by a parallel case between
// AttachFiles' two writes): DueFiles takes the row off and reads again.
func TestDueFilesSkipsAttachedToTheLimit(t *testing.T) {
	db := mustOpen(t, testConfig(t))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	owner := unique("skipped")
	made := time.Date(1983, 4, 5, 6, 7, 8, 0, time.UTC)
	attached := claimedFile(t, ctx, db, owner, made)
	pending := store.File{Attachment: store.Attachment{ID: store.MessageIDAt(made.Add(time.Second)), Size: 3}, Owner: owner}
	if err := db.CreateFile(ctx, pending, 100); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.RemoveFile(context.Background(), owner, pending.ID) })
	// Attached, its row still listed: AttachFiles between its writes.
	if err := db.query(ctx, changeState, int(store.FileAttached), owner, gocql.UUID(attached.ID), int(store.FileClaimed)).Exec(); err != nil {
		t.Fatal(err)
	}
	due, err := db.DueFiles(ctx, made.Add(2*time.Second), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(due) != 1 || due[0].ID == attached.ID {
		t.Fatalf("DueFiles(limit 1) = %+v; want one file, not the attached one", due)
	}
}

// TestDueFilesPrunesDays: DueFiles takes an old day off file_sweep_days
// once it reads it empty, and a file made in that day later lists it again.
func TestDueFilesPrunesDays(t *testing.T) {
	db := mustOpen(t, testConfig(t))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	owner := unique("pruned")
	made := time.Date(1984, 5, 6, 7, 8, 9, 0, time.UTC)
	day := int(store.BucketOf(made))
	listed := func() bool {
		t.Helper()
		var n int
		if err := db.query(ctx, `SELECT COUNT(*) FROM file_sweep_days WHERE sweep = 0 AND day = ?`, day).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n > 0
	}
	create := func(at time.Time) store.File {
		t.Helper()
		f := store.File{Attachment: store.Attachment{ID: store.MessageIDAt(at), Size: 1}, Owner: owner}
		if err := db.CreateFile(ctx, f, 100); err != nil {
			t.Fatal(err)
		}
		return f
	}
	f := create(made)
	if !listed() {
		t.Fatalf("day %d is not listed after CreateFile", day)
	}
	if err := db.RemoveFile(ctx, owner, f.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.DueFiles(ctx, time.Now(), 1000); err != nil {
		t.Fatal(err)
	}
	if listed() {
		t.Errorf("day %d is still listed after DueFiles read it empty", day)
	}
	g := create(made.Add(time.Second))
	defer db.RemoveFile(context.Background(), owner, g.ID)
	due, err := db.DueFiles(ctx, made.Add(time.Hour), 1000)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range due {
		found = found || d.ID == g.ID
	}
	if !found || !listed() {
		t.Errorf("a file made in a pruned day: due %v, day listed %v; want both", found, listed())
	}
}

// claimedFile makes a file of owner's at made, complete and claimed by a
// message, removed when the test ends.
func claimedFile(t *testing.T, ctx context.Context, db *DB, owner string, made time.Time) store.File {
	t.Helper()
	f := store.File{Attachment: store.Attachment{ID: store.MessageIDAt(made), Size: 3}, Owner: owner}
	if err := db.CreateFile(ctx, f, 100); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.RemoveFile(context.Background(), owner, f.ID) })
	if err := db.CompleteFile(ctx, owner, f.Attachment); err != nil {
		t.Fatal(err)
	}
	if err := db.ClaimFiles(ctx, owner, []store.FileID{f.ID}, "room", store.NewMessageID()); err != nil {
		t.Fatal(err)
	}
	return f
}
