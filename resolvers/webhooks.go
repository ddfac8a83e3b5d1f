package resolvers

import (
	"time"

	"github.com/killrchat/chatql/store"
)

// optString is s, or null when empty.
func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// optTime is t, or null when zero.
func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// optID is id as an ID, or null when zero.
func optID(id store.MessageID) *string {
	if id.IsZero() {
		return nil
	}
	s := id.String()
	return &s
}
