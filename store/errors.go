package store

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// The sentinel errors of the chat domain. Backends wrap them with context
// ("room \"games\": not found"); callers test them with errors.Is. The GraphQL
// layer maps each one to an error code, and the wrapped message is safe to
// show to clients.
var (
	// ErrNotFound: the user, room or message does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a unique name (login, room name) is already taken.
	ErrConflict = errors.New("already exists")
	// ErrForbidden: the acting user may not do this (delete another's room).
	ErrForbidden = errors.New("forbidden")
	// ErrInvalid: the input breaks a validation rule, named in the message.
	ErrInvalid = errors.New("invalid input")
)

// Invalidf returns an error wrapping ErrInvalid whose message states the
// broken rule.
func Invalidf(format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...)}
}

type invalidError struct{ msg string }

func (e *invalidError) Error() string { return e.msg }
func (e *invalidError) Unwrap() error { return ErrInvalid }

// maxQuoted is how much of a client's input an error message repeats.
const maxQuoted = 64

// Quote returns s quoted for an error message, cut to its first maxQuoted
// characters: an error names the input it refuses without handing a
// megabyte of it back.
func Quote(s string) string {
	if utf8.RuneCountInString(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	n := 0
	for i := range s {
		if n == maxQuoted {
			return strconv.Quote(s[:i]) + "..."
		}
		n++
	}
	return strconv.Quote(s)
}
