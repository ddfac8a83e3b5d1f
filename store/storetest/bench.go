package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/killrchat/chatql/store"
)

// BenchmarkInbox reads an inbox of 20 direct conversations: one each with
// a few messages its owner has not read, or with more than the unread cap.
// Each conversation starts with a message of the owner's, so that the
// unread are the peer's messages after it.
func BenchmarkInbox(b *testing.B, s store.Conversations) {
	const conversations = 20
	for _, unread := range []int{3, 150} {
		b.Run(fmt.Sprintf("conversations=%d/unread=%d", conversations, unread), func(b *testing.B) {
			ctx := context.Background()
			owner := store.UserRef{Login: fmt.Sprintf("inbox-%08x", rand.Uint32())}
			var wg sync.WaitGroup
			for i := range conversations {
				peer := store.UserRef{Login: fmt.Sprintf("%s-peer-%02d", owner.Login, i)}
				wg.Go(func() {
					send := func(from, to store.UserRef) {
						m := store.Message{Room: store.DirectConversationID(from.Login, to.Login), ID: store.NewMessageID(), Author: from, Content: "The quick brown fox jumps over the lazy dog."}
						if err := s.SendDirect(ctx, m, to); err != nil {
							b.Error(err)
						}
					}
					send(owner, peer)
					for range unread {
						send(peer, owner)
					}
				})
			}
			wg.Wait()
			if b.Failed() {
				return
			}
			want := min(unread, store.UnreadCap)
			b.ReportAllocs()
			for b.Loop() {
				inbox, err := s.Inbox(ctx, owner.Login)
				if err != nil || len(inbox) != conversations || inbox[0].Unread != want {
					b.Fatalf("Inbox = %d entries, %v; want %d, each with %d unread", len(inbox), err, conversations, want)
				}
			}
		})
	}
}
