package e2e

import (
	"errors"
	"slices"
	"testing"

	"github.com/killrchat/chatql/internal/chatclient"
)

// TestInvalidFieldsAreNamed: a refused input names the field each error is
// about (extensions.field: an argument, or an input object's field under
// its argument), and every invalid field of it is reported at once, one
// error each, rather than the first only.
func TestInvalidFieldsAreNamed(t *testing.T) {
	ts := startServer(t, testConfig(t))
	alice := ts.user(t, "alice")
	mustDo(t, alice, createRoom, map[string]any{"n": "plaza"}, nil)

	// fields runs an operation that must be refused with BAD_USER_INPUT
	// and returns the fields its errors name, in order.
	fields := func(t *testing.T, c *chatclient.Client, query string, vars map[string]any) []string {
		t.Helper()
		err := c.Do(testContext(t), query, vars, nil)
		var errs chatclient.Errors
		if !errors.As(err, &errs) {
			t.Fatalf("%s: got %v, want BAD_USER_INPUT errors", firstLine(query), err)
		}
		var got []string
		for _, e := range errs {
			if e.Code() != "BAD_USER_INPUT" || e.Message == "" {
				t.Errorf("%s: error %+v, want BAD_USER_INPUT with a message", firstLine(query), e)
			}
			field, _ := e.Extensions["field"].(string)
			got = append(got, field)
		}
		return got
	}
	for _, c := range []struct {
		name   string
		client *chatclient.Client
		query  string
		vars   map[string]any
		want   []string
	}{
		{"signup, every field", ts.Client, `mutation($in: SignupInput!) { signup(input: $in) { login } }`,
			map[string]any{"in": map[string]any{"login": "X!", "password": "short", "firstname": " ", "lastname": "Ok", "email": "nope", "bio": "fine"}},
			[]string{"input.login", "input.firstname", "input.email", "input.password"}},
		{"signup, one field", ts.Client, `mutation($in: SignupInput!) { signup(input: $in) { login } }`,
			map[string]any{"in": map[string]any{"login": "dora", "password": "long enough", "firstname": "Dora", "lastname": "\u202eEvil"}},
			[]string{"input.lastname"}},
		{"updateProfile", alice, `mutation($in: ProfileInput!) { updateProfile(input: $in) { login } }`,
			map[string]any{"in": map[string]any{"firstname": "", "lastname": "", "bio": "ok"}},
			[]string{"input.firstname", "input.lastname"}},
		{"createRoom", alice, `mutation($in: CreateRoomInput!) { createRoom(input: $in) { name } }`,
			map[string]any{"in": map[string]any{"name": "Bad Name", "banner": "two\nlines"}},
			[]string{"input.name", "input.banner"}},
		{"createBot", alice, `mutation { createBot(login: "B", firstname: "") { apiKey } }`, nil,
			[]string{"login", "firstname"}},
		{"postMessage", alice, `mutation { postMessage(room: "plaza", content: "  ") { id } }`, nil,
			[]string{"content"}},
		{"sendDirectMessage", alice, `mutation { sendDirectMessage(to: "Not A Login", content: "hi") { id } }`, nil,
			[]string{"to"}},
		{"changePassword", alice, `mutation { changePassword(oldPassword: "password-alice", newPassword: "x") }`, nil,
			[]string{"newPassword"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := fields(t, c.client, c.query, c.vars); !slices.Equal(got, c.want) {
				t.Errorf("fields %q, want %q", got, c.want)
			}
		})
	}
}
