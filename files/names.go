package files

import (
	"mime"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/killrchat/chatql/store"
)

// FileName returns the name a sender gave a file, made safe to show and to
// offer as a download name: the last element of any path (so no "../"
// survives), without control characters and the bidirectional formatting
// characters that make "gpj.exe" read as "exe.jpg", without leading dots
// and surrounding spaces, cut to MaxFileNameLength bytes on a character
// boundary. A name with nothing left is "file". Invalid UTF-8 is refused.
func FileName(name string) (string, error) {
	if !utf8.ValidString(name) {
		return "", store.Invalidf("invalid file name: it is not UTF-8")
	}
	name = strings.ReplaceAll(name, `\`, "/")
	name = path.Base("/" + name)
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || isBidiControl(r) || r == utf8.RuneError {
			return -1
		}
		return r
	}, name)
	name = strings.TrimLeft(strings.TrimSpace(name), ".")
	name = strings.TrimSpace(name)
	for len(name) > store.MaxFileNameLength {
		_, size := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-size]
	}
	if name == "" || name == "/" {
		return "file", nil
	}
	return name, nil
}

// isBidiControl reports whether r changes the direction text is shown in
// (Unicode's Bidi_Control characters) or is a zero-width character that
// hides within a name.
func isBidiControl(r rune) bool {
	switch {
	case r == '\u061c', r == '\u200e', r == '\u200f':
		return true
	case r >= '\u202a' && r <= '\u202e':
		return true
	case r >= '\u2066' && r <= '\u2069':
		return true
	case r >= '\u200b' && r <= '\u200d', r == '\ufeff':
		return true
	}
	return false
}

// ContentType returns a declared media type in its canonical form (type
// and subtype in lower case, parameters kept), or an ErrInvalid error.
func ContentType(declared string) (string, error) {
	media, params, err := mime.ParseMediaType(declared)
	if err != nil || !strings.Contains(media, "/") || len(declared) > 255 {
		return "", store.Invalidf("invalid content type %s: want a media type such as image/png", store.Quote(declared))
	}
	return mime.FormatMediaType(media, params), nil
}

// attachmentDisposition is the Content-Disposition of a file's download:
// inline for the images the server checked (they are shown in the chat),
// attachment for anything else, so a browser never renders a sent HTML
// page or script on the download's origin.
func attachmentDisposition(a store.Attachment) string {
	kind := "attachment"
	if a.IsImage() {
		kind = "inline"
	}
	return mime.FormatMediaType(kind, map[string]string{"filename": a.Name})
}
