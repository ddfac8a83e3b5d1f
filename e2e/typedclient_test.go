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

// typedClientDir is the typed TypeScript client (clients/typescript);
// `npm ci --prefix clients/typescript` installs its compiler and
// GraphQL Code Generator.
const typedClientDir = "clients/typescript"

// typedClientNode returns node, skipping t (failing it in CI) without node
// or the typed client's node_modules.
func typedClientNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "node is not installed", "the typed client's tests")
	}
	if _, err := os.Stat(filepath.Join(repoRoot, typedClientDir, "node_modules", "typescript")); err != nil {
		testenv.Missing(t, typedClientDir+"/node_modules is missing (npm ci --prefix "+typedClientDir+")", "the typed client's tests")
	}
	return node
}

// The typed client's example compiles (tsc, strict) and runs against the
// server: two users, a room followed live, a send whose answer is lost
// retried under its clientMessageId and stored once, a dropped socket
// whose subscription resumes from its cursor.
func TestTypedClientExample(t *testing.T) {
	node := typedClientNode(t)
	dir := filepath.Join(repoRoot, typedClientDir)
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tsc := exec.CommandContext(ctx, node, filepath.Join("node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.json", "--outDir", out)
	tsc.Dir = dir
	if said, err := tsc.CombinedOutput(); err != nil {
		t.Fatalf("tsc: %v\n%s", err, said)
	}
	// The compiled example imports its packages from the client's node_modules.
	if err := os.Symlink(mustAbs(t, filepath.Join(dir, "node_modules")), filepath.Join(out, "node_modules")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "package.json"), []byte(`{"type": "module"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, testConfig(t))
	run := exec.CommandContext(ctx, node, filepath.Join(out, "example", "example.js"), ts.URL)
	run.Stderr = os.Stderr
	said, err := run.Output()
	if err != nil {
		t.Fatalf("the example: %v\n%s", err, said)
	}
	if !strings.Contains(string(said), `"ok":true`) {
		t.Fatalf("the example says %s", said)
	}
	t.Logf("the example: %s", said)
}

// The web app's operations are checked against the schema by
// clients/typescript/scripts/check-webapp.mjs (make check-clients): they
// pass as they are, and a field the schema lacks fails the check.
func TestWebAppOperationsCheckedAgainstSchema(t *testing.T) {
	node := typedClientNode(t)
	check := func(dir string) (string, error) {
		cmd := exec.Command(node, filepath.Join(repoRoot, typedClientDir, "scripts", "check-webapp.mjs"), dir, filepath.Join(repoRoot, "schema"))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	static := filepath.Join(repoRoot, "webapp", "static")
	if out, err := check(static); err != nil {
		t.Fatalf("the web app's operations: %v\n%s", err, out)
	}
	broken := t.TempDir()
	app, err := os.ReadFile(filepath.Join(static, "app.js"))
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(app), "replyCount mentions", "replyCount mentions shoeSize", 1)
	if bad == string(app) {
		t.Fatal("app.js no longer asks for replyCount mentions: change what this test breaks")
	}
	if err := os.WriteFile(filepath.Join(broken, "app.js"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := check(broken)
	if err == nil || !strings.Contains(out, `Cannot query field "shoeSize" on type "Message"`) {
		t.Fatalf("an app asking for a field the schema lacks passed the check: %v\n%s", err, out)
	}
}

func mustAbs(t *testing.T, path string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}
