package resolvers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// TestResolversLeaveTheStoreToTheCore: no resolver reaches the store or the
// broker; they call the chat core (package chat), where the rules that
// govern every read and write are. A resolver that read the store itself
// would bypass them, as the thread path once bypassed the membership
// windows.
func TestResolversLeaveTheStoreToTheCore(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && (sel.Sel.Name == "Store" || sel.Sel.Name == "Broker") {
				t.Errorf("%s: the resolvers use .%s: call the chat core instead", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
	if checked < 5 {
		t.Fatalf("checked %d files: the test did not find the resolvers", checked)
	}
}
