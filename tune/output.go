package tune

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/fabricsim/fabricsim/report"
)

// WriteFiles writes DIR/tune.json and DIR/report.html, each atomically (a temporary file
// renamed over the final name), so that a reader never sees half of one.
func (r *Result) WriteFiles(dir string) error {
	r.outDir = dir
	for _, f := range []struct {
		name  string
		write func(io.Writer) error
	}{{"tune.json", r.WriteJSON}, {"report.html", r.WriteHTML}} {
		if err := writeAtomic(filepath.Join(dir, f.name), f.write); err != nil {
			return fmt.Errorf("%s: %w", filepath.Join(dir, f.name), err)
		}
	}
	return nil
}

func writeAtomic(path string, fill func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := fill(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func (r *Result) obj(x *float64) string {
	if x == nil {
		return "-"
	}
	return formatObjective(*x, r.Unit)
}

func share(x *float64) string {
	if x == nil {
		return "-"
	}
	return fmt.Sprintf("%.0f %%", *x*100)
}

// subject says what was tuned.
func (r *Result) subject() string {
	if r.Kind == KindCompare {
		return fmt.Sprintf("variant %s of compare scenario %s", r.Variant, r.Scenario)
	}
	return "the fabric of run scenario " + r.Scenario
}

// WriteSummary writes the terminal summary: what was searched, the checks as a table, the
// winner's settings and the violations seen.
func (r *Result) WriteSummary(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "tune %s: %s; objective %s (%s), %s backend, budget %d\n", r.Name, r.subject(), r.Objective, r.Metric, r.Backend, r.Budget)
	feasible := 0
	for _, e := range r.Evaluations {
		if e.Feasible {
			feasible++
		}
	}
	fmt.Fprintf(&b, "  space    %d settings: %s\n", len(r.Space), spaceText(r.Space))
	method := r.Method
	if method == "" {
		method = "start points only"
	}
	fmt.Fprintf(&b, "  search   %d evaluations, %d valid; %s\n", len(r.Evaluations), feasible, method)
	if len(r.Arms) > 0 {
		fmt.Fprintf(&b, "  arms     %d combinations of the categorical choices:\n", len(r.Arms))
		rows := [][]string{}
		for _, a := range r.Arms {
			rows = append(rows, a.row(r)[:5])
		}
		var t strings.Builder
		writeColumns(&t, rows)
		for _, line := range strings.Split(strings.TrimRight(t.String(), "\n"), "\n") {
			b.WriteString("         " + line + "\n")
		}
	}
	if r.Interrupted {
		fmt.Fprintf(&b, "  interrupted: the figures below are over the evaluations that finished\n")
	}
	if r.Best == nil {
		if r.Interrupted {
			fmt.Fprintf(&b, "\nno valid candidate finished before the interrupt\n")
		} else {
			fmt.Fprintf(&b, "\nno candidate met the constraints; violations: %s\n", violationText(r.Violations))
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
	if len(r.Checks) > 0 {
		b.WriteString("\n")
		head := []string{""}
		for _, c := range r.Checks {
			head = append(head, c.Name)
		}
		rows := [][]string{head}
		for _, role := range []string{"infiniband", "configured", "production", "winner"} {
			var row []string
			for i, c := range r.Checks {
				for _, cr := range c.Rows {
					if cr.Role != role {
						continue
					}
					if row == nil {
						label := cr.Label
						if role == "winner" {
							label = fmt.Sprintf("tune's winner (evaluation %d)", r.Best.Evaluation)
						}
						row = make([]string, len(r.Checks)+1)
						row[0] = label
					}
					row[i+1] = r.obj(cr.Objective)
					if !cr.Feasible {
						row[i+1] += " (violates)"
					}
				}
			}
			if row != nil {
				rows = append(rows, row)
			}
		}
		gap := []string{"gap to InfiniBand closed"}
		holds := []string{"gain holds"}
		anyGap := false
		for _, c := range r.Checks {
			g := share(c.GapClosed)
			if c.ProductionGapClosed != nil {
				g += " (production " + share(c.ProductionGapClosed) + ")"
			}
			anyGap = anyGap || c.GapClosed != nil
			gap = append(gap, g)
			h := "no"
			if c.Holds {
				h = "yes"
			}
			holds = append(holds, h)
		}
		if anyGap {
			rows = append(rows, gap)
		}
		rows = append(rows, holds)
		writeColumns(&b, rows)
		b.WriteString("\n")
		for _, c := range r.Checks {
			fmt.Fprintf(&b, "  %s: %s\n", c.Name, c.Verdict)
		}
	}
	fmt.Fprintf(&b, "\nwinner (evaluation %d):", r.Best.Evaluation)
	for _, k := range sortedKeys(r.Best.Fabric) {
		fmt.Fprintf(&b, " %s %s,", k, r.Best.Fabric[k])
	}
	s := strings.TrimSuffix(b.String(), ",") + "\n"
	b.Reset()
	b.WriteString(s)
	if len(r.Violations) > 0 {
		fmt.Fprintf(&b, "violations seen (evaluations, by kind): %s\n", violationText(r.Violations))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// row is an arm as a table row: name, best objective, evaluations, outcome, rounds,
// dimensions.
func (a ArmResult) row(r *Result) []string {
	best := "-"
	if a.Best != nil {
		best = fmt.Sprintf("best %s (evaluation %d)", formatObjective(*a.Best, r.Unit), a.BestEvaluation)
	}
	out := a.Outcome
	if a.Invalid != "" {
		out = "not run: " + a.Invalid
	}
	return []string{a.Name, best, fmt.Sprintf("%d evaluations", a.Evaluations), out, fmt.Sprintf("%d round(s)", a.Rounds), fmt.Sprint(a.Dimensions)}
}

func violationText(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func spaceText(sp []SpaceEntry) string {
	var parts []string
	for _, s := range sp {
		parts = append(parts, fmt.Sprintf("%s %s..%s", s.Key, s.Min, s.Max))
	}
	return strings.Join(parts, ", ")
}

// writeColumns writes rows as right-aligned columns (the first left-aligned).
func writeColumns(b *strings.Builder, rows [][]string) {
	width := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			if i < len(width) {
				width[i] = max(width[i], len(c))
			}
		}
	}
	for _, r := range rows {
		b.WriteString("  ")
		for i, c := range r {
			if i == 0 {
				fmt.Fprintf(b, "%-*s", width[0], c)
			} else {
				fmt.Fprintf(b, "  %*s", width[i], c)
			}
		}
		b.WriteString("\n")
	}
}

// axis formats the objective for chart axes.
func (r *Result) axis(x float64) string {
	if r.Unit == "" {
		return report.Plain(x)
	}
	return formatObjective(x, r.Unit)
}

// WriteHTML writes report.html: the checks (winner against the vendor default, the production
// values and InfiniBand, on the search's seeds, unseen seeds and the second mix), convergence
// over the evaluations, each setting's effect, the winner's settings, the space and the
// constraint violations seen.
func (r *Result) WriteHTML(w io.Writer) error {
	page := &report.Page{
		Title:    "fabricsim tune: " + r.Name,
		Subtitle: fmt.Sprintf("%s; objective %s (%s), %s backend, budget %d evaluations, search seed %d", r.subject(), r.Objective, r.Metric, r.Backend, r.Budget, r.Seed),
	}
	// Summary.
	sum := report.Section{Title: "Result"}
	if r.Interrupted {
		sum.Text = append(sum.Text, "Interrupted: every figure is over the evaluations that finished; run the same command with --resume to continue.")
	}
	if r.Best == nil {
		sum.Text = append(sum.Text, "No candidate met the constraints: nothing is recommended. Violations: "+violationText(r.Violations)+".")
	} else {
		sum.Text = append(sum.Text, fmt.Sprintf("The winner is evaluation %d of %d: %s on the search's seeds.", r.Best.Evaluation, len(r.Evaluations), formatObjective(r.Best.Objective, r.Unit)))
		for _, c := range r.Checks {
			sum.Text = append(sum.Text, c.Name+": "+c.Verdict+".")
		}
		t := &report.Table{Caption: "Objective (" + string(r.Objective) + ") by condition", Head: []string{"fabric"}, RightAlign: []bool{false}}
		for _, c := range r.Checks {
			t.Head = append(t.Head, c.Name)
			t.RightAlign = append(t.RightAlign, true)
		}
		roles := []string{"infiniband", "configured", "production", "winner"}
		for _, role := range roles {
			row := make([]string, len(r.Checks)+1)
			any := false
			for i, c := range r.Checks {
				row[i+1] = "-"
				for _, cr := range c.Rows {
					if cr.Role == role {
						row[0], any = cr.Label, true
						row[i+1] = r.obj(cr.Objective)
						if !cr.Feasible {
							row[i+1] += " (violates: " + strings.Join(cr.Violations, "; ") + ")"
						}
					}
				}
			}
			if any {
				t.Rows = append(t.Rows, row)
				t.Highlight = append(t.Highlight, role == "winner")
			}
		}
		gap, gain, holds := []string{"gap to InfiniBand closed: winner (production values)"}, []string{"gain over configured"}, []string{"gain holds"}
		for _, c := range r.Checks {
			g := share(c.GapClosed)
			if c.ProductionGapClosed != nil {
				g += " (" + share(c.ProductionGapClosed) + ")"
			}
			gap = append(gap, g)
			gain = append(gain, share(c.Gain))
			h := "no"
			if c.Holds {
				h = "yes"
			}
			holds = append(holds, h)
		}
		if r.Kind == KindCompare {
			t.Rows = append(t.Rows, gap)
		}
		t.Rows = append(t.Rows, gain, holds)
		sum.Tables = append(sum.Tables, t)
		what := &report.Table{Caption: "Conditions", Head: []string{"condition", "what ran"}}
		for _, c := range r.Checks {
			what.Rows = append(what.Rows, []string{c.Name, c.What})
		}
		sum.Tables = append(sum.Tables, what)
	}
	page.Sections = append(page.Sections, sum)

	// Convergence.
	conv := &report.Lines{Title: "Convergence", XLabel: "evaluation", YLabel: string(r.Objective), YFormat: r.axis, Step: true}
	var all, bestLine, bad report.Series
	all = report.Series{Name: "valid candidate", Points: true}
	bestLine = report.Series{Name: "best so far"}
	best := math.Inf(1)
	var worst float64
	for _, e := range r.Evaluations {
		if e.Feasible {
			worst = math.Max(worst, *e.Objective)
		}
	}
	bad = report.Series{Name: "violating (drawn at the top)", Points: true}
	for _, e := range r.Evaluations {
		x := float64(e.N)
		if e.Feasible {
			all.X, all.Y = append(all.X, x), append(all.Y, *e.Objective)
			best = math.Min(best, *e.Objective)
		} else {
			bad.X, bad.Y = append(bad.X, x), append(bad.Y, worst)
		}
		if !math.IsInf(best, 1) {
			bestLine.X, bestLine.Y = append(bestLine.X, x), append(bestLine.Y, best)
		}
	}
	conv.Series = []report.Series{bestLine, all}
	if len(bad.X) > 0 {
		conv.Series = append(conv.Series, bad)
	}
	for _, ref := range r.Checks {
		if ref.Name != "search seeds" {
			continue
		}
		for _, cr := range ref.Rows {
			if (cr.Role == "infiniband" || cr.Role == "production") && cr.Objective != nil && len(r.Evaluations) > 0 {
				conv.Series = append(conv.Series, report.Series{Name: cr.Label, X: []float64{1, float64(len(r.Evaluations))}, Y: []float64{*cr.Objective, *cr.Objective}, Dash: true})
			}
		}
	}
	page.Sections = append(page.Sections, report.Section{Title: "Convergence",
		Text:   []string{"Every evaluation of the search in the order the optimizer proposed it (generation 0: the configured fabric and the production values), the best valid objective so far, and the references on the same seeds. " + r.Method + "."},
		Charts: []report.Chart{conv}})

	// Categorical choices.
	if len(r.Arms) > 0 {
		t := &report.Table{Caption: "Arms: the combinations of the categorical choices", Head: []string{"arm", "best", "evaluations", "outcome", "rounds", "settings searched"}, RightAlign: []bool{false, true, true, false, true, true}}
		for _, a := range r.Arms {
			row := a.row(r)
			row[2] = fmt.Sprint(a.Evaluations)
			row[4] = fmt.Sprint(a.Rounds)
			t.Rows = append(t.Rows, row)
			t.Highlight = append(t.Highlight, a.Outcome == "winner")
		}
		page.Sections = append(page.Sections, report.Section{Title: "Categorical choices",
			Text:   []string{"Each combination of the choices (tune.choices) is an arm with its own continuous space and its own CMA-ES; successive halving gives every arm still in the race one generation per round and keeps the better half (by each arm's best valid objective), until one arm is left, which gets the rest of the budget."},
			Tables: []*report.Table{t}})
	}

	// Sensitivity.
	if len(r.Sensitivity) > 0 {
		sens := append([]Sensitivity(nil), r.Sensitivity...)
		sort.SliceStable(sens, func(i, j int) bool { return math.Abs(sens[i].Spearman) > math.Abs(sens[j].Spearman) })
		t := &report.Table{Caption: "Each setting's effect over the valid evaluations", Head: []string{"setting", "Spearman rank correlation with the objective", "winner", "configured"}, RightAlign: []bool{false, true, true, true}}
		for _, s := range sens {
			t.Rows = append(t.Rows, []string{"fabric." + s.Key, fmt.Sprintf("%+.2f", s.Spearman), s.Best, s.Start})
			t.Highlight = append(t.Highlight, math.Abs(s.Spearman) >= 0.5)
		}
		var charts []report.Chart
		for i, s := range sens {
			if i >= 6 {
				break
			}
			ch := &report.Lines{Title: "fabric." + s.Key, XLabel: "position in its range (0 = min, 1 = max; " + r.scaleOf(s.Key) + ")", YLabel: string(r.Objective), YFormat: r.axis}
			ser := report.Series{Name: "valid evaluations", Points: true}
			k := r.spaceIndex(s.Key)
			for _, e := range r.Evaluations {
				if e.Feasible && e.unit != nil && k >= 0 && !math.IsNaN(e.unit[k]) {
					ser.X, ser.Y = append(ser.X, e.unit[k]), append(ser.Y, *e.Objective)
				}
			}
			ch.Series = []report.Series{ser}
			charts = append(charts, ch)
		}
		page.Sections = append(page.Sections, report.Section{Title: "Each setting's effect",
			Text:   []string{"From the evaluated points: the rank correlation between a setting's position in its range and the objective (lower objective is better, so a negative value means larger settings did better). Rows at |0.5| or more are highlighted; the charts show the six strongest. The search varies all settings at once, so a correlation is a hint of an effect, not a measurement of it in isolation."},
			Charts: charts, Tables: []*report.Table{t}})
	}

	// Winner's settings and the space.
	if r.Best != nil {
		t := &report.Table{Caption: "The winner's settings (what compare's from_tune and config export read)", Head: []string{"key", "winner", "configured", "range searched"}}
		for _, k := range sortedKeys(r.Best.Fabric) {
			start, rng := "", ""
			for _, s := range r.Space {
				if s.Key == k {
					start, rng = s.Start, s.Min+" .. "+s.Max+" ("+string(s.Scale)+", "+s.Source+")"
				}
			}
			t.Rows = append(t.Rows, []string{"fabric." + k, r.Best.Fabric[k], start, rng})
			t.Highlight = append(t.Highlight, start != r.Best.Fabric[k])
		}
		page.Sections = append(page.Sections, report.Section{Title: "Settings", Tables: []*report.Table{t},
			Pre: r.fromTuneExample()})
	}

	// Violations.
	vt := &report.Table{Caption: "Evaluations that broke a constraint", Head: []string{"evaluation", "role", "violations"}}
	for _, e := range append(append([]Evaluation(nil), r.Evaluations...), r.References...) {
		if len(e.Violations) == 0 {
			continue
		}
		n := fmt.Sprint(e.N)
		if e.N == 0 {
			n = e.Check
		}
		vt.Rows = append(vt.Rows, []string{n, e.Role, strings.Join(e.Violations, "; ")})
	}
	vsec := report.Section{Title: "Constraint violations", Text: []string{"Every candidate must keep the lossless class lossless: no drop with PFC on, no PFC deadlock or standstill, no PFC watchdog flush, headroom at least what the longest cable needs (mlx5 and IEEE 802.1Qbb formulas), and a valid configuration. A violating candidate is never chosen. Seen (evaluations by kind): " + violationText(r.Violations) + "."}}
	if len(vt.Rows) > 0 {
		vsec.Tables = []*report.Table{vt}
	}
	page.Sections = append(page.Sections, vsec)
	return page.Write(w)
}

// fromTuneExample is the variants list of a compare scenario that runs the winner.
func (r *Result) fromTuneExample() string {
	path := filepath.Join(r.outOr("DIR"), "tune.json")
	if r.Kind == KindRun {
		return fmt.Sprintf("# a compare scenario runs the winner as a variant over a base:\nvariants:\n  - roce-default\n  - {name: roce-autotuned, base: roce-default, from_tune: %s}\n", path)
	}
	return fmt.Sprintf("# a compare scenario runs the winner as a variant:\nvariants:\n  - %s\n  - {name: roce-autotuned, from_tune: %s}\n", r.Variant, path)
}

func (r *Result) outOr(def string) string {
	if r.outDir != "" {
		return r.outDir
	}
	return def
}

func (r *Result) spaceIndex(key string) int {
	for i, s := range r.Space {
		if s.Key == key {
			return i
		}
	}
	return -1
}

func (r *Result) scaleOf(key string) string {
	if i := r.spaceIndex(key); i >= 0 {
		return string(r.Space[i].Scale) + " scale, " + r.Space[i].Min + " .. " + r.Space[i].Max
	}
	return ""
}
