package querylimit

import (
	"context"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/killrchat/chatql/apierror"
	"github.com/killrchat/chatql/internal/attack"
)

var limits = Limits{Tokens: 15000, Fields: 5000, Overlaps: 10000, Depth: 32, Errors: 20}

func check(query string, vars map[string]any) *gqlerror.Error {
	return limits.MutateOperationParameters(context.Background(), &graphql.RawParams{Query: query, Variables: vars})
}

func TestLimits(t *testing.T) {
	for name, c := range map[string]struct {
		query string
		vars  map[string]any
		code  string // "" when the document is within the limits
	}{
		"Plain":            {query: `{ me { login } rooms(first: 5) { edges { node { name participants { login } } } } }`},
		"SmallFragments":   {query: attack.FragmentBomb(8)},
		"FragmentBomb":     {query: attack.FragmentBomb(25), code: apierror.ComplexityExceeded},
		"SelfSpread":       {query: "query { ...A }\nfragment A on Query { ...B }\nfragment B on Query { ...A }", code: apierror.ValidationFailed},
		"Tokens":           {query: "{ a" + strings.Repeat(" @d", 20000) + " }", code: apierror.ParseFailed},
		"Unparsable":       {query: "{ me { login", code: apierror.ParseFailed},
		"SameFieldRepeat":  {query: "{" + strings.Repeat(" me { login }", 200) + " }", code: apierror.ComplexityExceeded},
		"FewRepeats":       {query: "{" + strings.Repeat(" me { login }", 20) + " }"},
		"DeepSelection":    {query: strings.Repeat("{ a ", 40) + strings.Repeat("}", 40), code: apierror.ComplexityExceeded},
		"DeepListLiteral":  {query: "{ room(name: " + attack.NestedLists(40) + ") { name } }", code: apierror.ValidationFailed},
		"DeepDefaultValue": {query: "query($x: String = " + attack.NestedLists(40) + ") { a }", code: apierror.ValidationFailed},
		"DeepInFragment":   {query: "{ ...F }\nfragment F on Query { room(name: {a: " + attack.NestedLists(40) + "}) { name } }", code: apierror.ValidationFailed},
		"DeepVariable":     {query: "query($x: String) { a }", vars: map[string]any{"x": nested(40)}, code: apierror.ValidationFailed},
		"ShallowVariable":  {query: "query($x: String) { a }", vars: map[string]any{"x": nested(5)}},
	} {
		t.Run(name, func(t *testing.T) {
			err := check(c.query, c.vars)
			got := ""
			if err != nil {
				got, _ = err.Extensions["code"].(string)
			}
			if got != c.code {
				t.Fatalf("got %v (%s), want %q", err, got, c.code)
			}
		})
	}
}

func nested(depth int) any {
	var v any = "x"
	for range depth {
		v = []any{v}
	}
	return v
}

func TestErrorsCapped(t *testing.T) {
	errs := make(gqlerror.List, 50)
	for i := range errs {
		errs[i] = &gqlerror.Error{Message: "boom", Extensions: map[string]any{"code": "NOT_FOUND"}}
	}
	resp := limits.InterceptResponse(context.Background(), func(context.Context) *graphql.Response { return &graphql.Response{Errors: errs} })
	if len(resp.Errors) != 21 || resp.Errors[20].Extensions["code"] != "NOT_FOUND" || !strings.Contains(resp.Errors[20].Message, "30 more errors") {
		t.Fatalf("got %d errors, last %+v", len(resp.Errors), resp.Errors[len(resp.Errors)-1])
	}
}

// The checks cost time linear in the document, whatever it expands to:
// compare with gqlgen's validation and complexity on the same documents.
func BenchmarkRefuseFragmentBomb(b *testing.B) {
	q := attack.FragmentBomb(25)
	for b.Loop() {
		if check(q, nil) == nil {
			b.Fatal("accepted")
		}
	}
}

func BenchmarkRefuseRepeatedFields(b *testing.B) {
	q := "{" + strings.Repeat(" me { login }", 3700) + " }"
	for b.Loop() {
		if check(q, nil) == nil {
			b.Fatal("accepted")
		}
	}
}
