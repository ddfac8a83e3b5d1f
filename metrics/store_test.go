package metrics

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/killrchat/chatql/store"
)

// nopStore answers PostMessage at once, so that what is measured is the
// decorator.
type nopStore struct {
	store.Store
	err error
}

func (s nopStore) PostMessage(context.Context, store.Message, ...store.Notice) error { return s.err }

func TestStoreTimesCallsByMethodAndCountsErrorsByKind(t *testing.T) {
	m := New()
	st := m.Store(nopStore{})
	ctx := context.Background()
	for range 3 {
		if err := st.PostMessage(ctx, store.Message{}); err != nil {
			t.Fatal(err)
		}
	}
	failing := m.Store(nopStore{err: fmt.Errorf("room %q: %w", "x", store.ErrNotFound)})
	_ = failing.PostMessage(ctx, store.Message{})
	_ = m.Store(nopStore{err: context.DeadlineExceeded}).PostMessage(ctx, store.Message{})
	_ = m.Store(nopStore{err: fmt.Errorf("boom")}).PostMessage(ctx, store.Message{})

	methods := reflect.TypeFor[store.Store]().NumMethod() - 1 // all but Close
	if got := len(family(t, m, "chatql_store_call_duration_seconds").Metric); got != methods {
		t.Errorf("%d method series, want one per method but Close (%d)", got, methods)
	}
	if got := histogramCount(t, m, "PostMessage"); got != 6 {
		t.Errorf("PostMessage observed %d times, want 6", got)
	}
	for kind, want := range map[string]float64{"not_found": 1, "deadline_exceeded": 1, "internal": 1, "conflict": 0} {
		var d dto.Metric
		if err := m.store.errors.WithLabelValues("PostMessage", kind).Write(&d); err != nil {
			t.Fatal(err)
		}
		if got := d.Counter.GetValue(); got != want {
			t.Errorf("errors{PostMessage,%s} = %v, want %v", kind, got, want)
		}
	}
	// Wrapping a timed store again times it once.
	if again := m.Store(st).(*timedStore); again.Unwrap() != (nopStore{}) {
		t.Errorf("a store wrapped twice wraps %T", again.Unwrap())
	}
}

func family(t *testing.T, m *Metrics, name string) *dto.MetricFamily {
	t.Helper()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return f
		}
	}
	t.Fatalf("no %s", name)
	return nil
}

func histogramCount(t *testing.T, m *Metrics, method string) uint64 {
	t.Helper()
	for _, s := range family(t, m, "chatql_store_call_duration_seconds").Metric {
		if s.Label[0].GetValue() == method {
			return s.Histogram.GetSampleCount()
		}
	}
	return 0
}

// A timed call that succeeds allocates nothing: posts, history pages and
// subscriptions' replays pay a clock read and a histogram observation.
func TestStoreCallAllocatesNothing(t *testing.T) {
	st := New().Store(nopStore{})
	ctx := context.Background()
	if n := testing.AllocsPerRun(1000, func() { _ = st.PostMessage(ctx, store.Message{}) }); n != 0 {
		t.Fatalf("a timed store call allocates %v times, want 0", n)
	}
}

func BenchmarkStoreCall(b *testing.B) {
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		st   store.Store
	}{{"bare", nopStore{}}, {"timed", New().Store(nopStore{})}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = bc.st.PostMessage(ctx, store.Message{})
			}
		})
	}
}
