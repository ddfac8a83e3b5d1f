package stream

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/killrchat/chatql/broker"
	"github.com/killrchat/chatql/internal/testenv"
	"github.com/killrchat/chatql/store"
)

// A live event numbered beyond the next in the room's sequence means the
// ones between were lost on their way (here: numbered, never published):
// the stream reads them from the sequence and the log first, so the
// subscriber gets every event once, in the sequence's order, each with
// its place. A sequence that starts again from 1 goes on.
func TestRoomFillsASkippedNumberFromTheSequence(t *testing.T) {
	url := os.Getenv("CHAT_REDIS_URL")
	if url == "" {
		testenv.Missing(t, "CHAT_REDIS_URL is not set", "the stream's tests on Redis")
	}
	prefix := "streamtest:" + store.NewMessageID().String() + ":"
	br, err := broker.NewRedis(t.Context(), url, broker.WithChannelPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixtureOn(t, br)
	alice, bob := f.user("alice"), f.user("bob")
	f.room("tea", alice, bob)
	s, err := f.src.OpenRoom(f.ctx, "tea", bob, store.Cursor{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	f.publish(f.post("tea", alice, "m1"))
	lost := f.post("tea", alice, "m2")
	flush(t, f)
	// Numbered in the room's sequence as the broker's script does (its
	// keys beside the room's channel), and never published.
	hash, ids := prefix+"seq:room:tea", prefix+"seqids:room:tea"
	n, err := rdb.Incr(f.ctx, hash).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.ZAdd(f.ctx, ids, redis.Z{Score: float64(n), Member: lost.ID.String()}).Err(); err != nil {
		t.Fatal(err)
	}
	f.publish(f.post("tea", alice, "m3"))
	flush(t, f)

	got := pumpPosts(t, s, 3)
	want(t, got, "m1 1", "m2 2", "m3 3")

	// The sequence expires (or Redis loses it) with no word to anyone: the
	// next event is number 1 again, and it is new to the stream.
	if err := rdb.Del(f.ctx, hash, ids).Err(); err != nil {
		t.Fatal(err)
	}
	f.publish(f.post("tea", alice, "m4"))
	want(t, pumpPosts(t, s, 1), "m4 1")
}

// pumpPosts waits for n posts of s, as "content place".
func pumpPosts(t *testing.T, s *Room, n int) (got []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for len(got) < n && ctx.Err() == nil {
		s.sub.Wait(ctx)
		if _, err := s.Pump(ctx, func(ev *store.Event) bool {
			got = append(got, fmt.Sprintf("%s %d", ev.Message.Content, ev.Seq))
			return true
		}); err != nil {
			t.Fatal(err)
		}
	}
	return got
}

func flush(t *testing.T, f *fixture) {
	t.Helper()
	if err := f.br.Flush(f.ctx); err != nil {
		t.Fatal(err)
	}
}
