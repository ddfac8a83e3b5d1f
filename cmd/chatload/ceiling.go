package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"
)

// Ceiling is the sweep after the measured window (-ceiling-steps): the
// posters offer a rising rate, a short window each, until the server falls
// behind (fewer posts accepted, or fewer deliveries, than offered) or its
// p99 delivery latency passes ceilingP99Ms.
type Ceiling struct {
	Steps []CeilingStep `json:"steps"`
	// Sustained is the last step the server kept up with; Within50ms the
	// last of the steps from the first on that all had p99 under 50 ms.
	// Nil if none.
	Sustained  *CeilingStep `json:"sustained,omitempty"`
	Within50ms *CeilingStep `json:"within_50ms,omitempty"`
}

// CeilingStep is one rate of the sweep.
type CeilingStep struct {
	OfferedPostsPerS       float64 `json:"offered_posts_per_s"`
	AcceptedPostsPerS      float64 `json:"accepted_posts_per_s"`
	DeliveriesPerS         float64 `json:"deliveries_per_s"`
	ExpectedDeliveriesPerS float64 `json:"expected_deliveries_per_s"`
	P50Ms                  float64 `json:"delivery_p50_ms"`
	P99Ms                  float64 `json:"delivery_p99_ms"`
	ServerCores            float64 `json:"server_cpu_cores,omitempty"`
	DeliveriesPerCPUSecond float64 `json:"deliveries_per_cpu_second,omitempty"`
	// WritesPerDelivery is the server's write syscalls (all of them) per
	// delivery in the step.
	WritesPerDelivery float64 `json:"writes_per_delivery,omitempty"`
	ClientCores       float64 `json:"client_cpu_cores"`
	KeptUp            bool    `json:"kept_up"`
	Why               string  `json:"why,omitempty"` // why it did not
}

// ceilingLanes is how many posts each poster has in flight at most during
// the sweep.
const ceilingLanes = 4

// ceilingP99Ms is the p99 delivery latency past which the sweep stops.
const ceilingP99Ms = 100

// keptUp is how much of the offered load must be carried for a step to
// count: a little slack for the window's edges.
const keptUp = 0.97

// ceiling runs the sweep with the subscribers of the load still open.
func (r *runner) ceiling(ctx context.Context) *Ceiling {
	cfg := r.cfg
	c := &Ceiling{}
	perPost := float64(cfg.subscribers) / float64(cfg.rooms)
	rate := cfg.ceilingFrom
	for range cfg.ceilingSteps {
		r.phase.Store(fmt.Sprintf("ceiling %.0f/s", rate))
		stepCtx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		// Each poster posts from ceilingLanes goroutines, so that a slow
		// answer holds up a lane, not the poster's share of the rate: the
		// sweep measures the server, not the posters' round trips.
		lanes := cfg.posters * ceilingLanes
		interval := paceInterval(lanes, rate)
		for i := range lanes {
			p := r.target.poster(i)
			wg.Add(1)
			go func() { defer wg.Done(); r.poster(stepCtx, i, lanes, p, interval) }()
		}
		ok := sleepCtx(ctx, time.Second) // the posters get going, queues settle
		s0 := r.m.snapshot(r)
		ok = ok && sleepCtx(ctx, cfg.ceilingStep)
		s1 := r.m.snapshot(r)
		stop()
		wg.Wait()
		if !ok {
			break
		}
		st := ceilingStepOf(rate, perPost, s0, s1, cfg.serverPID > 0, cfg.serverBroker == "redis" && r.redis != nil)
		logf("ceiling: %5.0f posts/s offered, %5.0f accepted, %7.0f deliveries/s of %7.0f, p99 %.2f ms, server %.2f cores: %s",
			rate, st.AcceptedPostsPerS, st.DeliveriesPerS, st.ExpectedDeliveriesPerS, st.P99Ms, st.ServerCores, map[bool]string{true: "kept up", false: st.Why}[st.KeptUp])
		if !c.add(st) {
			break
		}
		rate *= cfg.ceilingFactor
	}
	// Let the last posts arrive before the caller closes the subscribers.
	sleepCtx(ctx, time.Second)
	return c
}

// ceilingStepOf is the judged step of the window from s0 to s1 at rate
// posts/s offered, each post due to perPost subscribers; with the server's
// CPU when it is measured, and Redis's with it when it is the server's
// broker (as in the measured window).
func ceilingStepOf(rate, perPost float64, s0, s1 *metricsSnap, server, redis bool) CeilingStep {
	w := s1.at.Sub(s0.at).Seconds()
	d := s1.delivery.Since(s0.delivery)
	st := CeilingStep{
		OfferedPostsPerS:  rate,
		AcceptedPostsPerS: float64(s1.posts-s0.posts) / w,
		DeliveriesPerS:    float64(s1.deliveries-s0.deliveries) / w,
		P50Ms:             ms(d.Quantile(0.5)),
		P99Ms:             ms(d.Quantile(0.99)),
		ClientCores:       (s1.clientCPU - s0.clientCPU).Seconds() / w,
	}
	st.ExpectedDeliveriesPerS = st.AcceptedPostsPerS * perPost
	if server {
		cpu := (s1.serverCPU - s0.serverCPU).Seconds()
		if redis {
			cpu += (s1.redisCPU - s0.redisCPU).Seconds()
		}
		st.ServerCores = cpu / w
		if cpu > 0 {
			st.DeliveriesPerCPUSecond = float64(s1.deliveries-s0.deliveries) / cpu
		}
		if n := s1.deliveries - s0.deliveries; n > 0 {
			st.WritesPerDelivery = float64(s1.serverWrites-s0.serverWrites) / float64(n)
		}
	}
	st.judge()
	return st
}

// add appends a judged step and reports whether the sweep goes on: it
// stops at the first step the server did not keep up with.
func (c *Ceiling) add(st CeilingStep) bool {
	c.Steps = append(c.Steps, st)
	if !st.KeptUp {
		return false
	}
	c.Sustained = &c.Steps[len(c.Steps)-1]
	// The server kept up with every step so far: Within50ms is the last of
	// those from the first on that were all under 50 ms.
	c.Within50ms = nil
	for i := range c.Steps {
		if c.Steps[i].P99Ms >= 50 {
			break
		}
		c.Within50ms = &c.Steps[i]
	}
	return true
}

// judge decides whether the server kept up with the step's load.
func (st *CeilingStep) judge() {
	switch {
	case st.AcceptedPostsPerS < keptUp*st.OfferedPostsPerS:
		st.Why = fmt.Sprintf("posts fell behind: %.0f/s accepted", st.AcceptedPostsPerS)
	case st.DeliveriesPerS < keptUp*st.ExpectedDeliveriesPerS:
		st.Why = fmt.Sprintf("deliveries fell behind: %.0f/s of %.0f/s", st.DeliveriesPerS, st.ExpectedDeliveriesPerS)
	case st.P99Ms > ceilingP99Ms:
		st.Why = fmt.Sprintf("p99 %.1f ms > %d ms", st.P99Ms, ceilingP99Ms)
	default:
		st.KeptUp = true
	}
}

func (c *Ceiling) print(w io.Writer) {
	fmt.Fprintln(w, "ceiling sweep (posts/s offered -> accepted, deliveries/s, p99):")
	for _, s := range c.Steps {
		verdict := "kept up"
		if !s.KeptUp {
			verdict = s.Why
		}
		fmt.Fprintf(w, "  %6.0f -> %6.0f  %8.0f/s  p99 %7.2f ms  %6.0f deliveries per CPU-second  %.3f writes per delivery  %s\n",
			s.OfferedPostsPerS, s.AcceptedPostsPerS, s.DeliveriesPerS, s.P99Ms, s.DeliveriesPerCPUSecond, s.WritesPerDelivery, verdict)
	}
}
