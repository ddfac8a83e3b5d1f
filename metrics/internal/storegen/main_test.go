package main

import (
	"bytes"
	"os"
	"testing"
)

// The store decorator times every method of store.Store: store_gen.go is
// generated from the interface, so that a method added or changed on
// another branch fails this test rather than going untimed (the decorator
// embeds the store, so an added method still works meanwhile).
func TestStoreDecoratorIsGenerated(t *testing.T) {
	want, err := generateStoreDecorator()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../store_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("metrics/store_gen.go does not time every method of store.Store as it is now: run `go generate ./metrics` and commit the result")
	}
}
