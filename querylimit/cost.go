package querylimit

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/99designs/gqlgen/complexity"
	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// The cost of an operation, for gqlgen's complexity limit, is declared in
// the schema with the directives of IBM's GraphQL Cost Directives
// specification, read once when the server starts:
//
//   - @listSize on a field that returns many items: the field costs its
//     selection once per item it may return. slicingArguments names the
//     argument that says how many (`first`; a list argument, such as
//     presence's `logins`, counts its length), and assumedSize the count
//     when there is none, and the most a slicing argument counts for (the
//     resolver refuses more, with BAD_USER_INPUT, so a `first` too large
//     is refused as bad input and not as too costly). sizedFields names the
//     list of the returned object that holds the items (a connection's
//     `edges`).
//   - @cost(weight) on a field: what the field itself costs beyond its
//     selection (1 when absent), for a field that does much more than read
//     what its parent holds; on an object type: what each item of that
//     type costs beyond its fields.
//
// So a field costs weight + n × (its selection + the item type's weight),
// where n is 1 for a field without @listSize. Every list field of the
// schema declares its size (TestEveryListFieldDeclaresItsSize).

// Options returns the options of gqlgen's complexity walker that the
// declared costs need besides Costed: the leaves declared @cost(weight: "0")
// left out, since the walker takes a field's cost under 1 for the
// default of 1.
func Options(schema *ast.Schema) []complexity.Option {
	free := map[string]struct{}{}
	for _, t := range schema.Types {
		if t.Kind != ast.Object && t.Kind != ast.Interface {
			continue
		}
		for _, f := range t.Fields {
			leaf := schema.Types[f.Type.Name()]
			if w, ok := weight(f.Directives); ok && w == 0 && leaf != nil && (leaf.Kind == ast.Scalar || leaf.Kind == ast.Enum) {
				free[t.Name+"."+f.Name] = struct{}{}
			}
		}
	}
	return []complexity.Option{complexity.WithIgnoreFields(free)}
}

// Costed returns es with the cost its schema declares as its complexity.
func Costed(es graphql.ExecutableSchema) graphql.ExecutableSchema {
	fields := map[typeField]FieldCost{}
	for name, fc := range Costs(es.Schema()) {
		typ, field, _ := strings.Cut(name, ".")
		fields[typeField{typ, field}] = fc
	}
	return &costed{ExecutableSchema: es, fields: fields}
}

type costed struct {
	graphql.ExecutableSchema
	fields map[typeField]FieldCost
}

// typeField names a field by its type: the key of a cost looked up for
// every field of every operation, built without allocating.
type typeField struct{ typ, field string }

// Complexity implements graphql.ExecutableSchema from the declared costs.
func (c *costed) Complexity(_ context.Context, typeName, field string, child int, args map[string]any) (int, bool) {
	fc, ok := c.fields[typeField{typeName, field}]
	if !ok {
		return 0, false // gqlgen's default: 1 plus the selection
	}
	return fc.Of(child, args), true
}

// FieldCost is what the schema declares a field costs.
type FieldCost struct {
	// Weight is the field's own cost (@cost; 1 when absent).
	Weight int
	// ItemWeight is the cost of each item beyond its fields: the @cost of
	// the returned object type (0 when absent).
	ItemWeight int
	// Sized reports whether the field declares @listSize.
	Sized bool
	// SlicingArguments and AssumedSize are the @listSize's.
	SlicingArguments []string
	AssumedSize      int
	// SizedFields are the lists of the returned object that hold the
	// items (@listSize's sizedFields).
	SizedFields []string
}

// Of is the cost of the field with a selection that costs child, called
// with args.
func (fc FieldCost) Of(child int, args map[string]any) int {
	n := 1
	if fc.Sized {
		n = fc.size(args)
	}
	return saturatingAdd(fc.Weight, saturatingMul(n, saturatingAdd(child, fc.ItemWeight)))
}

// size is how many items the call may return.
func (fc FieldCost) size(args map[string]any) int {
	for _, name := range fc.SlicingArguments {
		if n, ok := count(args[name]); ok {
			if fc.AssumedSize > 0 {
				n = min(n, fc.AssumedSize)
			}
			return max(n, 1)
		}
	}
	return max(fc.AssumedSize, 1)
}

// count reads a slicing argument's value: a number, or a list's length.
func count(v any) (int, bool) {
	switch v := v.(type) {
	case int:
		return v, true
	case int32:
		return int(v), true
	case int64:
		return int(max(min(v, math.MaxInt32), math.MinInt32)), true
	case float64:
		return int(max(min(v, math.MaxInt32), math.MinInt32)), true
	case json.Number:
		n, err := strconv.ParseInt(string(v), 10, 64)
		return int(max(min(n, math.MaxInt32), math.MinInt32)), err == nil
	case []any:
		return len(v), true
	}
	return 0, false
}

// Costs reads the declared costs of the schema's fields: those that
// declare @listSize or @cost, or return an object type with a @cost.
func Costs(schema *ast.Schema) map[string]FieldCost {
	out := map[string]FieldCost{}
	for _, t := range schema.Types {
		if t.Kind != ast.Object && t.Kind != ast.Interface {
			continue
		}
		for _, f := range t.Fields {
			fc := FieldCost{Weight: 1}
			declared := false
			if w, ok := weight(f.Directives); ok {
				fc.Weight, declared = w, true
			}
			if item := schema.Types[f.Type.Name()]; item != nil {
				if w, ok := weight(item.Directives); ok {
					fc.ItemWeight, declared = w, true
				}
			}
			if d := f.Directives.ForName("listSize"); d != nil {
				fc.Sized, declared = true, true
				fc.SlicingArguments = stringList(d.Arguments.ForName("slicingArguments"))
				fc.SizedFields = stringList(d.Arguments.ForName("sizedFields"))
				if a := d.Arguments.ForName("assumedSize"); a != nil {
					fc.AssumedSize, _ = strconv.Atoi(a.Value.Raw)
				}
			}
			if declared {
				out[t.Name+"."+f.Name] = fc
			}
		}
	}
	return out
}

// weight reads a @cost directive's weight.
func weight(dirs ast.DirectiveList) (int, bool) {
	d := dirs.ForName("cost")
	if d == nil {
		return 0, false
	}
	a := d.Arguments.ForName("weight")
	if a == nil {
		return 0, false
	}
	w, err := strconv.ParseFloat(a.Value.Raw, 64)
	if err != nil {
		return 0, false
	}
	return int(math.Ceil(w)), true
}

func stringList(a *ast.Argument) []string {
	if a == nil || a.Value == nil {
		return nil
	}
	var out []string
	for _, child := range a.Value.Children {
		out = append(out, child.Value.Raw)
	}
	return out
}

// saturatingMul is a × b, at most the ceiling of saturatingAdd.
func saturatingMul(a, b int) int {
	const ceiling = 1 << 40
	if a != 0 && b > ceiling/a {
		return ceiling
	}
	return min(a*b, ceiling)
}
