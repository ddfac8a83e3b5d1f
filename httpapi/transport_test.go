package httpapi

import (
	"encoding/json"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// A response's raw encoding is encoding/json's, but for the data, which it
// copies as gqlgen wrote it.
func TestEncodeResponseAsEncodingJSON(t *testing.T) {
	yes := true
	for _, resp := range []*graphql.Response{
		{Data: json.RawMessage(`{"a":1}`)},
		{},
		{Errors: gqlerror.List{{Message: `bad "data":0 <here>`, Extensions: map[string]any{"code": "BAD_USER_INPUT", "data": 0}}}, Data: json.RawMessage(`null`)},
		{Data: json.RawMessage(`{"b":"x"}`), Extensions: map[string]any{"z": 1, "a": []int{2}}},
		{Data: json.RawMessage(`{"c":3}`), HasNext: &yes},
	} {
		want, err := json.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendResponse([]byte("before:"), resp)
		if err != nil || string(got) != "before:"+string(want) {
			t.Errorf("appendResponse = %s, %v; encoding/json = before:%s", got, err, want)
		}
	}
}
