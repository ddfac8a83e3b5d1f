package mail

import (
	"errors"
	"fmt"
	"net/mail"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxExcerptRunes is the length to which Compose cuts an item's text.
const MaxExcerptRunes = 280

// maxDigestItems is how many items a message lists; the rest are counted.
const maxDigestItems = 50

// maxUnsubscribeURL bounds the unsubscribe link, which goes in a header.
const maxUnsubscribeURL = 900

// ErrDigest reports a Digest that cannot be sent.
var ErrDigest = errors.New("mail: bad digest")

// Kind says why an item is in a digest.
type Kind int

// The kinds of digest items.
const (
	// Mention is a message in a room that mentions the recipient.
	Mention Kind = iota + 1
	// DirectMessage is a message sent to the recipient alone.
	DirectMessage
)

// label describes the kind in a sentence.
func (k Kind) label() string {
	if k == DirectMessage {
		return "Direct message"
	}
	return "Mention"
}

// Item is one unread message in a digest. Every field is shown escaped.
type Item struct {
	// Kind says whether the recipient was mentioned or messaged directly.
	Kind Kind
	// Conversation names the room or the direct conversation.
	Conversation string
	// From is the display name of the sender.
	From string
	// Excerpt is the message's text; Compose cuts it to MaxExcerptRunes.
	Excerpt string
	// Link opens the message in the app; only http and https links are
	// shown.
	Link string
	// At is when the message was sent; zero omits it.
	At time.Time
}

// Digest is one message to one person about their unread messages.
type Digest struct {
	// To is the recipient; its Name may be empty.
	To mail.Address
	// Items are the unread mentions and direct messages, newest first.
	Items []Item
	// UnsubscribeURL is the endpoint that stops these emails, such as
	// "https://chat.example.com/email/unsubscribe"; Compose adds the token.
	UnsubscribeURL string
	// UnsubscribeToken identifies the recipient to that endpoint; the
	// caller makes it (and must make it unguessable).
	UnsubscribeToken string
	// Date is the message's date; zero means now.
	Date time.Time
}

// unsubscribeLink returns UnsubscribeURL with the token as its "token"
// query parameter.
func (d Digest) unsubscribeLink() (string, error) {
	u, err := url.Parse(d.UnsubscribeURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return "", fmt.Errorf("%w: unsubscribe URL %q is not an absolute http(s) URL", ErrDigest, d.UnsubscribeURL)
	}
	if d.UnsubscribeToken == "" {
		return "", fmt.Errorf("%w: no unsubscribe token", ErrDigest)
	}
	q := u.Query()
	q.Set("token", d.UnsubscribeToken)
	u.RawQuery = q.Encode()
	link := u.String()
	if len(link) > maxUnsubscribeURL {
		return "", fmt.Errorf("%w: unsubscribe link longer than %d bytes", ErrDigest, maxUnsubscribeURL)
	}
	return link, nil
}

// check refuses a digest without a valid recipient or without items.
func (d Digest) check() error {
	if strings.ContainsAny(d.To.Name+d.To.Address, "\r\n") {
		return fmt.Errorf("%w: recipient contains a line break", ErrDigest)
	}
	if _, err := mail.ParseAddress(d.To.Address); err != nil || d.To.Address == "" {
		return fmt.Errorf("%w: recipient %q: %v", ErrDigest, d.To.Address, err)
	}
	if len(d.Items) == 0 {
		return fmt.Errorf("%w: no items", ErrDigest)
	}
	return nil
}

// excerpt cuts s to MaxExcerptRunes runes, marking the cut with an
// ellipsis, and replaces invalid UTF-8.
func excerpt(s string) string {
	s = strings.ToValidUTF8(strings.TrimSpace(s), "\uFFFD")
	if utf8.RuneCountInString(s) <= MaxExcerptRunes {
		return s
	}
	return string([]rune(s)[:MaxExcerptRunes]) + "…"
}

// safeLink returns link if it is an absolute http or https URL, else "".
func safeLink(link string) string {
	u, err := url.Parse(link)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return ""
	}
	return u.String()
}
