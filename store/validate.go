package store

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// Limits of user input. They keep rows small enough to denormalize freely.
const (
	MaxNameLength     = 64   // firstname, lastname
	MaxEmailLength    = 254  // RFC 5321
	MaxBioLength      = 500  // characters
	MaxBannerLength   = 200  // characters
	MaxMessageLength  = 4000 // characters of one message
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

// ValidateLogin returns an ErrInvalid error unless login follows LoginRule.
func ValidateLogin(login string) error {
	if !loginPattern.MatchString(login) {
		return Invalidf("invalid login %s: %s", Quote(login), LoginRule)
	}
	return nil
}

// ValidateRoomName returns an ErrInvalid error unless name follows RoomNameRule.
func ValidateRoomName(name string) error {
	if !roomNamePattern.MatchString(name) {
		return Invalidf("invalid room name %s: %s", Quote(name), RoomNameRule)
	}
	return nil
}

// ValidatePassword returns an ErrInvalid error unless the password's length
// is within bounds. The password itself never appears in the message.
func ValidatePassword(password string) error {
	if n := len(password); n < MinPasswordLength || n > MaxPasswordLength {
		return Invalidf("invalid password: it must be %d to %d bytes long", MinPasswordLength, MaxPasswordLength)
	}
	return nil
}

// Validate checks a new user's profile: login, names, email and bio.
func (u User) Validate() error {
	if err := ValidateLogin(u.Login); err != nil {
		return err
	}
	if err := validateText("firstname", u.Firstname, 1, MaxNameLength); err != nil {
		return err
	}
	if err := validateText("lastname", u.Lastname, 1, MaxNameLength); err != nil {
		return err
	}
	if u.Email != "" {
		at := strings.IndexByte(u.Email, '@')
		if len(u.Email) > MaxEmailLength || at < 1 || at == len(u.Email)-1 || strings.ContainsAny(u.Email, " \t\r\n") {
			return Invalidf("invalid email %s: it must look like name@example.com and be at most %d characters", Quote(u.Email), MaxEmailLength)
		}
	}
	return validateText("bio", u.Bio, 0, MaxBioLength)
}

// Validate checks a new room's name and banner.
func (r Room) Validate() error {
	if err := ValidateRoomName(r.Name); err != nil {
		return err
	}
	return validateText("banner", r.Banner, 0, MaxBannerLength)
}

// ValidateContent checks a message's content: not blank, not too long.
func ValidateContent(content string) error {
	if strings.TrimSpace(content) == "" {
		return Invalidf("invalid message: content must not be blank")
	}
	return validateText("message content", content, 1, MaxMessageLength)
}

func validateText(field, s string, minLen, maxLen int) error {
	if !utf8.ValidString(s) {
		return Invalidf("invalid %s: it is not valid UTF-8", field)
	}
	n := utf8.RuneCountInString(s)
	if minLen > 0 && strings.TrimSpace(s) == "" {
		return Invalidf("invalid %s: it is required", field)
	}
	if n > maxLen {
		return Invalidf("invalid %s: it is %d characters, at most %d are allowed", field, n, maxLen)
	}
	return nil
}
