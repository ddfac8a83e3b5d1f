package cassandra

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gocql/gocql"
	"github.com/killrchat/chatql/store"
)

// A message's attachments are one text column of every copy (and the
// text of an inbox entry's last_files): their JSON, as fileJSON encodes
// them. They are written once, with the message, and erased with it, never
// changed one by one, so a frozen list of a user-defined type would buy
// nothing a reader uses, and JSON carries unchanged to the inbox tuple.
//
// Its preview is a cell of its own, preview (last_preview in an entry): a
// tuple of the edit it is of, edited_at in Unix milliseconds (0: never
// edited), and its JSON. A reader shows it only while the message's
// edited_at is still that edit: so an edit clears the preview without a
// write, and a preview of content an edit replaced, written late, never
// shows. Two previews of one edit tie on their write time and the tuples'
// values decide (see setLastEdit), which is harmless: either is of the
// content read.

// fileJSON is an attachment as the attachments column holds it.
type fileJSON struct {
	ID          gocql.UUID `json:"i"`
	Name        string     `json:"n,omitempty"`
	ContentType string     `json:"t,omitempty"`
	Size        int64      `json:"s,omitempty"`
	Width       int        `json:"w,omitempty"`
	Height      int        `json:"h,omitempty"`
	Blurhash    string     `json:"b,omitempty"`
}

// previewJSON is a link preview as the preview cells hold it.
type previewJSON struct {
	URL         string `json:"u"`
	Title       string `json:"t,omitempty"`
	Description string `json:"d,omitempty"`
	SiteName    string `json:"s,omitempty"`
	ImageURL    string `json:"i,omitempty"`
}

// attachmentsValue binds the attachments column: unset for none, so a
// message without attachments writes no cell (no null, no tombstone).
func attachmentsValue(as []store.Attachment) (any, error) {
	if len(as) == 0 {
		return gocql.UnsetValue, nil
	}
	return encodeAttachments(as)
}

func encodeAttachments(as []store.Attachment) (string, error) {
	files := make([]fileJSON, len(as))
	for i, a := range as {
		files[i] = fileJSON{ID: gocql.UUID(a.ID), Name: a.Name, ContentType: a.ContentType, Size: a.Size, Width: a.Width, Height: a.Height, Blurhash: a.Blurhash}
	}
	b, err := json.Marshal(files)
	if err != nil {
		return "", fmt.Errorf("encode attachments: %w", err)
	}
	return string(b), nil
}

// decodeAttachments reads the attachments column; an unreadable one (no
// version of this store writes it) reads as none.
func decodeAttachments(s string) []store.Attachment {
	var files []fileJSON
	if s == "" || json.Unmarshal([]byte(s), &files) != nil {
		return nil
	}
	as := make([]store.Attachment, len(files))
	for i, f := range files {
		as[i] = store.Attachment{ID: store.FileID(f.ID), Name: f.Name, ContentType: f.ContentType, Size: f.Size, Width: f.Width, Height: f.Height, Blurhash: f.Blurhash}
	}
	return as
}

// previewCell is a preview tuple as scanned: one destination per element.
type previewCell struct {
	version int64
	json    string
}

// editVersion is the version of content edited at editedAt (zero: never).
func editVersion(editedAt time.Time) int64 {
	if editedAt.IsZero() {
		return 0
	}
	return editedAt.UnixMilli()
}

// of returns the preview if it is of the content edited at editedAt.
func (c previewCell) of(editedAt time.Time) *store.LinkPreview {
	var p previewJSON
	if c.json == "" || c.version != editVersion(editedAt) || json.Unmarshal([]byte(c.json), &p) != nil {
		return nil
	}
	return &store.LinkPreview{URL: p.URL, Title: p.Title, Description: p.Description, SiteName: p.SiteName, ImageURL: p.ImageURL}
}

// setLastPreview records a preview of a message in an entry, at the
// message's time: it is the last message's if their ids agree, and of its
// content if the edit agrees too. The tuple is a literal of markers, as
// setLastEdit's.
const setLastPreview = `UPDATE conversations_by_user USING TIMESTAMP ? SET last_preview = (?, ?, ?)`

// SetPreview writes the preview tuple of every copy and entry (see
// changeMessage), logged as by m's author. It changes nothing when the
// stored message is deleted or its edit is not m's; an edit landing after
// that check leaves a preview no reader shows (see previewCell).
func (db *DB) SetPreview(ctx context.Context, m store.Message, p store.LinkPreview) (store.Event, error) {
	raw, err := json.Marshal(previewJSON{URL: p.URL, Title: p.Title, Description: p.Description, SiteName: p.SiteName, ImageURL: p.ImageURL})
	if err != nil {
		return store.Event{}, fmt.Errorf("cassandra: encode the preview of message %v: %w", m.ID, err)
	}
	version := editVersion(m.EditedAt)
	// The write time is the edit's, as EditMessage writes it, so a preview
	// of a later edit wins over one of an earlier.
	ts := writeTime(m.ID)
	if !m.EditedAt.IsZero() {
		ts = max(m.EditedAt.UnixMicro(), ts+1)
	}
	return db.changeMessage(ctx, m, m.Author, messageChange{
		kind: store.MessagePreviewed,
		changes: func(stored store.Message) (bool, error) {
			return !stored.Deleted && stored.EditedAt.Equal(m.EditedAt), nil
		},
		copy:  []statement{{`UPDATE %[1]s USING TIMESTAMP ? SET preview = (?, ?) WHERE %[2]s`, []any{ts, version, string(raw)}}},
		entry: []statement{{setLastPreview, []any{writeTime(m.ID), gocql.UUID(m.ID), version, string(raw)}}},
		apply: func(m *store.Message) { m.Preview = &p },
	})
}
