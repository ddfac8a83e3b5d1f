package store

import (
	"context"
	"slices"
	"strings"
)

// Mentioned: Message, in conversation Room, mentions the inbox's owner;
// User is its author. An inbox event.
const Mentioned EventKind = "MENTIONED"

// MaxMentions bounds the logins one message mentions: the ones after it
// are not.
const MaxMentions = 20

// Mentions returns the distinct logins content mentions as @login, in
// order, at most MaxMentions: an @ at the start or after a character no
// login holds, then a login. A sentence's full stop after a login is not
// part of it ("ask @alice." mentions alice). One pass over the @s, without
// a regular expression: every post of a room or group pays it.
func Mentions(content string) []string {
	var logins []string
	for i := strings.IndexByte(content, '@'); i >= 0; {
		start := i + 1
		end := start
		for end < len(content) && isLoginByte(content[end]) {
			end++
		}
		if i == 0 || !isLoginByte(content[i-1]) && content[i-1] != '@' {
			login := strings.TrimRight(content[start:end], ".")
			if loginPattern.MatchString(login) && !slices.Contains(logins, login) {
				if logins = append(logins, login); len(logins) == MaxMentions {
					break
				}
			}
		}
		next := strings.IndexByte(content[end:], '@')
		if next < 0 {
			break
		}
		i = end + next
	}
	return logins
}

// isLoginByte reports whether b may be part of a login.
func isLoginByte(b byte) bool {
	return 'a' <= b && b <= 'z' || '0' <= b && b <= '9' || b == '.' || b == '_' || b == '-'
}

// Mentioner logs mentions: the post's operation stores the message, then
// the resolver, which knows who takes part, logs its mentions of them.
type Mentioner interface {
	// LogMention logs Mentioned (the message's id, User its author) in the
	// inbox log of each of logins and returns the event.
	LogMention(ctx context.Context, m Message, logins []string) (Event, error)
}
