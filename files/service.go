package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/killrchat/chatql/files/images"
	"github.com/killrchat/chatql/store"
)

// Limits bound what people may send and what checking it costs.
type Limits struct {
	// MaxFileBytes caps one file.
	MaxFileBytes int64
	// QuotaBytes caps the files one user keeps at once, sent or pending.
	QuotaBytes int64
	// MaxImagePixels caps an image's width times height, checked before
	// its pixels are decoded: checking an image takes up to 20 bytes a
	// pixel (see package images), and as many are checked at once as there
	// are CPUs. An animated GIF's frames may have twice as many in all.
	MaxImagePixels int64
	// UploadURLTTL is how long a signed upload URL is valid.
	UploadURLTTL time.Duration
	// DownloadURLTTL is how long a signed download URL is valid, at least:
	// URLs are signed for windows of it, so the same file has the same URL
	// for a while and browsers cache it.
	DownloadURLTTL time.Duration
	// UnattachedTTL is how long a file may wait to be sent with a message;
	// the sweep removes it after that.
	UnattachedTTL time.Duration
}

// DefaultLimits are the limits of a server whose configuration says none.
var DefaultLimits = Limits{
	MaxFileBytes:   25 << 20,
	QuotaBytes:     1 << 30,
	MaxImagePixels: images.DefaultLimits.MaxPixels,
	UploadURLTTL:   15 * time.Minute,
	DownloadURLTTL: time.Hour,
	UnattachedTTL:  24 * time.Hour,
}

// ThumbnailSides are the sizes of an image's thumbnails: each fits in a
// square of the side, in pixels.
var ThumbnailSides = []int{images.SmallThumbnailSide, images.PreviewSide}

// Service takes people's files from the request to upload one to the
// message that carries it, and removes them when they go: with the message,
// with the account, or unsent after UnattachedTTL.
//
// A file's life: CreateUpload records it (FilePending) and signs a URL the
// client PUTs the bytes to; Complete reads them, refusing a file whose
// bytes are not what was declared, and for an image strips its metadata
// and makes its thumbnails (FileReady); Claim, in the post of a message,
// marks it as that message's (FileClaimed), and Attached once the message
// is stored (FileAttached). Every record not yet attached is on the
// store's sweep list, so a crash anywhere leaves nothing forever: Sweep
// attaches the claimed files whose message was stored, and removes the
// rest once they are due.
type Service struct {
	Records store.Files
	Objects Objects
	Limits  Limits
	Log     *slog.Logger
	// Now is the clock (time.Now when nil); NewID makes file ids
	// (store.NewMessageID when nil).
	Now   func() time.Time
	NewID func() store.FileID

	// images holds a token per image being checked: decoding one takes up
	// to 4 x MaxImagePixels bytes, so they take turns, as many at once as
	// there are CPUs.
	images chan struct{}
}

// NewService returns the files of the records and objects given.
func NewService(records store.Files, objects Objects, limits Limits, log *slog.Logger) *Service {
	return &Service{Records: records, Objects: objects, Limits: limits, Log: log,
		images: make(chan struct{}, runtime.GOMAXPROCS(0))}
}

func (s *Service) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

func (s *Service) newID() store.FileID {
	if s.NewID == nil {
		return store.NewMessageID()
	}
	return s.NewID()
}

// The objects of a file are named after its id: the bytes as uploaded, an
// image's copy without metadata, and its thumbnails.
func uploadKey(id store.FileID) string { return "f/" + id.String() + "/upload" }
func imageKey(id store.FileID) string  { return "f/" + id.String() + "/image" }
func thumbnailKey(id store.FileID, side int) string {
	return fmt.Sprintf("f/%s/t%d", id, side)
}

// objectKeys are every object a file may have.
func objectKeys(id store.FileID) []string {
	keys := []string{uploadKey(id), imageKey(id)}
	for _, side := range ThumbnailSides {
		keys = append(keys, thumbnailKey(id, side))
	}
	return keys
}

// servedKey is the object a reader of a file downloads.
func servedKey(a store.Attachment) string {
	if a.IsImage() {
		return imageKey(a.ID)
	}
	return uploadKey(a.ID)
}

// Upload is a file to be uploaded: its id, and the request that uploads it.
type Upload struct {
	File    store.File
	Request SignedRequest
	Expires time.Time
}

// CreateUpload records owner's new file of size bytes, named name and
// declared as contentType, and signs the request that uploads its bytes.
func (s *Service) CreateUpload(ctx context.Context, owner, name, contentType string, size int64) (Upload, error) {
	name, err := FileName(name)
	if err != nil {
		return Upload{}, err
	}
	contentType, err = ContentType(contentType)
	if err != nil {
		return Upload{}, err
	}
	switch {
	case size < 1:
		return Upload{}, store.Invalidf("invalid size %d: a file has at least 1 byte", size)
	case size > s.Limits.MaxFileBytes:
		return Upload{}, store.Invalidf("invalid size %d: a file has at most %d bytes", size, s.Limits.MaxFileBytes)
	}
	f := store.File{
		Attachment: store.Attachment{ID: s.newID(), Name: name, ContentType: contentType, Size: size},
		Owner:      owner,
		State:      store.FilePending,
	}
	req, err := s.Objects.UploadURL(ctx, uploadKey(f.ID), contentType, size, s.Limits.UploadURLTTL)
	if err != nil {
		return Upload{}, err
	}
	if err := s.Records.CreateFile(ctx, f, s.Limits.QuotaBytes); err != nil {
		if errors.Is(err, store.ErrQuota) {
			used, _ := s.Records.FileBytes(ctx, owner)
			return Upload{}, fmt.Errorf("%w: your files take %d of your %d bytes, and this one has %d", store.ErrQuota, used, s.Limits.QuotaBytes, size)
		}
		return Upload{}, err
	}
	return Upload{File: f, Request: req, Expires: s.now().Add(s.Limits.UploadURLTTL)}, nil
}

// ParseFileID reads a file id the API was given.
func ParseFileID(id string) (store.FileID, error) {
	fid, err := store.ParseMessageID(id)
	if err != nil {
		return fid, store.Invalidf("invalid file id %s: want the id createUpload gave", store.Quote(id))
	}
	return fid, nil
}

// Complete checks the bytes uploaded for owner's file id and makes it ready
// to send. A file whose bytes are not what was declared (another type, an
// image that does not decode or has too many pixels) is refused and
// removed, objects and all. Completing a ready file returns it.
func (s *Service) Complete(ctx context.Context, owner string, id store.FileID) (store.File, error) {
	f, err := s.Records.File(ctx, owner, id)
	if err != nil {
		return f, fileError(id, err)
	}
	switch f.State {
	case store.FileReady:
		return f, nil
	case store.FilePending:
	default:
		return f, fmt.Errorf("%w: file %s was already sent", store.ErrConflict, id)
	}
	checked, err := s.check(ctx, f)
	if err != nil {
		if errors.Is(err, store.ErrInvalid) {
			s.remove(ctx, f)
		}
		return f, err
	}
	if err := s.Records.CompleteFile(ctx, owner, checked); err != nil {
		if errors.Is(err, store.ErrConflict) {
			// A racing Complete finished it first.
			return s.Records.File(ctx, owner, id)
		}
		return f, err
	}
	f.Attachment, f.State = checked, store.FileReady
	return f, nil
}

// fileError names the file a store error is about.
func fileError(id store.FileID, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("file %s: %w (it is none of your uploads)", id, store.ErrNotFound)
	}
	return err
}

// check reads f's uploaded bytes and returns what f holds: its real type,
// and for an image its size in pixels and placeholder, once its copy
// without metadata and its thumbnails are stored.
func (s *Service) check(ctx context.Context, f store.File) (store.Attachment, error) {
	body, info, err := s.Objects.Open(ctx, uploadKey(f.ID))
	if errors.Is(err, ErrNotFound) {
		return f.Attachment, store.Invalidf("file %s has no bytes yet: PUT them to its upload URL first", f.ID)
	}
	if err != nil {
		return f.Attachment, err
	}
	defer body.Close()
	if info.Size != f.Size {
		return f.Attachment, store.Invalidf("file %s has %d bytes, not the %d declared", f.ID, info.Size, f.Size)
	}
	head := make([]byte, 512)
	n, err := io.ReadFull(body, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return f.Attachment, fmt.Errorf("%w: read file %s: %v", ErrUnavailable, f.ID, err)
	}
	head = head[:n]
	a := f.Attachment
	a.ContentType = images.Sniff(head)
	if err := agrees(f.ContentType, a.ContentType); err != nil {
		return a, err
	}
	if !isImage(a.ContentType) {
		return a, nil
	}
	data, err := io.ReadAll(io.MultiReader(bytes.NewReader(head), io.LimitReader(body, f.Size)))
	if err != nil {
		return a, fmt.Errorf("%w: read file %s: %v", ErrUnavailable, f.ID, err)
	}
	return s.storeImage(ctx, a, data)
}

// isImage reports whether a sniffed type is an image the server checks,
// cleans and makes thumbnails of.
func isImage(contentType string) bool {
	return strings.HasPrefix(contentType, "image/")
}

// agrees refuses bytes whose type is not the declared one: an image must
// be declared as what it is (or as application/octet-stream), and
// something declared as an image must be one.
func agrees(declared, sniffed string) error {
	declared, _, _ = strings.Cut(declared, ";")
	declared = strings.TrimSpace(declared)
	switch {
	case isImage(sniffed) && declared != sniffed && declared != "application/octet-stream":
		return store.Invalidf("invalid file: its bytes are %s, not the %s declared", sniffed, declared)
	case isImage(declared) && declared != sniffed:
		return store.Invalidf("invalid file: declared %s, but its bytes are no such image (%s)", declared, sniffed)
	}
	return nil
}

// storeImage cleans an uploaded image and stores its clean copy and its
// thumbnails.
func (s *Service) storeImage(ctx context.Context, a store.Attachment, data []byte) (store.Attachment, error) {
	select {
	case s.images <- struct{}{}:
		defer func() { <-s.images }()
	case <-ctx.Done():
		return a, ctx.Err()
	}
	clean, info, err := images.Clean(data, images.Limits{MaxPixels: s.Limits.MaxImagePixels, MaxTotalPixels: 2 * s.Limits.MaxImagePixels})
	if err != nil {
		return a, imageError(a.ID, err)
	}
	a.ContentType, a.Width, a.Height, a.Blurhash = info.ContentType, info.Width, info.Height, info.Blurhash
	a.Size = int64(len(clean))
	if err := s.Objects.Put(ctx, imageKey(a.ID), bytes.NewReader(clean), a.Size, a.ContentType); err != nil {
		return a, err
	}
	thumbs, err := images.Thumbnails(clean, ThumbnailSides...)
	if err != nil {
		return a, imageError(a.ID, err)
	}
	for i, thumb := range thumbs {
		if err := s.Objects.Put(ctx, thumbnailKey(a.ID, ThumbnailSides[i]), bytes.NewReader(thumb.Data), int64(len(thumb.Data)), thumb.ContentType); err != nil {
			return a, err
		}
	}
	if err := s.Objects.Delete(ctx, uploadKey(a.ID)); err != nil {
		// Removed with the file's other objects when the file goes.
		s.Log.WarnContext(ctx, "files: could not delete an image's upload", "file", a.ID, "err", err)
	}
	return a, nil
}

// imageError says why an image was refused.
func imageError(id store.FileID, err error) error {
	switch {
	case errors.Is(err, images.ErrTooManyPixels):
		return store.Invalidf("invalid image %s: %v", id, err)
	case errors.Is(err, images.ErrCorrupt), errors.Is(err, images.ErrUnsupported):
		return store.Invalidf("invalid image %s: it does not decode (%v)", id, err)
	}
	return err
}

// Prepare completes owner's files ids, to be sent with one message, and
// returns them in order for Claim. It refuses more than MaxAttachments, a
// file given twice, another's file and one that does not check. A file
// already sent comes back as it is, for Claim to judge: a retry of its
// message may be claiming it again.
func (s *Service) Prepare(ctx context.Context, owner string, ids []string) ([]store.File, error) {
	if len(ids) > store.MaxAttachments {
		return nil, store.Invalidf("invalid attachments: a message carries at most %d files", store.MaxAttachments)
	}
	prepared := make([]store.File, 0, len(ids))
	for _, id := range ids {
		fid, err := ParseFileID(id)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(prepared, func(f store.File) bool { return f.ID == fid }) {
			return nil, store.Invalidf("invalid attachments: file %s is given twice", fid)
		}
		f, err := s.Complete(ctx, owner, fid)
		if err != nil && !(errors.Is(err, store.ErrConflict) && f.ID == fid) {
			return nil, err
		}
		prepared = append(prepared, f)
	}
	return prepared, nil
}

// Claim marks owner's files, as Prepare read them, as those of message,
// being posted in room, and returns them as its attachments, in order. A
// file is sent once: a file of another message, or one too old to be sent
// (it is about to be swept), is refused; the claim itself refuses one sent
// since Prepare read it. A retry of the same message claims its files
// again.
func (s *Service) Claim(ctx context.Context, owner string, prepared []store.File, room string, message store.MessageID) ([]store.Attachment, error) {
	atts := make([]store.Attachment, 0, len(prepared))
	var toClaim []store.FileID
	for _, f := range prepared {
		switch {
		case f.State == store.FileClaimed && f.Message == message:
			// Claimed by an earlier try of this message.
		case f.State != store.FileReady:
			return nil, fmt.Errorf("%w: file %s was already sent", store.ErrConflict, f.ID)
		case s.now().Sub(f.ID.Time()) > s.Limits.UnattachedTTL-s.Limits.UnattachedTTL/8:
			return nil, store.Invalidf("invalid attachments: file %s was uploaded too long ago to be sent; upload it again", f.ID)
		default:
			toClaim = append(toClaim, f.ID)
		}
		atts = append(atts, f.Attachment)
	}
	if len(toClaim) > 0 {
		if err := s.Records.ClaimFiles(ctx, owner, toClaim, room, message); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return nil, fmt.Errorf("%w: a file of this message was sent with another one meanwhile", store.ErrConflict)
			}
			return nil, err
		}
	}
	return atts, nil
}

// ClaimPicture claims owner's file id, which must be an image, as a
// picture: the owner's avatar when room is empty, the room's icon
// otherwise. It completes the file if needed; a file that is no image is
// refused (store.ErrInvalid), one already sent or used is ErrConflict.
// The caller stores the picture, then calls Attached; should it crash
// between, the sweep asks its Holds whether the profile or room took it.
func (s *Service) ClaimPicture(ctx context.Context, owner, id, room string) (store.Attachment, error) {
	fid, err := ParseFileID(id)
	if err != nil {
		return store.Attachment{}, err
	}
	f, err := s.Complete(ctx, owner, fid)
	if errors.Is(err, store.ErrConflict) {
		return store.Attachment{}, fmt.Errorf("%w: file %s was already sent with a message or used as a picture; upload it again", store.ErrConflict, fid)
	}
	if err != nil {
		return store.Attachment{}, err
	}
	if !f.IsImage() {
		return store.Attachment{}, store.Invalidf("invalid picture: file %s is %s, not an image", fid, f.ContentType)
	}
	if s.now().Sub(f.ID.Time()) > s.Limits.UnattachedTTL-s.Limits.UnattachedTTL/8 {
		return store.Attachment{}, store.Invalidf("invalid picture: file %s was uploaded too long ago to be used; upload it again", fid)
	}
	if err := s.Records.ClaimFiles(ctx, owner, []store.FileID{fid}, room, store.MessageID{}); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return store.Attachment{}, fmt.Errorf("%w: file %s was used meanwhile", store.ErrConflict, fid)
		}
		return store.Attachment{}, err
	}
	return f.Attachment, nil
}

// Attached records that the message holding owner's files atts is
// stored. Should it fail, the sweep finds the message and does it.
func (s *Service) Attached(ctx context.Context, owner string, atts []store.Attachment) {
	if len(atts) == 0 {
		return
	}
	if err := s.Records.AttachFiles(ctx, owner, attachmentIDs(atts)); err != nil {
		s.Log.WarnContext(ctx, "files: attaching a stored message's files failed; the sweep will", "owner", owner, "err", err)
	}
}

// Release puts owner's files atts, held as a picture, back on the sweep's
// list before their holder lets them go (store.Files.ReleaseFiles): should
// the server die before Discard, the sweep removes them unless the holder
// still holds them.
func (s *Service) Release(ctx context.Context, owner string, atts []store.Attachment) error {
	if len(atts) == 0 {
		return nil
	}
	return s.Records.ReleaseFiles(ctx, owner, attachmentIDs(atts))
}

// Discard removes owner's files atts, whose message was deleted: at once
// if it can, through the sweep otherwise.
func (s *Service) Discard(ctx context.Context, owner string, atts []store.Attachment) error {
	if len(atts) == 0 {
		return nil
	}
	ids := attachmentIDs(atts)
	if err := s.Records.DoomFiles(ctx, owner, ids); err != nil {
		return err
	}
	for _, id := range ids {
		s.remove(ctx, store.File{Attachment: store.Attachment{ID: id}, Owner: owner})
	}
	return nil
}

// DiscardOwner dooms every file of owner, whose account is deleted; the
// sweep removes them.
func (s *Service) DiscardOwner(ctx context.Context, owner string) error {
	return s.Records.DoomOwnerFiles(ctx, owner)
}

func attachmentIDs(atts []store.Attachment) []store.FileID {
	ids := make([]store.FileID, len(atts))
	for i, a := range atts {
		ids[i] = a.ID
	}
	return ids
}

// remove deletes f's objects, then its record. It reports whether both
// went; what stays is removed by a later sweep.
func (s *Service) remove(ctx context.Context, f store.File) bool {
	for _, key := range objectKeys(f.ID) {
		if err := s.Objects.Delete(ctx, key); err != nil {
			s.Log.WarnContext(ctx, "files: delete failed; the sweep will retry", "key", key, "err", err)
			return false
		}
	}
	if err := s.Records.RemoveFile(ctx, f.Owner, f.ID); err != nil {
		s.Log.WarnContext(ctx, "files: removing a record failed; the sweep will retry", "file", f.ID, "err", err)
		return false
	}
	return true
}

// URL signs the download of a file for a reader of its message. URLs are
// signed for windows of DownloadURLTTL: within one, a file's URL is the
// same (browsers cache it), and it is valid for at least DownloadURLTTL.
func (s *Service) URL(ctx context.Context, a store.Attachment) (string, error) {
	return s.signedDownload(ctx, servedKey(a), ResponseHeaders{ContentType: a.ContentType, ContentDisposition: attachmentDisposition(a)})
}

// ThumbnailURL signs the download of an image's thumbnail of side.
func (s *Service) ThumbnailURL(ctx context.Context, a store.Attachment, side int) (string, error) {
	return s.signedDownload(ctx, thumbnailKey(a.ID, side), ResponseHeaders{})
}

func (s *Service) signedDownload(ctx context.Context, key string, h ResponseHeaders) (string, error) {
	ttl := s.Limits.DownloadURLTTL
	now := s.now()
	windowEnd := now.Truncate(ttl).Add(2 * ttl)
	return s.Objects.DownloadURL(ctx, key, windowEnd.Sub(now), h)
}

// Holds reports whether the holder a claimed file names still holds it:
// the stored message of its room (File.Message), or for a picture the
// owner's profile (its avatar) or the room (its icon). It is the sweep's
// test of a claimed file.
type Holds func(ctx context.Context, f store.File) (bool, error)

// Sweep handles the files due on the store's sweep list, up to limit: a
// claimed file whose holder holds it (its message was stored, or the
// profile or room took it as its picture) is attached; any other (pending,
// ready or claimed for longer than UnattachedTTL, or doomed) is removed,
// objects and record. It returns how many it handled.
func (s *Service) Sweep(ctx context.Context, holds Holds, limit int) (int, error) {
	due, err := s.Records.DueFiles(ctx, s.now().Add(-s.Limits.UnattachedTTL), limit)
	if err != nil {
		return 0, err
	}
	handled := 0
	for _, f := range due {
		if f.State == store.FileClaimed {
			held, err := holds(ctx, f)
			if err != nil {
				s.Log.WarnContext(ctx, "files: sweep could not read a claimed file's holder", "file", f.ID, "err", err)
				continue
			}
			if held {
				if err := s.Records.AttachFiles(ctx, f.Owner, []store.FileID{f.ID}); err == nil {
					handled++
				}
				continue
			}
		}
		if s.remove(ctx, f) {
			handled++
		}
	}
	return handled, nil
}

// RunSweeper sweeps every interval until ctx ends.
func (s *Service) RunSweeper(ctx context.Context, holds Holds, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		for {
			n, err := s.Sweep(ctx, holds, 100)
			if err != nil && ctx.Err() == nil {
				s.Log.WarnContext(ctx, "files: sweep failed", "err", err)
			}
			if n < 100 || err != nil {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
