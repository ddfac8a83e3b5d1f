package attack

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// quick is how long a refusal by a limit may take on a loaded machine.
// Limits act before parsing, validation or execution of the costly part,
// so the answer is near-instant; the bound only catches work done first.
const quick = 2 * time.Second

func parserTokens(ctx context.Context, t *Target) error {
	doc := "{ __typename " + strings.Repeat("@a ", 340_000) + "}"
	a, err := t.postJSON(ctx, "", map[string]any{"query": doc})
	if err != nil {
		return err
	}
	return firstErr(refused(a, "GRAPHQL_PARSE_FAILED"), within(a, quick))
}

func fragmentBomb(ctx context.Context, t *Target) error {
	a, err := t.postJSON(ctx, "", map[string]any{"query": FragmentBomb(25)})
	if err != nil {
		return err
	}
	return firstErr(refused(a, "GRAPHQL_VALIDATION_FAILED", "COMPLEXITY_LIMIT_EXCEEDED"), within(a, quick))
}

func nestedListLiteral(ctx context.Context, t *Target) error {
	const depth = 50_000
	doc := `{ room(name: ` + NestedLists(depth) + `) { name } }`
	a, err := t.postJSON(ctx, "", map[string]any{"query": doc})
	if err != nil {
		return err
	}
	return firstErr(refused(a, "GRAPHQL_PARSE_FAILED", "GRAPHQL_VALIDATION_FAILED"), within(a, quick))
}

func nestedVariables(ctx context.Context, t *Target) error {
	const depth = 100_000
	body := `{"query":"query($v: String) { room(name: $v) { name } }","variables":{"v":` +
		NestedLists(depth) + `}}`
	a, err := t.postRaw(ctx, "", []byte(body))
	if err != nil {
		return err
	}
	return firstErr(refused(a, "BAD_REQUEST", "BAD_USER_INPUT", "GRAPHQL_VALIDATION_FAILED"), within(a, quick))
}

func listComplexity(ctx context.Context, t *Target) error {
	acc, err := t.newAccount(ctx)
	if err != nil {
		return err
	}
	var doc strings.Builder
	doc.WriteString("{")
	for i := range 33 {
		fmt.Fprintf(&doc, " m%d: messages(room: \"general\", first: 100) { edges { node { id content author { login } } } }", i)
	}
	doc.WriteString(" }")
	a, err := t.query(ctx, acc.Token, doc.String(), nil)
	if err != nil {
		return err
	}
	return firstErr(refused(a, "COMPLEXITY_LIMIT_EXCEEDED"), within(a, quick))
}

// maxErrors is the most errors one answer may carry; a cap near 20 keeps
// an answer to a broken document small.
const maxErrors = 50

func errorFlood(ctx context.Context, t *Target) error {
	var doc strings.Builder
	doc.WriteString("{")
	for i := range 2000 {
		fmt.Fprintf(&doc, " f%d: noSuchField", i)
	}
	doc.WriteString(" }")
	a, err := t.postJSON(ctx, "", map[string]any{"query": doc.String()})
	if err != nil {
		return err
	}
	if err := refused(a, "GRAPHQL_VALIDATION_FAILED"); err != nil {
		return err
	}
	if len(a.Errors) > maxErrors {
		return fmt.Errorf("%d errors in one answer, want at most %d", len(a.Errors), maxErrors)
	}
	return within(a, quick)
}

// firstErr returns the first non-nil error.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
