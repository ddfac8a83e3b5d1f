package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/chatql/internal/testenv"
)

// TestSchemaCheck runs `make schema-check` (the schema's lint and
// breaking-change check in CI): it passes on the schema, fails on a copy
// with an unannounced break, and passes on that copy once the break is
// listed as announced.
func TestSchemaCheck(t *testing.T) {
	const tools = "clients/schema-checks"
	if _, err := exec.LookPath("node"); err != nil {
		testenv.Missing(t, "node is not installed", "the schema check's test")
	}
	if _, err := os.Stat(filepath.Join(repoRoot, tools, "node_modules", ".bin", "graphql-inspector")); err != nil {
		testenv.Missing(t, tools+"/node_modules is missing (npm ci --prefix "+tools+")", "the schema check's test")
	}
	check := func(t *testing.T, schema, announced string) (string, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "make", "-s", "schema-check", "SCHEMA="+schema)
		cmd.Dir = repoRoot
		cmd.Env = os.Environ()
		if announced != "" {
			cmd.Env = append(cmd.Env, "ANNOUNCED_BREAKS="+announced)
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	if out, err := check(t, "schema/*.graphqls", ""); err != nil {
		t.Fatalf("the schema fails its check: %v\n%s", err, out)
	}

	// A copy of the schema in which Message.editedAt changed type.
	dir := t.TempDir()
	files, err := filepath.Glob(filepath.Join(repoRoot, "schema", "*.graphqls"))
	if err != nil || len(files) == 0 {
		t.Fatalf("schema files: %v", err)
	}
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		broken := strings.Replace(string(text), "\n  editedAt: Time\n", "\n  editedAt: String\n", 1)
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), []byte(broken), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := check(t, filepath.Join(dir, "*.graphqls"), "")
	if err == nil || !strings.Contains(out, "Message.editedAt") {
		t.Fatalf("an unannounced break passed the check (err %v):\n%s", err, out)
	}
	announced := filepath.Join(dir, "announced-breaks.txt")
	if err := os.WriteFile(announced, []byte("# announced\nMessage.editedAt  the release notes say so\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := check(t, filepath.Join(dir, "*.graphqls"), announced); err != nil {
		t.Fatalf("an announced break fails the check: %v\n%s", err, out)
	}
}
