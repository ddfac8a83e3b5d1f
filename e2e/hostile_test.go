package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/killrchat/chatql/internal/attack"
	"github.com/killrchat/chatql/internal/chatclient"
	"github.com/killrchat/chatql/server"
	"github.com/killrchat/chatql/store/embedded"
)

// Hostile requests: each is refused before the work it would cause, with
// a coded error, a status per the GraphQL-over-HTTP specification and a
// small response.

const (
	graphqlResponse = "application/graphql-response+json"
	legacyJSON      = "application/json"
)

// rawRequest is an HTTP request as an attacker would send it.
type rawRequest struct {
	method, contentType, accept string
	path                        string // after /query, e.g. ?query=...
	body                        string
	chunked                     bool // no Content-Length
	token                       string
}

// rawResponse is what came back, read up to 1 MiB.
type rawResponse struct {
	status int
	header http.Header
	length int64 // Content-Length, -1 when sent chunked
	body   []byte
	errors []struct {
		Message    string
		Extensions map[string]any
	}
	data json.RawMessage
}

func (r rawResponse) code() string {
	if len(r.errors) == 0 {
		return ""
	}
	code, _ := r.errors[0].Extensions["code"].(string)
	return code
}

func (ts *testServer) raw(t *testing.T, req rawRequest) rawResponse {
	t.Helper()
	if req.method == "" {
		req.method = http.MethodPost
	}
	if req.contentType == "" && req.method == http.MethodPost {
		req.contentType = "application/json"
	}
	var body io.Reader = strings.NewReader(req.body)
	if req.chunked {
		body = io.MultiReader(body) // hides the length: sent chunked
	}
	hr, err := http.NewRequestWithContext(testContext(t), req.method, ts.URL+req.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if req.contentType != "" {
		hr.Header.Set("Content-Type", req.contentType)
	}
	if req.accept != "" {
		hr.Header.Set("Accept", req.accept)
	}
	if req.token != "" {
		hr.Header.Set("Authorization", "Bearer "+req.token)
	}
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatalf("%s: %v", req.method, err)
	}
	defer resp.Body.Close()
	out := rawResponse{status: resp.StatusCode, header: resp.Header, length: resp.ContentLength}
	if out.body, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20)); err != nil {
		t.Fatal(err)
	}
	var decoded struct {
		Errors []struct {
			Message    string
			Extensions map[string]any
		}
		Data json.RawMessage
	}
	if err := json.Unmarshal(out.body, &decoded); err != nil {
		t.Fatalf("undecodable response (HTTP %d, %d bytes): %.300q", out.status, len(out.body), out.body)
	}
	out.errors, out.data = decoded.Errors, decoded.Data
	return out
}

func gqlBody(query string, vars map[string]any) string {
	b, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestHostileRequests(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxBodyBytes = 2 << 20
	ts := startServer(t, cfg)
	alice := ts.user(t, "alice")
	mustDo(t, alice, createRoom, map[string]any{"n": "hall"}, nil)
	token := alice.Token

	thirtyThreePages := "{"
	for i := range 33 {
		thirtyThreePages += fmt.Sprintf(` p%d: messages(room: "hall", first: 100) { edges { cursor } }`, i)
	}
	thirtyThreePages += " }"
	// Three presence queries of 100 users each: up to 600 store reads.
	hundred := make([]string, 100)
	for i := range hundred {
		hundred[i] = fmt.Sprintf("user%d", i)
	}
	threePresences := "query($l: [String!]!) { a: presence(logins: $l) { online } b: presence(logins: $l) { online } c: presence(logins: $l) { online } }"
	longNameAliases := "query($n: String!) {"
	for i := range 20 {
		longNameAliases += fmt.Sprintf(" r%d: messages(room: $n, first: 1) { edges { cursor } }", i)
	}
	longNameAliases += " }"
	var unknownFields, unauthenticated strings.Builder
	for i := range 50 {
		fmt.Fprintf(&unknownFields, " nope%d", i)
		fmt.Fprintf(&unauthenticated, " m%d: me { login }", i)
	}

	for _, c := range []struct {
		name   string
		req    rawRequest
		status int
		code   string
		// maxBytes bounds the response: the attack's size must not echo.
		maxBytes int
		// errors, when set, is the exact number of errors.
		errors int
	}{
		// Item 6: limits before the work.
		{name: "TokenLimit340kDirectives", req: rawRequest{body: gqlBody("{ __typename"+strings.Repeat(" @a", 340_000)+" }", nil), accept: graphqlResponse},
			status: 400, code: "GRAPHQL_PARSE_FAILED", maxBytes: 1 << 10, errors: 1},
		{name: "FragmentExpansion", req: rawRequest{body: gqlBody(attack.FragmentBomb(25), nil), accept: graphqlResponse},
			status: 400, code: "COMPLEXITY_LIMIT_EXCEEDED", maxBytes: 1 << 10, errors: 1},
		{name: "QuadraticOverlapValidation", req: rawRequest{body: gqlBody("{"+strings.Repeat(" me { login }", 3700)+" }", nil), accept: graphqlResponse},
			status: 400, code: "COMPLEXITY_LIMIT_EXCEEDED", maxBytes: 1 << 10, errors: 1},
		{name: "FragmentsSpreadSideBySide", req: rawRequest{body: gqlBody(attack.SideBySide(600), nil), accept: graphqlResponse},
			status: 400, code: "COMPLEXITY_LIMIT_EXCEEDED", maxBytes: 1 << 10, errors: 1},
		{name: "NestedListLiteral", req: rawRequest{body: gqlBody(`{ room(name: `+attack.NestedLists(5000)+`) { name } }`, nil), accept: graphqlResponse},
			status: 400, code: "GRAPHQL_VALIDATION_FAILED", maxBytes: 1 << 10, errors: 1},
		{name: "NestedListLiteral100k", req: rawRequest{body: gqlBody(`{ room(name: `+attack.NestedLists(100_000)+`) { name } }`, nil), accept: graphqlResponse},
			status: 400, code: "GRAPHQL_PARSE_FAILED", maxBytes: 1 << 10, errors: 1},
		{name: "NestedVariables", req: rawRequest{body: `{"query":"query($n: String!) { room(name: $n) { name } }","variables":{"n":` + attack.NestedLists(5000) + `}}`, accept: graphqlResponse},
			status: 400, code: "GRAPHQL_VALIDATION_FAILED", maxBytes: 1 << 10, errors: 1},
		{name: "NestedVariables100k", req: rawRequest{body: `{"query":"query($n: String!) { room(name: $n) { name } }","variables":{"n":` + attack.NestedLists(100_000) + `}}`, accept: graphqlResponse},
			status: 400, code: "BAD_REQUEST", maxBytes: 1 << 10, errors: 1},
		{name: "ComplexityCountsPages", req: rawRequest{body: gqlBody(thirtyThreePages, nil), accept: graphqlResponse, token: token},
			status: 400, code: "COMPLEXITY_LIMIT_EXCEEDED", maxBytes: 1 << 10, errors: 1},
		{name: "ComplexityCountsPresenceLogins", req: rawRequest{body: gqlBody(threePresences, map[string]any{"l": hundred}), accept: graphqlResponse, token: token},
			status: 400, code: "COMPLEXITY_LIMIT_EXCEEDED", maxBytes: 1 << 10, errors: 1},
		{name: "ErrorsCappedValidation", req: rawRequest{body: gqlBody("{"+unknownFields.String()+" }", nil), accept: graphqlResponse},
			status: 400, code: "GRAPHQL_VALIDATION_FAILED", maxBytes: 8 << 10, errors: 21},
		{name: "ErrorsDoNotEchoLongInput", req: rawRequest{body: gqlBody(longNameAliases, map[string]any{"n": strings.Repeat("n", 500_000)}), accept: graphqlResponse, token: token},
			status: 200, code: "NOT_FOUND", maxBytes: 16 << 10, errors: 20},
		{name: "ErrorsCappedExecution", req: rawRequest{body: gqlBody("{"+unauthenticated.String()+" }", nil), accept: graphqlResponse},
			status: 200, code: "UNAUTHENTICATED", maxBytes: 8 << 10, errors: 21},

		// Item 7: every failure coded, statuses per GraphQL-over-HTTP.
		{name: "MethodNotAllowed", req: rawRequest{method: http.MethodPatch, body: gqlBody("{ __typename }", nil)},
			status: 405, code: "BAD_REQUEST", maxBytes: 1 << 10},
		{name: "AnonymousStreamReservation", req: rawRequest{method: http.MethodPut, body: gqlBody("{ __typename }", nil)},
			status: 401, code: "UNAUTHENTICATED", maxBytes: 1 << 10},
		{name: "StreamOperationUnknownToken", req: rawRequest{path: "?token=forged", body: `{"query":"{ __typename }","extensions":{"operationId":"a"}}`, token: token},
			status: 404, code: "NOT_FOUND", maxBytes: 1 << 10},
		{name: "StreamStopWithoutToken", req: rawRequest{method: http.MethodDelete, path: "?operationId=a", token: token},
			status: 400, code: "BAD_REQUEST", maxBytes: 1 << 10},
		{name: "UnsupportedContentType", req: rawRequest{contentType: "text/plain", body: gqlBody("{ __typename }", nil)},
			status: 415, code: "BAD_REQUEST", maxBytes: 1 << 10},
		{name: "MissingContentType", req: rawRequest{contentType: "none/none", body: gqlBody("{ __typename }", nil)},
			status: 415, code: "BAD_REQUEST", maxBytes: 1 << 10},
		{name: "GetMutation", req: rawRequest{method: http.MethodGet, path: "?query=" + urlEscape(`mutation { login(login: "alice", password: "password-alice") { token } }`)},
			status: 405, code: "BAD_REQUEST", maxBytes: 1 << 10},
		{name: "GetBadVariables", req: rawRequest{method: http.MethodGet, path: "?query=" + urlEscape(`{ __typename }`) + "&variables=%5B1%5D"},
			status: 400, code: "BAD_REQUEST", maxBytes: 1 << 10},
		{name: "MalformedJSON", req: rawRequest{body: `{"query": "mutation { login(login: \"alice\", password: \"hunter2-secret\") { token } }"`},
			status: 400, code: "BAD_REQUEST", maxBytes: 1 << 10},
		{name: "JSONBatch", req: rawRequest{body: "[" + gqlBody("{ __typename }", nil) + "," + gqlBody("{ __typename }", nil) + "]"},
			status: 400, code: "BAD_REQUEST", maxBytes: 1 << 10},
		{name: "QueryNotAString", req: rawRequest{body: `{"query": 42}`},
			status: 400, code: "BAD_REQUEST", maxBytes: 1 << 10},
		{name: "TrailingGarbage", req: rawRequest{body: gqlBody("{ __typename }", nil) + "{}"},
			status: 400, code: "BAD_REQUEST", maxBytes: 1 << 10},
		{name: "RawNULByte", req: rawRequest{body: "{\"query\": \"{ __typename \x00 }\"}"},
			status: 400, code: "BAD_REQUEST", maxBytes: 1 << 10},
		{name: "EscapedNULInQuery", req: rawRequest{body: `{"query": "{ __typename \u0000 }"}`, accept: graphqlResponse},
			status: 400, code: "GRAPHQL_PARSE_FAILED", maxBytes: 1 << 10},
		{name: "ChunkedBodyOverLimit", req: rawRequest{chunked: true, body: gqlBody("{ __typename }", map[string]any{"pad": strings.Repeat("x", 3<<20)})},
			status: 413, code: "PAYLOAD_TOO_LARGE", maxBytes: 1 << 10},
		{name: "DeclaredBodyOverLimit", req: rawRequest{body: gqlBody("{ __typename }", map[string]any{"pad": strings.Repeat("x", 3<<20)})},
			status: 413, code: "PAYLOAD_TOO_LARGE", maxBytes: 1 << 10},
		{name: "SubscriptionAsPlainPOST", req: rawRequest{body: gqlBody(`subscription { roomEvents(room: "hall") { kind } }`, nil), accept: legacyJSON, token: token},
			status: 400, code: "BAD_REQUEST", maxBytes: 1 << 10},
		{name: "NotAcceptable", req: rawRequest{accept: "text/html", body: gqlBody("{ __typename }", nil)},
			status: 406, code: "BAD_REQUEST", maxBytes: 1 << 10},
		{name: "SSEMalformedBody", req: rawRequest{accept: "text/event-stream", body: `{"query": "subscription { roomEvents(room: \"hall\") { kind } }", "variables": {"password": "hunter2-secret"`},
			status: 400, code: "BAD_REQUEST", maxBytes: 1 << 10},
		{name: "ParseFailedGraphQLResponse", req: rawRequest{body: gqlBody("{ me { login ", nil), accept: graphqlResponse},
			status: 400, code: "GRAPHQL_PARSE_FAILED", maxBytes: 1 << 10},
		{name: "ParseFailedLegacyJSON", req: rawRequest{body: gqlBody("{ me { login ", nil), accept: legacyJSON},
			status: 200, code: "GRAPHQL_PARSE_FAILED", maxBytes: 1 << 10},
		{name: "ParseFailedNoAccept", req: rawRequest{body: gqlBody("{ me { login ", nil)},
			status: 400, code: "GRAPHQL_PARSE_FAILED", maxBytes: 1 << 10},
		{name: "ValidationFailedGraphQLResponse", req: rawRequest{body: gqlBody("{ nope }", nil), accept: graphqlResponse},
			status: 400, code: "GRAPHQL_VALIDATION_FAILED", maxBytes: 1 << 10},
		{name: "ValidationFailedLegacyJSON", req: rawRequest{body: gqlBody("{ nope }", nil), accept: legacyJSON},
			status: 200, code: "GRAPHQL_VALIDATION_FAILED", maxBytes: 1 << 10},
		{name: "BadVariableGraphQLResponse", req: rawRequest{body: gqlBody("query($n: String!) { room(name: $n) { name } }", map[string]any{"n": map[string]any{"not": "a string"}}), accept: graphqlResponse},
			status: 400, code: "GRAPHQL_VALIDATION_FAILED", maxBytes: 1 << 10},
		{name: "TooComplexLegacyJSON", req: rawRequest{body: gqlBody(thirtyThreePages, nil), accept: legacyJSON, token: token},
			status: 200, code: "COMPLEXITY_LIMIT_EXCEEDED", maxBytes: 1 << 10},
		{name: "ExecutionErrorGraphQLResponse", req: rawRequest{body: gqlBody("{ me { login } }", nil), accept: graphqlResponse},
			status: 200, code: "UNAUTHENTICATED", maxBytes: 1 << 10},
		{name: "PersistedQueryNotFound", req: rawRequest{body: `{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"` + strings.Repeat("0", 64) + `"}}}`, accept: graphqlResponse},
			status: 200, code: "PERSISTED_QUERY_NOT_FOUND", maxBytes: 1 << 10},
		{name: "PersistedQueryHashMismatch", req: rawRequest{body: `{"query":"{ __typename }","extensions":{"persistedQuery":{"version":1,"sha256Hash":"` + strings.Repeat("0", 64) + `"}}}`, accept: graphqlResponse},
			status: 400, code: "BAD_REQUEST", maxBytes: 1 << 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := ts.raw(t, c.req)
			if resp.status != c.status || resp.code() != c.code {
				t.Fatalf("got HTTP %d %s, want %d %s: %.300s", resp.status, resp.code(), c.status, c.code, resp.body)
			}
			if len(resp.body) > c.maxBytes {
				t.Fatalf("response of %d bytes, want at most %d: %.300s", len(resp.body), c.maxBytes, resp.body)
			}
			for i, e := range resp.errors {
				if code, _ := e.Extensions["code"].(string); code == "" || e.Message == "" {
					t.Errorf("error %d has no code or no message: %+v", i, e)
				}
				if strings.Contains(e.Message, "hunter2") {
					t.Errorf("error %d echoes the request body: %q", i, e.Message)
				}
			}
			if c.errors > 0 && len(resp.errors) != c.errors {
				t.Fatalf("got %d errors, want %d", len(resp.errors), c.errors)
			}
			if c.status >= 400 && resp.data != nil {
				t.Errorf("a refused request has a data entry: %s", resp.data)
			}
		})
	}

	t.Run("ErrorsCapSaysHowManyWereDropped", func(t *testing.T) {
		resp := ts.raw(t, rawRequest{body: gqlBody("{"+unknownFields.String()+" }", nil)})
		if last := resp.errors[len(resp.errors)-1].Message; !strings.Contains(last, "30 more errors") {
			t.Fatalf("last error %q does not say 30 were dropped", last)
		}
	})

	t.Run("PagesWithinTheLimitPass", func(t *testing.T) {
		// The app's heaviest page: 100 messages, every field, the author.
		page := `query($r: String!) { messages(room: $r, first: 100) { edges { cursor node { id content system postedAt hidden room author { login firstname lastname } } } pageInfo { hasNextPage endCursor } } me { login rooms } rooms(first: 20) { edges { cursor node { name banner } } } }`
		mustDo(t, alice, page, map[string]any{"r": "hall"}, nil)
		// GraphiQL's introspection query, fragments and all.
		mustDo(t, ts.Client, introspectionQuery, nil, nil)
	})

	t.Run("AnswersSayTheirLength", func(t *testing.T) {
		// A page larger than net/http's buffers, and a refusal: each says
		// its length, so the page goes out in two writes and not as chunks.
		for range 20 {
			mustDo(t, alice, `mutation($r: String!, $c: String!) { postMessage(room: $r, content: $c) { id } }`,
				map[string]any{"r": "hall", "c": strings.Repeat("No room! ", 40)}, nil)
		}
		page := ts.raw(t, rawRequest{body: gqlBody(`query($r: String!) { messages(room: $r, first: 20) { edges { node { id content } } } }`, map[string]any{"r": "hall"}), token: token})
		refusal := ts.raw(t, rawRequest{body: gqlBody("{ nope }", nil)})
		for _, resp := range []rawResponse{page, refusal} {
			if resp.length != int64(len(resp.body)) {
				t.Errorf("HTTP %d of %d bytes says Content-Length %d", resp.status, len(resp.body), resp.length)
			}
		}
		if len(page.body) < 8<<10 || len(page.errors) > 0 {
			t.Fatalf("the page: %d bytes, errors %v", len(page.body), page.errors)
		}
	})

	t.Run("PersistedQueryRoundTrip", func(t *testing.T) {
		query := "{ __typename }"
		sum := sha256.Sum256([]byte(query))
		ext := `"extensions":{"persistedQuery":{"version":1,"sha256Hash":"` + hex.EncodeToString(sum[:]) + `"}}`
		if resp := ts.raw(t, rawRequest{body: "{" + ext + "}"}); resp.code() != "PERSISTED_QUERY_NOT_FOUND" || resp.status != 200 ||
			resp.header.Get("Cache-Control") != "private, no-cache, must-revalidate" {
			t.Fatalf("unknown hash: HTTP %d %s, Cache-Control %q", resp.status, resp.code(), resp.header.Get("Cache-Control"))
		}
		if resp := ts.raw(t, rawRequest{body: `{"query":"` + query + `",` + ext + "}"}); resp.status != 200 || len(resp.errors) > 0 {
			t.Fatalf("query with its hash: HTTP %d %s", resp.status, resp.body)
		}
		if resp := ts.raw(t, rawRequest{body: "{" + ext + "}"}); resp.status != 200 || string(resp.data) != `{"__typename":"Query"}` {
			t.Fatalf("known hash: HTTP %d %s", resp.status, resp.body)
		}
	})
}

// TestHostileWebsocketOperations: the query limits are an executor
// extension, so operations sent over a websocket meet them too.
func TestHostileWebsocketOperations(t *testing.T) {
	ts := startServer(t, testConfig(t))
	alice := ts.user(t, "alice")
	for name, c := range map[string]struct{ query, code string }{
		"FragmentExpansion": {attack.FragmentBomb(25), "COMPLEXITY_LIMIT_EXCEEDED"},
		"TokenLimit":        {"{ __typename" + strings.Repeat(" @a", 20_000) + " }", "GRAPHQL_PARSE_FAILED"},
	} {
		t.Run(name, func(t *testing.T) {
			sub, err := alice.Subscribe(testContext(t), chatclient.GraphQLTransportWS, c.query, nil)
			if err != nil {
				t.Fatalf("subscribe: %v", err)
			}
			defer sub.Close()
			if _, err := sub.Next(testContext(t)); !isCode(err, c.code) {
				t.Fatalf("got %v, want %s", err, c.code)
			}
		})
	}
}

func urlEscape(s string) string {
	return strings.NewReplacer("%", "%25", " ", "%20", "{", "%7B", "}", "%7D", `"`, "%22", "(", "%28", ")", "%29", ":", "%3A", ",", "%2C", "&", "%26", "+", "%2B", "#", "%23", "$", "%24", "!", "%21").Replace(s)
}

// introspectionQuery is GraphiQL's.
const introspectionQuery = `query IntrospectionQuery {
  __schema {
    queryType { name } mutationType { name } subscriptionType { name }
    types { ...FullType }
    directives { name description locations args { ...InputValue } }
  }
}
fragment FullType on __Type {
  kind name description
  fields(includeDeprecated: true) { name description args { ...InputValue } type { ...TypeRef } isDeprecated deprecationReason }
  inputFields { ...InputValue }
  interfaces { ...TypeRef }
  enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason }
  possibleTypes { ...TypeRef }
}
fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue }
fragment TypeRef on __Type {
  kind name
  ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } }
}`

// TestSlowClientsAreCut sends headers, then a body, too slowly: the server
// closes the connection instead of holding it.
func TestSlowClientsAreCut(t *testing.T) {
	cfg := testConfig(t)
	cfg.ReadTimeout = 200 * time.Millisecond
	ts := startServer(t, cfg)
	addr := strings.TrimSuffix(strings.TrimPrefix(ts.URL, "http://"), "/query")

	t.Run("Headers", func(t *testing.T) {
		c := dial(t, addr)
		fmt.Fprintf(c, "POST /query HTTP/1.1\r\nHost: chat\r\n") // and never the rest
		if got := readUntilClosed(t, c); strings.Contains(got, "200 OK") {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("Body", func(t *testing.T) {
		c := dial(t, addr)
		fmt.Fprintf(c, "POST /query HTTP/1.1\r\nHost: chat\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"query\":")
		got := readUntilClosed(t, c)
		if !strings.HasPrefix(got, "HTTP/1.1 408") || !strings.Contains(got, `"code":"BAD_REQUEST"`) {
			t.Fatalf("got %q, want 408 with a coded error", got)
		}
	})
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readUntilClosed reads what the server sends until it closes the
// connection; the test fails if it is still open after 10 seconds.
func readUntilClosed(t *testing.T, c net.Conn) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("the server kept the connection open: %v (read %q)", err, got)
	}
	return string(got)
}

// TestConnectionsPerClient fills one address's share of connections: the
// next is answered 429 and closed, and a closed one frees its place.
func TestConnectionsPerClient(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxConnsPerClient = 3
	ts := startServer(t, cfg)
	addr := strings.TrimSuffix(strings.TrimPrefix(ts.URL, "http://"), "/query")

	var held []net.Conn
	for range 3 {
		c := dial(t, addr)
		ping(t, c) // served: the server counts it
		held = append(held, c)
	}
	over := dial(t, addr)
	got := readUntilClosed(t, over)
	if !strings.HasPrefix(got, "HTTP/1.1 429") || !strings.Contains(got, `"code":"TOO_MANY_CONNECTIONS"`) {
		t.Fatalf("connection over the cap: got %q", got)
	}
	held[0].Close()
	waitFor(t, func() bool {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return false
		}
		defer c.Close()
		return tryPing(c) == nil
	})
}

func ping(t *testing.T, c net.Conn) {
	t.Helper()
	if err := tryPing(c); err != nil {
		t.Fatal(err)
	}
}

// tryPing runs a query on a raw keep-alive connection.
func tryPing(c net.Conn) error {
	body := gqlBody("{ __typename }", nil)
	fmt.Fprintf(c, "POST /query HTTP/1.1\r\nHost: chat\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
	}
	return nil
}

// TestLogsHoldNoPasswords sends passwords in bad input, in malformed
// bodies and into an internal error, and reads every log line.
func TestLogsHoldNoPasswords(t *testing.T) {
	var logs lockedBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// gqlgen's transports log with the standard logger.
	log.SetOutput(&logs)
	t.Cleanup(func() { log.SetOutput(os.Stderr) })

	cfg := testConfig(t)
	st, err := embedded.Open(filepath.Join(cfg.DataDir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.NewOnStore(context.Background(), cfg, logger, st)
	if err != nil {
		t.Fatal(err)
	}
	ts := serve(t, srv)
	const secret = "hunter2-very-secret"
	signup := `mutation($in: SignupInput!) { signup(input: $in) { login } }`
	login := `mutation($l: String!, $p: String!) { login(login: $l, password: $p) { token } }`

	wantCode(t, ts.Client, "BAD_USER_INPUT", signup, map[string]any{"in": map[string]any{"login": "B A D", "password": secret, "firstname": "a", "lastname": "b"}})
	for _, req := range []rawRequest{
		{body: `{"query":"` + strings.ReplaceAll(login, `"`, `\"`) + `","variables":{"l":"alice","p":"` + secret + `"}`},
		{body: `{"query":"` + strings.ReplaceAll(login, `"`, `\"`) + `","variables":{"l":"alice","p":"` + secret + `"}`, accept: "text/event-stream"},
		{body: gqlBody(login, map[string]any{"l": "alice", "p": map[string]any{"x": secret}})},
	} {
		ts.raw(t, req)
	}
	// An internal error in the middle of a login: the store is gone.
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	err = ts.Client.Do(testContext(t), signup, map[string]any{"in": map[string]any{"login": "carol", "password": secret, "firstname": "C", "lastname": "D"}}, nil)
	if !isCode(err, "INTERNAL") {
		t.Fatalf("signup on a closed store: got %v, want INTERNAL", err)
	}
	if !strings.Contains(logs.String(), "request failed") {
		t.Fatalf("the internal error was not logged:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), secret) {
		t.Fatalf("a password reached the logs:\n%s", logs.String())
	}
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
