package live

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The websocket transport and the streams it serves sit below the GraphQL
// layer: what they need of it comes through Config, so neither imports,
// even indirectly, the resolvers or the generated schema and models. The
// imports are read from the packages' files (tests aside), not built.
func TestNoGraphQLLayerImports(t *testing.T) {
	const module = "github.com/killrchat/chatql"
	forbidden := []string{module + "/resolvers", module + "/graph"}
	// importedBy records who first imported each package seen, to show
	// the path to a forbidden one.
	importedBy := map[string]string{module + "/live": "", module + "/stream": ""}
	queue := []string{module + "/live", module + "/stream"}
	for len(queue) > 0 {
		pkg := queue[0]
		queue = queue[1:]
		for _, imp := range moduleImports(t, module, pkg) {
			if _, seen := importedBy[imp]; seen {
				continue
			}
			importedBy[imp] = pkg
			if !slices.ContainsFunc(forbidden, func(f string) bool { return imp == f || strings.HasPrefix(imp, f+"/") }) {
				queue = append(queue, imp)
				continue
			}
			path := imp
			for p := pkg; p != ""; p = importedBy[p] {
				path = p + " -> " + path
			}
			t.Errorf("%s: live and stream must not depend on the GraphQL layer", path)
		}
	}
}

// moduleImports returns the packages of the module that pkg's files import.
func moduleImports(t *testing.T, module, pkg string) []string {
	t.Helper()
	dir := filepath.Join("..", filepath.FromSlash(strings.TrimPrefix(pkg, module)))
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, spec := range f.Imports {
			path, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(path, module+"/") {
				out = append(out, path)
			}
		}
	}
	return out
}
