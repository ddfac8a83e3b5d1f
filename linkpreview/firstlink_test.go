package linkpreview

import (
	"strings"
	"testing"
)

func TestFirstLink(t *testing.T) {
	long := "https://example.com/" + strings.Repeat("a", MaxURLLength)
	tests := []struct {
		name, in, want string
		ok             bool
	}{
		{"none", "no links here", "", false},
		{"plain", "see https://example.com/a?b=c#d now", "https://example.com/a?b=c#d", true},
		{"http", "http://example.com", "http://example.com", true},
		{"upper-case scheme", "HTTPS://Example.com/X", "HTTPS://Example.com/X", true},
		{"first of two", "a http://one.example b https://two.example", "http://one.example", true},
		{"full stop", "look at https://example.com/page.", "https://example.com/page", true},
		{"punctuation run", "wow https://example.com/!?!", "https://example.com/", true},
		{"comma", "https://example.com/a, and more", "https://example.com/a", true},
		{"in parentheses", "(see https://example.com/x)", "https://example.com/x", true},
		{"balanced parentheses", "https://en.wikipedia.org/wiki/Go_(language)", "https://en.wikipedia.org/wiki/Go_(language)", true},
		{"balanced then closing", "(https://en.wikipedia.org/wiki/Go_(language))", "https://en.wikipedia.org/wiki/Go_(language)", true},
		{"markdown link", "[docs](https://example.com/docs).", "https://example.com/docs", true},
		{"angle brackets", "<https://example.com/a>", "https://example.com/a", true},
		{"quoted", `"https://example.com/q"`, "https://example.com/q", true},
		{"no host", "https:// nothing", "", false},
		{"other scheme", "ftp://example.com gopher://x", "", false},
		{"inside a word", "xhttps://example.com", "", false},
		{"userinfo skipped", "https://user:pw@example.com then https://ok.example", "https://ok.example", true},
		{"empty userinfo skipped", "https://@example.com", "", false},
		{"too long skipped", long + " https://short.example", "https://short.example", true},
		{"exactly max length", long[:MaxURLLength], long[:MaxURLLength], true},
		{"newline ends", "https://example.com/a\nnext", "https://example.com/a", true},
		{"unicode path", "https://example.com/caf\u00e9!", "https://example.com/caf\u00e9", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := FirstLink(tc.in)
			if got != tc.want || ok != tc.ok {
				t.Errorf("FirstLink(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
			}
		})
	}
}
