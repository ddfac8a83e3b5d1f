package linkpreview

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"

	"github.com/killrchat/chatql/store"
)

// Longest fields of a preview, in runes.
const (
	MaxTitleLength       = 200
	MaxDescriptionLength = 500
	MaxSiteNameLength    = 100
)

// metaKeys are the meta tags the parser keeps; others are ignored.
var metaKeys = map[string]bool{
	"og:title": true, "og:description": true, "og:image": true,
	"og:image:url": true, "og:image:secure_url": true, "og:site_name": true,
	"og:url": true, "twitter:title": true, "twitter:description": true,
	"twitter:image": true, "twitter:image:src": true, "description": true,
}

// head holds what the parser found in a page's head.
type head struct {
	meta  map[string]string
	title string
}

// parse reads the head of an HTML page from r and returns its preview;
// page is the page's URL, against which relative URLs are resolved. Read
// errors other than the end of r are returned along with what was found.
func parse(r io.Reader, page *url.URL) (store.LinkPreview, error) {
	h, err := scanHead(r)
	return h.preview(page), err
}

// scanHead tokenizes r until the end of the head (a </head> or <body> tag)
// or of r, collecting the title and the meta tags of interest.
func scanHead(r io.Reader) (head, error) {
	h := head{meta: map[string]string{}}
	z := html.NewTokenizer(r)
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			if errors.Is(z.Err(), io.EOF) {
				return h, nil
			}
			return h, z.Err()
		case html.StartTagToken, html.SelfClosingTagToken:
			if h.startTag(z, tt) {
				return h, nil
			}
		case html.EndTagToken:
			if name, _ := z.TagName(); string(name) == "head" {
				return h, nil
			}
		}
	}
}

// startTag handles a start tag, reporting whether it ends the head.
func (h *head) startTag(z *html.Tokenizer, tt html.TokenType) bool {
	name, hasAttr := z.TagName()
	switch string(name) {
	case "meta":
		if hasAttr {
			h.addMeta(z)
		}
	case "title":
		if tt == html.StartTagToken && z.Next() == html.TextToken && h.title == "" {
			h.title = string(z.Text())
		}
	case "body":
		return true
	}
	return false
}

// addMeta records a meta tag's content under its property or name, keeping
// the first non-empty value of each key.
func (h *head) addMeta(z *html.Tokenizer) {
	var key, content string
	for {
		k, v, more := z.TagAttr()
		switch string(k) {
		case "property", "name":
			if key == "" || !metaKeys[key] {
				key = strings.ToLower(strings.TrimSpace(string(v)))
			}
		case "content":
			content = string(v)
		}
		if !more {
			break
		}
	}
	if metaKeys[key] && h.meta[key] == "" && strings.TrimSpace(content) != "" {
		h.meta[key] = content
	}
}

// pick returns the first of the keys' values that is not blank, cleaned and
// cut to max runes.
func (h *head) pick(max int, keys ...string) string {
	for _, k := range keys {
		if v := clean(h.meta[k], max); v != "" {
			return v
		}
	}
	return ""
}

// pickURL returns the first of the keys' values that is not blank, with
// surrounding white space removed but otherwise as written.
func (h *head) pickURL(keys ...string) string {
	for _, k := range keys {
		if v := strings.TrimSpace(h.meta[k]); v != "" {
			return v
		}
	}
	return ""
}

// preview assembles the preview, falling back from Open Graph to Twitter
// tags and then to the title and description.
func (h *head) preview(page *url.URL) store.LinkPreview {
	title := h.pick(MaxTitleLength, "og:title", "twitter:title")
	if title == "" {
		title = clean(h.title, MaxTitleLength)
	}
	image := h.pickURL("og:image", "og:image:url", "og:image:secure_url", "twitter:image", "twitter:image:src")
	return store.LinkPreview{
		URL:         canonicalURL(page, h.pickURL("og:url")),
		Title:       title,
		Description: h.pick(MaxDescriptionLength, "og:description", "twitter:description", "description"),
		SiteName:    h.pick(MaxSiteNameLength, "og:site_name"),
		ImageURL:    resolveHTTP(page, image),
	}
}

// canonicalURL returns the page's og:url when it is an http(s) URL on the
// page's own host, and the page's URL otherwise, so that a page cannot make
// its card claim another site.
func canonicalURL(page *url.URL, ogURL string) string {
	if c := resolveHTTP(page, ogURL); c != "" {
		if u, err := url.Parse(c); err == nil && strings.EqualFold(u.Hostname(), page.Hostname()) {
			return c
		}
	}
	return escapeRaw(page.String())
}

// resolveHTTP resolves ref against page and returns it if the result is an
// http or https URL with a host, without user information and not too long;
// otherwise it returns "".
func resolveHTTP(page *url.URL, ref string) string {
	if ref == "" || len(ref) > MaxURLLength {
		return ""
	}
	r, err := url.Parse(ref)
	if err != nil {
		return ""
	}
	abs := page.ResolveReference(r)
	if checkURL(abs) != nil {
		return ""
	}
	if s := escapeRaw(abs.String()); len(s) <= MaxURLLength {
		return s
	}
	return ""
}

// escapeRaw percent-encodes the bytes of a URL that are not valid UTF-8,
// and spaces, which url.URL leaves as they are in a query: the result means
// the same to a server and is valid UTF-8.
func escapeRaw(s string) string {
	if utf8.ValidString(s) && !strings.Contains(s, " ") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == ' ' || r == utf8.RuneError && size == 1 {
			fmt.Fprintf(&b, "%%%02X", s[i])
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// clean replaces invalid UTF-8, turns control characters into spaces,
// collapses runs of white space into one space and cuts the result to at
// most max runes, ending a cut string with an ellipsis.
func clean(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	return truncate(s, max)
}

// truncate cuts s to at most max runes on a rune boundary, replacing the
// last kept rune with "…" when it cuts.
func truncate(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	n := 0
	for i := range s {
		if n == max-1 {
			return strings.TrimRightFunc(s[:i], unicode.IsSpace) + "…"
		}
		n++
	}
	return s
}
