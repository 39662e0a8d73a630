package compare

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/fabricsim/fabricsim/cost"
	"github.com/fabricsim/fabricsim/report"
)

// WriteHTML writes report.html: the table, step time breakdown, collective completion CDFs,
// PFC-pause and credit-stall timelines, cost breakdown and each variant's parameters, as one
// self-contained page.
func (r *Result) WriteHTML(w io.Writer) error {
	p := r.Plan
	page := &report.Page{
		Title: "fabricsim compare: " + r.Scenario.Name,
		Subtitle: fmt.Sprintf("%s (%.2fB parameters) on %d x %s, TP %d, PP %d, DP %d, ZeRO-%d; %s at %s, data path %s; %s backend, %d simulated step(s)",
			p.Model, float64(p.Params)/1e9, p.GPUs, p.GPU, p.TP, p.PP, p.DP, p.ZeRO, p.Topology, p.LinkRate, p.DataPath, r.Backend, r.Scenario.Steps),
	}
	names := make([]string, len(r.Variants))
	for i, v := range r.Variants {
		names[i] = v.Variant.Name
	}

	// Summary table.
	t := &report.Table{RightAlign: []bool{false, true, true, true, true, true, true, true, true, true, true, true, true, true, true}}
	for _, c := range Columns {
		t.Head = append(t.Head, c[0])
	}
	for _, v := range r.Variants {
		t.Rows = append(t.Rows, []string{v.Variant.Name, seconds(v.StepTime), seconds(v.Compute), seconds(v.ExposedComm),
			seconds(v.CollP50) + " / " + seconds(v.CollP99), fmt.Sprintf("%.1f%%", v.Variation*100),
			count(v.Drops), count(v.Pauses), seconds(v.CreditStall),
			v.money(v.NetworkUSD), v.money(v.PerGPUUSD), fmt.Sprintf("%.1f d", v.TrainDays), v.money(v.NetworkTrainUSD)})
	}
	verdicts := &report.Table{Head: []string{"variant", "label", "verdict"}}
	for _, v := range r.Variants {
		verdicts.Rows = append(verdicts.Rows, []string{v.Variant.Name, v.Variant.Label, v.Verdict})
	}
	cols := &report.Table{Caption: "Columns", Head: []string{"column", "meaning"}}
	for _, c := range Columns {
		cols.Rows = append(cols.Rows, []string{c[0], c[1]})
	}
	summary := report.Section{Title: "Summary", Tables: []*report.Table{t, verdicts, cols}}
	for _, v := range r.Variants {
		if v.Variant.Fallback != "" {
			summary.Text = append(summary.Text, v.Variant.Name+": "+v.Variant.Fallback)
		}
	}
	page.Sections = append(page.Sections, summary)

	// Step time breakdown.
	keySet := map[string]bool{}
	for _, v := range r.Variants {
		for k := range v.Exposed {
			keySet[k] = true
		}
	}
	var keys []string
	for k := range keySet {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	bars := &report.StackedBars{Title: "Step time breakdown (critical path)", Categories: names,
		Series: []string{"compute"}, Format: axisSeconds, AxisLabel: "time per step"}
	row := make([]float64, len(r.Variants))
	for i, v := range r.Variants {
		row[i] = v.Compute
	}
	bars.Values = append(bars.Values, row)
	for _, k := range keys {
		bars.Series = append(bars.Series, "exposed "+k)
		row := make([]float64, len(r.Variants))
		for i, v := range r.Variants {
			row[i] = v.Exposed[k]
		}
		bars.Values = append(bars.Values, row)
	}
	page.Sections = append(page.Sections, report.Section{Title: "Step time",
		Text:   []string{"Each bar is the longest path through the step's dependency graph, split into compute and the communication on that path that no compute hides (exposed), by parallel dimension and by where it runs (NVLink inside a server, the network between servers)."},
		Charts: []report.Chart{bars}})

	// Collective completion CDFs.
	cdf := &report.Lines{Title: "Network collective completion time (CDF)", XLabel: "completion time", YLabel: "fraction of collectives",
		XFormat: axisSeconds, YFormat: report.Plain, Step: true, YMin: 0, YMax: 1}
	for _, v := range r.Variants {
		s := report.Series{Name: v.Variant.Name}
		for i, x := range v.CollCDF {
			s.X = append(s.X, x)
			s.Y = append(s.Y, float64(i+1)/float64(len(v.CollCDF)))
		}
		cdf.Series = append(cdf.Series, s)
	}
	page.Sections = append(page.Sections, report.Section{Title: "Collective completion",
		Text:   []string{"Completion time of every network collective of every simulated step, from when it could start (its dependencies done) to when its last rank finished (" + r.Fidelity.Mode + " fidelity)."},
		Charts: []report.Chart{cdf}})

	// Timelines.
	pause := &report.Lines{Title: "PFC pause frames over the step", XLabel: "time in step", YLabel: "pause frames per bin", XFormat: axisSeconds, Step: true}
	stall := &report.Lines{Title: "Credit-stall time over the step", XLabel: "time in step", YLabel: "port credit-stall time per bin", XFormat: axisSeconds, YFormat: axisSeconds, Step: true}
	busy := &report.Lines{Title: "Network collectives in flight", XLabel: "time in step", YLabel: "collectives (mean per bin)", XFormat: axisSeconds, Step: true}
	for _, v := range r.Variants {
		tl := v.Timeline
		if tl == nil {
			continue
		}
		mk := func(ys []float64) report.Series {
			s := report.Series{Name: v.Variant.Name}
			for i, y := range ys {
				s.X = append(s.X, float64(i)*tl.BinSeconds)
				s.Y = append(s.Y, y)
			}
			return s
		}
		pause.Series = append(pause.Series, mk(tl.Pauses))
		stall.Series = append(stall.Series, mk(tl.Stalls))
		busy.Series = append(busy.Series, mk(tl.Network))
	}
	var tlText []string
	if r.Fidelity.Mode == FidelityFull {
		tlText = append(tlText, "Step 1's schedule: the run's pause and stall counts are shared among the network collectives by duration x ranks and spread over the interval each ran.")
	} else {
		tlText = append(tlText, "Step 1's schedule: each network collective's share of its class's pause and stall counts is spread over the interval it ran.")
	}
	for _, v := range r.Variants {
		tlText = append(tlText, fmt.Sprintf("%s: %s drops, %s PFC pause frames, %s of port credit stalls, %s ECN marks per step.",
			v.Variant.Name, count(v.Drops), count(v.Pauses), seconds(v.CreditStall), count(v.ECNMarks)))
	}
	page.Sections = append(page.Sections, report.Section{Title: "Fabric events", Text: tlText, Charts: []report.Chart{pause, stall, busy}})

	// Cost.
	costBars := &report.StackedBars{Title: "Network cost", Categories: names,
		Series: []string{"switches", "NICs", "optics", "cables"}, Format: money, AxisLabel: "US dollars"}
	costBars.Values = make([][]float64, 4)
	for _, v := range r.Variants {
		var tt cost.Totals
		if v.Bill != nil {
			tt = v.Bill.Totals
		}
		costBars.Values[0] = append(costBars.Values[0], tt.SwitchesUSD)
		costBars.Values[1] = append(costBars.Values[1], tt.NICsUSD)
		costBars.Values[2] = append(costBars.Values[2], tt.OpticsUSD)
		costBars.Values[3] = append(costBars.Values[3], tt.CablesUSD)
	}
	trainBars := &report.StackedBars{Title: "Cost to train (amortized capital)", Categories: names,
		Series: []string{"network", "servers"}, Format: money, AxisLabel: "US dollars"}
	trainBars.Values = make([][]float64, 2)
	for _, v := range r.Variants {
		trainBars.Values[0] = append(trainBars.Values[0], v.NetworkTrainUSD)
		trainBars.Values[1] = append(trainBars.Values[1], v.ClusterTrainUSD-v.NetworkTrainUSD)
	}
	costSec := report.Section{Title: "Cost", Charts: []report.Chart{costBars, trainBars},
		Text: []string{fmt.Sprintf("Capital cost is amortized over %g years; tokens to train: %s (%.3g).", r.Scenario.Cost.AmortizationYears, r.Scenario.Tokens, r.Scenario.TokensCount)}}
	seen := map[string]bool{}
	for _, v := range r.Variants {
		b := v.Bill
		if b == nil {
			costSec.Text = append(costSec.Text, v.Variant.Name+": no cost: "+v.CostError)
			continue
		}
		if seen[b.Fabric] {
			continue
		}
		seen[b.Fabric] = true
		bt := &report.Table{Caption: "Bill of materials, " + b.Fabric, Head: []string{"category", "item", "qty", "unit", "subtotal", "source"},
			RightAlign: []bool{false, false, true, true, true, false}}
		for _, l := range b.Lines {
			bt.Rows = append(bt.Rows, []string{l.Category, l.Description, fmt.Sprint(l.Qty), money(l.UnitUSD), money(l.SubtotalUSD), l.Source})
		}
		costSec.Tables = append(costSec.Tables, bt)
	}
	page.Sections = append(page.Sections, costSec)
	page.Sections = append(page.Sections, r.bomSection())

	// Parameters.
	params := report.Section{Title: "Variant parameters"}
	for _, v := range r.Variants {
		pt := &report.Table{Caption: v.Variant.Name + ": " + v.Variant.Label, Head: []string{"parameter", "value"}}
		for _, kv := range v.Variant.Params {
			pt.Rows = append(pt.Rows, []string{kv[0], kv[1]})
		}
		params.Tables = append(params.Tables, pt)
	}
	page.Sections = append(page.Sections, params)

	// Workload and fidelity.
	wt := &report.Table{Head: []string{"", ""}, Rows: [][]string{
		{"model", fmt.Sprintf("%s, %d parameters", p.Model, p.Params)},
		{"GPUs", fmt.Sprintf("%d x %s in %d servers", p.GPUs, p.GPU, p.Servers)},
		{"parallelism", fmt.Sprintf("TP %d, PP %d, DP %d, EP %d, ZeRO-%d, %d micro-batches per replica", p.TP, p.PP, p.DP, p.EP, p.ZeRO, p.MicroBatches)},
		{"tokens per step", fmt.Sprint(p.TokensPerStep)},
		{"busiest GPU compute", seconds(p.ComputeSeconds)},
		{"memory per GPU", fmt.Sprintf("%.1f GB", p.MemoryGB)},
		{"plan", p.Ops},
	}}
	ct := &report.Table{Caption: "Network collective classes", Head: []string{"class", "groups", "ranks", "bytes", "collectives per step"},
		RightAlign: []bool{false, true, true, true, true}}
	for _, c := range r.Fidelity.Classes {
		ct.Rows = append(ct.Rows, []string{c.Key, fmt.Sprint(c.Groups), fmt.Sprint(c.RanksPerGroup), fmt.Sprint(c.Bytes), fmt.Sprint(c.InstancesTotal)})
	}
	page.Sections = append(page.Sections, report.Section{Title: "Workload and fidelity", Text: r.Fidelity.Notes, Tables: []*report.Table{wt, ct}})
	page.Sections = append(page.Sections, report.Section{Title: "Scenario", Pre: r.Scenario.Source})
	return page.Write(w)
}

// axisSeconds is seconds without trailing zeros, for axis ticks: "2ms", "2.5ms".
func axisSeconds(x float64) string {
	t := seconds(x)
	i := strings.IndexFunc(t, func(r rune) bool { return r != '.' && (r < '0' || r > '9') })
	if i < 0 || !strings.Contains(t[:i], ".") {
		return t
	}
	num := strings.TrimRight(strings.TrimRight(t[:i], "0"), ".")
	return num + t[i:]
}
