package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"strings"
)

// chart draws the report as one SVG page: the aims with their verdicts,
// throughput and latency over time, server CPU and memory over time, our
// latency percentiles next to the bare Redis loops', and the baseline
// ratios. No dependencies: the SVG is written by hand.
func chart(rep *Report) []byte {
	c := &svg{}
	const W, H = 1240, 1330
	fmt.Fprintf(&c.b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n", W, H, W, H)
	c.rect(0, 0, W, H, "#ffffff", "")
	p := rep.Params
	c.text(30, 36, 22, "bold", "#222", "start", fmt.Sprintf("chatload — %s", rep.Label))
	c.text(30, 58, 12, "", "#555", "start", fmt.Sprintf("%d subscribers over %d rooms · %.0f posts/s offered by %d posters · %d history readers · %.0fs measured after %.0fs warmup · %d-byte messages",
		p.Subscribers, p.Rooms, p.Rate, p.Posters, p.Readers, rep.Load.WindowS, p.WarmupS, p.MsgSize))
	c.text(30, 76, 12, "", "#555", "start", fmt.Sprintf("%s · %d CPUs · %.0f GiB · %s · %s · %s",
		rep.Machine.CPUModel, rep.Machine.CPUs, float64(rep.Machine.MemTotal)/(1<<30), rep.Machine.GoVersion, rep.StartedAt.Format("2006-01-02 15:04 MST"), rep.Params.URL))

	// Row 1: aims.
	x := 30.0
	tileW := (float64(W) - 60 - 3*16) / 4
	for i := range 4 {
		if i < len(rep.Aims) {
			c.aimTile(x, 94, tileW, 96, rep.Aims[i])
		}
		x += tileW + 16
	}

	// Row 2: throughput and latency over time.
	ts := timelineX(rep.Timeline)
	phases := []phaseSpan{{"measure", rep.Load.WindowFromS, rep.Load.WindowToS}}
	get := func(f func(sample) float64) []float64 {
		out := make([]float64, len(rep.Timeline))
		for i, s := range rep.Timeline {
			out[i] = f(s)
		}
		return out
	}
	perRoom := float64(p.Subscribers) / float64(max(p.Rooms, 1))
	c.lineChart(30, 220, 575, 250, fmt.Sprintf("Throughput over time: %.0f deliveries/s, %.0f posts/s accepted", rep.Load.DeliveriesPerS, rep.Load.AcceptedPostsPerS), "per second", ts, phases, []series{
		{"deliveries/s", "#1f77b4", get(func(s sample) float64 { return s.DeliveriesPerS }), false},
		{fmt.Sprintf("accepted posts/s × %.0f subscribers per room", perRoom), "#ff7f0e", get(func(s sample) float64 { return s.PostsPerS * perRoom }), true},
	}, false)
	c.lineChart(635, 220, 575, 250, fmt.Sprintf("Delivery latency over time: p50 %.2f ms, p99 %.2f ms", rep.Load.DeliveryLatency.P50Ms, rep.Load.DeliveryLatency.P99Ms), "ms", ts, phases, []series{
		{"p50", "#2ca02c", get(func(s sample) float64 { return s.P50Ms }), false},
		{"p99", "#d62728", get(func(s sample) float64 { return s.P99Ms }), false},
		{"aim p99 25 ms", "#d62728", constant(len(ts), 25), true},
	}, false)

	// Row 3: server resources over time.
	c.lineChart(30, 520, 575, 220, "CPU over time", "cores", ts, phases, []series{
		{"server", "#9467bd", get(func(s sample) float64 { return s.ServerCores }), false},
		{"chatload (client)", "#8c564b", get(func(s sample) float64 { return s.ClientCores }), false},
		{"machine", "#7f7f7f", get(func(s sample) float64 { return s.MachineBusy / 100 * float64(rep.Machine.CPUs) }), true},
	}, false)
	c.lineChart(635, 520, 575, 220, "Server RSS and live subscriptions over time", "MiB / subscriptions÷10", ts, phases, []series{
		{"server RSS MiB", "#17becf", get(func(s sample) float64 { return float64(s.ServerRSS) / (1 << 20) }), false},
		{"live subscriptions ÷10", "#bcbd22", get(func(s sample) float64 { return float64(s.SubsLive) / 10 }), false},
	}, false)

	// Row 4: latency percentiles, ours against the bare loops; ratios.
	groups := []barGroup{{"ours: delivery", rep.Load.DeliveryLatency}}
	for _, b := range rep.Baselines.Delivery {
		groups = append(groups, barGroup{"bare " + b.Name, b.Latency})
	}
	groups = append(groups, barGroup{"postMessage under load", rep.Load.PostLatency}, barGroup{"messages page under load", rep.Load.HistoryLatency})
	c.latencyBars(30, 790, 575, 500, groups)
	c.ratioBars(635, 790, 575, 500, rep.Ratios)

	c.b.WriteString("</svg>\n")
	return c.b.Bytes()
}

type svg struct{ b bytes.Buffer }

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

func (c *svg) rect(x, y, w, h float64, fill, stroke string) {
	if stroke == "" {
		stroke = "none"
	}
	fmt.Fprintf(&c.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" stroke="%s"/>`+"\n", x, y, max(w, 0), max(h, 0), fill, stroke)
}

func (c *svg) text(x, y, size float64, weight, fill, anchor, s string) {
	if weight == "" {
		weight = "normal"
	}
	fmt.Fprintf(&c.b, `<text x="%.1f" y="%.1f" font-size="%.0f" font-weight="%s" fill="%s" text-anchor="%s">%s</text>`+"\n", x, y, size, weight, fill, anchor, esc(s))
}

func (c *svg) line(x1, y1, x2, y2 float64, stroke string, width float64, dash bool) {
	d := ""
	if dash {
		d = ` stroke-dasharray="6,4"`
	}
	fmt.Fprintf(&c.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%.1f"%s/>`+"\n", x1, y1, x2, y2, stroke, width, d)
}

func (c *svg) aimTile(x, y, w, h float64, a Aim) {
	fill, edge, verdict := "#fdecea", "#d62728", "FAIL"
	if a.Pass {
		fill, edge, verdict = "#e9f6ec", "#2ca02c", "PASS"
	}
	note := a.Note
	if !a.Applies {
		note = "other scenario than the aim's: indicative. " + note
	}
	c.rect(x, y, w, h, fill, edge)
	c.text(x+12, y+22, 13, "bold", "#222", "start", a.Name)
	c.text(x+w-10, y+22, 11, "bold", edge, "end", verdict)
	value := fmt.Sprintf("%.2f %s", a.Value, a.Unit)
	if a.Value >= 1000 {
		value = fmt.Sprintf("%s %s", thousands(a.Value), a.Unit)
	}
	c.text(x+12, y+54, 24, "bold", edge, "start", value)
	c.text(x+12, y+76, 11, "", "#444", "start", "aim: "+a.Target)
	c.text(x+12, y+90, 10, "", "#666", "start", truncate(note, int(w/5.2)))
}

func thousands(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

type series struct {
	name   string
	color  string
	ys     []float64
	dashed bool
}

func constant(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

type phaseSpan struct {
	name     string
	from, to float64
}

func timelineX(tl []sample) []float64 {
	xs := make([]float64, len(tl))
	for i, s := range tl {
		xs[i] = s.T
	}
	return xs
}

// niceMax rounds v up to 1, 2 or 5 times a power of ten.
func niceMax(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func fmtTick(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	case v >= 1 || v == 0:
		return fmt.Sprintf("%g", v)
	default:
		return fmt.Sprintf("%.2g", v)
	}
}

func (c *svg) lineChart(x, y, w, h float64, title, unit string, xs []float64, phases []phaseSpan, ss []series, _ bool) {
	c.text(x, y-10, 14, "bold", "#222", "start", title)
	const left, bottom, right, top = 50, 40, 10, 6
	px, py, pw, ph := x+left, y+top, w-left-right, h-top-bottom
	c.rect(px, py, pw, ph, "#fafafa", "#ccc")
	if len(xs) == 0 {
		c.text(px+pw/2, py+ph/2, 12, "", "#999", "middle", "no samples")
		return
	}
	xmax := xs[len(xs)-1]
	ymax := 0.0
	for _, s := range ss {
		for _, v := range s.ys {
			ymax = max(ymax, v)
		}
	}
	ymax = niceMax(ymax * 1.05)
	X := func(v float64) float64 { return px + pw*v/math.Max(xmax, 1) }
	Y := func(v float64) float64 { return py + ph - ph*math.Min(v, ymax)/ymax }
	// Shade the measured window.
	for _, sp := range phases {
		if sp.name == "measure" {
			c.rect(X(sp.from), py, X(sp.to)-X(sp.from), ph, "#e8f0fb", "")
			c.text(X(sp.from)+4, py+12, 10, "", "#6a8cc7", "start", "measured window")
		}
	}
	for i := 0; i <= 4; i++ {
		v := ymax * float64(i) / 4
		c.line(px, Y(v), px+pw, Y(v), "#e3e3e3", 1, false)
		c.text(px-6, Y(v)+4, 10, "", "#555", "end", fmtTick(v))
	}
	step := niceMax(xmax / 8)
	for t := 0.0; t <= xmax; t += step {
		c.text(X(t), py+ph+14, 10, "", "#555", "middle", fmt.Sprintf("%gs", t))
	}
	c.text(px+pw-4, py+12, 10, "", "#555", "end", unit)
	for _, s := range ss {
		var pts strings.Builder
		for i, v := range s.ys {
			fmt.Fprintf(&pts, "%.1f,%.1f ", X(xs[i]), Y(v))
		}
		dash := ""
		if s.dashed {
			dash = ` stroke-dasharray="6,4"`
		}
		fmt.Fprintf(&c.b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", s.color, dash, pts.String())
	}
	lx := px
	for _, s := range ss {
		c.line(lx, py+ph+28, lx+18, py+ph+28, s.color, 2, s.dashed)
		c.text(lx+22, py+ph+32, 11, "", "#333", "start", s.name)
		lx += 30 + float64(len(s.name))*6.2
	}
}

type barGroup struct {
	name string
	p    pct
}

// latencyBars draws p50, p99 and p99.9 of each group on a log scale.
func (c *svg) latencyBars(x, y, w, h float64, groups []barGroup) {
	c.text(x, y-10, 14, "bold", "#222", "start", "Latency percentiles (log scale)")
	const left, bottom, top = 150, 40, 6
	px, py, pw, ph := x+left, y+top, w-left-10, h-top-bottom
	c.rect(px, py, pw, ph, "#fafafa", "#ccc")
	lo, hi := 0.01, 1.0
	for _, g := range groups {
		hi = max(hi, g.p.P999Ms, g.p.P99Ms)
	}
	hi = math.Pow(10, math.Ceil(math.Log10(max(hi, 100)))) // room for the 25 ms aim
	X := func(v float64) float64 {
		v = math.Max(v, lo)
		return px + pw*(math.Log10(v)-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))
	}
	for d := lo; d <= hi*1.0001; d *= 10 {
		c.line(X(d), py, X(d), py+ph, "#e3e3e3", 1, false)
		c.text(X(d), py+ph+14, 10, "", "#555", "middle", fmtTick(d)+" ms")
	}
	c.line(X(25), py, X(25), py+ph, "#d62728", 1, true)
	c.text(X(25)+3, py+12, 10, "", "#d62728", "start", "25 ms")
	colors := []string{"#2ca02c", "#d62728", "#9467bd"}
	names := []string{"p50", "p99", "p99.9"}
	gh := ph / float64(max(len(groups), 1))
	bh := math.Min((gh-10)/3, 16)
	for i, g := range groups {
		gy := py + float64(i)*gh + 5
		c.text(px-8, gy+bh*1.5+4, 11, "", "#222", "end", g.name)
		if g.p.Count == 0 {
			c.text(px+6, gy+bh*1.5+4, 10, "", "#999", "start", "not measured")
			continue
		}
		for j, v := range []float64{g.p.P50Ms, g.p.P99Ms, g.p.P999Ms} {
			by := gy + float64(j)*bh
			c.rect(px, by, X(v)-px, bh-2, colors[j], "")
			c.text(X(v)+4, by+bh-4, 10, "", "#333", "start", fmt.Sprintf("%s %.2f ms", names[j], v))
		}
	}
}

// ratioBars draws every ratio on a log scale around 1 (as fast as bare),
// with the aim's 0.5 marked.
func (c *svg) ratioBars(x, y, w, h float64, ratios []Ratio) {
	c.text(x, y-10, 14, "bold", "#222", "start", "Ours vs bare baselines (1 = as fast as bare; log scale)")
	const left, bottom, top = 290, 40, 6
	px, py, pw, ph := x+left, y+top, w-left-10, h-top-bottom
	c.rect(px, py, pw, ph, "#fafafa", "#ccc")
	lo, hi := 0.001, 10.0
	for _, r := range ratios {
		if r.Value > 0 {
			lo = math.Min(lo, math.Pow(10, math.Floor(math.Log10(r.Value))))
		}
	}
	X := func(v float64) float64 {
		v = math.Min(math.Max(v, lo), hi)
		return px + pw*(math.Log10(v)-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))
	}
	for d := lo; d <= hi*1.0001; d *= 10 {
		c.line(X(d), py, X(d), py+ph, "#e3e3e3", 1, false)
		c.text(X(d), py+ph+14, 10, "", "#555", "middle", fmtTick(d))
	}
	c.line(X(1), py, X(1), py+ph, "#222", 1.5, false)
	c.line(X(0.5), py, X(0.5), py+ph, "#d62728", 1, true)
	c.text(X(0.5)-3, py+ph+28, 10, "", "#d62728", "end", "aim 0.5")
	if len(ratios) == 0 {
		c.text(px+pw/2, py+ph/2, 12, "", "#999", "middle", "no baselines measured")
		return
	}
	rh := math.Min(ph/float64(len(ratios)), 26)
	for i, r := range ratios {
		ry := py + float64(i)*rh + 3
		color := "#2ca02c"
		if r.Value < 0.5 {
			color = "#d62728"
		} else if r.Value < 1 {
			color = "#ff9f40"
		}
		x0, x1 := X(1), X(r.Value)
		if x1 < x0 {
			x0, x1 = x1, x0
		}
		c.rect(x0, ry, x1-x0, rh-6, color, "")
		c.text(px-6, ry+rh/2+1, 10, "", "#222", "end", truncate(r.Name, 52))
		c.text(px+pw-4, ry+rh/2+1, 10, "bold", "#333", "end", fmt.Sprintf("%.3g", r.Value))
	}
}
