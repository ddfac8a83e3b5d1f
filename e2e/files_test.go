package e2e

// Files: uploads straight to the object store through signed URLs, checked
// images without their metadata, downloads only readers of the message get,
// and every way a file goes (its message deleted, never sent, a bad one).

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/internal/testenv"
	"github.com/killrchat/chatql/server"
)

func TestFiles(t *testing.T) { forEachFileStore(t, testFiles) }

// attachmentFields is what the tests read of an attachment.
const attachmentFields = `id name contentType size width height blurhash url thumbnails { width height url }`

type attachment struct {
	ID, Name, ContentType string
	Size                  int
	Width, Height         *int
	Blurhash              *string
	URL                   string
	Thumbnails            []struct {
		Width, Height int
		URL           string
	}
}

func testFiles(t *testing.T, cfg server.Config) {
	ts := startServer(t, cfg)
	alice, bob, carol := ts.user(t, "alice"), ts.user(t, "bob"), ts.user(t, "carol")
	mustDo(t, alice, createRoom, map[string]any{"n": "pics"}, nil)
	mustDo(t, bob, joinRoom, map[string]any{"r": "pics"}, nil)

	// An image with a location in its metadata: sent, it has none, and
	// thumbnails.
	photo := pngWithText(t, 900, 600, "GPS", "48.8584 N, 2.2945 E")
	id := upload(t, alice, "../../holiday\u202egnp.png", "image/png", photo)
	var done struct{ CompleteUpload attachment }
	mustDo(t, alice, `mutation($id: ID!) { completeUpload(id: $id) { `+attachmentFields+` } }`, map[string]any{"id": id}, &done)
	a := done.CompleteUpload
	if a.ContentType != "image/png" || a.Width == nil || *a.Width != 900 || *a.Height != 600 || a.Blurhash == nil || a.Name != "holidaygnp.png" {
		t.Fatalf("completed image = %+v", a)
	}
	live := ts.live(t, bob, `subscription { roomEvents(room: "pics") { kind message { attachments { url thumbnails { url } } } } }`, nil)
	var posted struct{ PostMessage struct{ ID string } }
	mustDo(t, alice, `mutation($a: [ID!]) { postMessage(room: "pics", content: "", attachments: $a) { id } }`, map[string]any{"a": []string{id}}, &posted)
	// Subscribers get the files with the post, at URLs that work.
	ev := nextOf[struct {
		Kind    string
		Message struct{ Attachments []attachment }
	}](t, live)
	if len(ev.Message.Attachments) != 1 {
		t.Fatalf("the post's event carries %+v", ev)
	}
	download(t, ev.Message.Attachments[0].URL, http.StatusOK)
	download(t, ev.Message.Attachments[0].Thumbnails[0].URL, http.StatusOK)

	got := readAttachments(t, bob, "pics")
	if len(got) != 1 || got[0].ID != id || len(got[0].Thumbnails) != 2 {
		t.Fatalf("bob reads attachments %+v", got)
	}
	body, h := download(t, got[0].URL, http.StatusOK)
	if bytes.Contains(body, []byte("2.2945")) || h.Get("Content-Type") != "image/png" || h.Get("Content-Encoding") != "" || (cfg.Files == "disk" && h.Get("X-Content-Type-Options") != "nosniff") {
		t.Fatalf("downloaded image: %d bytes, location kept: %v, headers %v", len(body), bytes.Contains(body, []byte("2.2945")), h)
	}
	if img, err := png.Decode(bytes.NewReader(body)); err != nil || img.Bounds().Dx() != 900 {
		t.Fatalf("downloaded image does not decode as the image sent: %v", err)
	}
	thumb, _ := download(t, got[0].Thumbnails[1].URL, http.StatusOK)
	if cfg, _, err := image.DecodeConfig(bytes.NewReader(thumb)); err != nil || cfg.Width != got[0].Thumbnails[1].Width || cfg.Width > 640 {
		t.Fatalf("thumbnail: %v %+v, want %+v", err, cfg, got[0].Thumbnails[1])
	}
	// Someone who may not read the message gets no URL.
	wantCode(t, carol, "FORBIDDEN", `query { messages(room: "pics") { edges { node { attachments { url } } } } }`, nil)

	// A file that is no image is served as a download, whatever it holds.
	page := []byte("<html><script>alert(1)</script></html>")
	doc := upload(t, alice, "page.html", "text/html", page)
	mustDo(t, alice, `mutation($a: [ID!]) { postMessage(room: "pics", content: "notes", attachments: $a) { id } }`, map[string]any{"a": []string{doc}}, nil)
	got = readAttachments(t, bob, "pics")
	if len(got) != 2 || got[0].ContentType == "text/html" || got[0].Width != nil {
		t.Fatalf("a page sent as a file: %+v", got[0])
	}
	_, h = download(t, got[0].URL, http.StatusOK)
	if !strings.HasPrefix(h.Get("Content-Disposition"), "attachment") || strings.Contains(h.Get("Content-Type"), "html") {
		t.Fatalf("a page sent as a file is served with %v", h)
	}

	// A hidden message's files are its author's alone, as its content.
	var hidden struct{ PostMessage struct{ ID string } }
	secret := upload(t, alice, "secret.png", "image/png", pngWithText(t, 12, 12, "", ""))
	mustDo(t, alice, `mutation($a: [ID!]) { postMessage(room: "pics", content: "oops", attachments: $a) { id } }`, map[string]any{"a": []string{secret}}, &hidden)
	mustDo(t, alice, `mutation($id: ID!) { hideMessage(id: $id) { id } }`, map[string]any{"id": hidden.PostMessage.ID}, nil)
	if got := readAttachments(t, bob, "pics"); len(got) != 2 {
		t.Fatalf("bob reads %d attachments with a hidden message's, want the 2 of the others", len(got))
	}
	if got := readAttachments(t, alice, "pics"); len(got) != 3 || got[0].ID != secret {
		t.Fatalf("the author reads %+v, want her hidden message's file first", got)
	}

	// A send retried under its clientMessageId returns the first, files and all.
	retried := upload(t, alice, "retry.png", "image/png", pngWithText(t, 8, 8, "", ""))
	var first, second struct {
		PostMessage struct {
			ID          string
			Attachments []struct{ ID string }
		}
	}
	send := `mutation($a: [ID!]) { postMessage(room: "pics", content: "again?", attachments: $a, clientMessageId: "retry-1") { id attachments { id } } }`
	mustDo(t, alice, send, map[string]any{"a": []string{retried}}, &first)
	mustDo(t, alice, send, map[string]any{"a": []string{retried}}, &second)
	if second.PostMessage.ID != first.PostMessage.ID || len(second.PostMessage.Attachments) != 1 || second.PostMessage.Attachments[0].ID != retried {
		t.Fatalf("a retried send answered %+v, the first %+v", second.PostMessage, first.PostMessage)
	}

	// Sent once, by its owner only.
	wantCode(t, alice, "CONFLICT", `mutation($a: [ID!]) { postMessage(room: "pics", content: "again", attachments: $a) { id } }`, map[string]any{"a": []string{id}})
	other := upload(t, alice, "other.png", "image/png", pngWithText(t, 10, 10, "", ""))
	wantCode(t, bob, "NOT_FOUND", `mutation($a: [ID!]) { postMessage(room: "pics", content: "mine?", attachments: $a) { id } }`, map[string]any{"a": []string{other}})

	// Deleting the message deletes its files.
	var quota struct{ FileQuota struct{ UsedBytes float64 } }
	mustDo(t, alice, `{ fileQuota { usedBytes } }`, nil, &quota)
	before := quota.FileQuota.UsedBytes
	mustDo(t, alice, `mutation($id: ID!) { deleteMessage(id: $id) { deleted } }`, map[string]any{"id": posted.PostMessage.ID}, nil)
	download(t, got[1].URL, http.StatusNotFound)
	download(t, got[1].Thumbnails[0].URL, http.StatusNotFound)
	mustDo(t, alice, `{ fileQuota { usedBytes } }`, nil, &quota)
	if quota.FileQuota.UsedBytes >= before {
		t.Fatalf("quota used %v after the message's deletion, %v before", quota.FileQuota.UsedBytes, before)
	}

	// Deleting a room deletes the files of its messages, whoever sent them.
	mustDo(t, alice, createRoom, map[string]any{"n": "album"}, nil)
	mustDo(t, bob, joinRoom, map[string]any{"r": "album"}, nil)
	for _, c := range []*chatclient.Client{alice, bob} {
		id := upload(t, c, "snap.png", "image/png", pngWithText(t, 20, 20, "", ""))
		mustDo(t, c, `mutation($a: [ID!]) { postMessage(room: "album", content: "", attachments: $a) { id } }`, map[string]any{"a": []string{id}}, nil)
	}
	inAlbum := readAttachments(t, bob, "album")
	mustDo(t, alice, `mutation { deleteRoom(room: "album") { name } }`, nil, nil)
	for _, a := range inAlbum {
		download(t, a.URL, http.StatusNotFound)
	}
}

func TestBadFiles(t *testing.T) { forEachFileStore(t, testBadFiles) }

// testBadFiles sends every kind of bad file: each gets a coded error and
// leaves nothing.
func testBadFiles(t *testing.T, cfg server.Config) {
	cfg.FileLimits.MaxFileBytes = 1 << 20
	cfg.FileLimits.MaxImagePixels = 10_000_000
	ts := startServer(t, cfg)
	alice := ts.user(t, "alice")
	create := `mutation($n: String!, $t: String!, $s: Int!) { createUpload(name: $n, contentType: $t, size: $s) { id } }`
	wantCode(t, alice, "BAD_USER_INPUT", create, map[string]any{"n": "empty.txt", "t": "text/plain", "s": 0})
	wantCode(t, alice, "BAD_USER_INPUT", create, map[string]any{"n": "big.bin", "t": "application/octet-stream", "s": 2 << 20})
	wantCode(t, alice, "BAD_USER_INPUT", create, map[string]any{"n": "x", "t": "not a type", "s": 10})

	complete := `mutation($id: ID!) { completeUpload(id: $id) { id } }`
	for name, c := range map[string]struct {
		contentType string
		data        []byte
	}{
		"lying type":      {"image/png", []byte("just some text, not a picture")},
		"truncated image": {"image/png", pngWithText(t, 300, 300, "", "")[:200]},
		"pixel bomb":      {"image/png", pngHeaderOnly(50_000, 50_000)},
	} {
		id := upload(t, alice, name, c.contentType, c.data)
		wantCode(t, alice, "BAD_USER_INPUT", complete, map[string]any{"id": id})
		// The refused file is gone, record and bytes.
		wantCode(t, alice, "NOT_FOUND", complete, map[string]any{"id": id})
	}
	var quota struct{ FileQuota struct{ UsedBytes float64 } }
	mustDo(t, alice, `{ fileQuota { usedBytes } }`, nil, &quota)
	if quota.FileQuota.UsedBytes != 0 {
		t.Fatalf("refused files take %v bytes of the quota", quota.FileQuota.UsedBytes)
	}

	// The signed upload URL takes exactly what was declared, signed as given.
	req := createUpload(t, alice, "a.txt", "text/plain", 5)
	if code := put(t, req, "text/plain", []byte("12345678")); code < 400 {
		t.Errorf("a PUT of another size answered %d", code)
	}
	if code := put(t, req, "text/html", []byte("12345")); code < 400 {
		t.Errorf("a PUT of another type answered %d", code)
	}
	tampered := req
	tampered.URL = strings.Replace(req.URL, "a.txt", "b.txt", 1) + "0"
	if code := put(t, tampered, "text/plain", []byte("12345")); code != http.StatusForbidden {
		t.Errorf("a PUT with a tampered URL answered %d", code)
	}
	if code := put(t, req, "text/plain", []byte("12345")); code >= 300 {
		t.Fatalf("the PUT as signed answered %d", code)
	}
}

// forEachFileStore runs test on each store, with files on local disk; and
// with files on S3, on Cassandra when the tests have it (the production
// pairing), else on the embedded store.
func forEachFileStore(t *testing.T, test func(t *testing.T, cfg server.Config)) {
	forEachStore(t, test)
	t.Run("s3", func(t *testing.T) {
		cfg := testConfig(t)
		if os.Getenv("CHAT_CASSANDRA_HOSTS") != "" {
			cfg = cassandraConfig(t)
		}
		cfg.Files, cfg.S3URL = "s3", s3URL(t)
		test(t, cfg)
	})
}

// s3URL is the S3 store of the tests, CHAT_S3_URL, whose bucket the server
// creates if need be.
func s3URL(t testing.TB) string {
	u, err := url.Parse(testenv.Service(t, "CHAT_S3_URL", "the tests of files on S3"))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("create", "true")
	u.RawQuery = q.Encode()
	return u.String()
}

// The upload and download of files.

type uploadRequest struct {
	ID, Method, URL string
	Headers         []struct{ Name, Value string }
}

func createUpload(t testing.TB, c *chatclient.Client, name, contentType string, size int) uploadRequest {
	t.Helper()
	var out struct{ CreateUpload uploadRequest }
	mustDo(t, c, `mutation($n: String!, $t: String!, $s: Int!) { createUpload(name: $n, contentType: $t, size: $s) { id method url headers { name value } } }`,
		map[string]any{"n": name, "t": contentType, "s": size}, &out)
	return out.CreateUpload
}

// upload creates an upload and PUTs data to it, as a client would.
func upload(t testing.TB, c *chatclient.Client, name, contentType string, data []byte) string {
	t.Helper()
	req := createUpload(t, c, name, contentType, len(data))
	if code := put(t, req, contentType, data); code >= 300 {
		t.Fatalf("PUT %s answered %d", name, code)
	}
	return req.ID
}

// put sends data with the upload's request, its content type replaced by
// contentType; it returns the status.
func put(t testing.TB, u uploadRequest, contentType string, data []byte) int {
	t.Helper()
	req, err := http.NewRequestWithContext(testContext(t), u.Method, u.URL, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range u.Headers {
		req.Header.Set(h.Name, h.Value)
	}
	req.Header.Set("Content-Type", contentType)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// download GETs a signed URL, wanting the status.
func download(t testing.TB, url string, status int) ([]byte, http.Header) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != status {
		t.Fatalf("GET %s: %d, want %d", url, res.StatusCode, status)
	}
	return body, res.Header
}

// readAttachments reads the attachments of a room's messages, newest first.
func readAttachments(t testing.TB, c *chatclient.Client, room string) []attachment {
	t.Helper()
	var out struct {
		Messages struct {
			Edges []struct {
				Node struct{ Attachments []attachment }
			}
		}
	}
	mustDo(t, c, `query($r: String!) { messages(room: $r, first: 50) { edges { node { attachments { `+attachmentFields+` } } } } }`, map[string]any{"r": room}, &out)
	var atts []attachment
	for _, e := range out.Messages.Edges {
		atts = append(atts, e.Node.Attachments...)
	}
	return atts
}

// Images made for the tests.

// pngWithText is a w x h PNG with a tEXt chunk key: value, as cameras and
// editors write them.
func pngWithText(t testing.TB, w, h int, key, value string) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x), uint8(y), uint8(x + y), 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if key == "" {
		return buf.Bytes()
	}
	data := buf.Bytes()
	const afterIHDR = 8 + 8 + 13 + 4
	return append(append(append([]byte{}, data[:afterIHDR]...), pngChunk("tEXt", []byte(key+"\x00"+value))...), data[afterIHDR:]...)
}

// pngHeaderOnly is a PNG that claims w x h pixels and holds none: a few
// bytes a decoder that trusted it would allocate gigabytes for.
func pngHeaderOnly(w, h uint32) []byte {
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 2 // 8-bit RGB
	out := []byte("\x89PNG\r\n\x1a\n")
	out = append(out, pngChunk("IHDR", ihdr)...)
	out = append(out, pngChunk("IDAT", []byte{0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01})...)
	return append(out, pngChunk("IEND", nil)...)
}

func pngChunk(kind string, data []byte) []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
	out = append(out, kind...)
	out = append(out, data...)
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(out[4:]))
}

// TestFilesWhileObjectStoreIsDown cuts the server off its S3 store: posts
// without files go on, checking an upload fails with UNAVAILABLE and a
// retryAfter, a post with a file not yet checked fails and posts nothing;
// once the store is back, the same upload checks and posts.
func TestFilesWhileObjectStoreIsDown(t *testing.T) {
	target, err := url.Parse(s3URL(t))
	if err != nil {
		t.Fatal(err)
	}
	var down atomic.Bool
	forward := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "the object store is down", http.StatusBadGateway)
			return
		}
		forward.ServeHTTP(w, r) // keeps r.Host, which the signatures cover
	}))
	t.Cleanup(proxy.Close)
	through := *target
	through.Host = strings.TrimPrefix(proxy.URL, "http://")
	q := through.Query()
	q.Set("timeout", "2s")
	through.RawQuery = q.Encode()

	cfg := testConfig(t)
	cfg.Files, cfg.S3URL = "s3", through.String()
	_, alice, _, _ := teaParty(t, cfg)
	image := pngWithText(t, 40, 30, "", "")
	id := upload(t, alice, "early.png", "image/png", image)

	down.Store(true)
	mustDo(t, alice, `mutation { postMessage(room: "tea-party", content: "still here") { id } }`, nil, nil)
	e := wantCode(t, alice, "UNAVAILABLE", `mutation($id: ID!) { completeUpload(id: $id) { id } }`, map[string]any{"id": id})
	if e.Extensions["retryAfter"] == nil {
		t.Errorf("UNAVAILABLE without retryAfter: %+v", e)
	}
	wantCode(t, alice, "UNAVAILABLE", `mutation($a: [ID!]) { postMessage(room: "tea-party", content: "with a file", attachments: $a) { id } }`, map[string]any{"a": []string{id}})

	down.Store(false)
	mustDo(t, alice, `mutation($id: ID!) { completeUpload(id: $id) { id } }`, map[string]any{"id": id}, nil)
	mustDo(t, alice, `mutation($a: [ID!]) { postMessage(room: "tea-party", content: "with a file", attachments: $a) { id } }`, map[string]any{"a": []string{id}}, nil)
	atts := readAttachments(t, alice, "tea-party")
	if len(atts) != 1 || atts[0].ID != id {
		t.Fatalf("after the outage the room holds the files %+v, want the one posted once", atts)
	}
}
