package store

import (
	"net/mail"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of user input. They keep rows small enough to denormalize freely.
const (
	MaxNameLength     = 64   // firstname, lastname
	MaxEmailLength    = 254  // RFC 5321
	MaxBioLength      = 500  // characters
	MaxBannerLength   = 200  // characters
	MaxMessageLength  = 4000 // characters of one message
	MaxAttachments    = 10   // files of one message
	MaxFileNameLength = 255  // bytes of an attachment's name
	MinPasswordLength = 8
	MaxPasswordLength = 72 // bytes: bcrypt ignores anything longer
)

var (
	loginPattern    = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{2,31}$`)
	roomNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{1,39}$`)
)

// LoginRule and RoomNameRule state the naming rules in the words errors use.
const (
	LoginRule    = "a login is 3 to 32 characters: lowercase letters, digits, '.', '_' or '-', starting with a letter or digit"
	RoomNameRule = "a room name is 2 to 40 characters: lowercase letters, digits, '_' or '-', starting with a letter or digit"
)

// ValidateLogin returns a FieldError about the field "login" unless login
// follows LoginRule.
func ValidateLogin(login string) error { return ValidateLoginIn("login", login) }

// ValidateLoginIn is ValidateLogin for a login passed as field.
func ValidateLoginIn(field, login string) error {
	if !loginPattern.MatchString(login) {
		return InvalidField(field, "invalid login %s: %s", Quote(login), LoginRule)
	}
	return nil
}

// ValidateRoomName returns a FieldError about the field "room" unless name
// follows RoomNameRule.
func ValidateRoomName(name string) error { return validateRoomName("room", name) }

func validateRoomName(field, name string) error {
	if !roomNamePattern.MatchString(name) {
		return InvalidField(field, "invalid room name %s: %s", Quote(name), RoomNameRule)
	}
	return nil
}

// ValidatePassword returns a FieldError about the field "password" unless
// the password's length is within bounds. The password itself never
// appears in the message.
func ValidatePassword(password string) error { return ValidatePasswordIn("password", password) }

// ValidatePasswordIn is ValidatePassword for a password passed as field.
func ValidatePasswordIn(field, password string) error {
	if n := len(password); n < MinPasswordLength || n > MaxPasswordLength {
		return InvalidField(field, "invalid password: it must be %d to %d bytes long", MinPasswordLength, MaxPasswordLength)
	}
	return nil
}

// ValidateEmail checks an email address: a bare address such as
// name@example.com (no display name, no spaces), at most MaxEmailLength.
func ValidateEmail(email string) error {
	at := strings.IndexByte(email, '@')
	bad := len(email) > MaxEmailLength || at < 1 || at == len(email)-1 ||
		strings.ContainsFunc(email, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) })
	if !bad {
		a, err := mail.ParseAddress(email)
		bad = err != nil || a.Address != email
	}
	if bad {
		return InvalidField("email", "invalid email %s: it must look like name@example.com and be at most %d characters", Quote(email), MaxEmailLength)
	}
	return nil
}

// Validate checks a new user's profile: login, names, email and bio,
// reporting every invalid field (InvalidFields).
func (u User) Validate() error {
	var email error
	if u.Email != "" {
		email = ValidateEmail(u.Email)
	}
	return JoinInvalid(
		ValidateLogin(u.Login),
		ValidateName("firstname", u.Firstname),
		ValidateName("lastname", u.Lastname),
		email,
		validateText("bio", u.Bio, 0, MaxBioLength, multiline),
	)
}

// Validate checks a new room's name and banner, reporting both if both
// are invalid.
func (r Room) Validate() error {
	return JoinInvalid(validateRoomName("name", r.Name), validateText("banner", r.Banner, 0, MaxBannerLength, oneLine))
}

// ValidateName checks a first or last name: required, one line, with no
// control or direction-changing character (a name is shown beside what
// others wrote, in apps and in logs, where those would let it pass for
// another or rewrite the terminal).
func ValidateName(field, name string) error {
	return validateText(field, name, 1, MaxNameLength, oneLine)
}

// ValidateContent checks a message's content: some visible text (not only
// spaces and invisible characters), not too long, no control character
// but tabs and line breaks.
func ValidateContent(content string) error {
	if Blank(content) {
		return InvalidField("content", "invalid message: content must not be blank")
	}
	return validateLabeledText("content", "message content", content, 1, MaxMessageLength, message)
}

// Blank reports whether s shows nothing: it holds only white space and
// characters that take no room (zero-width spaces and joiners, the byte
// order mark, blank fillers).
func Blank(s string) bool {
	for _, r := range s {
		if !invisible(r) {
			return false
		}
	}
	return true
}

// invisible reports whether r shows nothing by itself.
func invisible(r rune) bool {
	switch {
	case unicode.IsSpace(r), unicode.Is(unicode.Cf, r), unicode.IsControl(r):
		return true
	case unicode.Is(unicode.Variation_Selector, r):
		return true
	}
	switch r {
	case '\u034f', // combining grapheme joiner
		'\u115f', '\u1160', '\u3164', '\uffa0', // Hangul fillers
		'\u2800': // braille pattern blank
		return true
	}
	return false
}

// textKind says which characters beyond the visible a text may hold.
type textKind int

const (
	oneLine   textKind = iota // names, banners: no control or bidi control
	multiline                 // a bio: tabs and line breaks, no bidi override
	message                   // a message: tabs, line breaks and bidi marks (right-to-left text needs them)
)

// refused returns the first character of s that a text of this kind may
// not hold, and whether there is one.
func (k textKind) refused(s string) (rune, bool) {
	for _, r := range s {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			if k == oneLine {
				return r, true
			}
		case unicode.IsControl(r):
			return r, true
		case isBidiControl(r):
			if k != message {
				return r, true
			}
		}
	}
	return 0, false
}

// isBidiControl reports whether r is one of Unicode's explicit
// directional formatting characters (marks, embeddings, overrides,
// isolates).
func isBidiControl(r rune) bool {
	return r == '\u061c' || r == '\u200e' || r == '\u200f' || ('\u202a' <= r && r <= '\u202e') || ('\u2066' <= r && r <= '\u2069')
}

// validateText checks the text s of field, returning a FieldError.
func validateText(field, s string, minLen, maxLen int, kind textKind) error {
	return validateLabeledText(field, field, s, minLen, maxLen, kind)
}

// validateLabeledText is validateText with the field called label in the
// messages.
func validateLabeledText(field, label, s string, minLen, maxLen int, kind textKind) error {
	if !utf8.ValidString(s) {
		return InvalidField(field, "invalid %s: it is not valid UTF-8", label)
	}
	n := utf8.RuneCountInString(s)
	if minLen > 0 && Blank(s) {
		return InvalidField(field, "invalid %s: it is required", label)
	}
	if n > maxLen {
		return InvalidField(field, "invalid %s: it is %d characters, at most %d are allowed", label, n, maxLen)
	}
	if r, bad := kind.refused(s); bad {
		return InvalidField(field, "invalid %s: it holds the character %U, which is not allowed there (control and direction-changing characters)", label, r)
	}
	return nil
}
