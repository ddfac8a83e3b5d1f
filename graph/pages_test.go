package graph

import (
	"bytes"
	"testing"

	"github.com/99designs/gqlgen/graphql"
)

// FuzzAppendQuoted: appendQuoted writes every string as gqlgen's
// MarshalString does, byte for byte.
func FuzzAppendQuoted(f *testing.F) {
	for _, s := range []string{"", "plain", `"quoted" \back\slash`, "tab\tline\nreturn\r", "\x00\x01\x1f\x7f", "é 👍 中文", "\xff\xfe invalid", "</script>&"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want bytes.Buffer
		graphql.MarshalString(s).MarshalGQL(&want)
		if got := appendQuoted([]byte("prefix"), s); !bytes.Equal(got, append([]byte("prefix"), want.Bytes()...)) {
			t.Fatalf("appendQuoted(%q) = %s, want %s", s, got[len("prefix"):], want.Bytes())
		}
	})
}
