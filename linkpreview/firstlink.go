package linkpreview

import (
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxURLLength is the longest URL, in bytes, that FirstLink returns and
// that a Fetcher fetches.
const MaxURLLength = 2048

// FirstLink returns the first http or https URL in a chat message's text.
// The URL ends at white space, at a quote or angle bracket, or at the end of
// the text; trailing punctuation such as ".,!?" and unbalanced closing
// brackets are trimmed. URLs with user information ("user@host") or longer
// than MaxURLLength are skipped. It reports false if there is none.
func FirstLink(content string) (string, bool) {
	for i := 0; i < len(content); {
		start := nextScheme(content, i)
		if start < 0 {
			return "", false
		}
		end := start + urlExtent(content[start:])
		if link, ok := acceptLink(trimTrailing(content[start:end])); ok {
			return link, true
		}
		i = end
	}
	return "", false
}

// nextScheme returns the index of the next "http://" or "https://" (in any
// case) at or after from that does not continue a word, or -1.
func nextScheme(s string, from int) int {
	for i := from; i < len(s); i++ {
		if i > 0 && isASCIIAlnum(s[i-1]) {
			continue
		}
		if hasPrefixFold(s[i:], "http://") || hasPrefixFold(s[i:], "https://") {
			return i
		}
	}
	return -1
}

// hasPrefixFold reports whether s begins with the ASCII prefix, ignoring
// ASCII case only.
func hasPrefixFold(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		if lowerASCII(s[i]) != prefix[i] {
			return false
		}
	}
	return true
}

// lowerASCII returns the lower-case form of an ASCII letter and any other
// byte unchanged.
func lowerASCII(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

// isASCIIAlnum reports whether b is an ASCII letter or digit.
func isASCIIAlnum(b byte) bool {
	return 'a' <= lowerASCII(b) && lowerASCII(b) <= 'z' || '0' <= b && b <= '9'
}

// urlExtent returns the length of the URL candidate at the start of s: up
// to the first space, control character, invalid UTF-8, quote or angle
// bracket.
func urlExtent(s string) int {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 || unicode.IsSpace(r) || unicode.IsControl(r) || strings.ContainsRune("<>\"`", r) {
			return i
		}
		i += size
	}
	return len(s)
}

// closers maps each closing bracket that trimTrailing may drop to its
// opening partner.
var closers = map[byte]byte{')': '(', ']': '[', '}': '{'}

// trimTrailing removes punctuation that ends a sentence rather than the URL,
// and closing brackets that have no opening partner inside the URL.
func trimTrailing(s string) string {
	unmatched := map[byte]int{}
	for closer, opener := range closers {
		unmatched[closer] = strings.Count(s, string(closer)) - strings.Count(s, string(opener))
	}
	for s != "" {
		last := s[len(s)-1]
		switch {
		case strings.IndexByte(".,!?;:'*", last) >= 0:
		case closers[last] != 0 && unmatched[last] > 0:
			unmatched[last]--
		default:
			return s
		}
		s = s[:len(s)-1]
	}
	return s
}

// acceptLink reports whether candidate is a fetchable link, returning it
// unchanged if so.
func acceptLink(candidate string) (string, bool) {
	if len(candidate) > MaxURLLength {
		return "", false
	}
	u, err := url.Parse(candidate)
	if err != nil || checkURL(u) != nil {
		return "", false
	}
	return candidate, true
}
