package main

import (
	"strings"
	"testing"
)

func TestCeilingStepJudge(t *testing.T) {
	for _, tc := range []struct {
		name string
		step CeilingStep
		why  string // "" when it kept up
	}{
		{"kept up", CeilingStep{OfferedPostsPerS: 1000, AcceptedPostsPerS: 990, DeliveriesPerS: 98000, ExpectedDeliveriesPerS: 99000, P99Ms: 40}, ""},
		{"posts behind", CeilingStep{OfferedPostsPerS: 1000, AcceptedPostsPerS: 900, DeliveriesPerS: 90000, ExpectedDeliveriesPerS: 90000, P99Ms: 40}, "posts fell behind"},
		{"deliveries behind", CeilingStep{OfferedPostsPerS: 1000, AcceptedPostsPerS: 1000, DeliveriesPerS: 90000, ExpectedDeliveriesPerS: 100000, P99Ms: 40}, "deliveries fell behind"},
		{"slow", CeilingStep{OfferedPostsPerS: 1000, AcceptedPostsPerS: 1000, DeliveriesPerS: 100000, ExpectedDeliveriesPerS: 100000, P99Ms: 101}, "p99"},
	} {
		st := tc.step
		st.judge()
		if st.KeptUp != (tc.why == "") || !strings.Contains(st.Why, tc.why) {
			t.Errorf("%s: kept up %v, why %q; want why %q", tc.name, st.KeptUp, st.Why, tc.why)
		}
	}
}
