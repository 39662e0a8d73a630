package compare

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/fabricsim/fabricsim/cost"
	"github.com/fabricsim/fabricsim/report"
)

// WriteHTML writes report.html: the table, step time breakdown, collective completion CDFs,
// measured PFC-pause, credit-stall and congestion-mark timelines, cost breakdown and each
// variant's parameters, as one self-contained page.
func (r *Result) WriteHTML(w io.Writer) error {
	p := r.Plan
	page := &report.Page{
		Title: "fabricsim compare: " + r.Scenario.Name,
		Subtitle: fmt.Sprintf("%s (%.2fB parameters) on %d x %s, TP %d, PP %d, DP %d, ZeRO-%d; %s at %s, data path %s; %s backend, %d simulated step(s)",
			p.Model, float64(p.Params)/1e9, p.GPUs, p.GPU, p.TP, p.PP, p.DP, p.ZeRO, p.Topology, p.LinkRate, p.DataPath, r.Backend, r.Scenario.Steps),
	}
	if p.Trace != "" {
		page.Subtitle = fmt.Sprintf("%s; %s at %s, data path %s; %s backend, %d simulated step(s)",
			p.header(), p.Topology, p.LinkRate, p.DataPath, r.Backend, r.Scenario.Steps)
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
		if v.StepsFinished == 0 {
			t.Rows = append(t.Rows, []string{v.Variant.Name, "unfinished", "-", "-", "-", "-", "-", "-", "-",
				v.money(v.NetworkUSD), v.money(v.PerGPUUSD), "-", "-"})
			continue
		}
		t.Rows = append(t.Rows, []string{v.Variant.Name, seconds(v.StepTime), seconds(v.Compute), seconds(v.ExposedComm),
			seconds(v.CollP50) + " / " + seconds(v.CollP99), fmt.Sprintf("%.1f%%", v.Variation*100),
			count(v.Drops), count(v.Pauses), seconds(v.CreditStall),
			v.money(v.NetworkUSD), v.money(v.PerGPUUSD), v.trainDays(), v.trainMoney()})
	}
	verdicts := &report.Table{Head: []string{"variant", "label", "verdict"}}
	for _, v := range r.Variants {
		verdicts.Rows = append(verdicts.Rows, []string{v.Variant.Name, v.Variant.Label, v.Verdict})
	}
	cols := &report.Table{Caption: "Columns", Head: []string{"column", "meaning"}}
	for _, c := range Columns {
		cols.Rows = append(cols.Rows, []string{c[0], c[1]})
	}
	summary := report.Section{Title: "Summary", Tables: []*report.Table{t, verdicts, cols, r.messagesTable()}}
	if r.Interrupted {
		msg := "Interrupted: every figure is over the finished steps only. Unfinished:"
		sep := " "
		for _, v := range r.Variants {
			if v.Unfinished {
				msg += fmt.Sprintf("%s%s (%d of %d steps)", sep, v.Variant.Name, v.StepsFinished, r.Scenario.Steps)
				sep = ", "
			}
		}
		summary.Text = append(summary.Text, msg+".")
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
	if r.showJitter() {
		page.Sections = append(page.Sections, r.jitterSection()) // jitter.go
	}
	if len(r.Scenario.Jobs) > 0 {
		page.Sections = append(page.Sections, r.jobsSection()) // jobs.go
	}
	if len(r.Scenario.Faults) > 0 {
		page.Sections = append(page.Sections, r.faultsSection()) // faults.go
	}

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
		Text:   []string{"Completion time of every network collective of every simulated step, from when it could start (its dependencies done) to when its last rank finished (" + string(r.Fidelity.Mode) + " fidelity)."},
		Charts: []report.Chart{cdf}})

	// Timelines.
	pause := &report.Lines{Title: "PFC pause frames over the step", XLabel: "time in step", YLabel: "pause frames sent per bin", XFormat: axisSeconds, YFormat: axisCount, Step: true}
	stall := &report.Lines{Title: "Credit-stall time over the step", XLabel: "time in step", YLabel: "port credit-stall time per bin", XFormat: axisSeconds, YFormat: axisSeconds, Step: true}
	marks := &report.Lines{Title: "Congestion marks over the step", XLabel: "time in step", YLabel: "ECN (RoCE) / FECN (IB) marks per bin", XFormat: axisSeconds, YFormat: axisCount, Step: true}
	busy := &report.Lines{Title: "Network collectives in flight", XLabel: "time in step", YLabel: "collectives (mean per bin)", XFormat: axisSeconds, Step: true}
	for _, v := range r.Variants {
		tl := v.Timeline
		if tl == nil || v.StepsFinished == 0 {
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
		marks.Series = append(marks.Series, mk(tl.Marks))
		busy.Series = append(busy.Series, mk(tl.Network))
	}
	var tlText []string
	if r.Fidelity.Mode == FidelityFull {
		tlText = append(tlText, "The first simulated step, measured: each bin holds the PFC pause frames sent, the credit-stall time (summed over ports and VLs) and the congestion marks that the packet run counted in it; the step's schedule is the run's own time axis.")
	} else {
		tlText = append(tlText, "The first simulated step: each network collective carries its class run's events as measured per time bin, weighted by one collective of the class's groups and laid from where the collective starts in the step's schedule; a class-run bin that straddles two bins of the chart is split by its time in each, so counts may be fractional.")
	}
	tlText = append(tlText, "Where lines coincide they are drawn nested, the first variant widest, so that each stays visible; a legend entry marked \"= name\" is identical to that variant's line throughout.")
	if r.Backend == "analytic" {
		tlText = append(tlText, "The analytic backend models no queues, so it has no pauses, stalls or marks to show.")
	}
	for _, v := range r.Variants {
		if v.StepsFinished == 0 {
			continue
		}
		tlText = append(tlText, fmt.Sprintf("%s: %s drops, %s PFC pause frames, %s of port credit stalls, %s ECN/FECN marks per step.",
			v.Variant.Name, count(v.Drops), count(v.Pauses), seconds(v.CreditStall), count(v.ECNMarks)))
	}
	page.Sections = append(page.Sections, report.Section{Title: "Fabric events", Text: tlText, Charts: []report.Chart{pause, stall, marks, busy}})

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

	// Parameters: one row per scenario key, one column per variant, differing rows highlighted.
	params := report.Section{Title: "Variant parameters",
		Text: []string{"Each variant's effective fabric settings under their scenario keys (defaults included); highlighted rows differ between variants, a blank cell is a key the variant's fabric kind does not have."}}
	pt := &report.Table{Head: []string{"key"}}
	vars := make([]*Variant, len(r.Variants))
	for i, v := range r.Variants {
		vars[i] = v.Variant
		pt.Head = append(pt.Head, v.Variant.Name)
	}
	keys, cells, differ := ParamRows(vars)
	for i, k := range keys {
		pt.Rows = append(pt.Rows, append([]string{k}, cells[i]...))
	}
	pt.Highlight = differ
	params.Tables = append(params.Tables, pt)
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
	if p.Trace != "" {
		wt.Rows = [][]string{
			{"Chakra trace", p.Trace + ".<rank>.et"},
			{"GPUs", fmt.Sprintf("%d ranks, one per GPU, in %d servers", p.GPUs, p.Servers)},
			{"tokens per step", fmt.Sprint(p.TokensPerStep)},
			{"busiest GPU compute", seconds(p.ComputeSeconds)},
			{"plan", p.Ops},
		}
	}
	ct := &report.Table{Caption: "Network collective classes", Head: []string{"class", "groups", "ranks", "bytes", "collectives per step"},
		RightAlign: []bool{false, true, true, true, true}}
	for _, c := range r.Fidelity.Classes {
		ct.Rows = append(ct.Rows, []string{c.Key, fmt.Sprint(c.Groups), fmt.Sprint(c.RanksPerGroup), fmt.Sprint(c.Bytes), fmt.Sprint(c.InstancesTotal)})
	}
	page.Sections = append(page.Sections, report.Section{Title: "Workload and fidelity", Text: r.Fidelity.Notes, Tables: []*report.Table{wt, ct}})
	page.Sections = append(page.Sections, report.Section{Title: "Scenario", Pre: r.Scenario.Source})
	return page.Write(w)
}

// axisCount is a count for axis ticks: "800", "8k", "1.5M".
func axisCount(x float64) string {
	switch a := math.Abs(x); {
	case a >= 1e6:
		return report.Plain(x/1e6) + "M"
	case a >= 1e3:
		return report.Plain(x/1e3) + "k"
	}
	return report.Plain(x)
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
