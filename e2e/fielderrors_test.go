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
			map[string]any{"in": map[string]any{"login": "dora", "password": "long enough", "firstName": "Dora", "lastName": "\u202eEvil"}},
			[]string{"input.lastName"}},
		{"signup, old and new names differ", ts.Client, `mutation($in: SignupInput!) { signup(input: $in) { login } }`,
			map[string]any{"in": map[string]any{"login": "dora", "password": "long enough", "firstname": "Dora", "firstName": "Dorothy", "lastName": "Gale"}},
			[]string{"input.firstName"}},
		{"signup, no first name", ts.Client, `mutation($in: SignupInput!) { signup(input: $in) { login } }`,
			map[string]any{"in": map[string]any{"login": "dora", "password": "long enough", "lastName": "Gale"}},
			[]string{"input.firstName"}},
		{"updateProfile", alice, `mutation($in: ProfileInput!) { updateProfile(input: $in) { login } }`,
			map[string]any{"in": map[string]any{"firstname": "", "lastName": "", "bio": "ok"}},
			[]string{"input.firstname", "input.lastName"}},
		{"createRoom", alice, `mutation($in: CreateRoomInput!) { createRoom(input: $in) { name } }`,
			map[string]any{"in": map[string]any{"name": "Bad Name", "banner": "two\nlines"}},
			[]string{"input.name", "input.banner"}},
		{"createBot", alice, `mutation { createBot(login: "B", firstName: "") { apiKey } }`, nil,
			[]string{"login", "firstName"}},
		{"createBot, deprecated name", alice, `mutation { createBot(login: "bee", firstname: "") { apiKey } }`, nil,
			[]string{"firstname"}},
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

// TestNamesInCamelCase: firstName and lastName, in and out, alongside the
// deprecated firstname and lastname, which keep working and agree.
func TestNamesInCamelCase(t *testing.T) {
	ts := startServer(t, testConfig(t))
	const signup = `mutation($in: SignupInput!) { signup(input: $in) { login firstName lastName firstname lastname } }`
	type names struct {
		Login     string `json:"login"`
		FirstName string `json:"firstName"`
		LastName  string `json:"lastName"`
		Firstname string `json:"firstname"`
		Lastname  string `json:"lastname"`
	}
	check := func(t *testing.T, what string, got names, first, last string) {
		t.Helper()
		if got.FirstName != first || got.Firstname != first || got.LastName != last || got.Lastname != last {
			t.Errorf("%s: got %+v, want %s %s under both names", what, got, first, last)
		}
	}
	for _, c := range []struct {
		name string
		in   map[string]any
	}{
		{"new", map[string]any{"login": "dora", "firstName": "Dora", "lastName": "Gale"}},
		{"deprecated", map[string]any{"login": "toto", "firstname": "Dora", "lastname": "Gale"}},
		{"both, agreeing", map[string]any{"login": "ozzy", "firstname": "Dora", "firstName": "Dora", "lastName": "Gale"}},
	} {
		c.in["password"] = "long enough"
		var out struct{ Signup names }
		mustDo(t, ts.Client, signup, map[string]any{"in": c.in}, &out)
		check(t, "signup with the "+c.name+" names", out.Signup, "Dora", "Gale")
	}
	dora := ts.user(t, "dorothy")
	var updated struct{ UpdateProfile names }
	mustDo(t, dora, `mutation { updateProfile(input: {firstName: "Dot", lastname: "Gale"}) { login firstName lastName firstname lastname } }`, nil, &updated)
	check(t, "updateProfile", updated.UpdateProfile, "Dot", "Gale")
	mustDo(t, dora, createRoom, map[string]any{"n": "kansas"}, nil)
	var room struct{ Room struct{ Creator names } }
	mustDo(t, dora, `{ room(name: "kansas") { creator { login firstName lastName firstname lastname } } }`, nil, &room)
	check(t, "a UserSummary", room.Room.Creator, "Dot", "Gale")
	var bot struct{ CreateBot struct{ Bot names } }
	mustDo(t, dora, `mutation { createBot(login: "tin-man", firstName: "Tin", lastName: "Man") { bot { login firstName lastName firstname lastname } } }`, nil, &bot)
	check(t, "createBot", bot.CreateBot.Bot, "Tin", "Man")
}
