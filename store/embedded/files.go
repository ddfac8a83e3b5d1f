package embedded

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/killrchat/chatql/store"
)

var _ store.Files = (*DB)(nil)

// Every change to an owner's files holds the lock of their partition of
// files, which guards their row of file_owners too, so the quota check and
// the state changes are compare-and-set. A file not attached has a row in
// file_sweep, written in the same batch as each change of its state.

// CreateFile records f as FilePending, lists it in the sweep's day of its
// id and adds its size to the owner's bytes, unless that exceeds quota.
func (db *DB) CreateFile(ctx context.Context, f store.File, quota int64) error {
	if f.ID.IsZero() || f.Owner == "" {
		return store.Invalidf("file %v of %q: no id or owner", f.ID, f.Owner)
	}
	end, err := db.beginLocked(ctx, filesPartition(f.Owner))
	if err != nil {
		return err
	}
	defer end()

	if found, err := db.has(fileKey(f.Owner, f.ID)); err != nil || found {
		if err == nil {
			err = fmt.Errorf("file %v: %w", f.ID, store.ErrConflict)
		}
		return err
	}
	owner, err := db.fileOwner(f.Owner)
	if err != nil {
		return err
	}
	if owner.Bytes+f.Size > quota {
		return fmt.Errorf("file %v of %q: %d bytes on %d, quota %d: %w", f.ID, f.Owner, f.Size, owner.Bytes, quota, store.ErrQuota)
	}
	f.State, f.Message, f.Room = store.FilePending, store.MessageID{}, ""
	owner.Bytes += f.Size
	b := db.batch()
	b.set(fileKey(f.Owner, f.ID), newFileRecordRow(f))
	b.set(fileOwnerKey(f.Owner), owner)
	b.setEmpty(fileSweepKey(store.BucketOf(f.ID.Time()), f.ID, f.Owner))
	if err := b.commit(); err != nil {
		return fmt.Errorf("creating file %v of %q: %w", f.ID, f.Owner, err)
	}
	return nil
}

// fileOwner reads owner's row of file_owners; none is zero bytes.
func (db *DB) fileOwner(owner string) (fileOwnerRow, error) {
	row, _, err := getRow[fileOwnerRow](db, fileOwnerKey(owner))
	if err != nil {
		return row, fmt.Errorf("reading the file bytes of %q: %w", owner, err)
	}
	return row, nil
}

// File reads owner's file id.
func (db *DB) File(ctx context.Context, owner string, id store.FileID) (store.File, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return store.File{}, err
	}
	defer end()

	row, err := db.fileRecord(owner, id)
	if err != nil {
		return store.File{}, err
	}
	return row.file(owner), nil
}

// fileRecord reads owner's row of file id, or fails with ErrNotFound.
func (db *DB) fileRecord(owner string, id store.FileID) (fileRecordRow, error) {
	row, found, err := getRow[fileRecordRow](db, fileKey(owner, id))
	if err != nil {
		return row, fmt.Errorf("reading file %v of %q: %w", id, owner, err)
	}
	if !found {
		return row, fmt.Errorf("file %v of %q: %w", id, owner, store.ErrNotFound)
	}
	return row, nil
}

// FileBytes reads owner's row of file_owners.
func (db *DB) FileBytes(ctx context.Context, owner string) (int64, error) {
	end, err := db.begin(ctx)
	if err != nil {
		return 0, err
	}
	defer end()

	row, err := db.fileOwner(owner)
	return row.Bytes, err
}

// CompleteFile makes the pending file ready with a, changing the owner's
// bytes by the difference of its size.
func (db *DB) CompleteFile(ctx context.Context, owner string, a store.Attachment) error {
	end, err := db.beginLocked(ctx, filesPartition(owner))
	if err != nil {
		return err
	}
	defer end()

	row, err := db.fileRecord(owner, a.ID)
	if err != nil {
		return err
	}
	if row.State != store.FilePending {
		return fmt.Errorf("completing file %v of %q in state %d: %w", a.ID, owner, row.State, store.ErrConflict)
	}
	bytes, err := db.fileOwner(owner)
	if err != nil {
		return err
	}
	bytes.Bytes += a.Size - row.Size
	row.fileRow, row.State = fileRows([]store.Attachment{a})[0], store.FileReady
	b := db.batch()
	b.set(fileKey(owner, a.ID), row)
	b.set(fileOwnerKey(owner), bytes)
	if err := b.commit(); err != nil {
		return fmt.Errorf("completing file %v of %q: %w", a.ID, owner, err)
	}
	return nil
}

// ClaimFiles checks every file before it changes any, all under the
// owner's lock, and changes them all in one batch.
func (db *DB) ClaimFiles(ctx context.Context, owner string, ids []store.FileID, room string, message store.MessageID) error {
	end, err := db.beginLocked(ctx, filesPartition(owner))
	if err != nil {
		return err
	}
	defer end()

	// Every file is checked before the batch is made: a refused claim has
	// no batch to close, and commit closes the one it makes.
	var claimed []fileRecordRow
	unique := uniqueFiles(ids)
	for _, id := range unique {
		row, err := db.fileRecord(owner, id)
		if err != nil {
			return err
		}
		if row.State != store.FileReady {
			return fmt.Errorf("claiming file %v of %q in state %d: %w", id, owner, row.State, store.ErrConflict)
		}
		row.State, row.Room, row.Message = store.FileClaimed, room, message
		claimed = append(claimed, row)
	}
	b := db.batch()
	for i, id := range unique {
		b.set(fileKey(owner, id), claimed[i])
	}
	if err := b.commit(); err != nil {
		return fmt.Errorf("claiming the files of %q: %w", owner, err)
	}
	return nil
}

// uniqueFiles returns ids without repeats, in their first order.
func uniqueFiles(ids []store.FileID) []store.FileID {
	var out []store.FileID
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// AttachFiles makes the claimed files attached and takes them off the
// sweep's list. Files in another state, or unknown, are left as they are.
func (db *DB) AttachFiles(ctx context.Context, owner string, ids []store.FileID) error {
	return db.changeFiles(ctx, owner, ids, func(b *batch, id store.FileID, row *fileRecordRow) bool {
		if row.State != store.FileClaimed {
			return false
		}
		row.State = store.FileAttached
		b.delete(fileSweepKey(store.BucketOf(id.Time()), id, owner))
		return true
	})
}

// ReleaseFiles makes the attached files claimed and lists them in the
// sweep's day of their id.
func (db *DB) ReleaseFiles(ctx context.Context, owner string, ids []store.FileID) error {
	return db.changeFiles(ctx, owner, ids, func(b *batch, id store.FileID, row *fileRecordRow) bool {
		if row.State != store.FileAttached {
			return false
		}
		row.State = store.FileClaimed
		b.setEmpty(fileSweepKey(store.BucketOf(id.Time()), id, owner))
		return true
	})
}

// DoomFiles makes the files doomed and moves them to the sweep's doomed
// day.
func (db *DB) DoomFiles(ctx context.Context, owner string, ids []store.FileID) error {
	return db.changeFiles(ctx, owner, ids, doomFile(owner))
}

// doomFile is the change of DoomFiles.
func doomFile(owner string) func(b *batch, id store.FileID, row *fileRecordRow) bool {
	return func(b *batch, id store.FileID, row *fileRecordRow) bool {
		if row.State == store.FileDoomed {
			return false
		}
		row.State = store.FileDoomed
		b.delete(fileSweepKey(store.BucketOf(id.Time()), id, owner))
		b.setEmpty(fileSweepKey(doomedDay, id, owner))
		return true
	}
}

// DoomOwnerFiles dooms every file of owner, in one batch.
func (db *DB) DoomOwnerFiles(ctx context.Context, owner string) error {
	end, err := db.begin(ctx)
	if err != nil {
		return err
	}
	var ids []store.FileID
	p := filesPartition(owner)
	err = db.scan(ctx, p, p.end(), false, func(k, _ []byte) (bool, error) {
		id, err := store.MessageIDFromSortKey(k[len(p):])
		ids = append(ids, id)
		return true, err
	})
	end()
	if err != nil {
		return fmt.Errorf("listing the files of %q: %w", owner, err)
	}
	return db.DoomFiles(ctx, owner, ids)
}

// changeFiles applies change to each of owner's files ids that exists,
// under the owner's lock, and writes those it changed in one batch.
func (db *DB) changeFiles(ctx context.Context, owner string, ids []store.FileID, change func(b *batch, id store.FileID, row *fileRecordRow) bool) error {
	end, err := db.beginLocked(ctx, filesPartition(owner))
	if err != nil {
		return err
	}
	defer end()

	b := db.batch()
	for _, id := range uniqueFiles(ids) {
		row, found, err := getRow[fileRecordRow](db, fileKey(owner, id))
		if err != nil {
			b.Close()
			return fmt.Errorf("reading file %v of %q: %w", id, owner, err)
		}
		if found && change(b, id, &row) {
			b.set(fileKey(owner, id), row)
		}
	}
	if err := b.commit(); err != nil {
		return fmt.Errorf("changing the files of %q: %w", owner, err)
	}
	return nil
}

// DueFiles merges the doomed day of the sweep's list with its days of
// files made before createdBefore, both oldest first.
func (db *DB) DueFiles(ctx context.Context, createdBefore time.Time, limit int) ([]store.File, error) {
	if limit <= 0 {
		return nil, nil
	}
	end, err := db.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()

	doomed := fileSweepDay(doomedDay)
	due, err := db.sweepRows(ctx, doomed, doomed.end(), limit)
	if err != nil {
		return nil, err
	}
	before := store.MinMessageID(createdBefore)
	made, err := db.sweepRows(ctx, doomed.end(), fileSweepDay(store.BucketOf(createdBefore)).asc(before), limit)
	if err != nil {
		return nil, err
	}
	due = append(due, made...)
	slices.SortFunc(due, func(a, b store.File) int { return a.ID.Compare(b.ID) })
	files := make([]store.File, 0, min(limit, len(due)))
	for _, f := range due[:min(limit, len(due))] {
		row, found, err := getRow[fileRecordRow](db, fileKey(f.Owner, f.ID))
		if err != nil {
			return nil, fmt.Errorf("reading file %v of %q: %w", f.ID, f.Owner, err)
		}
		if found {
			f = row.file(f.Owner)
		}
		files = append(files, f)
	}
	return files, nil
}

// sweepRows reads up to limit rows of file_sweep in [lower, upper) as
// files with an id and an owner, doomed (a row whose record is gone is
// swept as a doomed file: RemoveFile then takes it off).
func (db *DB) sweepRows(ctx context.Context, lower, upper []byte, limit int) ([]store.File, error) {
	var files []store.File
	err := db.scan(ctx, lower, upper, false, func(k, _ []byte) (bool, error) {
		rest := k[len(fileSweepDay(0)):]
		id, err := store.MessageIDFromSortKey(rest[:descIDLen])
		if err != nil {
			return false, err
		}
		owner, _, err := parseStr(rest[descIDLen:])
		if err != nil {
			return false, err
		}
		files = append(files, store.File{Attachment: store.Attachment{ID: id}, Owner: owner, State: store.FileDoomed})
		return len(files) < limit, nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the sweep's list: %w", err)
	}
	return files, nil
}

// RemoveFile deletes the file's record and sweep rows and subtracts its
// size from the owner's bytes.
func (db *DB) RemoveFile(ctx context.Context, owner string, id store.FileID) error {
	end, err := db.beginLocked(ctx, filesPartition(owner))
	if err != nil {
		return err
	}
	defer end()

	b := db.batch()
	b.delete(fileSweepKey(store.BucketOf(id.Time()), id, owner))
	b.delete(fileSweepKey(doomedDay, id, owner))
	row, found, err := getRow[fileRecordRow](db, fileKey(owner, id))
	if err != nil {
		b.Close()
		return fmt.Errorf("reading file %v of %q: %w", id, owner, err)
	}
	if found {
		bytes, err := db.fileOwner(owner)
		if err != nil {
			b.Close()
			return err
		}
		bytes.Bytes -= row.Size
		b.delete(fileKey(owner, id))
		b.set(fileOwnerKey(owner), bytes)
	}
	if err := b.commit(); err != nil {
		return fmt.Errorf("removing file %v of %q: %w", id, owner, err)
	}
	return nil
}
