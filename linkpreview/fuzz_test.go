package linkpreview

import (
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzFirstLink(f *testing.F) {
	for _, s := range []string{
		"see https://example.com/a.", "(http://x.example/a_(b))", "<https://a.example>",
		"https://user@host", "HTTPS://X", "httphttps://", "https://\xff", "", "http://[::1]:80/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		link, ok := FirstLink(s)
		if !ok {
			if link != "" {
				t.Fatalf("FirstLink(%q) = %q with ok false", s, link)
			}
			return
		}
		if !strings.Contains(s, link) {
			t.Fatalf("FirstLink(%q) = %q, not part of the input", s, link)
		}
		if len(link) > MaxURLLength {
			t.Fatalf("FirstLink returned %d bytes", len(link))
		}
		u, err := url.Parse(link)
		if err != nil || checkURL(u) != nil {
			t.Fatalf("FirstLink(%q) = %q, which is not a fetchable URL (%v)", s, link, err)
		}
	})
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		ogPage, "<title>a &amp; b</title>", "<meta property=og:image content=/x.png>",
		"<head><meta name=description content='\x00\xff'></head>", "<title>", "<meta", "<<<>>>",
	} {
		f.Add(s)
	}
	page, _ := url.Parse("https://example.com/dir/page")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := parse(strings.NewReader(s), page)
		if err != nil {
			t.Fatalf("parse of an in-memory page failed: %v", err)
		}
		for _, field := range []string{p.URL, p.Title, p.Description, p.SiteName, p.ImageURL} {
			if !utf8.ValidString(field) {
				t.Fatalf("field %q is not valid UTF-8", field)
			}
		}
		if utf8.RuneCountInString(p.Title) > MaxTitleLength || utf8.RuneCountInString(p.Description) > MaxDescriptionLength ||
			utf8.RuneCountInString(p.SiteName) > MaxSiteNameLength || len(p.ImageURL) > MaxURLLength {
			t.Fatalf("field too long: %+v", p)
		}
		if p.ImageURL != "" && !strings.HasPrefix(p.ImageURL, "http://") && !strings.HasPrefix(p.ImageURL, "https://") {
			t.Fatalf("image URL %q is not http(s)", p.ImageURL)
		}
	})
}
