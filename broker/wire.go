package broker

import (
	"encoding/json"
	"fmt"

	"github.com/killrchat/chatql/store"
)

// The wire format of events between instances: JSON with explicit, short
// tags and a version, separate from the store's types, so that renaming a
// Go field changes nothing on the wire and instances of two versions can
// run side by side during a rolling deploy.
//
// Version 2 (this one):
//
//	{"v":2,"id":"<timeuuid>","kind":"MESSAGE_POSTED","room":"tea-party",
//	 "user":{"login":"alice","first":"Alice","last":"Liddell"},
//	 "msg":{"id":"<timeuuid>","author":{...},"content":"hi","system":true,"hidden":true}}
//
// id is absent for an event that no log holds (RESYNC, ROOM_DELETED of an
// older sender); msg is absent for an event without a message; false and
// empty fields are left out. The message's room is the event's.
//
// Version 1 (no "v") was the JSON encoding of the event's Go type, whose
// message had no tags: {"id":..,"kind":..,"room":..,"user":{"Login":..,
// "Firstname":..,"Lastname":..},"message":{"Room":..,"ID":..,"Author":{..},
// "Content":..,"System":..,"Hidden":..}}. Instances still decode it.
//
// A newer version than wireVersion is decoded as far as its fields are
// known (versions only ever add fields); an undecodable payload makes the
// topic's subscribers resync from the log.
const wireVersion = 2

type wireEvent struct {
	V       int          `json:"v"`
	ID      string       `json:"id,omitempty"`
	Kind    string       `json:"kind"`
	Room    string       `json:"room"`
	User    wireUser     `json:"user"`
	Message *wireMessage `json:"msg,omitempty"`

	// Version 1's message (its user is read from the same "user" key).
	V1Message *v1Message `json:"message,omitempty"`
}

type wireUser struct {
	Login     string `json:"login"`
	Firstname string `json:"first,omitempty"`
	Lastname  string `json:"last,omitempty"`
}

type wireMessage struct {
	ID      string   `json:"id"`
	Author  wireUser `json:"author"`
	Content string   `json:"content,omitempty"`
	System  bool     `json:"system,omitempty"`
	Hidden  bool     `json:"hidden,omitempty"`
}

type v1User struct{ Login, Firstname, Lastname string }

type v1Message struct {
	Room    string
	ID      store.MessageID
	Author  v1User
	Content string
	System  bool
	Hidden  bool
}

func toWireUser(u store.UserRef) wireUser { return wireUser(u) }

func (u wireUser) ref() store.UserRef { return store.UserRef(u) }

// encodeEvent encodes ev in the current wire format.
func encodeEvent(ev Event) ([]byte, error) {
	w := wireEvent{V: wireVersion, Kind: string(ev.Kind), Room: ev.Room, User: toWireUser(ev.User)}
	if !ev.ID.IsZero() {
		w.ID = ev.ID.String()
	}
	if m := ev.Message; m != nil {
		w.Message = &wireMessage{ID: m.ID.String(), Author: toWireUser(m.Author), Content: m.Content, System: m.System, Hidden: m.Hidden}
	}
	b, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("encode %s event: %w", ev.Kind, err)
	}
	return b, nil
}

// decodeEvent decodes an event of any wire version.
func decodeEvent(b []byte) (Event, error) {
	var raw struct {
		wireEvent
		RawUser json.RawMessage `json:"user"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return Event{}, fmt.Errorf("decode event: %w", err)
	}
	w := raw.wireEvent
	ev := Event{Kind: store.EventKind(w.Kind), Room: w.Room}
	if w.Kind == "" {
		return Event{}, fmt.Errorf("decode event: no kind in %.100q", b)
	}
	if w.ID != "" {
		id, err := store.ParseMessageID(w.ID)
		if err != nil {
			return Event{}, fmt.Errorf("decode event id: %w", err)
		}
		ev.ID = id
	}
	if w.V < 2 {
		var u v1User
		if len(raw.RawUser) > 0 {
			if err := json.Unmarshal(raw.RawUser, &u); err != nil {
				return Event{}, fmt.Errorf("decode version 1 event user: %w", err)
			}
		}
		ev.User = store.UserRef(u)
		if m := w.V1Message; m != nil {
			ev.Message = &store.Message{Room: m.Room, ID: m.ID, Author: store.UserRef(m.Author), Content: m.Content, System: m.System, Hidden: m.Hidden}
		}
		return ev, nil
	}
	if len(raw.RawUser) > 0 {
		var u wireUser
		if err := json.Unmarshal(raw.RawUser, &u); err != nil {
			return Event{}, fmt.Errorf("decode event user: %w", err)
		}
		ev.User = u.ref()
	}
	if m := w.Message; m != nil {
		id, err := store.ParseMessageID(m.ID)
		if err != nil {
			return Event{}, fmt.Errorf("decode event message id: %w", err)
		}
		ev.Message = &store.Message{Room: w.Room, ID: id, Author: m.Author.ref(), Content: m.Content, System: m.System, Hidden: m.Hidden}
	}
	return ev, nil
}
