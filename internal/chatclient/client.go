// Package chatclient is a small GraphQL client for the chat API: queries and
// mutations over HTTP, subscriptions over websockets with either the
// graphql-transport-ws or the legacy graphql-ws subprotocol. The end-to-end
// tests and the load tool drive the server only through it.
package chatclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Client calls one chat server. Token, when set, authenticates every call.
type Client struct {
	// URL is the GraphQL endpoint, e.g. http://localhost:8080/query.
	URL   string
	Token string
	HTTP  *http.Client
}

// New returns a client of the endpoint url.
func New(url string) *Client { return &Client{URL: url, HTTP: http.DefaultClient} }

// WithToken returns a copy of c that authenticates as token.
func (c *Client) WithToken(token string) *Client {
	cp := *c
	cp.Token = token
	return &cp
}

// Error is one GraphQL error of a response.
type Error struct {
	Message    string         `json:"message"`
	Path       []any          `json:"path,omitempty"`
	Extensions map[string]any `json:"extensions,omitempty"`
}

// Code is the error's extensions.code.
func (e Error) Code() string {
	code, _ := e.Extensions["code"].(string)
	return code
}

// Errors is the errors list of a response that has any.
type Errors []Error

func (e Errors) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = fmt.Sprintf("%s (%s)", err.Message, err.Code())
	}
	return "graphql: " + strings.Join(msgs, "; ")
}

// Code is the code of the first error.
func (e Errors) Code() string {
	if len(e) == 0 {
		return ""
	}
	return e[0].Code()
}

// Request is a GraphQL operation.
type Request struct {
	Query     string         `json:"query"`
	Variables map[string]any `json:"variables,omitempty"`
}

// Response is a GraphQL result: data and errors.
type Response struct {
	Data   json.RawMessage `json:"data"`
	Errors Errors          `json:"errors,omitempty"`
}

// Do runs a query or mutation over HTTP POST and decodes its data into out
// (which may be nil). A response with errors returns them as Errors.
func (c *Client) Do(ctx context.Context, query string, vars map[string]any, out any) error {
	body, err := json.Marshal(Request{Query: query, Variables: vars})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var r Response
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("graphql: HTTP %d, undecodable body %.200q: %w", resp.StatusCode, raw, err)
	}
	if len(r.Errors) > 0 {
		return r.Errors
	}
	if out != nil && len(r.Data) > 0 {
		return json.Unmarshal(r.Data, out)
	}
	return nil
}
