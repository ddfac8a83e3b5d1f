package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2"

	"github.com/killrchat/chatql/graph"
	"github.com/killrchat/chatql/resolvers"
)

// Every operation of the README's graphql blocks parses and validates
// against the schema as written (a playground runs one operation at a
// time, so each block is split where an operation starts).
func TestReadmeOperationsValidate(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	schema := graph.NewExecutableSchema(graph.Config{Resolvers: &resolvers.Resolver{}}).Schema()
	blocks := regexp.MustCompile("(?s)```graphql\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	if len(blocks) == 0 {
		t.Fatal("no graphql blocks in the README")
	}
	start := regexp.MustCompile(`(?m)^(query|mutation|subscription)\b`)
	operations := 0
	for _, block := range blocks {
		text := block[1]
		starts := start.FindAllStringIndex(text, -1)
		for i, s := range starts {
			end := len(text)
			if i+1 < len(starts) {
				end = starts[i+1][0]
			}
			op := strings.TrimSpace(text[s[0]:end])
			operations++
			if _, errs := gqlparser.LoadQuery(schema, op); len(errs) > 0 {
				t.Errorf("README operation does not validate: %v\n%s", errs, op)
			}
		}
	}
	if operations < 20 {
		t.Fatalf("found %d operations in the README's graphql blocks, want the walkthrough's 20 or more", operations)
	}
}
