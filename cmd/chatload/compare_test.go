package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestCompare: each side's figure is the median of its runs, the ratio
// ours/theirs, and the aim judged on it; a figure one side lacks is left
// out.
func TestCompare(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, perCPU, p99 float64, idle *IdleResult) string {
		rep := &Report{Label: name}
		rep.Server.DeliveriesPerCPUSecond = perCPU
		// The sweep's top step carries twice as much per CPU-second; an
		// earlier step, more.
		rep.Ceiling = &Ceiling{Steps: []CeilingStep{{DeliveriesPerCPUSecond: 9 * perCPU}, {DeliveriesPerCPUSecond: 2 * perCPU}}}
		rep.Load.Deliveries = 1
		rep.Load.DeliveryLatency.P99Ms = p99
		rep.IdleSubs = idle
		raw, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name+".json")
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	ours := []string{
		write("a1", 90_000, 10, &IdleResult{BytesPerSub: 3 * 1024}),
		write("a2", 60_000, 30, &IdleResult{BytesPerSub: 3 * 1024}),
		write("a3", 75_000, 20, &IdleResult{BytesPerSub: 3 * 1024}),
	}
	theirs := []string{write("b1", 50_000, 20, nil), write("b2", 40_000, 30, nil)}
	c, err := compare(ours, theirs)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]comparedFigure{}
	for _, r := range c.Rows {
		rows[r.Name] = r
	}
	if r := rows["deliveries per server CPU-second"]; r.Ours != 75_000 || r.Theirs != 45_000 || r.Met != nil {
		t.Errorf("deliveries per CPU-second at the load's rate: %+v, want 75,000 against 45,000, with no aim (aim 1 is at saturation)", r)
	}
	if r := rows["the same at saturation (sweep top)"]; r.Ours != 150_000 || r.Theirs != 90_000 || r.Met == nil || !*r.Met {
		t.Errorf("deliveries per CPU-second at saturation: %+v, want the top steps' 150,000 against 90,000, met (1.67x >= 1.5x)", r)
	}
	if r := rows["delivery p99, ms"]; r.Ours != 20 || r.Theirs != 25 || r.Met == nil || *r.Met {
		t.Errorf("delivery p99: %+v, want 20 against 25, not met (0.8x > 0.7x)", r)
	}
	if _, ok := rows["KiB per idle subscription"]; ok {
		t.Errorf("KiB per idle subscription compared though the other side has none")
	}
	if _, err := compare([]string{filepath.Join(dir, "missing.json")}, theirs); err == nil {
		t.Error("compare of a missing report succeeded")
	}
}
