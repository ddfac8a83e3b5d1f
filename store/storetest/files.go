package storetest

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// noQuota is a quota no test reaches.
const noQuota = 1 << 40

// oldTimes returns a random instant between 1990 and 2010 on a whole
// second: files made then are due for any createdBefore after it, and no
// other test's files are made at the same time.
func oldTimes() time.Time {
	start := time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC)
	return start.Add(time.Duration(rand.Int64N(20*365*24*3600)) * time.Second)
}

// newFile returns a pending file of owner, of size bytes, made at at.
func newFile(owner string, at time.Time, size int64) store.File {
	id := store.MessageIDAt(at)
	return store.File{
		Attachment: store.Attachment{ID: id, Name: "cat " + id.String()[:8] + ".png", ContentType: "application/octet-stream", Size: size},
		Owner:      owner,
		State:      store.FilePending,
	}
}

// mustCreateFile records a pending file of owner.
func mustCreateFile(t *testing.T, ctx context.Context, s store.Files, owner string, at time.Time, size int64) store.File {
	t.Helper()
	f := newFile(owner, at, size)
	if err := s.CreateFile(ctx, f, noQuota); err != nil {
		t.Fatalf("CreateFile(%+v) = %v, want nil", f, err)
	}
	t.Cleanup(func() { _ = s.RemoveFile(context.Background(), owner, f.ID) })
	return f
}

// readied returns the attachment of f as read from its bytes: an image
// now, of another size.
func readied(f store.File, size int64) store.Attachment {
	a := f.Attachment
	a.ContentType, a.Size, a.Width, a.Height, a.Blurhash = "image/png", size, 640, 480, "LEHV6nWB2yk8pyo0adR*.7kCMdnj"
	return a
}

// mustReadyFile records a ready file of owner.
func mustReadyFile(t *testing.T, ctx context.Context, s store.Files, owner string, at time.Time, size int64) store.File {
	t.Helper()
	f := mustCreateFile(t, ctx, s, owner, at, size)
	a := readied(f, size)
	if err := s.CompleteFile(ctx, owner, a); err != nil {
		t.Fatalf("CompleteFile(%v) = %v, want nil", f.ID, err)
	}
	f.Attachment, f.State = a, store.FileReady
	return f
}

// checkFile reads want's record and compares it with want.
func checkFile(t *testing.T, ctx context.Context, s store.Files, what string, want store.File) {
	t.Helper()
	got, err := s.File(ctx, want.Owner, want.ID)
	if err != nil || got != want {
		t.Errorf("%s: File(%v) = %+v, %v; want %+v", what, want.ID, got, err, want)
	}
}

// checkFileBytes compares owner's bytes with want.
func checkFileBytes(t *testing.T, ctx context.Context, s store.Files, what, owner string, want int64) {
	t.Helper()
	if got, err := s.FileBytes(ctx, owner); err != nil || got != want {
		t.Errorf("%s: FileBytes(%q) = %d, %v; want %d", what, owner, got, err, want)
	}
}

// testFilesLifecycle walks a file from its request to its removal:
// pending, ready (its size corrected), claimed, attached, doomed, removed,
// with the owner's bytes following it, and each state change refused from
// the wrong state.
func testFilesLifecycle(t *testing.T, s store.Store) {
	ctx := newContext(t)
	owner := newLogin(t, "files")
	if got, err := s.FileBytes(ctx, owner); err != nil || got != 0 {
		t.Errorf("FileBytes of a new owner = %d, %v; want 0", got, err)
	}
	f := mustCreateFile(t, ctx, s, owner, time.Now(), 1000)
	checkFile(t, ctx, s, "created", f)
	checkFileBytes(t, ctx, s, "created", owner, 1000)
	wantErr(t, "CreateFile of an existing id", s.CreateFile(ctx, f, noQuota), store.ErrConflict)
	wantErr(t, "ClaimFiles of a pending file", s.ClaimFiles(ctx, owner, []store.FileID{f.ID}, "room", store.NewMessageID()), store.ErrConflict)

	a := readied(f, 700)
	if err := s.CompleteFile(ctx, owner, a); err != nil {
		t.Fatalf("CompleteFile = %v", err)
	}
	f.Attachment, f.State = a, store.FileReady
	checkFile(t, ctx, s, "completed", f)
	checkFileBytes(t, ctx, s, "completed 300 bytes smaller", owner, 700)
	wantErr(t, "CompleteFile twice", s.CompleteFile(ctx, owner, a), store.ErrConflict)
	checkFileBytes(t, ctx, s, "completed twice", owner, 700)

	msg := store.NewMessageID()
	if err := s.ClaimFiles(ctx, owner, []store.FileID{f.ID}, "tea-party", msg); err != nil {
		t.Fatalf("ClaimFiles = %v", err)
	}
	f.State, f.Room, f.Message = store.FileClaimed, "tea-party", msg
	checkFile(t, ctx, s, "claimed", f)
	wantErr(t, "ClaimFiles twice", s.ClaimFiles(ctx, owner, []store.FileID{f.ID}, "tea-party", store.NewMessageID()), store.ErrConflict)
	checkFile(t, ctx, s, "claimed twice", f)

	if err := s.AttachFiles(ctx, owner, []store.FileID{f.ID}); err != nil {
		t.Fatalf("AttachFiles = %v", err)
	}
	f.State = store.FileAttached
	checkFile(t, ctx, s, "attached", f)
	wantErr(t, "CompleteFile of an attached file", s.CompleteFile(ctx, owner, a), store.ErrConflict)

	if err := s.DoomFiles(ctx, owner, []store.FileID{f.ID, store.NewMessageID()}); err != nil {
		t.Fatalf("DoomFiles (one unknown id) = %v", err)
	}
	f.State = store.FileDoomed
	checkFile(t, ctx, s, "doomed", f)
	checkFileBytes(t, ctx, s, "doomed", owner, 700)

	for range 2 {
		if err := s.RemoveFile(ctx, owner, f.ID); err != nil {
			t.Fatalf("RemoveFile = %v", err)
		}
		_, err := s.File(ctx, owner, f.ID)
		wantErr(t, "File after RemoveFile", err, store.ErrNotFound)
		checkFileBytes(t, ctx, s, "removed", owner, 0)
	}
}

// testFilesQuota: a file that would take its owner past the quota is not
// recorded; one that reaches it exactly is; removing one frees its bytes.
func testFilesQuota(t *testing.T, s store.Store) {
	ctx := newContext(t)
	owner := newLogin(t, "quota")
	big := mustCreateFile(t, ctx, s, owner, time.Now(), 60)
	over := newFile(owner, time.Now(), 50)
	wantErr(t, "CreateFile past the quota", s.CreateFile(ctx, over, 100), store.ErrQuota)
	_, err := s.File(ctx, owner, over.ID)
	wantErr(t, "File refused for quota", err, store.ErrNotFound)
	checkFileBytes(t, ctx, s, "after the refusal", owner, 60)

	exact := newFile(owner, time.Now(), 40)
	if err := s.CreateFile(ctx, exact, 100); err != nil {
		t.Fatalf("CreateFile reaching the quota exactly = %v", err)
	}
	t.Cleanup(func() { _ = s.RemoveFile(context.Background(), owner, exact.ID) })
	checkFileBytes(t, ctx, s, "at the quota", owner, 100)

	if err := s.RemoveFile(ctx, owner, big.ID); err != nil {
		t.Fatalf("RemoveFile = %v", err)
	}
	checkFileBytes(t, ctx, s, "after a removal", owner, 40)
	if err := s.CreateFile(ctx, over, 100); err != nil {
		t.Errorf("CreateFile within the quota freed = %v", err)
	}
	t.Cleanup(func() { _ = s.RemoveFile(context.Background(), owner, over.ID) })
	checkFileBytes(t, ctx, s, "full again", owner, 90)
}

// testFilesQuotaConcurrent: of racing CreateFile calls, no more pass than
// the quota holds, and the owner's bytes are the sum of those that did.
func testFilesQuotaConcurrent(t *testing.T, s store.Store) {
	ctx := newContext(t)
	owner := newLogin(t, "quotarace")
	const n, size, quota = 8, 30, 100
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		passed []store.File
	)
	for range n {
		wg.Go(func() {
			f := newFile(owner, time.Now(), size)
			err := s.CreateFile(ctx, f, quota)
			switch {
			case err == nil:
				mu.Lock()
				passed = append(passed, f)
				mu.Unlock()
			case !errors.Is(err, store.ErrQuota):
				t.Errorf("CreateFile = %v, want nil or ErrQuota", err)
			}
		})
	}
	wg.Wait()
	for _, f := range passed {
		t.Cleanup(func() { _ = s.RemoveFile(context.Background(), owner, f.ID) })
	}
	if len(passed) != quota/size {
		t.Errorf("%d of %d racing CreateFile of %d bytes passed a quota of %d, want %d", len(passed), n, size, quota, quota/size)
	}
	checkFileBytes(t, ctx, s, "after the race", owner, int64(len(passed)*size))
}

// testFilesOtherOwner: another owner's file is not found by any method
// that names an owner, and is left as it was.
func testFilesOtherOwner(t *testing.T, s store.Store) {
	ctx := newContext(t)
	alice, bob := newLogin(t, "alice"), newLogin(t, "bob")
	f := mustCreateFile(t, ctx, s, alice, time.Now(), 10)
	_, err := s.File(ctx, bob, f.ID)
	wantErr(t, "File of another owner", err, store.ErrNotFound)
	wantErr(t, "CompleteFile of another owner", s.CompleteFile(ctx, bob, readied(f, 10)), store.ErrNotFound)
	r := mustReadyFile(t, ctx, s, alice, time.Now(), 10)
	wantErr(t, "ClaimFiles of another owner", s.ClaimFiles(ctx, bob, []store.FileID{r.ID}, "room", store.NewMessageID()), store.ErrNotFound)
	if err := s.DoomFiles(ctx, bob, []store.FileID{r.ID}); err != nil {
		t.Errorf("DoomFiles of another owner's = %v, want nil (skipped)", err)
	}
	if err := s.RemoveFile(ctx, bob, r.ID); err != nil {
		t.Errorf("RemoveFile of another owner's = %v, want nil (nothing to remove)", err)
	}
	checkFile(t, ctx, s, "pending, after bob's calls", f)
	checkFile(t, ctx, s, "ready, after bob's calls", r)
	checkFileBytes(t, ctx, s, "alice's, after bob's calls", alice, 20)
	checkFileBytes(t, ctx, s, "bob's", bob, 0)
}

// testFilesClaimAllOrNone: a claim of several files with one not ready,
// or one unknown, claims none of them.
func testFilesClaimAllOrNone(t *testing.T, s store.Store) {
	ctx := newContext(t)
	owner := newLogin(t, "claim")
	a := mustReadyFile(t, ctx, s, owner, time.Now(), 1)
	b := mustReadyFile(t, ctx, s, owner, time.Now(), 2)
	pending := mustCreateFile(t, ctx, s, owner, time.Now(), 3)
	msg := store.NewMessageID()
	wantErr(t, "ClaimFiles with a pending file", s.ClaimFiles(ctx, owner, []store.FileID{a.ID, b.ID, pending.ID}, "room", msg), store.ErrConflict)
	wantErr(t, "ClaimFiles with an unknown file", s.ClaimFiles(ctx, owner, []store.FileID{a.ID, store.NewMessageID(), b.ID}, "room", msg), store.ErrNotFound)
	for _, f := range []store.File{a, b, pending} {
		checkFile(t, ctx, s, "after the failed claims", f)
	}
	if err := s.ClaimFiles(ctx, owner, []store.FileID{b.ID, a.ID}, "room", msg); err != nil {
		t.Fatalf("ClaimFiles of two ready files = %v", err)
	}
	for _, f := range []store.File{a, b} {
		f.State, f.Room, f.Message = store.FileClaimed, "room", msg
		checkFile(t, ctx, s, "claimed together", f)
	}
}

// testFilesClaimRacing: of racing claims of one file by different
// messages, exactly one wins, and the record names its message.
func testFilesClaimRacing(t *testing.T, s store.Store) {
	ctx := newContext(t)
	owner := newLogin(t, "claimrace")
	for range 3 {
		f := mustReadyFile(t, ctx, s, owner, time.Now(), 5)
		other := mustReadyFile(t, ctx, s, owner, time.Now(), 5)
		const n = 6
		msgs := make([]store.MessageID, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			msgs[i] = store.NewMessageID()
			ids := []store.FileID{f.ID}
			if i%2 == 0 {
				ids = append(ids, other.ID) // some claim both: all or none still
			}
			wg.Go(func() { errs[i] = s.ClaimFiles(ctx, owner, ids, "room", msgs[i]) })
		}
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("claims %d and %d of one file both won", winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, store.ErrConflict):
				t.Fatalf("a losing claim = %v, want ErrConflict", err)
			}
		}
		if winner < 0 {
			t.Fatalf("no claim won: %v", errs)
		}
		f.State, f.Room, f.Message = store.FileClaimed, "room", msgs[winner]
		checkFile(t, ctx, s, "the winner's", f)
		if winner%2 == 0 {
			other.State, other.Room, other.Message = store.FileClaimed, "room", msgs[winner]
		}
		checkFile(t, ctx, s, "the other file", other)
	}
}

// ownDue lists the files of owner among DueFiles(createdBefore), checking
// that the whole list is oldest first and no longer than limit.
func ownDue(t *testing.T, ctx context.Context, s store.Files, owner string, createdBefore time.Time, limit int) []store.File {
	t.Helper()
	due, err := s.DueFiles(ctx, createdBefore, limit)
	if err != nil {
		t.Fatalf("DueFiles = %v", err)
	}
	if len(due) > limit {
		t.Errorf("DueFiles(limit %d) returned %d", limit, len(due))
	}
	if !slices.IsSortedFunc(due, func(a, b store.File) int { return a.ID.Compare(b.ID) }) {
		t.Errorf("DueFiles is not oldest first: %+v", due)
	}
	var own []store.File
	for _, f := range due {
		if f.Owner == owner {
			own = append(own, f)
		}
	}
	return own
}

// checkDue compares the ids and states of owner's due files with want's.
func checkDue(t *testing.T, what string, got []store.File, want ...store.File) {
	t.Helper()
	same := len(got) == len(want)
	for i := 0; same && i < len(got); i++ {
		same = got[i] == want[i]
	}
	if !same {
		t.Errorf("%s: due files\n got %+v\nwant %+v", what, got, want)
	}
}

// testDueFiles: the sweep's list holds the files made before its bound
// and not attached, oldest first, and the doomed files whenever they were
// made; a limit cuts it from the oldest.
func testDueFiles(t *testing.T, s store.Store) {
	ctx := newContext(t)
	owner := newLogin(t, "due")
	base := oldTimes()
	pending := mustCreateFile(t, ctx, s, owner, base.Add(1*time.Second), 1)
	ready := mustReadyFile(t, ctx, s, owner, base.Add(2*time.Second), 2)
	attached := mustReadyFile(t, ctx, s, owner, base.Add(3*time.Second), 3)
	claimed := mustReadyFile(t, ctx, s, owner, base.Add(4*time.Second), 4)
	later := mustCreateFile(t, ctx, s, owner, base.Add(48*time.Hour), 5)
	recent := mustCreateFile(t, ctx, s, owner, time.Now(), 6)
	msg := store.NewMessageID()
	for _, f := range []store.File{attached, claimed} {
		if err := s.ClaimFiles(ctx, owner, []store.FileID{f.ID}, "room", msg); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AttachFiles(ctx, owner, []store.FileID{attached.ID}); err != nil {
		t.Fatal(err)
	}
	claimed.State, claimed.Room, claimed.Message = store.FileClaimed, "room", msg

	bound := base.Add(24 * time.Hour)
	checkDue(t, "before a day after", ownDue(t, ctx, s, owner, bound, 1000), pending, ready, claimed)
	checkDue(t, "before the second file", ownDue(t, ctx, s, owner, base.Add(1500*time.Millisecond), 1000), pending)
	if first, err := s.DueFiles(ctx, bound, 1); err != nil || len(first) != 1 || first[0].ID.Compare(pending.ID) > 0 {
		t.Errorf("DueFiles(limit 1) = %+v, %v; want one file no newer than %v", first, err, pending.ID)
	}

	if err := s.DoomFiles(ctx, owner, []store.FileID{attached.ID, recent.ID}); err != nil {
		t.Fatal(err)
	}
	attached.State, recent.State = store.FileDoomed, store.FileDoomed
	attached.Attachment, attached.Room, attached.Message = readied(attached, 3), "room", msg
	want := []store.File{pending, ready, attached, claimed, recent}
	checkDue(t, "with two doomed", ownDue(t, ctx, s, owner, bound, 1000), want...)

	if err := s.RemoveFile(ctx, owner, ready.ID); err != nil {
		t.Fatal(err)
	}
	checkDue(t, "after a removal", ownDue(t, ctx, s, owner, bound, 1000), pending, attached, claimed, recent)
	checkDue(t, "all made since", ownDue(t, ctx, s, owner, time.Now().Add(time.Minute), 1000), pending, attached, claimed, later, recent)
}

// testDoomOwnerFiles: dooming an owner's files dooms each of them, in any
// state, and only theirs; removing them all brings the bytes to zero.
func testDoomOwnerFiles(t *testing.T, s store.Store) {
	ctx := newContext(t)
	owner, other := newLogin(t, "doomed"), newLogin(t, "spared")
	base := oldTimes()
	files := []store.File{
		mustCreateFile(t, ctx, s, owner, base.Add(time.Second), 10),
		mustReadyFile(t, ctx, s, owner, base.Add(2*time.Second), 20),
		mustCreateFile(t, ctx, s, owner, time.Now(), 30),
	}
	spared := mustCreateFile(t, ctx, s, other, time.Now(), 40)
	if err := s.DoomOwnerFiles(ctx, owner); err != nil {
		t.Fatalf("DoomOwnerFiles = %v", err)
	}
	for i := range files {
		files[i].State = store.FileDoomed
		checkFile(t, ctx, s, "doomed with its owner", files[i])
	}
	checkFile(t, ctx, s, "another owner's", spared)
	checkDue(t, "doomed", ownDue(t, ctx, s, owner, base, 1000), files...)
	for _, f := range files {
		if err := s.RemoveFile(ctx, owner, f.ID); err != nil {
			t.Fatal(err)
		}
	}
	checkFileBytes(t, ctx, s, "all removed", owner, 0)
	checkDue(t, "all removed", ownDue(t, ctx, s, owner, time.Now(), 1000))
}

// testFilesBytesConcurrent: changes of one owner's bytes by racing
// creates, completions and removals of different files all count: once
// every file is removed the owner has no bytes.
func testFilesBytesConcurrent(t *testing.T, s store.Store) {
	ctx := newContext(t)
	owner := newLogin(t, "bytesrace")
	keep := mustCreateFile(t, ctx, s, owner, time.Now(), 7)
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			f := newFile(owner, time.Now(), int64(100+i))
			if err := s.CreateFile(ctx, f, noQuota); err != nil {
				t.Errorf("CreateFile = %v", err)
				return
			}
			if err := s.CompleteFile(ctx, owner, readied(f, int64(50+i))); err != nil {
				t.Errorf("CompleteFile = %v", err)
			}
			if err := s.RemoveFile(ctx, owner, f.ID); err != nil {
				t.Errorf("RemoveFile = %v", err)
			}
		})
	}
	wg.Wait()
	checkFileBytes(t, ctx, s, "after the racing changes", owner, keep.Size)
}

// testFilesAttachRacingDoom: a file whose message is deleted while it is
// being attached ends doomed and due, whichever comes first.
func testFilesAttachRacingDoom(t *testing.T, s store.Store) {
	ctx := newContext(t)
	owner := newLogin(t, "attachrace")
	base := oldTimes()
	for i := range 5 {
		f := mustReadyFile(t, ctx, s, owner, base.Add(time.Duration(i)*time.Second), 1)
		msg := store.NewMessageID()
		if err := s.ClaimFiles(ctx, owner, []store.FileID{f.ID}, "room", msg); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Go(func() {
			if err := s.AttachFiles(ctx, owner, []store.FileID{f.ID}); err != nil {
				t.Errorf("AttachFiles = %v", err)
			}
		})
		wg.Go(func() {
			if err := s.DoomFiles(ctx, owner, []store.FileID{f.ID}); err != nil {
				t.Errorf("DoomFiles = %v", err)
			}
		})
		wg.Wait()
		f.State, f.Room, f.Message = store.FileDoomed, "room", msg
		checkFile(t, ctx, s, "attached and doomed at once", f)
		checkDue(t, "attached and doomed at once", ownDue(t, ctx, s, owner, base, 1000), f)
		if err := s.RemoveFile(ctx, owner, f.ID); err != nil {
			t.Fatal(err)
		}
	}
}
