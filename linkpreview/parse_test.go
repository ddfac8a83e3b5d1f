package linkpreview

import (
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/killrchat/chatql/store"
)

// parseString parses page as if fetched from pageURL.
func parseString(t *testing.T, pageURL, page string) store.LinkPreview {
	t.Helper()
	u, err := url.Parse(pageURL)
	if err != nil {
		t.Fatal(err)
	}
	p, err := parse(strings.NewReader(page), u)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return p
}

func TestParseOpenGraph(t *testing.T) {
	page := `<!doctype html><html><head>
<title>Plain title</title>
<meta property="og:title" content="OG title">
<meta property="og:description" content="OG   description
 on two lines">
<meta property="og:image" content="https://cdn.example.com/i.png">
<meta property="og:site_name" content="Example">
<meta property="og:url" content="https://example.com/canonical">
<meta name="twitter:title" content="Twitter title">
<meta name="description" content="Plain description">
</head><body><meta property="og:title" content="in body"></body></html>`
	got := parseString(t, "https://example.com/page?x=1", page)
	want := store.LinkPreview{
		URL:         "https://example.com/canonical",
		Title:       "OG title",
		Description: "OG description on two lines",
		SiteName:    "Example",
		ImageURL:    "https://cdn.example.com/i.png",
	}
	if got != want {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestParseFallbacks(t *testing.T) {
	twitter := `<head><title>Plain</title><meta name="twitter:title" content="TW title">
<meta name="twitter:description" content="TW desc"><meta name="twitter:image" content="/tw.png">
<meta name="description" content="Plain desc"></head>`
	got := parseString(t, "https://example.com/a/b", twitter)
	want := store.LinkPreview{URL: "https://example.com/a/b", Title: "TW title", Description: "TW desc", ImageURL: "https://example.com/tw.png"}
	if got != want {
		t.Errorf("twitter: got %+v\nwant %+v", got, want)
	}
	plain := `<html><head><TITLE>  Plain
	title </TITLE><META NAME="Description" CONTENT="Plain desc"><meta property="og:title" content="  "></head>`
	got = parseString(t, "http://example.com/", plain)
	want = store.LinkPreview{URL: "http://example.com/", Title: "Plain title", Description: "Plain desc"}
	if got != want {
		t.Errorf("plain: got %+v\nwant %+v", got, want)
	}
}

func TestParseEntities(t *testing.T) {
	page := `<head><title>Tom &amp; Jerry&#39;s &eacute;t&eacute; &lt;3</title>
<meta property="og:description" content="&quot;quoted&quot; &#x263A; &amp;amp;"></head>`
	got := parseString(t, "https://example.com/", page)
	if want := "Tom & Jerry's été <3"; got.Title != want {
		t.Errorf("title %q, want %q", got.Title, want)
	}
	if want := `"quoted" ☺ &amp;`; got.Description != want {
		t.Errorf("description %q, want %q", got.Description, want)
	}
}

func TestParseImageURL(t *testing.T) {
	tests := []struct{ image, want string }{
		{"/img/a.png", "https://example.com/img/a.png"},
		{"b.png", "https://example.com/dir/b.png"},
		{"//cdn.example.net/c.png", "https://cdn.example.net/c.png"},
		{"http://other.example/d.png?x=1&amp;y=2", "http://other.example/d.png?x=1&y=2"},
		{"javascript:alert(1)", ""},
		{"data:image/png;base64,AAAA", ""},
		{"file:///etc/passwd", ""},
		{"https://user:pw@example.com/e.png", ""},
		{"  /spaced.png\n", "https://example.com/spaced.png"},
		{"/q?a=\xa3 b", "https://example.com/q?a=%A3%20b"},
		{"/" + strings.Repeat("long", MaxURLLength/4), ""},
	}
	for _, tc := range tests {
		page := `<head><meta property="og:image" content="` + tc.image + `"></head>`
		got := parseString(t, "https://example.com/dir/page", page)
		if got.ImageURL != tc.want {
			t.Errorf("og:image %q resolved to %q, want %q", tc.image, got.ImageURL, tc.want)
		}
	}
}

func TestParseOGURLOtherHostIgnored(t *testing.T) {
	page := `<head><meta property="og:url" content="https://bank.example/login"></head>`
	got := parseString(t, "https://example.com/p", page)
	if got.URL != "https://example.com/p" {
		t.Errorf("URL %q, want the page's own URL", got.URL)
	}
}

func TestParseTrimsLongFields(t *testing.T) {
	title := strings.Repeat("é", 300)
	desc := strings.Repeat("日本 ", 400)
	page := `<head><title>` + title + `</title><meta name="description" content="` + desc + `"></head>`
	got := parseString(t, "https://example.com/", page)
	if n := utf8.RuneCountInString(got.Title); n != MaxTitleLength || !strings.HasSuffix(got.Title, "…") {
		t.Errorf("title has %d runes (want %d, ending in …): %q", n, MaxTitleLength, got.Title)
	}
	if n := utf8.RuneCountInString(got.Description); n > MaxDescriptionLength || !strings.HasSuffix(got.Description, "…") {
		t.Errorf("description has %d runes (want <= %d, ending in …)", n, MaxDescriptionLength)
	}
	if !utf8.ValidString(got.Title) || !utf8.ValidString(got.Description) {
		t.Error("trimmed fields are not valid UTF-8")
	}
}

func TestParseStopsAtHead(t *testing.T) {
	page := `<html><head><title>Head</title></head><body><title>Body</title><meta name="description" content="late"></body>`
	got := parseString(t, "https://example.com/", page)
	if got.Title != "Head" || got.Description != "" {
		t.Errorf("got %+v; want only the head's title", got)
	}
	for _, page := range []string{
		`<title>T</title><body><meta name="description" content="late">`,
		`<title>T</title></head><meta name="description" content="late">`,
	} {
		if got := parseString(t, "https://example.com/", page); got.Description != "" {
			t.Errorf("description %q read from after the head in %q", got.Description, page)
		}
	}
}
