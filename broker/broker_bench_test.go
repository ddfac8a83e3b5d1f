package broker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// benchEvent is a message event the size of a chat line.
// benchEvent is a post's event, as logged: Redis numbers it in its room's
// sequence.
func benchEvent() Event {
	author := store.UserRef{Login: "bench-author", Firstname: "Bench", Lastname: "Author"}
	return store.PostedEvent(store.Message{
		Room: "bench", ID: store.NewMessageID(), Author: author,
		Content: "The quick brown fox jumps over the lazy dog, and then over the lazy dog again.",
	})
}

// benchDrain reads subs until they end, counting what each received.
func benchDrain(subs []*Subscription) (counts []atomic.Int64, wait func()) {
	counts = make([]atomic.Int64, len(subs))
	var wg sync.WaitGroup
	for i, s := range subs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if _, ok := s.Next(context.Background()); !ok {
					return
				}
				counts[i].Add(1)
			}
		}()
	}
	return counts, wg.Wait
}

// benchCatchUp waits until every subscriber has received at least n
// events, so that a publisher never runs a buffer's length ahead of its
// readers (which would cut them off and measure nothing).
func benchCatchUp(counts []atomic.Int64, n int64) {
	for i := range counts {
		for counts[i].Load() < n {
			runtime.Gosched()
		}
	}
}

// BenchmarkLocalFanOut is the in-process delivery path: one Publish to a
// topic with N subscribers, each draining its subscription on its own
// goroutine. ns/op is per publish; ns/delivery divides it by N.
func BenchmarkLocalFanOut(b *testing.B) {
	for _, n := range []int{1, 10, 100, 1000} {
		b.Run(fmt.Sprintf("subscribers=%d", n), func(b *testing.B) {
			l := NewLocal(DefaultBufferSize)
			defer l.Close()
			benchFanOut(b, l, n, 64)
		})
	}
}

// benchFanOut publishes to a topic of n subscribers as fast as they keep
// up (catching up every catchUpEvery publishes, so that none is cut off),
// and reports ns per delivery.
func benchFanOut(b *testing.B, br Broker, n, catchUpEvery int) {
	ctx := context.Background()
	subs := make([]*Subscription, n)
	for i := range subs {
		s, err := br.Subscribe(ctx, "room:bench")
		if err != nil {
			b.Fatal(err)
		}
		subs[i] = s
	}
	counts, wait := benchDrain(subs)
	ev := benchEvent()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := br.Publish(ctx, "room:bench", ev); err != nil {
			b.Fatal(err)
		}
		if i%catchUpEvery == catchUpEvery-1 {
			benchCatchUp(counts, int64(i+1-DefaultBufferSize/2))
		}
	}
	benchCatchUp(counts, int64(b.N))
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/delivery")
	for _, s := range subs {
		if err := s.Err(); err != nil {
			b.Fatalf("a subscriber was cut off: %v", err)
		}
		s.Close()
	}
	wait()
}

// BenchmarkHubSubscribe opens and closes one subscription: its B/op is the
// memory every live subscription holds (its buffer), whatever its traffic.
func BenchmarkHubSubscribe(b *testing.B) {
	h := NewHub(DefaultBufferSize, nil)
	b.ReportAllocs()
	for b.Loop() {
		s, _, err := h.Add("room:bench")
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}

// BenchmarkEventJSON is the codec of the Redis broker: every event is
// encoded once by the publishing instance and decoded once by each
// receiving instance.
func BenchmarkEventJSON(b *testing.B) {
	ev := benchEvent()
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := encodeEvent(ev); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		raw, _ := encodeEvent(ev)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeEvent(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchRedis connects a Redis broker on a channel prefix of its own, or
// skips without CHAT_REDIS_URL.
func benchRedis(b *testing.B) *Redis {
	b.Helper()
	url := os.Getenv("CHAT_REDIS_URL")
	if url == "" {
		b.Skip("CHAT_REDIS_URL is not set: skipping the Redis broker benchmarks")
	}
	var tag [6]byte
	_, _ = rand.Read(tag[:])
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := NewRedis(ctx, url, WithChannelPrefix("chatbench:"+hex.EncodeToString(tag[:])+":"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	return r
}

// BenchmarkRedisRoundTrip is the cross-instance delivery path, one event at
// a time: Publish (encode, PUBLISH) until the local subscriber receives it
// from Redis (SUBSCRIBE, decode, hub). ns/op is the round trip.
func BenchmarkRedisRoundTrip(b *testing.B) {
	r := benchRedis(b)
	ctx := context.Background()
	sub, err := r.Subscribe(ctx, "room:bench")
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Close()
	ev := benchEvent()
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Publish(ctx, "room:bench", ev); err != nil {
			b.Fatal(err)
		}
		if _, ok := sub.Next(ctx); !ok {
			b.Fatalf("subscription ended: %v", sub.Err())
		}
	}
}

// BenchmarkRedisFanOut publishes to a topic with 100 local subscribers
// through Redis, keeping at most half a buffer in flight: ns/op is per
// publish at saturation, ns/delivery per subscriber event.
func BenchmarkRedisFanOut(b *testing.B) {
	benchFanOut(b, benchRedis(b), 100, 32)
}
