// Builders of hostile GraphQL documents and values, shared by the suite and
// by the tests that check the server refuses them cheaply.
package attack

import (
	"fmt"
	"strings"
)

// FragmentBomb is n fragments each spreading the previous one twice: about
// a kilobyte for n = 25, expanding to 2^n selections of `me { login }`.
func FragmentBomb(n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "query { ...F%d }\nfragment F0 on Query { me { login } }\n", n)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "fragment F%d on Query { ...F%d ...F%d }\n", i, i-1, i-1)
	}
	return b.String()
}

// SideBySide is n distinct fragments spread together in one selection set:
// no field repeats, but validation compares every pair of them.
func SideBySide(n int) string {
	var b strings.Builder
	b.WriteString("query {")
	for i := range n {
		fmt.Fprintf(&b, " ...F%d", i)
	}
	b.WriteString(" }\n")
	for i := range n {
		fmt.Fprintf(&b, "fragment F%d on Query { f%d: __typename }\n", i, i)
	}
	return b.String()
}

// NestedLists is a list literal (or JSON array) nested depth times.
func NestedLists(depth int) string {
	return strings.Repeat("[", depth) + strings.Repeat("]", depth)
}
