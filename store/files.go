package store

import (
	"context"
	"errors"
	"time"
)

// FileID names a file someone sends: a timeuuid made when they asked to
// upload it. Its objects in the object store are named after it (see
// package files), and its time places it in the sweep's day.
type FileID = MessageID

// Attachment is a file a message carries, as the message's rows keep it:
// everything a reader needs to show it without another read.
type Attachment struct {
	ID FileID
	// Name is the file's name as the sender gave it, sanitized: no path,
	// no control or bidirectional formatting characters.
	Name string
	// ContentType is the type read from the bytes, never the declared one.
	ContentType string
	// Size is the size in bytes of the file as served (an image's metadata
	// stripped).
	Size int64
	// Width and Height are an image's, in pixels; zero for other files.
	Width, Height int
	// Blurhash is a short placeholder of an image (blurha.sh), shown while
	// it loads; empty for other files.
	Blurhash string
}

// Picture is an image shown with a user's name (their avatar) or a room's
// (its icon): a file of Owner's, whose quota it counts in, that they
// uploaded and claimed as a picture (see File.IsPicture).
type Picture struct {
	Attachment
	Owner string
}

// IsImage reports whether the attachment is an image with thumbnails.
func (a Attachment) IsImage() bool { return a.Width > 0 }

// FileState is where a file is in its life, from the request to upload it
// to the message that holds it.
type FileState uint8

const (
	// FilePending: asked for; its bytes may not have arrived.
	FilePending FileState = iota + 1
	// FileReady: its bytes arrived and were checked (CompleteFile); it may
	// be attached to one message.
	FileReady
	// FileClaimed: a message being posted attaches it (ClaimFiles); the
	// message id is in the record. A claim without a message is a
	// picture's: the owner's avatar when the record has no room, the
	// room's icon otherwise.
	FileClaimed
	// FileAttached: a stored message (or a profile, or a room, as its
	// picture) holds it; it lives as long as its holder holds it.
	FileAttached
	// FileDoomed: its message or owner was deleted: the sweep removes its
	// objects, then the record.
	FileDoomed
)

// File is the record of a file: who sent it and what became of it.
type File struct {
	Attachment
	Owner string
	State FileState
	// Message is the message that claimed or holds it (FileClaimed,
	// FileAttached), in Room. For a picture it is zero, and Room is the
	// room whose icon it is, or empty for the owner's avatar.
	Message MessageID
	Room    string
}

// IsPicture reports whether the file was claimed as a picture (an avatar
// or a room's icon) rather than by a message.
func (f File) IsPicture() bool { return f.Message.IsZero() }

// ErrQuota: the owner's files would exceed their quota of bytes.
var ErrQuota = errors.New("file quota exceeded")

// Files keeps the records of the files people send. The bytes are in an
// object store (package files); these records say whose they are, what
// state they are in, and which are due to be swept, so that a crash at any
// point leaves nothing forever: every record that is not FileAttached is in
// the sweep's list (DueFiles) from its creation until it is attached or
// removed.
type Files interface {
	// CreateFile records f as FilePending and adds f.Size to its owner's
	// bytes, unless that makes them exceed quota (ErrQuota, nothing
	// written). Its ID is new (ErrConflict if a file of the owner has it).
	CreateFile(ctx context.Context, f File, quota int64) error
	// File reads one of owner's files (ErrNotFound: none of theirs has id).
	File(ctx context.Context, owner string, id FileID) (File, error)
	// FileBytes is the sum of the sizes of owner's files, in every state
	// but removed.
	FileBytes(ctx context.Context, owner string) (int64, error)
	// CompleteFile turns a FilePending file into FileReady with what was
	// read of its bytes (a, whose ID is the file's; the size may differ
	// from the declared one, and the owner's bytes change by the
	// difference). ErrConflict if it is not FilePending.
	CompleteFile(ctx context.Context, owner string, a Attachment) error
	// ClaimFiles turns owner's FileReady files ids into FileClaimed by
	// message in room, all or none: ErrConflict (nothing changed) if one
	// is not FileReady, ErrNotFound if one is not owner's. A zero message
	// claims them as a picture (see FileClaimed).
	ClaimFiles(ctx context.Context, owner string, ids []FileID, room string, message MessageID) error
	// AttachFiles turns FileClaimed files into FileAttached, taking them
	// off the sweep's list: called once their message is stored. Files in
	// another state (doomed meanwhile), or unknown, are left as they are.
	AttachFiles(ctx context.Context, owner string, ids []FileID) error
	// ReleaseFiles turns owner's FileAttached files ids back into
	// FileClaimed, their holder kept, and puts them back on the sweep's
	// list (due as a claim of their creation time is): called before their
	// holder (a profile or room, as its picture) lets them go, so that a
	// crash after the change leaves them to the sweep, which removes them
	// unless the holder still holds them. Files in another state, or
	// unknown, are left as they are.
	ReleaseFiles(ctx context.Context, owner string, ids []FileID) error
	// DoomFiles turns owner's files ids, in any state, into FileDoomed and
	// puts them on the sweep's list, due now. Unknown ids are skipped.
	DoomFiles(ctx context.Context, owner string, ids []FileID) error
	// DoomOwnerFiles dooms every file of owner (their account is deleted).
	DoomOwnerFiles(ctx context.Context, owner string) error
	// DueFiles lists up to limit files on the sweep's list created before
	// createdBefore, or doomed (at any time), oldest first. A listed file
	// whose record is gone (a crash between RemoveFile's writes) comes as
	// FileDoomed with its ID and Owner alone, for the sweep to remove.
	DueFiles(ctx context.Context, createdBefore time.Time, limit int) ([]File, error)
	// RemoveFile deletes the record of owner's file id, whatever its state,
	// takes it off the sweep's list and subtracts its size from the owner's
	// bytes; removing a removed file does nothing. The sweep calls it
	// once the file's objects are deleted.
	RemoveFile(ctx context.Context, owner string, id FileID) error
}
