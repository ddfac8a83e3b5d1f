package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// A comparison puts chatql's runs beside another server's (Centrifugo,
// -target centrifugo) of the same profile on the same machine: each figure
// is the median over the runs of each side, with the ratio and issue 34's
// aim for it.
type comparison struct {
	Ours, Theirs           []string // the report.json files
	OursLabel, TheirsLabel string   // the first report's label of each side
	Rows                   []comparedFigure
}

type comparedFigure struct {
	Name   string  `json:"name"`
	Ours   float64 `json:"ours"`
	Theirs float64 `json:"theirs"`
	Ratio  float64 `json:"ratio"`
	// Aim says what the ratio (or, for absolute aims, our figure) must be;
	// Met whether it is.
	Aim string `json:"aim,omitempty"`
	Met *bool  `json:"met,omitempty"`
}

// figureOf is one figure of a report, and whether the run has it.
type figureOf struct {
	name  string
	value func(*Report) (float64, bool)
	// aim checks the ratio ours/theirs, or abs our figure, when set.
	aim      string
	ratioAim func(ratio float64) bool
	absAim   func(ours float64) bool
}

var comparedFigures = []figureOf{
	{name: "deliveries per server CPU-second", value: func(r *Report) (float64, bool) {
		return r.Server.DeliveriesPerCPUSecond, r.Server.DeliveriesPerCPUSecond > 0
	}},
	// Aim 1 is at saturation: the top step of the ceiling sweep, where
	// both servers use every core they get.
	{name: "the same at saturation (sweep top)", aim: ">= 1.5x", ratioAim: func(r float64) bool { return r >= 1.5 },
		value: func(r *Report) (float64, bool) {
			if r.Ceiling == nil || len(r.Ceiling.Steps) == 0 {
				return 0, false
			}
			top := r.Ceiling.Steps[len(r.Ceiling.Steps)-1]
			return top.DeliveriesPerCPUSecond, top.DeliveriesPerCPUSecond > 0
		}},
	{name: "delivery p50, ms", aim: "<= 0.7x", ratioAim: func(r float64) bool { return r <= 0.7 },
		value: func(r *Report) (float64, bool) { return r.Load.DeliveryLatency.P50Ms, r.Load.Deliveries > 0 }},
	{name: "delivery p99, ms", aim: "<= 0.7x", ratioAim: func(r float64) bool { return r <= 0.7 },
		value: func(r *Report) (float64, bool) { return r.Load.DeliveryLatency.P99Ms, r.Load.Deliveries > 0 }},
	{name: "post p50, ms", aim: "<= 1x", ratioAim: func(r float64) bool { return r <= 1 },
		value: func(r *Report) (float64, bool) { return r.Load.PostLatency.P50Ms, r.Load.Posts > 0 }},
	{name: "writes per delivery", value: func(r *Report) (float64, bool) {
		return r.Server.WritesPerDelivery, r.Server.WritesPerDelivery > 0
	}},
	{name: "delivered fraction", value: func(r *Report) (float64, bool) {
		return r.Load.DeliveredFraction, r.Load.ExpectedDeliveriesPerS > 0
	}},
	{name: "KiB per idle subscription", aim: "<= 4 KiB", absAim: func(v float64) bool { return v <= 4 },
		value: func(r *Report) (float64, bool) {
			if r.IdleSubs == nil {
				return 0, false
			}
			return r.IdleSubs.BytesPerSub / 1024, true
		}},
	{name: "ceiling, posts/s (p99 <= 100 ms)", value: func(r *Report) (float64, bool) {
		if r.Ceiling == nil || r.Ceiling.Sustained == nil {
			return 0, false
		}
		return r.Ceiling.Sustained.AcceptedPostsPerS, true
	}},
}

// compare reads the reports and computes the comparison.
func compare(ours, theirs []string) (*comparison, error) {
	load := func(paths []string) ([]*Report, error) {
		var reps []*Report
		for _, p := range paths {
			raw, err := os.ReadFile(p)
			if err != nil {
				return nil, err
			}
			rep := &Report{}
			if err := json.Unmarshal(raw, rep); err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			reps = append(reps, rep)
		}
		if len(reps) == 0 {
			return nil, errors.New("no report")
		}
		return reps, nil
	}
	a, err := load(ours)
	if err != nil {
		return nil, fmt.Errorf("ours: %w", err)
	}
	b, err := load(theirs)
	if err != nil {
		return nil, fmt.Errorf("theirs: %w", err)
	}
	c := &comparison{Ours: ours, Theirs: theirs, OursLabel: a[0].Label, TheirsLabel: b[0].Label}
	for _, f := range comparedFigures {
		x, okx := median(a, f.value)
		y, oky := median(b, f.value)
		if !okx || !oky {
			continue
		}
		row := comparedFigure{Name: f.name, Ours: x, Theirs: y, Aim: f.aim}
		if y != 0 {
			row.Ratio = x / y
		}
		switch {
		case f.ratioAim != nil && y != 0:
			met := f.ratioAim(row.Ratio)
			row.Met = &met
		case f.absAim != nil:
			met := f.absAim(x)
			row.Met = &met
		}
		c.Rows = append(c.Rows, row)
	}
	return c, nil
}

// median is the median of a figure over the reports that have it.
func median(reps []*Report, value func(*Report) (float64, bool)) (float64, bool) {
	var vs []float64
	for _, r := range reps {
		if v, ok := value(r); ok {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return 0, false
	}
	slices.Sort(vs)
	if len(vs)%2 == 1 {
		return vs[len(vs)/2], true
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2, true
}

func (c *comparison) print(w io.Writer) {
	label := func(l string) string {
		if len(l) > 20 {
			return l[:20]
		}
		return l
	}
	fmt.Fprintf(w, "%-34s %20s %20s %7s  %s\n", "figure (median of runs)", label(c.OursLabel), label(c.TheirsLabel), "ratio", "aim")
	for _, r := range c.Rows {
		aim := r.Aim
		if r.Met != nil {
			aim += map[bool]string{true: ": met", false: ": NOT MET"}[*r.Met]
		}
		fmt.Fprintf(w, "%-34s %20.2f %20.2f %7.2f  %s\n", r.Name, r.Ours, r.Theirs, r.Ratio, aim)
	}
}

// compareMain is `chatload compare ours.json,... theirs.json,...`.
func compareMain(args []string) error {
	if len(args) != 2 {
		return errors.New("usage: chatload compare OURS_REPORT.json[,...] THEIRS_REPORT.json[,...]")
	}
	c, err := compare(strings.Split(args[0], ","), strings.Split(args[1], ","))
	if err != nil {
		return err
	}
	c.print(os.Stdout)
	return nil
}
