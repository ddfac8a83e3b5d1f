package e2e

// Avatars and room icons: pictures made of uploaded images, shown with
// every name, whose files go when they are replaced.

import (
	"bytes"
	"image"
	"net/http"
	"testing"
	"time"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/server"
)

// imageFields is what the tests read of an Image.
const imageFields = `id width height blurhash url thumbnails { width height url }`

type picture struct {
	ID            string
	Width, Height int
	Blurhash      string
	URL           string
	Thumbnails    []struct {
		Width, Height int
		URL           string
	}
}

const (
	setAvatar   = `mutation($f: ID) { setAvatar(file: $f) { login avatar { ` + imageFields + ` } } }`
	setRoomIcon = `mutation($r: String!, $f: ID) { setRoomIcon(room: $r, file: $f) { name icon { ` + imageFields + ` } } }`
)

func TestAvatars(t *testing.T) { forEachStore(t, testAvatars) }

func testAvatars(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice, bob := ts.user(t, "alice"), ts.user(t, "bob")
	mustDo(t, alice, createRoom, map[string]any{"n": "pics"}, nil)
	mustDo(t, bob, joinRoom, map[string]any{"r": "pics"}, nil)
	mustDo(t, alice, `mutation { postMessage(room: "pics", content: "hello") { id } }`, nil, nil)
	// Bob reads alice's profile (and his instance caches it) before she
	// has an avatar.
	if got := authorAvatar(t, bob, "pics"); got != nil {
		t.Fatalf("alice's avatar before she set one: %+v", got)
	}

	first := upload(t, alice, "me.png", "image/png", pngWithText(t, 300, 200, "GPS", "48.8584 N"))
	var set struct {
		SetAvatar struct {
			Login  string
			Avatar *picture
		}
	}
	mustDo(t, alice, setAvatar, map[string]any{"f": first}, &set)
	if a := set.SetAvatar.Avatar; a == nil || a.ID != first || a.Width != 300 || a.Height != 200 || a.Blurhash == "" || len(a.Thumbnails) != 2 {
		t.Fatalf("setAvatar = %+v", a)
	}

	// Bob sees it on the author of her message, at once, and in the
	// room's participants; its links work.
	seen := authorAvatar(t, bob, "pics")
	if seen == nil || seen.ID != first || len(seen.Thumbnails) != 2 {
		t.Fatalf("bob sees alice's avatar %+v, want file %s", seen, first)
	}
	thumb, _ := download(t, seen.Thumbnails[0].URL, http.StatusOK)
	if c, _, err := image.DecodeConfig(bytes.NewReader(thumb)); err != nil || c.Width != seen.Thumbnails[0].Width || c.Width > 160 {
		t.Fatalf("avatar thumbnail: %v %+v, want %+v", err, c, seen.Thumbnails[0])
	}
	body, _ := download(t, seen.URL, http.StatusOK)
	if bytes.Contains(body, []byte("48.8584")) {
		t.Fatal("the avatar kept its metadata")
	}
	var room struct {
		Room struct {
			Participants []struct {
				Login  string
				Avatar *picture
			}
		}
	}
	mustDo(t, bob, `{ room(name: "pics") { participants { login avatar { `+imageFields+` } } } }`, nil, &room)
	for _, p := range room.Room.Participants {
		switch {
		case p.Login == "alice" && (p.Avatar == nil || p.Avatar.ID != first):
			t.Fatalf("alice among the participants: %+v", p.Avatar)
		case p.Login == "bob" && p.Avatar != nil:
			t.Fatalf("bob has an avatar: %+v", p.Avatar)
		case p.Avatar != nil:
			download(t, p.Avatar.Thumbnails[1].URL, http.StatusOK)
		}
	}
	var me struct{ Me struct{ Avatar *picture } }
	mustDo(t, alice, `{ me { avatar { `+imageFields+` } } }`, nil, &me)
	if me.Me.Avatar == nil || me.Me.Avatar.ID != first {
		t.Fatalf("me.avatar = %+v", me.Me.Avatar)
	}

	// Replaced, the old one's links stop working.
	second := upload(t, alice, "me2.png", "image/png", pngWithText(t, 64, 64, "", ""))
	mustDo(t, alice, setAvatar, map[string]any{"f": second}, &set)
	if got := authorAvatar(t, bob, "pics"); got == nil || got.ID != second {
		t.Fatalf("bob sees alice's avatar %+v after the change, want file %s", got, second)
	}
	download(t, seen.URL, http.StatusNotFound)
	download(t, seen.Thumbnails[0].URL, http.StatusNotFound)
	// Set again as it is, it stays.
	mustDo(t, alice, setAvatar, map[string]any{"f": second}, &set)
	replaced := authorAvatar(t, bob, "pics")
	download(t, replaced.URL, http.StatusOK)

	// A file that is no image, one sent with a message, another's.
	text := upload(t, alice, "notes.txt", "text/plain", []byte("not a face"))
	wantCode(t, alice, "BAD_USER_INPUT", setAvatar, map[string]any{"f": text})
	sent := upload(t, alice, "sent.png", "image/png", pngWithText(t, 20, 20, "", ""))
	mustDo(t, alice, `mutation($a: [ID!]) { postMessage(room: "pics", content: "", attachments: $a) { id } }`, map[string]any{"a": []string{sent}}, nil)
	wantCode(t, alice, "CONFLICT", setAvatar, map[string]any{"f": sent})
	bobs := upload(t, bob, "bob.png", "image/png", pngWithText(t, 20, 20, "", ""))
	wantCode(t, alice, "NOT_FOUND", setAvatar, map[string]any{"f": bobs})
	wantCode(t, alice, "BAD_USER_INPUT", setAvatar, map[string]any{"f": "not-an-id"})

	// Removed: none, and its file is gone.
	mustDo(t, alice, setAvatar, map[string]any{"f": nil}, &set)
	if set.SetAvatar.Avatar != nil {
		t.Fatalf("setAvatar(null) = %+v", set.SetAvatar.Avatar)
	}
	if got := authorAvatar(t, bob, "pics"); got != nil {
		t.Fatalf("bob sees a removed avatar: %+v", got)
	}
	download(t, replaced.URL, http.StatusNotFound)

	// A page of 50 messages as the web app reads it, with its authors'
	// avatars, is within the query cost limit.
	mustDo(t, bob, `query($r: String!) { messages(room: $r, first: 50) { edges { cursor node {
		id room content system postedAt hidden editedAt deleted replyToId replyCount mentions
		author { login firstname lastname avatar { id width height blurhash url thumbnails { width height url } } }
		reactions { emoji count reactedByMe } } } pageInfo { hasNextPage endCursor } } }`, map[string]any{"r": "pics"}, nil)
}

// authorAvatar is the avatar c sees on the author of the room's newest
// message.
func authorAvatar(t *testing.T, c *chatclient.Client, room string) *picture {
	t.Helper()
	var out struct {
		Messages struct {
			Edges []struct {
				Node struct {
					Author struct{ Avatar *picture }
				}
			}
		}
	}
	mustDo(t, c, `query($r: String!) { messages(room: $r, first: 1) { edges { node { author { avatar { `+imageFields+` } } } } } }`, map[string]any{"r": room}, &out)
	if len(out.Messages.Edges) == 0 {
		t.Fatalf("no message in %s", room)
	}
	return out.Messages.Edges[0].Node.Author.Avatar
}

func TestRoomIcons(t *testing.T) { forEachStore(t, testRoomIcons) }

func testRoomIcons(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice, bob, carol := ts.user(t, "alice"), ts.user(t, "bob"), ts.user(t, "carol")
	mustDo(t, alice, createRoom, map[string]any{"n": "pics"}, nil)
	mustDo(t, bob, joinRoom, map[string]any{"r": "pics"}, nil)

	// Set by the creator, seen by everyone.
	first := upload(t, alice, "icon.png", "image/png", pngWithText(t, 200, 200, "", ""))
	var set struct{ SetRoomIcon struct{ Icon *picture } }
	mustDo(t, alice, setRoomIcon, map[string]any{"r": "pics", "f": first}, &set)
	if set.SetRoomIcon.Icon == nil || set.SetRoomIcon.Icon.ID != first {
		t.Fatalf("setRoomIcon = %+v", set.SetRoomIcon.Icon)
	}
	icon := roomIcon(t, carol, "pics")
	if icon == nil || icon.ID != first || len(icon.Thumbnails) != 2 {
		t.Fatalf("carol sees the icon %+v", icon)
	}
	download(t, icon.Thumbnails[0].URL, http.StatusOK)

	// Not by a plain participant, nor by someone outside.
	bobs := upload(t, bob, "bob.png", "image/png", pngWithText(t, 50, 50, "", ""))
	wantCode(t, bob, "FORBIDDEN", setRoomIcon, map[string]any{"r": "pics", "f": bobs})
	wantCode(t, carol, "FORBIDDEN", setRoomIcon, map[string]any{"r": "pics", "f": nil})

	// A moderator may: the creator's icon goes.
	mustDo(t, alice, `mutation { appointModerator(room: "pics", login: "bob") { name } }`, nil, nil)
	mustDo(t, bob, setRoomIcon, map[string]any{"r": "pics", "f": bobs}, &set)
	if got := roomIcon(t, carol, "pics"); got == nil || got.ID != bobs {
		t.Fatalf("carol sees the icon %+v, want bob's %s", got, bobs)
	}
	download(t, icon.URL, http.StatusNotFound)
	bobsIcon := roomIcon(t, carol, "pics")
	download(t, bobsIcon.URL, http.StatusOK)

	// In a private group, any member may; others do not see the group.
	mustDo(t, alice, createKind, map[string]any{"n": "den", "k": "PRIVATE_GROUP"}, nil)
	mustDo(t, alice, addMember, map[string]any{"g": "den", "l": "bob"}, nil)
	groupIcon := upload(t, bob, "den.png", "image/png", pngWithText(t, 50, 50, "", ""))
	mustDo(t, bob, setRoomIcon, map[string]any{"r": "den", "f": groupIcon}, &set)
	if got := roomIcon(t, alice, "den"); got == nil || got.ID != groupIcon {
		t.Fatalf("alice sees the group's icon %+v, want bob's %s", got, groupIcon)
	}
	wantCode(t, carol, "NOT_FOUND", setRoomIcon, map[string]any{"r": "den", "f": nil})

	// Deleting the room deletes its icon.
	mustDo(t, alice, `mutation { deleteRoom(room: "pics") { name } }`, nil, nil)
	download(t, bobsIcon.URL, http.StatusNotFound)
	download(t, bobsIcon.Thumbnails[1].URL, http.StatusNotFound)
}

// roomIcon is the icon c sees on the room.
func roomIcon(t *testing.T, c *chatclient.Client, room string) *picture {
	t.Helper()
	var out struct{ Room struct{ Icon *picture } }
	mustDo(t, c, `query($r: String!) { room(name: $r) { icon { `+imageFields+` } } }`, map[string]any{"r": room}, &out)
	return out.Room.Icon
}

// TestClusterAvatars: an avatar set through one instance shows on another
// at once, though the other cached the author's profile for an hour: the
// change is announced as a profile change is.
func TestClusterAvatars(t *testing.T) {
	_, alice, bob := acrossCluster(t, across{configure: func(c *server.Config) { c.ProfileTTL = time.Hour }})
	mustDo(t, alice, postMessage, map[string]any{"r": "across", "c": "hi"}, nil)
	if a := authorAvatar(t, bob, "across"); a != nil {
		t.Fatalf("bob on B sees an avatar before alice set one: %+v", a)
	}
	id := upload(t, alice, "me.png", "image/png", pngWithText(t, 40, 40, "", ""))
	mustDo(t, alice, setAvatar, map[string]any{"f": id}, nil)
	eventually(t, 5*time.Second, "her avatar on B", func() (bool, any) {
		a := authorAvatar(t, bob, "across")
		return a != nil && a.ID == id, a
	})
}

func TestPicturesGoWithTheAccount(t *testing.T) { forEachStore(t, testPicturesGoWithTheAccount) }

// testPicturesGoWithTheAccount deletes the account of a user with an
// avatar, who set the icon of a room they created: the room stays without
// the icon, and the sweep removes both files.
func testPicturesGoWithTheAccount(t *testing.T, cfg server.Config) {
	cfg.FileSweepInterval = 200 * time.Millisecond
	ts := startServer(t, cfg)
	alice, bob := ts.user(t, "alice"), ts.user(t, "bob")
	mustDo(t, alice, createRoom, map[string]any{"n": "pics"}, nil)
	mustDo(t, bob, joinRoom, map[string]any{"r": "pics"}, nil)
	mustDo(t, alice, setAvatar, map[string]any{"f": upload(t, alice, "me.png", "image/png", pngWithText(t, 40, 40, "", ""))}, nil)
	mustDo(t, alice, setRoomIcon, map[string]any{"r": "pics", "f": upload(t, alice, "icon.png", "image/png", pngWithText(t, 40, 40, "", ""))}, nil)
	mustDo(t, alice, `mutation { postMessage(room: "pics", content: "bye") { id } }`, nil, nil)
	avatar, icon := authorAvatar(t, bob, "pics"), roomIcon(t, bob, "pics")
	if avatar == nil || icon == nil {
		t.Fatalf("bob sees avatar %+v and icon %+v", avatar, icon)
	}

	mustDo(t, alice, `mutation($p: String!) { deleteAccount(password: $p) }`, map[string]any{"p": "password-alice"}, nil)
	if got := authorAvatar(t, bob, "pics"); got != nil {
		t.Errorf("a deleted user's avatar: %+v", got)
	}
	if got := roomIcon(t, bob, "pics"); got != nil {
		t.Errorf("the icon a deleted user set: %+v", got)
	}
	eventually(t, 10*time.Second, "the sweep removes the pictures' files", func() (bool, any) {
		gone := 0
		for _, url := range []string{avatar.URL, avatar.Thumbnails[0].URL, icon.URL, icon.Thumbnails[1].URL} {
			if status(t, url) == http.StatusNotFound {
				gone++
			}
		}
		return gone == 4, gone
	})
}

// status GETs a URL and returns its status.
func status(t *testing.T, url string) int {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}
