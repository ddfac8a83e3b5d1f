package linkpreview

import (
	"bufio"
	"bytes"
	"io"
	"mime"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"
)

// A page's character encoding is found as browsers find it (the WHATWG
// encoding sniffing algorithm, in short): a byte order mark, else the
// Content-Type header's charset, else a <meta> tag in the first kilobyte,
// else UTF-8 if the start is valid UTF-8, else windows-1252.
//
// Pages get previews in UTF-8 (98 % of the web), UTF-16 and the
// single-byte encodings of Europe and Russia below. The East Asian
// multi-byte encodings (Shift_JIS, EUC-JP, GBK, Big5, EUC-KR: under 0.5 %
// of pages) get none: their tables are 3 MB of source, an eighth of what
// the server compiles on its first run, for a card.

// singleByte are the single-byte encodings by the labels pages use (the
// WHATWG Encoding Standard's labels, lowercased). ASCII and Latin-1 are
// read as windows-1252, as browsers do.
var singleByte = map[string]*charmap.Charmap{
	"us-ascii": charmap.Windows1252, "ascii": charmap.Windows1252,
	"iso-8859-1": charmap.Windows1252, "iso8859-1": charmap.Windows1252, "latin1": charmap.Windows1252,
	"windows-1252": charmap.Windows1252, "cp1252": charmap.Windows1252, "x-cp1252": charmap.Windows1252,
	"iso-8859-2": charmap.ISO8859_2, "latin2": charmap.ISO8859_2,
	"iso-8859-5": charmap.ISO8859_5, "iso-8859-7": charmap.ISO8859_7, "greek": charmap.ISO8859_7,
	"iso-8859-9": charmap.Windows1254, "latin5": charmap.Windows1254,
	"iso-8859-15": charmap.ISO8859_15, "latin9": charmap.ISO8859_15,
	"windows-1250": charmap.Windows1250, "cp1250": charmap.Windows1250,
	"windows-1251": charmap.Windows1251, "cp1251": charmap.Windows1251,
	"windows-1253": charmap.Windows1253, "windows-1254": charmap.Windows1254,
	"windows-1255": charmap.Windows1255, "windows-1256": charmap.Windows1256,
	"windows-1257": charmap.Windows1257, "windows-1258": charmap.Windows1258,
	"koi8-r": charmap.KOI8R, "koi8-u": charmap.KOI8U,
}

// decoding returns the decoder of a page's encoding given by its
// Content-Type header and first bytes: nil for UTF-8, ok false for one
// previews do not read.
func decoding(contentType string, start []byte) (dec *encoding.Decoder, ok bool) {
	switch {
	case bytes.HasPrefix(start, []byte("\xef\xbb\xbf")):
		return nil, true
	case bytes.HasPrefix(start, []byte("\xfe\xff")):
		return unicode.UTF16(unicode.BigEndian, unicode.ExpectBOM).NewDecoder(), true
	case bytes.HasPrefix(start, []byte("\xff\xfe")):
		return unicode.UTF16(unicode.LittleEndian, unicode.ExpectBOM).NewDecoder(), true
	}
	label := ""
	if _, params, err := mime.ParseMediaType(contentType); err == nil {
		label = params["charset"]
	}
	if label == "" {
		label = metaCharset(start)
	}
	switch label = strings.ToLower(strings.TrimSpace(label)); {
	case label == "":
		if validUTF8Start(start) {
			return nil, true
		}
		return charmap.Windows1252.NewDecoder(), true
	case label == "utf-8" || label == "utf8" || label == "unicode-1-1-utf-8":
		return nil, true
	}
	if cm, found := singleByte[label]; found {
		return cm.NewDecoder(), true
	}
	return nil, false
}

// validUTF8Start reports whether start is valid UTF-8 but for a rune its
// end may cut.
func validUTF8Start(start []byte) bool {
	for range utf8.UTFMax {
		if utf8.Valid(start) {
			return true
		}
		if len(start) == 0 {
			break
		}
		start = start[:len(start)-1]
	}
	return false
}

// metaCharset is the charset a <meta charset> or <meta http-equiv
// content-type> tag in start names, if any.
func metaCharset(start []byte) string {
	z := html.NewTokenizer(bytes.NewReader(start))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return ""
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			if string(name) != "meta" {
				continue
			}
			var httpEquiv, content string
			for hasAttr {
				var k, v []byte
				k, v, hasAttr = z.TagAttr()
				switch strings.ToLower(string(k)) {
				case "charset":
					return string(v)
				case "http-equiv":
					httpEquiv = strings.ToLower(string(v))
				case "content":
					content = string(v)
				}
			}
			if httpEquiv == "content-type" {
				if _, params, err := mime.ParseMediaType(content); err == nil && params["charset"] != "" {
					return params["charset"]
				}
			}
		}
	}
}

// decodeUTF8 returns body converted to UTF-8, or ok false when its
// encoding is one previews do not read.
func decodeUTF8(contentType string, body *bufio.Reader) (io.Reader, bool) {
	start, _ := body.Peek(1024)
	dec, ok := decoding(contentType, start)
	switch {
	case !ok:
		return nil, false
	case dec == nil:
		return body, true
	}
	return dec.Reader(body), true
}
