package images

import (
	"bytes"
	"net/http"
	"strings"
)

// SniffLen is how many leading bytes Sniff looks at; more are ignored.
const SniffLen = 512

// Sniff returns the content type of a file from its first bytes, ignoring
// whatever name or type the sender declared.
//
// A supported image is recognised by its signature and reported as JPEG, PNG,
// GIF or WebP. Anything else is classified by http.DetectContentType, and the
// result is reported only when it is passive: a type that a browser shows or
// plays (plain text, audio, video, PDF, fonts) or only downloads (archives),
// but never runs as part of the page that links it. Every type a browser
// would treat as active content — HTML, XML (which includes SVG), anything
// with scripts — is reported as text/plain when DetectContentType saw text,
// and as application/octet-stream otherwise, so that serving a file with
// the type Sniff reports can never make it run in the chat's origin.
func Sniff(head []byte) string {
	if len(head) > SniffLen {
		head = head[:SniffLen]
	}
	if t := sniffImage(head); t != "" {
		return t
	}
	return passiveType(http.DetectContentType(head))
}

// Signatures of the supported image formats.
var (
	jpegSignature = []byte{0xFF, 0xD8, 0xFF}
	pngSignature  = []byte("\x89PNG\r\n\x1a\n")
	gif87a        = []byte("GIF87a")
	gif89a        = []byte("GIF89a")
)

// sniffImage returns the content type of a supported image's signature at
// the start of head, or "" if head starts with none.
func sniffImage(head []byte) string {
	switch {
	case bytes.HasPrefix(head, jpegSignature):
		return JPEG
	case bytes.HasPrefix(head, pngSignature):
		return PNG
	case bytes.HasPrefix(head, gif87a), bytes.HasPrefix(head, gif89a):
		return GIF
	case isWebP(head):
		return WebP
	}
	return ""
}

// isWebP reports whether head starts a RIFF container of WebP data.
func isWebP(head []byte) bool {
	return len(head) >= 16 && string(head[0:4]) == "RIFF" &&
		string(head[8:12]) == "WEBP" && string(head[12:15]) == "VP8"
}

// passiveTypes are the media types (without parameters) that Sniff reports
// as DetectContentType found them. Types under passivePrefixes are too.
var passiveTypes = map[string]bool{
	"text/plain":                    true,
	"application/pdf":               true,
	"application/zip":               true,
	"application/x-gzip":            true,
	"application/x-rar-compressed":  true,
	"application/ogg":               true,
	"application/vnd.ms-fontobject": true,
}

// passivePrefixes are the families of passive types: sound, video, fonts.
var passivePrefixes = []string{"audio/", "video/", "font/"}

// Generic types Sniff reports for what it will not name.
const (
	textPlain   = "text/plain; charset=utf-8"
	octetStream = "application/octet-stream"
)

// passiveType returns detected if it is passive, and otherwise a generic
// type: text/plain for text (HTML, XML), application/octet-stream for the
// rest (including images of unsupported formats).
func passiveType(detected string) string {
	mediaType, _, _ := strings.Cut(detected, ";")
	mediaType = strings.TrimSpace(mediaType)
	if passiveTypes[mediaType] {
		return detected
	}
	for _, p := range passivePrefixes {
		if strings.HasPrefix(mediaType, p) {
			return detected
		}
	}
	if strings.HasPrefix(mediaType, "text/") {
		return textPlain
	}
	return octetStream
}
