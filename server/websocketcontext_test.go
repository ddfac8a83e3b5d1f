package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"
	"unsafe"

	"github.com/killrchat/chatql/auth"
	"github.com/killrchat/chatql/ratelimit"
	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/store/embedded"
)

// TestWebsocketContextKeepsRequestValues: the context a websocket keeps
// holds every value the middlewares of /query put in its upgrade request's
// context, equal, and nothing else: not net/http's values, nor a
// cancellation. A middleware that adds a value websocketContext does not
// carry fails it.
func TestWebsocketContextKeepsRequestValues(t *testing.T) {
	db, err := embedded.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	secret := []byte("0123456789abcdef0123456789abcdef")
	tokens, err := auth.NewTokens(secret, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	sessions, err := auth.NewSessions(t.Context(), auth.SessionConfig{Store: db, Tokens: tokens, Secret: secret, RefreshTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	u := store.UserRef{Login: "ada", Firstname: "Ada", Lastname: "L"}
	if err := db.CreateUser(t.Context(), store.Account{User: store.User{UserRef: u}, PassHash: []byte("h")}); err != nil {
		t.Fatal(err)
	}
	pair, err := sessions.Start(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}

	type seen struct{ before, after, kept context.Context }
	got := make(chan seen, 1)
	values := withRequestValues(ratelimit.NewAddresses(nil), sessions, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		got <- seen{after: r.Context(), kept: websocketContext(r)}
	}))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		before := r.Context()
		values.ServeHTTP(w, r)
		s := <-got
		s.before = before
		got <- s
	}))
	defer srv.Close()

	var kept []context.Context
	for _, tc := range []struct {
		name   string
		header http.Header
		want   int // values websocketContext keeps
	}{
		// the address, the user agent (Go's client sends one), the base
		{"bare", http.Header{}, 3},
		{"a user", http.Header{"Authorization": {"Bearer " + pair.AccessToken}, "User-Agent": {"test/1"}, "Origin": {"http://app.example"}}, 5},
		{"a rejected token", http.Header{"Authorization": {"Basic eA=="}}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
			req.Header = tc.header
			req.Header.Set("Connection", "Upgrade")
			req.Header.Set("Upgrade", "websocket")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			s := <-got
			kept = append(kept, s.kept)
			added := map[any]bool{}
			for _, k := range contextKeys(s.after) {
				added[k] = true
			}
			for _, k := range contextKeys(s.before) {
				delete(added, k)
			}
			keys := contextKeys(s.kept)
			if len(keys) != tc.want || len(added) != tc.want {
				t.Errorf("kept %d values of the %d the middlewares added; want %d", len(keys), len(added), tc.want)
			}
			for _, k := range keys {
				if !added[k] {
					t.Errorf("kept %T, which no middleware of /query added", k)
				}
			}
			for k := range added {
				if want, kept := s.after.Value(k), s.kept.Value(k); !reflect.DeepEqual(kept, want) {
					t.Errorf("value of %T: kept %v, want %v", k, kept, want)
				}
			}
			if s.kept.Done() != nil {
				t.Errorf("the kept context can be cancelled: it holds a request's cancellation")
			}
			keptUser, keptErr := auth.UserFrom(s.kept)
			wantUser, wantErr := auth.UserFrom(s.after)
			if keptUser != wantUser || (keptErr == nil) != (wantErr == nil) || keptErr != nil && keptErr.Error() != wantErr.Error() {
				t.Errorf("the kept context's caller is %v (%v), the request's %v (%v)", keptUser, keptErr, wantUser, wantErr)
			}
		})
	}
	// Connections to the same host share one copy of its base.
	first, last := requestBase(kept[0]), requestBase(kept[len(kept)-1])
	if first == "" || unsafe.StringData(first) != unsafe.StringData(last) {
		t.Errorf("the base %q is not shared: each connection holds its own copy", first)
	}
}

// contextKeys lists the keys of the values in ctx's chain, nearest first,
// by reading the standard library's context types: a test's view into
// what a context retains.
func contextKeys(ctx context.Context) []any {
	var keys []any
	for v := reflect.ValueOf(ctx); v.IsValid(); {
		for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return keys
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return keys
		}
		if key := v.FieldByName("key"); key.IsValid() && v.FieldByName("val").IsValid() {
			keys = append(keys, readable(key).Interface())
		}
		switch {
		case v.FieldByName("Context").IsValid():
			v = v.FieldByName("Context")
		case v.FieldByName("c").IsValid(): // withoutCancelCtx, afterFuncCtx's parent
			v = v.FieldByName("c")
		default:
			return keys
		}
	}
	return keys
}

// readable returns v, an unexported field of an addressable struct, as a
// value whose Interface may be called.
func readable(v reflect.Value) reflect.Value {
	return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
}
