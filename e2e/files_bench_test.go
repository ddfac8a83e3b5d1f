package e2e

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"github.com/killrchat/chatql/server"
)

// BenchmarkUpload sends files as a client does, through the API and the
// object store (the server's /files/ handler, the embedded default, and the
// S3 server of the tests when there is one): createUpload, the PUT of the
// bytes, completeUpload. A 1 MiB file that is no image is checked
// by its first bytes; an image is decoded whole, stored without its
// metadata, and gets two thumbnails. b.SetBytes makes the MB/s the
// upload throughput of one client.
func BenchmarkUpload(b *testing.B) {
	b.Run("disk", func(b *testing.B) { benchmarkUpload(b, testConfig(b)) })
	if os.Getenv("CHAT_S3_URL") != "" {
		b.Run("s3", func(b *testing.B) {
			cfg := testConfig(b)
			cfg.Files, cfg.S3URL = "s3", s3URL(b)
			benchmarkUpload(b, cfg)
		})
	}
}

func benchmarkUpload(b *testing.B, cfg server.Config) {
	ts := startServer(b, cfg)
	alice := ts.user(b, "alice")
	for _, c := range []struct {
		name, contentType string
		data              []byte
	}{
		{"file=1MiB", "application/octet-stream", bytes.Repeat([]byte("chatql "), 1<<20/7)},
		{"image=1024x768", "image/png", pngWithText(b, 1024, 768, "", "")},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.data)))
			n := 0
			for b.Loop() {
				n++
				id := upload(b, alice, fmt.Sprint("f", n), c.contentType, c.data)
				mustDo(b, alice, `mutation($id: ID!) { completeUpload(id: $id) { id } }`, map[string]any{"id": id}, nil)
			}
		})
	}
}

// BenchmarkPostWithAttachment is the cost of a post that carries a file
// checked beforehand (claimed, stored with the message, attached) against
// one that carries none, through the API on the embedded store.
func BenchmarkPostWithAttachment(b *testing.B) {
	ts := startServer(b, testConfig(b))
	alice := ts.user(b, "alice")
	mustDo(b, alice, createRoom, map[string]any{"n": "album"}, nil)
	b.Run("files=0", func(b *testing.B) {
		for b.Loop() {
			mustDo(b, alice, `mutation { postMessage(room: "album", content: "hello") { id } }`, nil, nil)
		}
	})
	b.Run("files=1", func(b *testing.B) {
		data := []byte("a small file")
		n := 0
		for b.Loop() {
			b.StopTimer()
			n++
			id := upload(b, alice, fmt.Sprint("f", n), "text/plain", data)
			mustDo(b, alice, `mutation($id: ID!) { completeUpload(id: $id) { id } }`, map[string]any{"id": id}, nil)
			b.StartTimer()
			mustDo(b, alice, `mutation($a: [ID!]) { postMessage(room: "album", content: "hello", attachments: $a) { id } }`, map[string]any{"a": []string{id}}, nil)
		}
	})
}
