package e2e

import (
	"fmt"
	"testing"
)

// BenchmarkSendWithNotices is the cost of the outbox on the post path: a
// direct message to an offline user through the API on the embedded store,
// with push notifications and email digests off (no notice is written)
// and push on (its notice is
// written with the message, and the notifier reads it and decides: the
// recipient has no subscription, so nothing is sent).
func BenchmarkSendWithNotices(b *testing.B) {
	for _, push := range []bool{false, true} {
		b.Run(fmt.Sprint("push=", push), func(b *testing.B) {
			cfg := testConfig(b)
			cfg.Push = push
			if !push {
				cfg.EmailDigestAfter = 0
			}
			ts := startServer(b, cfg)
			alice := ts.user(b, "alice")
			ts.user(b, "bob")
			for b.Loop() {
				mustDo(b, alice, `mutation { sendDirectMessage(to: "bob", content: "hello") { id } }`, nil, nil)
			}
		})
	}
}
