package embedded

import (
	"bytes"
	"unicode/utf8"
)

// decodeMessage decodes a message row. Reading a page of history decodes
// fifty of them, and encoding/json (a validating pass, then reflection) was
// a fifth of a history read's CPU; so the rows as this store writes them
// (encoding/json's compact output of messageRow) are read by a small
// parser, and anything else goes to encoding/json: another key order is
// fine, but whitespace, an unknown or differently cased key, a null, a
// string with an escape or invalid UTF-8 (which encoding/json would
// rewrite) all take the slow path, so both give the same row.
// FuzzDecodeMessage holds them to it.
//
// A page's messages are by a few people: the row's author takes the
// strings of known (the author of the row decoded before, or none) where
// they are the same, instead of three allocations a message.
func decodeMessage(v []byte, known userRef) (messageRow, error) {
	if row, ok := parseMessageRow(v, known); ok {
		return row, nil
	}
	return decode[messageRow](v)
}

// parseMessageRow is decodeMessage's fast path; ok is false when it cannot
// decode v as encoding/json would.
func parseMessageRow(v []byte, known userRef) (row messageRow, ok bool) {
	p := rowParser{b: v}
	ok = p.object(func(key string) bool {
		switch key {
		case "a":
			return p.object(func(key string) bool {
				switch key {
				case "l":
					return p.stringOr(&row.Author.Login, known.Login)
				case "f":
					return p.stringOr(&row.Author.Firstname, known.Firstname)
				case "n":
					return p.stringOr(&row.Author.Lastname, known.Lastname)
				}
				return false
			})
		case "c":
			return p.string(&row.Content)
		case "s":
			return p.bool(&row.System)
		case "h":
			return p.bool(&row.Hidden)
		case "d":
			return p.bool(&row.Deleted)
		case "e":
			raw, ok := p.quoted()
			return ok && row.EditedAt.UnmarshalJSON(raw) == nil
		case "t":
			raw, ok := p.quoted()
			return ok && row.ReplyTo.UnmarshalText(raw[1:len(raw)-1]) == nil
		}
		return false
	})
	return row, ok && p.i == len(p.b)
}

// rowParser reads compact JSON from b at i.
type rowParser struct {
	b []byte
	i int
}

// object reads an object whose values field reads, given each key.
func (p *rowParser) object(field func(key string) bool) bool {
	if !p.take('{') {
		return false
	}
	if p.take('}') {
		return true
	}
	for {
		var key string
		if !p.string(&key) || !p.take(':') || !field(key) {
			return false
		}
		if p.take('}') {
			return true
		}
		if !p.take(',') {
			return false
		}
	}
}

func (p *rowParser) take(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// quoted reads a string without escapes and returns it with its quotes.
func (p *rowParser) quoted() ([]byte, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, false
	}
	end := bytes.IndexByte(p.b[p.i+1:], '"')
	if end < 0 {
		return nil, false
	}
	raw := p.b[p.i : p.i+end+2]
	if bytes.IndexByte(raw, '\\') >= 0 {
		return nil, false
	}
	p.i += end + 2
	return raw, true
}

// string reads a string of valid UTF-8 without escapes or control
// characters: one encoding/json would take as it is.
func (p *rowParser) string(s *string) bool { return p.stringOr(s, "") }

// stringOr reads a string as string does, and sets *s to known if it is
// the same: no allocation.
func (p *rowParser) stringOr(s *string, known string) bool {
	raw, ok := p.quoted()
	if !ok {
		return false
	}
	body := raw[1 : len(raw)-1]
	for _, c := range body {
		if c < 0x20 {
			return false
		}
	}
	if !utf8.Valid(body) {
		return false
	}
	if string(body) == known {
		*s = known
	} else {
		*s = string(body)
	}
	return true
}

func (p *rowParser) bool(b *bool) bool {
	switch {
	case bytes.HasPrefix(p.b[p.i:], []byte("true")):
		*b, p.i = true, p.i+4
	case bytes.HasPrefix(p.b[p.i:], []byte("false")):
		*b, p.i = false, p.i+5
	default:
		return false
	}
	return true
}
