package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/killrchat/chatql/server"
)

// FuzzGraphQLRequest sends arbitrary documents and variables through the
// server's HTTP handler, as anonymous and as a signed-in user: whatever
// the input, the answer is JSON, every error in it carries a code, no
// answer is a server error, and none is larger than a page of data.
func FuzzGraphQLRequest(f *testing.F) {
	for _, seed := range []struct{ query, vars string }{
		{`{ __typename }`, `{}`},
		{`query($r: String!) { room(name: $r) { name participants { login } } }`, `{"r": "general"}`},
		{`query($r: String!, $n: Int) { messages(room: $r, first: $n) { edges { cursor node { id content } } } }`, `{"r": "general", "n": 100}`},
		{`mutation($r: String!, $c: String!) { postMessage(room: $r, content: $c) { id } }`, `{"r": "general", "c": "hi"}`},
		{`{ me { login rooms } }`, `null`},
		{`{ ...F } fragment F on Query { ...F }`, `{}`},
		{`{ a: __typename @skip(if: true) @include(if: false) }`, `{"x": [[[[[]]]]]}`},
		{`query { messages(room: "x", first: [[1]]) { edges { cursor } } }`, `{}`},
		{`subscription { roomEvents(room: "general") { kind } }`, `{}`},
		{`{ message(id: "6ba7b810-9dad-11d1-80b4-00c04fd430c8") { id } }`, `{"id": "\u0000"}`},
		{"{ __type\x00name }", `{`},
	} {
		f.Add(seed.query, seed.vars, false)
		f.Add(seed.query, seed.vars, true)
	}
	cfg := fuzzConfig(f)
	srv, err := server.New(context.Background(), cfg, testLogger())
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = srv.Close(context.Background()) })
	handler := srv.Handler()
	token := fuzzUser(f, handler)

	f.Fuzz(func(t *testing.T, query, vars string, signedIn bool) {
		body, _ := json.Marshal(map[string]any{"query": query, "variables": json.RawMessage(validJSONOr(vars))})
		req := httptest.NewRequest(http.MethodPost, "/query", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if signedIn {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		checkAnswer(t, rec)
	})
}

// validJSONOr returns s if it is JSON, or null: the fuzzer's variables
// travel inside a well-formed request (FuzzHTTPBody covers malformed ones).
func validJSONOr(s string) string {
	if json.Valid([]byte(s)) {
		return s
	}
	return "null"
}

// FuzzHTTPBody sends arbitrary bytes as a request body of the API.
func FuzzHTTPBody(f *testing.F) {
	for _, seed := range []string{`{"query":"{ __typename }"}`, `[{"query":"{ __typename }"}]`, `{"query": 42}`, `{"query":"{`, "\x00", `{"variables":{"a":[[[[]]]]}}`,
		`{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"ecf4edb46db40b5132295c0291d62fb65d6759a9eedfa4d5d612dd5ec54a6b38"}}}`} {
		f.Add([]byte(seed), "application/json")
		f.Add([]byte(seed), "text/plain")
	}
	srv, err := server.New(context.Background(), fuzzConfig(f), testLogger())
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = srv.Close(context.Background()) })
	handler := srv.Handler()
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		req := httptest.NewRequest(http.MethodPost, "/query", bytes.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		checkAnswer(t, rec)
	})
}

// maxFuzzAnswer bounds an answer: a full page of the largest messages is
// far below it, and no error answer comes near.
const maxFuzzAnswer = 1 << 20

func checkAnswer(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	if rec.Code >= 500 {
		t.Fatalf("HTTP %d: %.500s", rec.Code, rec.Body.Bytes())
	}
	if rec.Body.Len() > maxFuzzAnswer {
		t.Fatalf("answer of %d bytes", rec.Body.Len())
	}
	var answer struct {
		Errors []struct {
			Message    string
			Extensions map[string]any
		}
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &answer); err != nil {
		t.Fatalf("HTTP %d, not JSON (%v): %.500s", rec.Code, err, rec.Body.Bytes())
	}
	for _, e := range answer.Errors {
		if code, _ := e.Extensions["code"].(string); code == "" || code == "INTERNAL" {
			t.Fatalf("HTTP %d, error %q has code %q", rec.Code, e.Message, code)
		}
		if strings.TrimSpace(e.Message) == "" {
			t.Fatalf("HTTP %d, error without a message", rec.Code)
		}
	}
}

// fuzzConfig is the test configuration for a fuzz target.
func fuzzConfig(f *testing.F) server.Config {
	cfg, err := server.ParseConfig(nil, func(string) string { return "" })
	if err != nil {
		f.Fatal(err)
	}
	cfg.DataDir = f.TempDir()
	cfg.BcryptCost = 4
	return cfg
}

// fuzzUser signs up a user who has joined a room named general, and
// returns their token.
func fuzzUser(f *testing.F, h http.Handler) string {
	do := func(token, query string) []byte {
		body, _ := json.Marshal(map[string]any{"query": query})
		req := httptest.NewRequest(http.MethodPost, "/query", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if bytes.Contains(rec.Body.Bytes(), []byte(`"errors"`)) {
			f.Fatalf("%s: %s", query, rec.Body.Bytes())
		}
		return rec.Body.Bytes()
	}
	do("", `mutation { signup(input: {login: "fuzzer", password: "fuzzer-password", firstname: "F", lastname: "Z"}) { login } }`)
	var login struct {
		Data struct{ Login struct{ Token string } }
	}
	if err := json.Unmarshal(do("", `mutation { login(login: "fuzzer", password: "fuzzer-password") { token } }`), &login); err != nil {
		f.Fatal(err)
	}
	token := login.Data.Login.Token
	do(token, `mutation { createRoom(input: {name: "general"}) { name } }`)
	do(token, `mutation { postMessage(room: "general", content: "hello") { id } }`)
	return token
}
