package chat

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/killrchat/chatql/files"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
)

// ErrNoFiles refuses files on a server that keeps none.
var ErrNoFiles = fmt.Errorf("%w: this server keeps no files", store.ErrForbidden)

// CreateUpload starts me's upload of a file (see files.Service).
func (s *Service) CreateUpload(ctx context.Context, me store.UserRef, name, contentType string, size int64) (files.Upload, error) {
	if s.Files == nil {
		return files.Upload{}, ErrNoFiles
	}
	if err := s.limit(ctx, ratelimit.Upload, me); err != nil {
		return files.Upload{}, err
	}
	return s.Files.CreateUpload(ctx, me.Login, name, contentType, size)
}

// CompleteUpload checks the bytes me uploaded for a file.
func (s *Service) CompleteUpload(ctx context.Context, me store.UserRef, id string) (store.File, error) {
	if s.Files == nil {
		return store.File{}, ErrNoFiles
	}
	if err := s.limit(ctx, ratelimit.Upload, me); err != nil {
		return store.File{}, err
	}
	fid, err := files.ParseFileID(id)
	if err != nil {
		return store.File{}, err
	}
	return s.Files.Complete(ctx, me.Login, fid)
}

// FileQuota is me's use of their quota: the bytes their files take, and
// the limits.
func (s *Service) FileQuota(ctx context.Context, me store.UserRef) (used int64, limits files.Limits, err error) {
	if s.Files == nil {
		return 0, files.Limits{}, ErrNoFiles
	}
	used, err = s.Files.Records.FileBytes(ctx, me.Login)
	return used, s.Files.Limits, err
}

// prepareFiles completes the files a draft attaches before the message is
// written, so that the checking of an image (seconds for a large one) is
// not made while the conversation's writes wait (see beginRoomWrite).
func (s *Service) prepareFiles(ctx context.Context, me store.UserRef, ids []string) ([]store.File, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if s.Files == nil {
		return nil, ErrNoFiles
	}
	return s.Files.Prepare(ctx, me.Login, ids)
}

// claimFiles makes the files prepared (by prepareFiles) msg's attachments,
// claimed for it.
func (s *Service) claimFiles(ctx context.Context, msg *store.Message, prepared []store.File) error {
	if len(prepared) == 0 {
		return nil
	}
	atts, err := s.Files.Claim(ctx, msg.Author.Login, prepared, msg.Room, msg.ID)
	msg.Attachments = atts
	return err
}

// attachedFiles records that msg, stored, holds its files.
func (s *Service) attachedFiles(ctx context.Context, msg *store.Message) {
	if s.Files != nil {
		s.Files.Attached(ctx, msg.Author.Login, msg.Attachments)
	}
}

// discardFiles removes the files of msg, deleted.
func (s *Service) discardFiles(ctx context.Context, msg store.Message) {
	if s.Files == nil || len(msg.Attachments) == 0 {
		return
	}
	if err := s.Files.Discard(context.WithoutCancel(ctx), msg.Author.Login, msg.Attachments); err != nil {
		s.Log.WarnContext(ctx, "files: the files of a deleted message stay until the owner's are swept", "message", msg.ID, "err", err)
	}
}

// FileHeld reports whether the holder a claimed file names holds it: the
// files' sweep's test of a file whose message's post, or whose picture's
// change, may have failed (files.Holds).
func (s *Service) FileHeld(ctx context.Context, f store.File) (bool, error) {
	if f.IsPicture() {
		return s.pictureHolds(ctx, f)
	}
	return s.messageHolds(ctx, f.Room, f.Message, f.ID)
}

// messageHolds reports whether the stored message id, of room, holds the
// file.
func (s *Service) messageHolds(ctx context.Context, room string, id store.MessageID, file store.FileID) (bool, error) {
	m, err := s.Store.Message(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return m.Room == room && !m.Deleted && slices.ContainsFunc(m.Attachments, func(a store.Attachment) bool { return a.ID == file }), nil
}

func attachmentIDs(atts []store.Attachment) []string {
	ids := make([]string, len(atts))
	for i, a := range atts {
		ids[i] = a.ID.String()
	}
	return ids
}

// roomFilesPage is how many messages roomFiles reads at a time.
const roomFilesPage = 500

// roomFiles lists the files of every message of a room its creator me is
// about to delete, by owner: the files of a room go with it, and its
// messages, which say what they are, go first. It reads the whole history
// once; for anyone but the creator (whose delete the store refuses) it
// reads nothing.
func (s *Service) roomFiles(ctx context.Context, room string, me store.UserRef) (map[string][]store.Attachment, error) {
	if s.Files == nil {
		return nil, nil
	}
	m, err := s.Store.Membership(ctx, room, me.Login)
	if err != nil || m.Creator.Login != me.Login {
		return nil, nil // the store's DeleteRoom gives the reason
	}
	byOwner := map[string][]store.Attachment{}
	var before store.MessageID
	for {
		page, err := s.Store.Messages(ctx, room, before, roomFilesPage)
		if err != nil {
			return nil, err
		}
		for _, msg := range page {
			if len(msg.Attachments) > 0 {
				byOwner[msg.Author.Login] = append(byOwner[msg.Author.Login], msg.Attachments...)
			}
		}
		if len(page) < roomFilesPage {
			return byOwner, nil
		}
		before = page[len(page)-1].ID
	}
}

// discardRoomFiles removes the files of a deleted room's messages.
func (s *Service) discardRoomFiles(ctx context.Context, byOwner map[string][]store.Attachment) {
	for owner, atts := range byOwner {
		if err := s.Files.Discard(context.WithoutCancel(ctx), owner, atts); err != nil {
			s.Log.WarnContext(ctx, "files: the files of a deleted room stay until their owner's are swept", "owner", owner, "err", err)
		}
	}
}
