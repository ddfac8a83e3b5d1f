// Package querylimit bounds what one GraphQL operation may cost the server
// before gqlgen spends anything on it. It is a gqlgen handler extension, so
// it applies to every transport that runs operations through the executor:
// HTTP, server-sent events and websockets.
//
// gqlgen's own checks come too late for hostile documents: its validation
// compares every pair of fields sharing a response name (quadratic: 3,700
// copies of `me { login }` take seconds), and its complexity limit expands
// every fragment spread (exponential: 25 fragments each spreading the
// previous one twice). Limits parses the document itself under the parser
// token limit and measures it over the syntax tree, with each fragment
// measured once, so the checks cost time linear in the document; only a
// document within every bound goes on to gqlgen's parse, validation,
// complexity limit and execution.
package querylimit

import (
	"context"
	"errors"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"

	"github.com/killrchat/chatql/apierror"
)

// Limits is the extension. The zero value of a field disables its check.
type Limits struct {
	// Tokens caps the lexical tokens of a document: gqlgen's parser stops
	// there, so a megabyte of directives is never turned into a syntax
	// tree or into one error per directive.
	Tokens int
	// Fields caps the field selections of the document with every
	// fragment spread expanded, summed over its operations and fragment
	// definitions: what complexity and execution walk.
	Fields int
	// Overlaps caps the comparisons validation makes between fields that
	// share a response name in one selection set (and between fragments
	// spread side by side), counted over the expanded document.
	Overlaps int
	// Depth caps the nesting of selections (through fragments), of list
	// and object values written in the document, and of variable values.
	Depth int
	// Errors caps the errors of one response; the rest are replaced by
	// one error saying how many were dropped.
	Errors int
	// Validated, when set, is the executor's cache of validated
	// documents: a document found there has passed these checks already.
	Validated graphql.Cache[*ast.QueryDocument]
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationParameterMutator
	graphql.ResponseInterceptor
} = Limits{}

// ExtensionName implements graphql.HandlerExtension.
func (Limits) ExtensionName() string { return "QueryLimits" }

// Validate implements graphql.HandlerExtension.
func (l Limits) Validate(graphql.ExecutableSchema) error {
	if l.Tokens < 0 || l.Fields < 0 || l.Overlaps < 0 || l.Depth < 0 || l.Errors < 0 {
		return errors.New("query limits cannot be negative")
	}
	return nil
}

// MutateOperationParameters checks the request before gqlgen parses it.
// Register the extension after AutomaticPersistedQuery, so that the query
// a hash stands for is checked too.
func (l Limits) MutateOperationParameters(ctx context.Context, params *graphql.RawParams) *gqlerror.Error {
	if l.Depth > 0 {
		for name, v := range params.Variables {
			if valueDepth(v, 1) > l.Depth {
				return apierror.New(apierror.ValidationFailed, "variable $%s is nested deeper than %d levels", name, l.Depth)
			}
		}
	}
	if l.Validated != nil {
		if _, ok := l.Validated.Get(ctx, params.Query); ok {
			return nil
		}
	}
	doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: params.Query}, l.Tokens)
	if err != nil {
		var gqlErr *gqlerror.Error
		if !errors.As(err, &gqlErr) {
			gqlErr = gqlerror.Wrap(err)
		}
		apierror.Set(gqlErr, apierror.ParseFailed)
		return gqlErr
	}
	return l.check(doc)
}

// check measures a parsed document against the limits.
func (l Limits) check(doc *ast.QueryDocument) *gqlerror.Error {
	m := measure{limits: l, fragments: map[string]*fragmentSize{}}
	for _, f := range doc.Fragments {
		m.fragments[f.Name] = &fragmentSize{def: f}
	}
	var roots []ast.SelectionSet
	for _, op := range doc.Operations {
		roots = append(roots, op.SelectionSet)
		for _, v := range op.VariableDefinitions {
			if err := m.values(v.DefaultValue); err != nil {
				return err
			}
		}
	}
	for _, f := range doc.Fragments {
		roots = append(roots, f.SelectionSet)
	}
	fields := 0
	for _, root := range roots {
		size, err := m.size(root)
		if err != nil {
			return err
		}
		fields = saturatingAdd(fields, size.fields)
		if l.Fields > 0 && fields > l.Fields {
			return apierror.New(apierror.ComplexityExceeded, "the operation selects more than %d fields once its fragments are expanded", l.Fields)
		}
		if l.Depth > 0 && size.depth > l.Depth {
			return apierror.New(apierror.ComplexityExceeded, "the operation nests selections deeper than %d levels", l.Depth)
		}
		if err := m.arguments(root); err != nil {
			return err
		}
	}
	if l.Overlaps > 0 {
		overlaps := 0
		for _, root := range roots {
			overlaps += m.overlaps([]ast.SelectionSet{root}, l.Overlaps-overlaps)
			if overlaps > l.Overlaps {
				return apierror.New(apierror.ComplexityExceeded, "the operation repeats fields and fragments too often: more than %d pairs to compare", l.Overlaps)
			}
		}
	}
	return nil
}

// size is what a selection set expands to.
type size struct{ fields, depth int }

// fragmentSize memoizes a fragment's expanded size; measuring marks a
// fragment being measured, to catch a fragment that spreads itself.
type fragmentSize struct {
	def       *ast.FragmentDefinition
	measured  bool
	measuring bool
	size      size
}

type measure struct {
	limits    Limits
	fragments map[string]*fragmentSize
	// arguments of fragments already walked
	walked map[string]bool
}

// size expands a selection set, each fragment computed once: linear in the
// document whatever the expansion. Sums saturate, so an exponential
// expansion cannot overflow.
func (m *measure) size(set ast.SelectionSet) (size, *gqlerror.Error) {
	var s size
	for _, sel := range set {
		var sub size
		switch sel := sel.(type) {
		case *ast.Field:
			child, err := m.size(sel.SelectionSet)
			if err != nil {
				return s, err
			}
			sub = size{fields: saturatingAdd(child.fields, 1), depth: child.depth + 1}
		case *ast.InlineFragment:
			child, err := m.size(sel.SelectionSet)
			if err != nil {
				return s, err
			}
			sub = child
		case *ast.FragmentSpread:
			f := m.fragments[sel.Name]
			if f == nil {
				continue // unknown: validation reports it
			}
			if f.measuring {
				return s, apierror.New(apierror.ValidationFailed, "Cannot spread fragment %q within itself.", sel.Name)
			}
			if !f.measured {
				f.measuring = true
				child, err := m.size(f.def.SelectionSet)
				if err != nil {
					return s, err
				}
				f.measuring, f.measured, f.size = false, true, child
			}
			sub = f.size
		}
		s.fields = saturatingAdd(s.fields, sub.fields)
		s.depth = max(s.depth, sub.depth)
	}
	return s, nil
}

// overlaps counts the comparisons validation's OverlappingFieldsCanBeMerged
// rule makes in the given selection sets merged together (as the fields
// of one response object are): a pair for every two fields of the same
// response name and for every two distinct fragments spread, then the same in the
// merged selections of each response name. It stops counting past budget.
// Only called once size has bounded the expansion.
func (m *measure) overlaps(sets []ast.SelectionSet, budget int) int {
	counts := map[string]int{}
	children := map[string][]ast.SelectionSet{}
	var names []string
	spreads := 0
	seen := map[string]bool{}
	var collect func(set ast.SelectionSet)
	collect = func(set ast.SelectionSet) {
		for _, sel := range set {
			switch sel := sel.(type) {
			case *ast.Field:
				name := sel.Alias
				if name == "" {
					name = sel.Name
				}
				if counts[name] == 0 {
					names = append(names, name)
				}
				counts[name]++
				if len(sel.SelectionSet) > 0 {
					children[name] = append(children[name], sel.SelectionSet)
				}
			case *ast.InlineFragment:
				collect(sel.SelectionSet)
			case *ast.FragmentSpread:
				// A fragment spread twice into one object is merged once,
				// by validation as by execution.
				if seen[sel.Name] {
					continue
				}
				seen[sel.Name] = true
				spreads++
				if f := m.fragments[sel.Name]; f != nil {
					collect(f.def.SelectionSet)
				}
			}
		}
	}
	for _, set := range sets {
		collect(set)
	}
	n := spreads * (spreads - 1) / 2
	for _, name := range names {
		if n > budget {
			return n
		}
		k := counts[name]
		n += k * (k - 1) / 2
		if len(children[name]) > 0 {
			n += m.overlaps(children[name], budget-n)
		}
	}
	return n
}

// arguments checks the nesting of the values written in a selection set's
// arguments and directives, each fragment once.
func (m *measure) arguments(set ast.SelectionSet) *gqlerror.Error {
	for _, sel := range set {
		var sub ast.SelectionSet
		var args ast.ArgumentList
		var dirs ast.DirectiveList
		switch sel := sel.(type) {
		case *ast.Field:
			sub, args, dirs = sel.SelectionSet, sel.Arguments, sel.Directives
		case *ast.InlineFragment:
			sub, dirs = sel.SelectionSet, sel.Directives
		case *ast.FragmentSpread:
			dirs = sel.Directives
			if f := m.fragments[sel.Name]; f != nil {
				if m.walked == nil {
					m.walked = map[string]bool{}
				}
				if !m.walked[sel.Name] {
					m.walked[sel.Name] = true
					sub = f.def.SelectionSet
				}
			}
		}
		for _, d := range dirs {
			args = append(args[:len(args):len(args)], d.Arguments...)
		}
		for _, a := range args {
			if err := m.values(a.Value); err != nil {
				return err
			}
		}
		if err := m.arguments(sub); err != nil {
			return err
		}
	}
	return nil
}

func (m *measure) values(v *ast.Value) *gqlerror.Error {
	if v != nil && m.limits.Depth > 0 && literalDepth(v) > m.limits.Depth {
		return apierror.New(apierror.ValidationFailed, "a list or object value is nested deeper than %d levels", m.limits.Depth)
	}
	return nil
}

func literalDepth(v *ast.Value) int {
	d := 0
	for _, c := range v.Children {
		d = max(d, literalDepth(c.Value))
	}
	return d + 1
}

// valueDepth is the nesting of a decoded JSON value.
func valueDepth(v any, depth int) int {
	d := depth
	switch v := v.(type) {
	case map[string]any:
		for _, c := range v {
			d = max(d, valueDepth(c, depth+1))
		}
	case []any:
		for _, c := range v {
			d = max(d, valueDepth(c, depth+1))
		}
	}
	return d
}

func saturatingAdd(a, b int) int {
	const ceiling = 1 << 40
	return min(a+b, ceiling)
}

// InterceptResponse caps the errors of a response.
func (l Limits) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	resp := next(ctx)
	if resp != nil && l.Errors > 0 && len(resp.Errors) > l.Errors {
		dropped := len(resp.Errors) - l.Errors
		kept := append(gqlerror.List{}, resp.Errors[:l.Errors]...)
		resp.Errors = append(kept, apierror.New(summaryCode(resp.Errors[0]), "%d more errors were dropped: a response carries at most %d", dropped, l.Errors))
	}
	return resp
}

// summaryCode gives the summary error the code of the first error, so that
// a client reading codes sees the same kind of failure.
func summaryCode(e *gqlerror.Error) string {
	if code := apierror.CodeOf(e); code != "" {
		return code
	}
	return apierror.ValidationFailed
}
