package attack

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// A malformed request: what the server must answer with a code and no
// server error, whatever part of the request is wrong.
type malformed struct {
	name   string
	method string
	path   string // after /query
	header http.Header
	body   func() io.Reader
}

func jsonHeader() http.Header {
	return http.Header{"Content-Type": {"application/json"}, "Accept": {"application/graphql-response+json"}}
}

func text(s string) func() io.Reader { return func() io.Reader { return strings.NewReader(s) } }

// endless is a body of n bytes sent without a length, so the server only
// learns its size by reading it (chunked encoding).
func endless(n int) func() io.Reader {
	return func() io.Reader {
		return io.MultiReader(strings.NewReader(`{"query":"{ __typename }","x":"`), io.LimitReader(repeatReader('a'), int64(n)), strings.NewReader(`"}`))
	}
}

type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

var malformedRequests = []malformed{
	{name: "unsupported method", method: http.MethodPut, header: jsonHeader(), body: text(`{"query":"{ __typename }"}`)},
	{name: "unsupported content type", method: http.MethodPost, header: http.Header{"Content-Type": {"text/plain"}}, body: text(`{ __typename }`)},
	{name: "no content type", method: http.MethodPost, body: text(`{"query":"{ __typename }"}`)},
	{name: "mutation over GET", method: http.MethodGet, path: "?query=" + url.QueryEscape(`mutation { __typename }`)},
	{name: "GET without a query", method: http.MethodGet, header: http.Header{"Accept": {"application/json"}}},
	{name: "malformed JSON", method: http.MethodPost, header: jsonHeader(), body: text(`{"query": "{ __typename }`)},
	{name: "JSON of the wrong shape", method: http.MethodPost, header: jsonHeader(), body: text(`{"query": 42}`)},
	{name: "batched array", method: http.MethodPost, header: jsonHeader(), body: text(`[{"query":"{ __typename }"},{"query":"{ __typename }"}]`)},
	{name: "NUL bytes", method: http.MethodPost, header: jsonHeader(), body: text("{\"query\":\"{ __type\\u0000name }\"}")},
	{name: "raw NUL bytes", method: http.MethodPost, header: jsonHeader(), body: text("{\"query\":\"{ __type\x00name }\"}")},
	{name: "empty body", method: http.MethodPost, header: jsonHeader(), body: text(``)},
	{name: "empty query", method: http.MethodPost, header: jsonHeader(), body: text(`{"query":""}`)},
	{name: "unknown operation name", method: http.MethodPost, header: jsonHeader(), body: text(`{"query":"query A { __typename }","operationName":"B"}`)},
	{name: "chunked body over the limit", method: http.MethodPost, header: jsonHeader(), body: endless(3 << 20)},
}

func transportErrors(ctx context.Context, t *Target) error {
	for _, m := range malformedRequests {
		var body io.Reader
		if m.body != nil {
			body = m.body()
		}
		a, err := t.send(ctx, m.method, "/query"+m.path, m.header, body)
		if err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		if err := refused(a); err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		if a.Status == http.StatusOK && bytes.Contains(a.Body, []byte(`"data":{`)) {
			return fmt.Errorf("%s: answered with data: %.200s", m.name, a.Body)
		}
	}
	return nil
}

func persistedQueryNotFound(ctx context.Context, t *Target) error {
	const hash = "ecf4edb46db40b5132295c0291d62fb65d6759a9eedfa4d5d612dd5ec54a6b38"
	ext := `{"persistedQuery":{"version":1,"sha256Hash":"` + hash + `"}}`
	// Apollo's first try: the hash alone, over GET, then over POST.
	a, err := t.send(ctx, http.MethodGet, "/query?extensions="+url.QueryEscape(ext), http.Header{"Accept": {"application/json"}}, nil)
	if err != nil {
		return err
	}
	if err := refused(a, "PERSISTED_QUERY_NOT_FOUND"); err != nil {
		return fmt.Errorf("GET: %w", err)
	}
	a, err = t.postRaw(ctx, "", []byte(`{"extensions":`+ext+`}`))
	if err != nil {
		return err
	}
	if err := refused(a, "PERSISTED_QUERY_NOT_FOUND"); err != nil {
		return fmt.Errorf("POST: %w", err)
	}
	// A hash that is not the query's is the client's fault, and coded.
	a, err = t.postRaw(ctx, "", []byte(`{"query":"{ __typename }","extensions":`+ext+`}`))
	if err != nil {
		return err
	}
	return refused(a)
}
