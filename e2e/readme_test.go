package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vektah/gqlparser/v2"

	"github.com/killrchat/chatql/graph"
	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/resolvers"
)

// readmeBlock is one graphql block of the README, with the comment above it
// that says who runs it: "run as alice", "run anonymously", or "not run"
// and why.
type readmeBlock struct {
	line       int    // of the block's opening fence, for messages
	runner     string // the comment above the block, "" if none
	operations []string
}

var (
	readmeBlockRE = regexp.MustCompile("(?s)(?:<!-- ([^>]*?) -->\n)?```graphql\n(.*?)```")
	operationRE   = regexp.MustCompile(`(?m)^(query|mutation|subscription)\b`)
)

// readmeBlocks reads the README's graphql blocks, each split into its
// operations (a playground runs one operation at a time, so a block is
// split where an operation starts).
func readmeBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	var blocks []readmeBlock
	for _, m := range readmeBlockRE.FindAllStringSubmatchIndex(text, -1) {
		b := readmeBlock{line: strings.Count(text[:m[0]], "\n") + 1}
		if m[2] >= 0 {
			b.runner = text[m[2]:m[3]]
			b.line++
		}
		body := text[m[4]:m[5]]
		starts := operationRE.FindAllStringIndex(body, -1)
		for i, s := range starts {
			end := len(body)
			if i+1 < len(starts) {
				end = starts[i+1][0]
			}
			b.operations = append(b.operations, strings.TrimSpace(body[s[0]:end]))
		}
		blocks = append(blocks, b)
	}
	if len(blocks) == 0 {
		t.Fatal("no graphql blocks in the README")
	}
	return blocks
}

// Every operation of the README's graphql blocks parses and validates
// against the schema as written.
func TestReadmeOperationsValidate(t *testing.T) {
	schema := graph.NewExecutableSchema(graph.Config{Resolvers: &resolvers.Resolver{}}).Schema()
	operations := 0
	for _, b := range readmeBlocks(t) {
		for _, op := range b.operations {
			operations++
			if _, errs := gqlparser.LoadQuery(schema, op); len(errs) > 0 {
				t.Errorf("README line %d: operation does not validate: %v\n%s", b.line, errs, op)
			}
		}
	}
	if operations < 20 {
		t.Fatalf("found %d operations in the README's graphql blocks, want the walkthrough's 20 or more", operations)
	}
}

var (
	loginArgRE  = regexp.MustCompile(`\blogin\(login: "([^"]+)"`)
	placeholder = regexp.MustCompile(`<[a-z][a-z ]*>`)
)

// TestReadmeWalkthrough runs the README's examples in order against a new
// server, as a newcomer following it would: each block as the user the
// comment above it names, with the token that user's last login answered,
// and "<message id>" standing for the id of the last message posted or
// sent (not a reply). Every operation must succeed; a subscription must be
// taken by the server (it stays open until the test ends).
func TestReadmeWalkthrough(t *testing.T) {
	ts := startServer(t, testConfig(t))
	runnerRE := regexp.MustCompile(`^(?:run as ([a-z][a-z0-9-]*)|run anonymously|not run: .+)$`)
	tokens := map[string]string{}
	messageID := ""
	ran := 0
	for _, b := range readmeBlocks(t) {
		m := runnerRE.FindStringSubmatch(b.runner)
		if m == nil {
			t.Fatalf("README line %d: a graphql block needs a comment above it saying who runs it in TestReadmeWalkthrough (<!-- run as alice -->, <!-- run anonymously --> or <!-- not run: why -->), got %q", b.line, b.runner)
		}
		if strings.HasPrefix(b.runner, "not run") {
			continue
		}
		client := ts.Client
		if who := m[1]; who != "" {
			token, ok := tokens[who]
			if !ok {
				t.Fatalf("README line %d: run as %s, who has not logged in by then", b.line, who)
			}
			client = ts.Client.WithToken(token)
		}
		for _, op := range b.operations {
			if strings.Contains(op, "<message id>") {
				if messageID == "" {
					t.Fatalf("README line %d: %s uses <message id> before any message was posted", b.line, firstLine(op))
				}
				op = strings.ReplaceAll(op, "<message id>", messageID)
			}
			if p := placeholder.FindString(op); p != "" {
				t.Fatalf("README line %d: %s has a placeholder the walkthrough cannot fill: %s", b.line, firstLine(op), p)
			}
			ran++
			if strings.HasPrefix(op, "subscription") {
				readmeSubscribe(t, ts, client, b.line, op)
				continue
			}
			var data map[string]json.RawMessage
			if err := client.Do(testContext(t), op, nil, &data); err != nil {
				t.Fatalf("README line %d, %s: %v", b.line, firstLine(op), err)
			}
			if l := loginArgRE.FindStringSubmatch(op); l != nil {
				var login struct{ Token string }
				if err := json.Unmarshal(data["login"], &login); err != nil || login.Token == "" {
					t.Fatalf("README line %d: login of %s answered no token: %s", b.line, l[1], data["login"])
				}
				tokens[l[1]] = login.Token
			}
			if strings.Contains(op, "replyTo:") {
				continue
			}
			for _, field := range []string{"postMessage", "sendDirectMessage"} {
				var sent struct{ ID string }
				if raw, ok := data[field]; ok {
					if err := json.Unmarshal(raw, &sent); err != nil || sent.ID == "" {
						t.Fatalf("README line %d: %s answered no id: %s", b.line, field, raw)
					}
					messageID = sent.ID
				}
			}
		}
	}
	if ran < 40 {
		t.Fatalf("ran %d of the README's operations, want the walkthrough's 40 or more", ran)
	}
}

// readmeSubscribe starts a README subscription and waits until the server
// streams it, or fails with the error the server sent instead.
func readmeSubscribe(t *testing.T, ts *testServer, c *chatclient.Client, line int, op string) {
	t.Helper()
	started := ts.Streams().Started()
	sub, err := c.Subscribe(testContext(t), chatclient.GraphQLTransportWS, op, nil)
	if err != nil {
		t.Fatalf("README line %d, %s: %v", line, firstLine(op), err)
	}
	t.Cleanup(func() { sub.Close() })
	refused := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		resp, err := sub.Next(ctx)
		if err == nil && len(resp.Errors) > 0 {
			err = resp.Errors
		}
		if err != nil && ctx.Err() == nil {
			refused <- err
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for ts.Streams().Started() == started {
		select {
		case err := <-refused:
			t.Fatalf("README line %d, %s: %v", line, firstLine(op), err)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("README line %d, %s: the server did not start the subscription", line, firstLine(op))
		}
	}
}

// The README's summary of CI names every step of .ci/run, in its words.
func TestReadmeListsEveryCIStep(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	run, err := os.ReadFile(filepath.Join(repoRoot, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	steps := regexp.MustCompile(`(?m)^step "([^"]+)"`).FindAllStringSubmatch(string(run), -1)
	if len(steps) < 5 {
		t.Fatalf("found %d steps in .ci/run", len(steps))
	}
	for i, s := range steps {
		if !strings.Contains(string(readme), fmt.Sprintf("%d. %s", i+1, s[1])) {
			t.Errorf("the README's CI summary lacks step %d of .ci/run: %q", i+1, s[1])
		}
	}
}
