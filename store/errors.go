package store

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
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

// FieldError is an ErrInvalid error about one field of the input: an
// argument, or a field of an input object, named as the schema names it
// (the API shows the name as extensions.field).
type FieldError struct {
	Field string
	msg   string
}

// InvalidField returns a FieldError about field whose message states the
// broken rule.
func InvalidField(field, format string, args ...any) error {
	return &FieldError{Field: field, msg: fmt.Sprintf(format, args...)}
}

func (e *FieldError) Error() string { return e.msg }
func (e *FieldError) Unwrap() error { return ErrInvalid }

// InvalidFields is every invalid field of one input, so that a client
// learns of all of them at once rather than one per attempt. Each is an
// ErrInvalid error, a FieldError where the field is known.
type InvalidFields []error

func (e InvalidFields) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

// Unwrap makes errors.Is(e, ErrInvalid) hold.
func (e InvalidFields) Unwrap() []error { return e }

// JoinInvalid returns the non-nil errs, each an ErrInvalid error of a
// check of the same input: nil if there are none, the error itself if
// one, else their InvalidFields (flattened).
func JoinInvalid(errs ...error) error {
	var all InvalidFields
	for _, err := range errs {
		var many InvalidFields
		switch {
		case err == nil:
		case errors.As(err, &many):
			all = append(all, many...)
		default:
			all = append(all, err)
		}
	}
	switch len(all) {
	case 0:
		return nil
	case 1:
		return all[0]
	}
	return all
}

// RenameField returns err with its errors about the field from named to
// instead. Other errors are returned as they are.
func RenameField(err error, from, to string) error {
	return mapFields(err, func(field string) string {
		if field == from {
			return to
		}
		return field
	})
}

// mapFields returns err with each FieldError's field mapped by f.
func mapFields(err error, f func(string) string) error {
	one := func(err error) error {
		if fe, ok := errors.AsType[*FieldError](err); ok {
			return &FieldError{Field: f(fe.Field), msg: fe.msg}
		}
		return err
	}
	var many InvalidFields
	if errors.As(err, &many) {
		out := make(InvalidFields, len(many))
		for i, e := range many {
			out[i] = one(e)
		}
		return out
	}
	return one(err)
}

// InInput returns err with the fields it names taken as fields of the
// input object passed as the argument arg: "firstName" becomes
// "input.firstName". Other errors are returned as they are.
func InInput(arg string, err error) error {
	return mapFields(err, func(field string) string { return arg + "." + field })
}

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
