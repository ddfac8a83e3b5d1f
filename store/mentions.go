package store

import (
	"context"
	"regexp"
	"slices"
	"strings"
)

// Mentioned: Message, in conversation Room, mentions the inbox's owner;
// User is its author. An inbox event.
const Mentioned EventKind = "MENTIONED"

// MaxMentions bounds the logins one message mentions: the ones after it
// are not.
const MaxMentions = 20

// mention is an @login: after the start or a character no login holds.
var mention = regexp.MustCompile(`(?:^|[^a-z0-9._@-])@([a-z0-9][a-z0-9._-]{2,31})`)

// Mentions returns the distinct logins content mentions as @login, in
// order, at most MaxMentions. A sentence's full stop after a login is not
// part of it ("ask @alice." mentions alice).
func Mentions(content string) []string {
	var logins []string
	for _, m := range mention.FindAllStringSubmatch(content, -1) {
		login := strings.TrimRight(m[1], ".")
		if len(login) >= 3 && !slices.Contains(logins, login) {
			if logins = append(logins, login); len(logins) == MaxMentions {
				break
			}
		}
	}
	return logins
}

// Mentioner logs mentions: the post's operation stores the message, then
// the resolver, which knows who takes part, logs its mentions of them.
type Mentioner interface {
	// LogMention logs Mentioned (the message's id, User its author) in the
	// inbox log of each of logins and returns the event.
	LogMention(ctx context.Context, m Message, logins []string) (Event, error)
}
