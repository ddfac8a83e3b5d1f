package cassandra

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/chatql/store"
)

var _ store.Files = (*DB)(nil)

// The files (schema_v15.cql) live in one partition per owner, files, whose
// static column bytes is the sum of the owner's files' sizes. Every change
// of a file's state or of bytes is a lightweight transaction on that
// partition, so they are serialized by Paxos: CreateFile checks the quota
// and records the file in one conditional batch, conditional on bytes being
// what it read (and retried when another change moved it), so no two
// creates pass a quota they together exceed; and ClaimFiles claims all its
// files in one conditional batch, all or none. (A counter could not be
// conditional, so its check would race its increment.)
//
// The sweep's list is file_sweep, a partition per day of the files made
// that day and not attached, by id, and one partition, doomedDay, of the
// doomed files; file_sweep_days lists the days. A file's sweep row is
// written before its record and deleted after the change that takes it
// off, so a crash in between leaves a row too many, never one too few: the
// sweep reads a row whose record is gone as a doomed file, whose
// RemoveFile then deletes the row, and DueFiles passes over (and deletes)
// the row of an attached file.
//
// An LWT whose outcome is unknown (a timeout) is settled by reading the
// file back at serial consistency, as lwt.go does.

const (
	fileColumns     = `state, name, content_type, size, width, height, blurhash, message_id, room_name`
	selectFile      = `SELECT ` + fileColumns + ` FROM files WHERE owner = ? AND file_id = ?`
	selectFileBytes = `SELECT bytes FROM files WHERE owner = ? LIMIT 1`
	selectFileIDs   = `SELECT file_id FROM files WHERE owner = ?`
	insertFile      = `INSERT INTO files (owner, file_id, state, name, content_type, size, width, height, blurhash)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS`
	// setFileBytes is the change of bytes that goes in every conditional
	// batch that changes a size: conditional on the bytes read.
	setFileBytes      = `UPDATE files SET bytes = ? WHERE owner = ? IF bytes = ?`
	completeFile      = `UPDATE files SET state = ?, name = ?, content_type = ?, size = ?, width = ?, height = ?, blurhash = ? WHERE owner = ? AND file_id = ? IF state = ?`
	claimFile         = `UPDATE files SET state = ?, message_id = ?, room_name = ? WHERE owner = ? AND file_id = ? IF state = ?`
	changeState       = `UPDATE files SET state = ? WHERE owner = ? AND file_id = ? IF state = ?`
	doomFile          = `UPDATE files SET state = ? WHERE owner = ? AND file_id = ? IF EXISTS`
	deleteFile        = `DELETE FROM files WHERE owner = ? AND file_id = ? IF state = ?`
	insertSweep       = `INSERT INTO file_sweep (day, file_id, owner) VALUES (?, ?, ?)`
	deleteSweep       = `DELETE FROM file_sweep WHERE day = ? AND file_id = ? AND owner = ?`
	selectSweep       = `SELECT file_id, owner FROM file_sweep WHERE day = ? AND file_id < ? LIMIT ?`
	selectDoomedFiles = `SELECT file_id, owner FROM file_sweep WHERE day = ? LIMIT ?`
	insertDay         = `INSERT INTO file_sweep_days (sweep, day) VALUES (0, ?)`
	selectDays        = `SELECT day FROM file_sweep_days WHERE sweep = 0`
	deleteDay         = `DELETE FROM file_sweep_days USING TIMESTAMP ? WHERE sweep = 0 AND day = ?`
	maxFileTrials     = 50
)

// doomedDay is the partition of file_sweep listing the doomed files: no
// file is made on day 0.
const doomedDay = 0

// errFileContended: a change of an owner's files lost its compare-and-set
// to other changes maxFileTrials times.
var errFileContended = errors.New("too many concurrent changes of the owner's files")

// CreateFile lists the file in the sweep's day of its id, then records it
// with its owner's bytes in one conditional batch (see the top of this
// file). An existing id is ErrConflict.
func (db *DB) CreateFile(ctx context.Context, f store.File, quota int64) error {
	fail := func(err error) error { return fmt.Errorf("cassandra: create file %v of %q: %w", f.ID, f.Owner, err) }
	if f.ID.IsZero() || f.Owner == "" {
		return store.Invalidf("file %v of %q: no id or owner", f.ID, f.Owner)
	}
	day := int(store.BucketOf(f.ID.Time()))
	listed := false
	for range maxFileTrials {
		bytes, err := db.fileBytes(ctx, f.Owner)
		if err != nil {
			return fail(err)
		}
		if bytes.n()+f.Size > quota {
			if listed {
				err = db.write(ctx, deleteSweep, day, gocql.UUID(f.ID), f.Owner).Exec()
			}
			return errors.Join(fmt.Errorf("file %v of %q: %d bytes on %d, quota %d: %w", f.ID, f.Owner, f.Size, bytes.n(), quota, store.ErrQuota), err)
		}
		if !listed {
			if _, err := db.fileRow(ctx, f.Owner, f.ID); err == nil {
				return fmt.Errorf("file %v: %w", f.ID, store.ErrConflict)
			} else if !errors.Is(err, store.ErrNotFound) {
				return fail(err)
			}
			// The row, then its day's listing, so that the listing's
			// write time is after the row's (see pruneDay).
			if err := db.write(ctx, insertSweep, day, gocql.UUID(f.ID), f.Owner).Exec(); err != nil {
				return fail(err)
			}
			if err := db.write(ctx, insertDay, day).Exec(); err != nil {
				return fail(err)
			}
			listed = true
		}
		b := db.fileBatch(ctx)
		b.Query(insertFile, f.Owner, gocql.UUID(f.ID), int(store.FilePending), f.Name, f.ContentType, f.Size, f.Width, f.Height, f.Blurhash)
		b.Query(setFileBytes, bytes.n()+f.Size, f.Owner, bytes.value())
		applied, err := db.execFileBatch(ctx, b, db.settleFile(f.Owner, f.ID, func(_ store.File, ok bool) casOutcome {
			if ok {
				return casApplied // its id is fresh: the record is this one
			}
			return casNotApplied
		}))
		if err != nil {
			return fail(err)
		}
		if applied {
			return nil
		}
		if existing, err := db.fileRow(ctx, f.Owner, f.ID); err == nil {
			// Created meanwhile: the sweep's row is its own unless it is
			// attached or doomed already.
			if existing.State == store.FileAttached || existing.State == store.FileDoomed {
				err = db.write(ctx, deleteSweep, day, gocql.UUID(f.ID), f.Owner).Exec()
			}
			return errors.Join(fmt.Errorf("file %v: %w", f.ID, store.ErrConflict), err)
		} else if !errors.Is(err, store.ErrNotFound) {
			return fail(err)
		}
	}
	return fail(errFileContended)
}

// fileBatch returns a conditional batch of one owner's partition.
func (db *DB) fileBatch(ctx context.Context) *gocql.Batch {
	return db.session.NewBatch(gocql.UnloggedBatch).WithContext(ctx)
}

// execFileBatch executes a conditional batch and reports whether it
// applied; an unknown outcome is settled by settle (see lwt).
func (db *DB) execFileBatch(ctx context.Context, b *gocql.Batch, settle settleFunc) (bool, error) {
	applied, iter, err := db.session.MapExecuteBatchCAS(b, map[string]any{})
	if err == nil {
		err = iter.Close()
	}
	return settleUnknown(ctx, applied, err, settle)
}

// settleFile returns the read-back of a change of owner's file id: at
// serial consistency, outcome says from the file found (ok false: none)
// what became of the change.
func (db *DB) settleFile(owner string, id store.FileID, outcome func(f store.File, ok bool) casOutcome) settleFunc {
	return func(ctx context.Context) (casOutcome, error) {
		f, err := db.serialFile(ctx, owner, id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return casNotApplied, err
		}
		return outcome(f, err == nil), nil
	}
}

// ownerBytes is the static column bytes as read: nil when it was never
// written.
type ownerBytes struct{ bytes *int64 }

func (b ownerBytes) n() int64 {
	if b.bytes == nil {
		return 0
	}
	return *b.bytes
}

// value binds the condition on bytes: null when it was never written.
func (b ownerBytes) value() any {
	if b.bytes == nil {
		return nil
	}
	return *b.bytes
}

func (db *DB) fileBytes(ctx context.Context, owner string) (ownerBytes, error) {
	var b ownerBytes
	err := db.query(ctx, selectFileBytes, owner).Scan(&b.bytes)
	if errors.Is(err, gocql.ErrNotFound) {
		return ownerBytes{}, nil
	}
	if err != nil {
		return ownerBytes{}, fmt.Errorf("read the file bytes of %q: %w", owner, err)
	}
	return b, nil
}

// FileBytes reads owner's bytes.
func (db *DB) FileBytes(ctx context.Context, owner string) (int64, error) {
	b, err := db.fileBytes(ctx, owner)
	if err != nil {
		return 0, fmt.Errorf("cassandra: %w", err)
	}
	return b.n(), nil
}

// File reads owner's file id.
func (db *DB) File(ctx context.Context, owner string, id store.FileID) (store.File, error) {
	f, err := db.fileRow(ctx, owner, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return store.File{}, fmt.Errorf("cassandra: %w", err)
	}
	return f, err
}

// fileRow reads a row of files, or fails with ErrNotFound.
func (db *DB) fileRow(ctx context.Context, owner string, id store.FileID) (store.File, error) {
	return db.readFile(ctx, db.query, owner, id)
}

// serialFile reads a row of files at serial consistency (see serialRead),
// to settle a change whose outcome is unknown.
func (db *DB) serialFile(ctx context.Context, owner string, id store.FileID) (store.File, error) {
	return db.readFile(ctx, db.serialRead, owner, id)
}

func (db *DB) readFile(ctx context.Context, query func(ctx context.Context, stmt string, args ...any) *gocql.Query, owner string, id store.FileID) (store.File, error) {
	if id.IsZero() {
		return store.File{}, fmt.Errorf("file %v of %q: %w", id, owner, store.ErrNotFound)
	}
	f := store.File{Attachment: store.Attachment{ID: id}, Owner: owner}
	var (
		state   int
		message gocql.UUID
	)
	err := query(ctx, selectFile, owner, gocql.UUID(id)).Scan(&state, &f.Name, &f.ContentType, &f.Size, &f.Width, &f.Height, &f.Blurhash, &message, &f.Room)
	if errors.Is(err, gocql.ErrNotFound) || err == nil && state == 0 {
		// A row without a state is what a change racing a removal leaves.
		return store.File{}, fmt.Errorf("file %v of %q: %w", id, owner, store.ErrNotFound)
	}
	if err != nil {
		return store.File{}, fmt.Errorf("read file %v of %q: %w", id, owner, err)
	}
	f.State, f.Message = store.FileState(state), store.MessageID(message)
	return f, nil
}

// CompleteFile makes the pending file ready and moves its owner's bytes by
// the difference of its size, in one conditional batch, retried while only
// the bytes moved.
func (db *DB) CompleteFile(ctx context.Context, owner string, a store.Attachment) error {
	fail := func(err error) error { return fmt.Errorf("cassandra: complete file %v of %q: %w", a.ID, owner, err) }
	for range maxFileTrials {
		f, err := db.fileRow(ctx, owner, a.ID)
		if errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err != nil {
			return fail(err)
		}
		if f.State != store.FilePending {
			return fmt.Errorf("complete file %v of %q in state %d: %w", a.ID, owner, f.State, store.ErrConflict)
		}
		bytes, err := db.fileBytes(ctx, owner)
		if err != nil {
			return fail(err)
		}
		b := db.fileBatch(ctx)
		b.Query(completeFile, int(store.FileReady), a.Name, a.ContentType, a.Size, a.Width, a.Height, a.Blurhash, owner, gocql.UUID(a.ID), int(store.FilePending))
		b.Query(setFileBytes, bytes.n()+a.Size-f.Size, owner, bytes.value())
		applied, err := db.execFileBatch(ctx, b, db.settleFile(owner, a.ID, func(f store.File, ok bool) casOutcome {
			switch {
			case ok && f.State == store.FilePending:
				return casNotApplied
			case ok && f.State == store.FileReady && f.Attachment == a:
				return casApplied
			}
			return casRejected
		}))
		if err != nil {
			return fail(err)
		}
		if applied {
			return nil
		}
	}
	return fail(errFileContended)
}

// ClaimFiles reads the files, then claims them in one conditional batch,
// each on its state being ready: Paxos applies it all or not at all.
func (db *DB) ClaimFiles(ctx context.Context, owner string, ids []store.FileID, room string, message store.MessageID) error {
	fail := func(err error) error { return fmt.Errorf("cassandra: claim files of %q: %w", owner, err) }
	ids = uniqueFiles(ids)
	for _, id := range ids {
		f, err := db.fileRow(ctx, owner, id)
		if errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err != nil {
			return fail(err)
		}
		if f.State != store.FileReady {
			return fmt.Errorf("claim file %v of %q in state %d: %w", id, owner, f.State, store.ErrConflict)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	b := db.fileBatch(ctx)
	for _, id := range ids {
		b.Query(claimFile, int(store.FileClaimed), messageValue(message), room, owner, gocql.UUID(id), int(store.FileReady))
	}
	applied, err := db.execFileBatch(ctx, b, func(ctx context.Context) (casOutcome, error) {
		ready := 0
		for _, id := range ids {
			f, err := db.serialFile(ctx, owner, id)
			switch {
			case err != nil && !errors.Is(err, store.ErrNotFound):
				return casNotApplied, err
			case err == nil && f.State == store.FileReady:
				ready++
			case err != nil || f.State != store.FileClaimed || f.Message != message:
				return casRejected, nil
			}
		}
		if ready == len(ids) {
			return casNotApplied, nil
		}
		return casApplied, nil // all or none: one claimed by message is all
	})
	if err != nil {
		return fail(err)
	}
	if !applied {
		return fmt.Errorf("claim files of %q: one is no longer ready: %w", owner, store.ErrConflict)
	}
	return nil
}

// messageValue binds the message of a claim: null for a picture's (a
// timeuuid cell cannot hold the zero id).
func messageValue(message store.MessageID) any {
	if message.IsZero() {
		return nil
	}
	return gocql.UUID(message)
}

// uniqueFiles returns ids without repeats, in their first order: a
// conditional batch may not name a row twice.
func uniqueFiles(ids []store.FileID) []store.FileID {
	var out []store.FileID
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// AttachFiles makes each claimed file attached (on its state being
// claimed), then takes it off the sweep's day. Files in another state, or
// unknown, are left as they are.
func (db *DB) AttachFiles(ctx context.Context, owner string, ids []store.FileID) error {
	for _, id := range uniqueFiles(ids) {
		applied, err := lwt(ctx, db.query(ctx, changeState, int(store.FileAttached), owner, gocql.UUID(id), int(store.FileClaimed)), nil,
			db.settleFile(owner, id, func(f store.File, ok bool) casOutcome {
				switch {
				case ok && f.State == store.FileAttached:
					return casApplied
				case ok && f.State == store.FileClaimed:
					return casNotApplied
				}
				return casRejected
			}))
		if err == nil && applied {
			err = db.write(ctx, deleteSweep, int(store.BucketOf(id.Time())), gocql.UUID(id), owner).Exec()
		}
		if err != nil {
			return fmt.Errorf("cassandra: attach file %v of %q: %w", id, owner, err)
		}
	}
	return nil
}

// ReleaseFiles lists each file in the sweep's day of its id (the row, then
// the day, as CreateFile does), then makes it claimed on its state being
// attached; a file found in another state loses the row again, unless it
// is claimed (released twice), whose row it is.
func (db *DB) ReleaseFiles(ctx context.Context, owner string, ids []store.FileID) error {
	for _, id := range uniqueFiles(ids) {
		if err := db.releaseFile(ctx, owner, id); err != nil {
			return fmt.Errorf("cassandra: release file %v of %q: %w", id, owner, err)
		}
	}
	return nil
}

func (db *DB) releaseFile(ctx context.Context, owner string, id store.FileID) error {
	f, err := db.fileRow(ctx, owner, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && f.State != store.FileAttached {
		return nil
	}
	if err != nil {
		return err
	}
	day := int(store.BucketOf(id.Time()))
	if err := db.write(ctx, insertSweep, day, gocql.UUID(id), owner).Exec(); err != nil {
		return err
	}
	if err := db.write(ctx, insertDay, day).Exec(); err != nil {
		return err
	}
	var state int
	applied, err := lwt(ctx, db.query(ctx, changeState, int(store.FileClaimed), owner, gocql.UUID(id), int(store.FileAttached)), map[string]any{"state": &state},
		db.settleFile(owner, id, func(f store.File, ok bool) casOutcome {
			switch {
			case ok && f.State == store.FileClaimed:
				return casApplied
			case ok && f.State == store.FileAttached:
				return casNotApplied
			}
			if ok {
				state = int(f.State)
			}
			return casRejected
		}))
	if err != nil || applied || store.FileState(state) == store.FileClaimed {
		return err
	}
	return db.write(ctx, deleteSweep, day, gocql.UUID(id), owner).Exec()
}

// DoomFiles lists each file in the sweep's doomed day, makes it doomed
// (on its existing), and takes it off the day of its id.
func (db *DB) DoomFiles(ctx context.Context, owner string, ids []store.FileID) error {
	for _, id := range uniqueFiles(ids) {
		if err := db.doomFile(ctx, owner, id); err != nil {
			return fmt.Errorf("cassandra: doom file %v of %q: %w", id, owner, err)
		}
	}
	return nil
}

func (db *DB) doomFile(ctx context.Context, owner string, id store.FileID) error {
	f, err := db.fileRow(ctx, owner, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && f.State == store.FileDoomed {
		return nil
	}
	if err != nil {
		return err
	}
	if err := db.write(ctx, insertSweep, doomedDay, gocql.UUID(id), owner).Exec(); err != nil {
		return err
	}
	applied, err := lwt(ctx, db.query(ctx, doomFile, int(store.FileDoomed), owner, gocql.UUID(id)), nil,
		db.settleFile(owner, id, func(f store.File, ok bool) casOutcome {
			switch {
			case ok && f.State == store.FileDoomed:
				return casApplied
			case ok:
				return casNotApplied
			}
			return casRejected
		}))
	if err != nil || !applied {
		return err // not applied: removed meanwhile, and the sweep's row is harmless
	}
	return db.write(ctx, deleteSweep, int(store.BucketOf(id.Time())), gocql.UUID(id), owner).Exec()
}

// DoomOwnerFiles reads the ids of owner's partition and dooms each.
func (db *DB) DoomOwnerFiles(ctx context.Context, owner string) error {
	iter := db.query(ctx, selectFileIDs, owner).Iter()
	var (
		ids []store.FileID
		id  gocql.UUID
	)
	for iter.Scan(&id) {
		ids = append(ids, store.FileID(id))
	}
	if err := iter.Close(); err != nil {
		return fmt.Errorf("cassandra: list the files of %q: %w", owner, err)
	}
	return db.DoomFiles(ctx, owner, ids)
}

// DueFiles reads up to limit rows of the doomed day, and up to limit rows
// of the listed days up to createdBefore's, oldest first, older than
// createdBefore; merges the two by id, and reads the records of the first
// limit. An attached file still listed (AttachFiles stopped between its
// writes, or is between them now) is not due: its row is deleted, and the
// read goes again for the files after it, so that a sweep of limit 1 does
// not stop on it (a few times at most).
func (db *DB) DueFiles(ctx context.Context, createdBefore time.Time, limit int) ([]store.File, error) {
	if limit <= 0 {
		return nil, nil
	}
	var (
		files []store.File
		err   error
	)
	for range maxDueReads {
		var skipped int
		files, skipped, err = db.dueFiles(ctx, createdBefore, limit)
		if err != nil || skipped == 0 || len(files) >= limit {
			break
		}
	}
	return files, err
}

// maxDueReads bounds DueFiles' reads.
const maxDueReads = 8

// dueFiles is a read of DueFiles; skipped counts the attached files it
// found listed and took off.
func (db *DB) dueFiles(ctx context.Context, createdBefore time.Time, limit int) (_ []store.File, skipped int, _ error) {
	fail := func(err error) ([]store.File, int, error) { return nil, 0, fmt.Errorf("cassandra: due files: %w", err) }
	due, err := scanSweep(db.query(ctx, selectDoomedFiles, doomedDay, limit).Iter(), nil)
	if err != nil {
		return fail(err)
	}
	days, err := db.sweepDays(ctx, store.BucketOf(createdBefore))
	if err != nil {
		return fail(err)
	}
	before := gocql.UUID(store.MinMessageID(createdBefore))
	var made []store.File
	prunable := min(store.BucketOf(createdBefore), store.BucketOf(time.Now().Add(-pruneAfter)))
	for _, day := range days {
		readAt, found := time.Now().UnixMicro(), len(made)
		if made, err = scanSweep(db.query(ctx, selectSweep, day, before, limit-len(made)).Iter(), made); err != nil {
			return fail(err)
		}
		if len(made) == found && day < int(prunable) {
			if err := db.pruneDay(ctx, day, readAt); err != nil {
				return fail(err)
			}
		}
		if len(made) >= limit {
			break
		}
	}
	due = append(due, made...)
	slices.SortFunc(due, func(a, b store.File) int { return a.ID.Compare(b.ID) })
	// A file being doomed is listed in both for a moment (see doomFile).
	due = slices.CompactFunc(due, func(a, b store.File) bool { return a.ID == b.ID && a.Owner == b.Owner })
	due = due[:min(limit, len(due))]
	files := make([]store.File, 0, len(due))
	for _, f := range due {
		rec, err := db.fileRow(ctx, f.Owner, f.ID)
		switch {
		case err == nil && rec.State == store.FileAttached:
			// AttachFiles stopped before it took the file off its day.
			if err := db.write(ctx, deleteSweep, int(store.BucketOf(f.ID.Time())), gocql.UUID(f.ID), f.Owner).Exec(); err != nil {
				return fail(err)
			}
			skipped++
			continue
		case err == nil:
			f = rec
		case !errors.Is(err, store.ErrNotFound):
			return fail(err)
		}
		files = append(files, f)
	}
	return files, skipped, nil
}

// pruneAfter is how old a day of file_sweep must be for DueFiles to take
// its listing off once it reads it empty: files are made now, so no new
// row is expected in it.
const pruneAfter = 48 * time.Hour

// pruneDay deletes the listing of a day of file_sweep that a read begun at
// readAt (Unix microseconds) found empty. The delete is at readAt: a file
// made in that day after the read writes its row, then the listing, at a
// later time, which the delete does not shadow, so no row is left
// unlisted (clocks agreeing within the time between the two).
func (db *DB) pruneDay(ctx context.Context, day int, readAt int64) error {
	return db.write(ctx, deleteDay, readAt, day).Exec()
}

// sweepDays reads the listed days of file_sweep up to last, oldest first.
func (db *DB) sweepDays(ctx context.Context, last store.Bucket) ([]int, error) {
	iter := db.query(ctx, selectDays).Iter()
	var (
		days []int
		day  int
	)
	for iter.Scan(&day) {
		if day != doomedDay && day <= int(last) {
			days = append(days, day)
		}
	}
	return days, iter.Close()
}

// scanSweep appends the rows of a file_sweep read to files, as doomed
// files with an id and an owner (DueFiles reads their records after).
func scanSweep(iter *gocql.Iter, files []store.File) ([]store.File, error) {
	var (
		id    gocql.UUID
		owner string
	)
	for iter.Scan(&id, &owner) {
		files = append(files, store.File{Attachment: store.Attachment{ID: store.FileID(id)}, Owner: owner, State: store.FileDoomed})
	}
	return files, iter.Close()
}

// RemoveFile deletes the record and takes its size from the owner's bytes
// in one conditional batch (on the state and the bytes read, retried while
// they move), then deletes its sweep rows.
func (db *DB) RemoveFile(ctx context.Context, owner string, id store.FileID) error {
	fail := func(err error) error { return fmt.Errorf("cassandra: remove file %v of %q: %w", id, owner, err) }
	for trial := 0; ; trial++ {
		if trial == maxFileTrials {
			return fail(errFileContended)
		}
		f, err := db.fileRow(ctx, owner, id)
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil {
			return fail(err)
		}
		bytes, err := db.fileBytes(ctx, owner)
		if err != nil {
			return fail(err)
		}
		b := db.fileBatch(ctx)
		b.Query(deleteFile, owner, gocql.UUID(id), int(f.State))
		b.Query(setFileBytes, bytes.n()-f.Size, owner, bytes.value())
		applied, err := db.execFileBatch(ctx, b, db.settleFile(owner, id, func(_ store.File, ok bool) casOutcome {
			if ok {
				return casNotApplied
			}
			return casApplied
		}))
		if err != nil {
			return fail(err)
		}
		if applied {
			break
		}
	}
	if id.IsZero() {
		return nil
	}
	fo := newFanout(2)
	for _, day := range []int{doomedDay, int(store.BucketOf(id.Time()))} {
		fo.Go(func() error { return db.write(ctx, deleteSweep, day, gocql.UUID(id), owner).Exec() })
	}
	if err := fo.Wait(); err != nil {
		return fail(err)
	}
	return nil
}
