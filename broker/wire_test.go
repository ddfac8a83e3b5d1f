package broker

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

const (
	postID = "3f1d2a80-e7a5-11f1-8000-0123456789ab"
	hideID = "3f1d2a81-e7a5-11f1-8000-0123456789ab"
)

// wantPosted is the event of the golden payloads below.
func wantPosted(t *testing.T) Event {
	t.Helper()
	id, err := store.ParseMessageID(postID)
	if err != nil {
		t.Fatal(err)
	}
	alice := store.UserRef{Login: "alice", Firstname: "Alice", Lastname: "Liddell"}
	return store.PostedEvent(store.Message{Room: "tea", ID: id, Author: alice, Content: "hi \"there\"", System: true})
}

func sameEvent(t *testing.T, what string, got, want Event) {
	t.Helper()
	if got.ID != want.ID || got.Kind != want.Kind || got.Room != want.Room || got.User != want.User || got.Online != want.Online ||
		(got.Message == nil) != (want.Message == nil) || got.Message != nil && !reflect.DeepEqual(*got.Message, *want.Message) {
		t.Fatalf("%s:\n got %+v %+v\nwant %+v %+v", what, got, got.Message, want, want.Message)
	}
}

// An instance decodes what the previous version published: the JSON of the
// store's event type, message fields untagged.
func TestWireDecodesVersion1(t *testing.T) {
	v1 := `{"id":"` + postID + `","kind":"MESSAGE_POSTED","room":"tea","user":{"Login":"alice","Firstname":"Alice","Lastname":"Liddell"},` +
		`"message":{"Room":"tea","ID":"` + postID + `","Author":{"Login":"alice","Firstname":"Alice","Lastname":"Liddell"},"Content":"hi \"there\"","System":true,"Hidden":false}}`
	got, err := decodeEvent([]byte(v1))
	if err != nil {
		t.Fatal(err)
	}
	sameEvent(t, "version 1", got, wantPosted(t))

	got, err = decodeEvent([]byte(`{"kind":"RESYNC","room":"room:tea","user":{"Login":"","Firstname":"","Lastname":""}}`))
	if err != nil || got.Kind != Resync || got.Room != "room:tea" || !got.ID.IsZero() || got.Message != nil {
		t.Fatalf("version 1 resync: %+v, %v", got, err)
	}
}

// The version 2 payload is fixed: later versions must keep decoding it.
func TestWireDecodesVersion2(t *testing.T) {
	v2 := `{"v":2,"id":"` + postID + `","kind":"MESSAGE_POSTED","room":"tea","user":{"login":"alice","first":"Alice","last":"Liddell"},` +
		`"msg":{"id":"` + postID + `","author":{"login":"alice","first":"Alice","last":"Liddell"},"content":"hi \"there\"","system":true}}`
	got, err := decodeEvent([]byte(v2))
	if err != nil {
		t.Fatal(err)
	}
	sameEvent(t, "version 2", got, wantPosted(t))
}

// The version 3 payload is fixed: later versions must keep decoding it. It
// carries a message's edit, deletion and thread.
func TestWireVersion3(t *testing.T) {
	ev := wantPosted(t)
	ev.Kind = store.MessageEdited
	ev.Message.EditedAt = time.UnixMilli(1764000000123).UTC()
	ev.Message.Deleted = true
	ev.Message.ReplyTo, _ = store.ParseMessageID(hideID)
	golden := `{"v":5,"id":"` + postID + `","kind":"MESSAGE_EDITED","room":"tea","user":{"login":"alice","first":"Alice","last":"Liddell"},` +
		`"msg":{"id":"` + postID + `","author":{"login":"alice","first":"Alice","last":"Liddell"},"content":"hi \"there\"","system":true,` +
		`"edited":1764000000123,"deleted":true,"reply":"` + hideID + `"}}`
	b, err := encodeEvent(ev)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != golden {
		t.Fatalf("encoded\n %s\nwant\n %s", b, golden)
	}
	got, err := decodeEvent([]byte(golden))
	if err != nil {
		t.Fatal(err)
	}
	sameEvent(t, "version 3", got, ev)
}

// The version 5 payload is fixed: later versions must keep decoding it. It
// carries a message's attachments and link preview.
func TestWireVersion5(t *testing.T) {
	ev := wantPosted(t)
	ev.Kind = store.MessagePreviewed
	fileID, _ := store.ParseMessageID(hideID)
	ev.Message.Attachments = []store.Attachment{
		{ID: fileID, Name: "cat.png", ContentType: "image/png", Size: 1234, Width: 640, Height: 480, Blurhash: "LEHV6n"},
		{ID: fileID, Name: "a.pdf", ContentType: "application/pdf", Size: 99},
	}
	ev.Message.Preview = &store.LinkPreview{URL: "https://example.com", Title: "Ex", Description: "D", SiteName: "S", ImageURL: "https://example.com/i.png"}
	golden := `{"v":5,"id":"` + postID + `","kind":"MESSAGE_PREVIEWED","room":"tea","user":{"login":"alice","first":"Alice","last":"Liddell"},` +
		`"msg":{"id":"` + postID + `","author":{"login":"alice","first":"Alice","last":"Liddell"},"content":"hi \"there\"","system":true,` +
		`"files":[{"id":"` + hideID + `","name":"cat.png","type":"image/png","size":1234,"w":640,"h":480,"blur":"LEHV6n"},` +
		`{"id":"` + hideID + `","name":"a.pdf","type":"application/pdf","size":99}],` +
		`"preview":{"url":"https://example.com","title":"Ex","desc":"D","site":"S","image":"https://example.com/i.png"}}}`
	b, err := encodeEvent(ev)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != golden {
		t.Fatalf("encoded\n %s\nwant\n %s", b, golden)
	}
	got, err := decodeEvent([]byte(golden))
	if err != nil {
		t.Fatal(err)
	}
	sameEvent(t, "version 5", got, ev)
}

// Every kind round-trips, with and without an id or a message; a newer
// version's unknown fields are skipped.
func TestWireRoundTrip(t *testing.T) {
	posted := wantPosted(t)
	hid, _ := store.ParseMessageID(hideID)
	hidden := *posted.Message
	hidden.Hidden = true
	for _, ev := range []Event{
		posted,
		{ID: hid, Kind: store.MessageHidden, Room: "tea", User: store.UserRef{Login: "bob"}, Message: &hidden},
		{Kind: store.RoomDeleted, Room: "tea", User: store.UserRef{Login: "alice"}},
		{Kind: store.PresenceChanged, Room: "tea", User: store.UserRef{Login: "alice"}, Online: true},
		{Kind: store.PresenceChanged, Room: "tea", User: store.UserRef{Login: "alice"}},
		{ID: hid, Kind: store.UnreadChanged, Room: "alice:bob", User: store.UserRef{Login: "bob"}},
		resyncEvent("room:tea"),
	} {
		b, err := encodeEvent(ev)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeEvent(b)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		sameEvent(t, string(ev.Kind), got, ev)
		if ev.Message == nil && strings.Contains(string(b), "msg") {
			t.Errorf("an event without a message encodes one: %s", b)
		}
	}
	got, err := decodeEvent([]byte(`{"v":4,"kind":"MESSAGE_HIDDEN","room":"tea","user":{"login":"bob"},"reactions":{"x":1}}`))
	if err != nil || got.Kind != store.MessageHidden || got.User.Login != "bob" {
		t.Fatalf("a newer version: %+v, %v", got, err)
	}
}

func TestWireRefusesGarbage(t *testing.T) {
	for _, b := range []string{``, `null`, `[]`, `{}`, `{"v":2,"kind":"MESSAGE_POSTED","id":"nope"}`,
		`{"v":2,"kind":"MESSAGE_POSTED","msg":{"id":"00000000-0000-0000-0000-000000000000"}}`, `{"kind":"X","user":7}`,
		`{"v":3,"kind":"MESSAGE_POSTED","msg":{"id":"` + postID + `","reply":"nope"}}`,
		`{"v":5,"kind":"MESSAGE_POSTED","msg":{"id":"` + postID + `","files":[{"id":"nope"}]}}`} {
		if ev, err := decodeEvent([]byte(b)); err == nil {
			t.Errorf("decodeEvent(%q) = %+v, want an error", b, ev)
		}
	}
}

// A new field of store.Message (or store.UserRef) reaches the other
// instances' subscribers, or this test fails naming it: every field is set
// to a value of its own, and the event must decode as it was encoded.
func TestWireCarriesEveryMessageField(t *testing.T) {
	var msg store.Message
	fill(t, reflect.ValueOf(&msg).Elem(), "message")
	ev := store.Event{ID: store.NewMessageID(), Kind: store.MessageEdited, Room: msg.Room, User: msg.Author, Message: &msg}
	raw, err := encodeEvent(ev)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeEvent(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Message, ev.Message) {
		t.Fatalf("the wire carried the message as\n%+v\nwant\n%+v\n(%s)", *got.Message, *ev.Message, raw)
	}
}

// fill sets every field of the struct v to a non-zero value of its own.
func fill(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	for i := range v.NumField() {
		f, name := v.Field(i), path+"."+v.Type().Field(i).Name
		switch x := f.Addr().Interface().(type) {
		case *string:
			*x = name
		case *bool:
			*x = true
		case *time.Time:
			*x = time.UnixMilli(1764000000123 + int64(i)).UTC()
		case *store.MessageID:
			*x = store.NewMessageID()
		case *int64:
			*x = 1000 + int64(i)
		case *int:
			*x = 1000 + i
		default:
			if f.Kind() == reflect.Slice {
				f.Set(reflect.MakeSlice(f.Type(), 2, 2))
				for j := range f.Len() {
					fill(t, f.Index(j), fmt.Sprintf("%s[%d]", name, j))
				}
				continue
			}
			if f.Kind() == reflect.Pointer {
				f.Set(reflect.New(f.Type().Elem()))
				fill(t, f.Elem(), name)
				continue
			}
			if f.Kind() != reflect.Struct {
				t.Fatalf("%s: a %s, which this test cannot fill yet: teach it, and the wire format", name, f.Type())
			}
			fill(t, f, name)
		}
	}
}
