package stream

import (
	"fmt"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// BenchmarkRoomStreamRemember is the per-delivery bookkeeping of a
// subscription's duplicate filter, in steady state at a room's message
// rate: ids arrive rate per second (simulated time), and the filter keeps
// the last rememberedIDs. Every delivery to every subscriber pays ns/op,
// which must not grow with the rate.
func BenchmarkRoomStreamRemember(b *testing.B) {
	for _, rate := range []int{1, 10, 50, 200} {
		b.Run(fmt.Sprintf("msgs_per_s=%d", rate), func(b *testing.B) {
			s := &seen{}
			step := time.Second / time.Duration(rate)
			t := time.Now().Add(-time.Hour)
			// Fill the window first, so the benchmark measures the steady
			// state rather than the ramp.
			for range rememberedIDs + 1 {
				t = t.Add(step)
				s.remember(store.MessageIDAt(t), rememberedIDs)
			}
			ids := make([]store.MessageID, 4096)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if i%len(ids) == 0 {
					b.StopTimer()
					for j := range ids {
						t = t.Add(step)
						ids[j] = store.MessageIDAt(t)
					}
					b.StartTimer()
				}
				if id := ids[i%len(ids)]; !s.delivered(id) {
					s.remember(id, rememberedIDs)
				}
			}
			b.ReportMetric(float64(len(s.ids.recent)), "ids_kept")
		})
	}
}
