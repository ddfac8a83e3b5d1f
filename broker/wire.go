package broker

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/killrchat/chatql/store"
)

// The wire format of events between instances: JSON with explicit, short
// tags and a version, separate from the store's types, so that renaming a
// Go field changes nothing on the wire and instances of two versions can
// run side by side during a rolling deploy.
//
// Version 5 (this one):
//
//	{"seq":12,"v":5,"id":"<timeuuid>","kind":"MESSAGE_EDITED","room":"tea-party",
//	 "user":{"login":"alice","first":"Alice","last":"Liddell"},
//	 "msg":{"id":"<timeuuid>","author":{...},"content":"hi","system":true,"hidden":true,
//	        "edited":1764000000123,"deleted":true,"reply":"<timeuuid>",
//	        "files":[{"id":"<timeuuid>","name":"cat.png","type":"image/png","size":1234,
//	                  "w":640,"h":480,"blur":"LEHV6n"}],
//	        "preview":{"url":"https://...","title":"..","desc":"..","site":"..","image":"https://..."}},
//	 "online":true}
//
// id is absent for an event that no log holds (RESYNC, READ_UPTO, ROOM_DELETED
// of an older sender); msg is absent for an event without a message; false,
// zero and empty fields are left out. The message's room is the event's.
// edited is when the message was last edited, in Unix milliseconds; reply is
// the root of the thread it replies in. online is a PRESENCE_CHANGED's
// state. seq is a room's logged event's place in the room's sequence
// (store.Cursor), which the Redis script that publishes the event writes
// in (see publishSequencedScript); absent when there is none.
//
// files are the message's attachments, in order; preview its link
// preview.
//
// Version 4 is version 5 without the message's files and preview: an
// instance of version 4 shows a newer sender's message without them until
// it is upgraded.
//
// Version 3 is version 4 without seq.
//
// Version 2 is version 3 without the message's edited, deleted and reply,
// and without online:
// an instance of version 2 shows an edited or deleted message of a newer
// sender as unedited, and its reply as no reply, until it is upgraded.
//
// Version 1 (no "v") was the JSON encoding of the event's Go type, whose
// message had no tags: {"id":..,"kind":..,"room":..,"user":{"Login":..,
// "Firstname":..,"Lastname":..},"message":{"Room":..,"ID":..,"Author":{..},
// "Content":..,"System":..,"Hidden":..}}. Instances still decode it.
//
// A newer version than wireVersion is decoded as far as its fields are
// known (versions only ever add fields); an undecodable payload makes the
// topic's subscribers resync from the log.
const wireVersion = 5

type wireEvent struct {
	V       int          `json:"v"`
	ID      string       `json:"id,omitempty"`
	Kind    string       `json:"kind"`
	Room    string       `json:"room"`
	User    wireUser     `json:"user"`
	Message *wireMessage `json:"msg,omitempty"`
	Online  bool         `json:"online,omitempty"`
	// Version 4, written in by Redis.
	Seq uint64 `json:"seq,omitempty"`

	// Version 1's message (its user is read from the same "user" key).
	V1Message *v1Message `json:"message,omitempty"`
}

type wireUser struct {
	Login     string `json:"login"`
	Firstname string `json:"first,omitempty"`
	Lastname  string `json:"last,omitempty"`
	// Version 1's names (JSON names match without regard to case, so
	// version 1's "Login" is read as login).
	V1Firstname string `json:"firstname,omitempty"`
	V1Lastname  string `json:"lastname,omitempty"`
}

type wireMessage struct {
	ID      string   `json:"id"`
	Author  wireUser `json:"author"`
	Content string   `json:"content,omitempty"`
	System  bool     `json:"system,omitempty"`
	Hidden  bool     `json:"hidden,omitempty"`
	// Version 3.
	Edited  int64  `json:"edited,omitempty"`
	Deleted bool   `json:"deleted,omitempty"`
	ReplyTo string `json:"reply,omitempty"`
	// Version 5.
	Files   []wireFile   `json:"files,omitempty"`
	Preview *wirePreview `json:"preview,omitempty"`
}

// wireFile is an attachment of a message.
type wireFile struct {
	ID          string `json:"id"`
	Name        string `json:"name,omitempty"`
	ContentType string `json:"type,omitempty"`
	Size        int64  `json:"size,omitempty"`
	Width       int    `json:"w,omitempty"`
	Height      int    `json:"h,omitempty"`
	Blurhash    string `json:"blur,omitempty"`
}

// wirePreview is a message's link preview.
type wirePreview struct {
	URL         string `json:"url"`
	Title       string `json:"title,omitempty"`
	Description string `json:"desc,omitempty"`
	SiteName    string `json:"site,omitempty"`
	ImageURL    string `json:"image,omitempty"`
}

func toWireFiles(as []store.Attachment) []wireFile {
	var out []wireFile
	for _, a := range as {
		out = append(out, wireFile{ID: a.ID.String(), Name: a.Name, ContentType: a.ContentType, Size: a.Size, Width: a.Width, Height: a.Height, Blurhash: a.Blurhash})
	}
	return out
}

func (ws wireMessage) attachments() ([]store.Attachment, error) {
	var out []store.Attachment
	for _, f := range ws.Files {
		id, err := store.ParseMessageID(f.ID)
		if err != nil {
			return nil, fmt.Errorf("decode event message file: %w", err)
		}
		out = append(out, store.Attachment{ID: id, Name: f.Name, ContentType: f.ContentType, Size: f.Size, Width: f.Width, Height: f.Height, Blurhash: f.Blurhash})
	}
	return out, nil
}

type v1Message struct {
	Room    string
	ID      store.MessageID
	Author  wireUser
	Content string
	System  bool
	Hidden  bool
}

func toWireUser(u store.UserRef) wireUser {
	return wireUser{Login: u.Login, Firstname: u.Firstname, Lastname: u.Lastname}
}

func (u wireUser) ref() store.UserRef {
	return store.UserRef{Login: u.Login, Firstname: u.Firstname + u.V1Firstname, Lastname: u.Lastname + u.V1Lastname}
}

// encodeEvent encodes ev in the current wire format.
func encodeEvent(ev Event) ([]byte, error) {
	w := wireEvent{V: wireVersion, Kind: string(ev.Kind), Room: ev.Room, User: toWireUser(ev.User), Online: ev.Online}
	if !ev.ID.IsZero() {
		w.ID = ev.ID.String()
	}
	if m := ev.Message; m != nil {
		w.Message = &wireMessage{ID: m.ID.String(), Author: toWireUser(m.Author), Content: m.Content, System: m.System, Hidden: m.Hidden, Deleted: m.Deleted}
		if !m.EditedAt.IsZero() {
			w.Message.Edited = m.EditedAt.UnixMilli()
		}
		if !m.ReplyTo.IsZero() {
			w.Message.ReplyTo = m.ReplyTo.String()
		}
		w.Message.Files = toWireFiles(m.Attachments)
		if p := m.Preview; p != nil {
			w.Message.Preview = &wirePreview{URL: p.URL, Title: p.Title, Description: p.Description, SiteName: p.SiteName, ImageURL: p.ImageURL}
		}
	}
	b, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("encode %s event: %w", ev.Kind, err)
	}
	return b, nil
}

// decodeEvent decodes an event of any wire version.
func decodeEvent(b []byte) (Event, error) {
	var w wireEvent
	if err := json.Unmarshal(b, &w); err != nil {
		return Event{}, fmt.Errorf("decode event: %w", err)
	}
	if w.Kind == "" {
		return Event{}, fmt.Errorf("decode event: no kind in %.100q", b)
	}
	ev := Event{Kind: store.EventKind(w.Kind), Room: w.Room, User: w.User.ref(), Online: w.Online, Seq: w.Seq}
	if w.ID != "" {
		id, err := store.ParseMessageID(w.ID)
		if err != nil {
			return Event{}, fmt.Errorf("decode event id: %w", err)
		}
		ev.ID = id
	}
	switch m := w.Message; {
	case m != nil:
		id, err := store.ParseMessageID(m.ID)
		if err != nil {
			return Event{}, fmt.Errorf("decode event message id: %w", err)
		}
		msg := &store.Message{Room: w.Room, ID: id, Author: m.Author.ref(), Content: m.Content, System: m.System, Hidden: m.Hidden, Deleted: m.Deleted}
		if m.Edited != 0 {
			msg.EditedAt = time.UnixMilli(m.Edited).UTC()
		}
		if m.ReplyTo != "" {
			if msg.ReplyTo, err = store.ParseMessageID(m.ReplyTo); err != nil {
				return Event{}, fmt.Errorf("decode event message reply: %w", err)
			}
		}
		if msg.Attachments, err = m.attachments(); err != nil {
			return Event{}, err
		}
		if p := m.Preview; p != nil {
			msg.Preview = &store.LinkPreview{URL: p.URL, Title: p.Title, Description: p.Description, SiteName: p.SiteName, ImageURL: p.ImageURL}
		}
		ev.Message = msg
	case w.V1Message != nil:
		m := w.V1Message
		ev.Message = &store.Message{Room: m.Room, ID: m.ID, Author: m.Author.ref(), Content: m.Content, System: m.System, Hidden: m.Hidden}
	}
	return ev, nil
}
