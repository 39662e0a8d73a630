package tune

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/fabricsim/fabricsim/compare"
	"github.com/fabricsim/fabricsim/fabric"
)

// HoldTolerance is how far the winner's objective on unseen seeds may stray from its value on
// the search's seeds for its gain to count as holding: 5 %.
const HoldTolerance = 0.05

// unseenSeed is a seed the search never used: compare step k runs with seed + 7919 k, so
// seed + 7919 x steps starts a run of step seeds disjoint from the search's; a run scenario
// uses its seed alone, so seed + 1 is unseen.
func (p *Problem) unseenSeed() uint64 {
	if p.Kind == KindCompare {
		return p.Seed + 7919*uint64(max(p.Steps, 1))
	}
	return p.Seed + 1
}

// pickBest fills Best with the best valid evaluation of the search so far (nil when none).
func (s *searcher) pickBest() {
	b := s.best()
	if b < 0 {
		return
	}
	win := s.res.Evaluations[b]
	wc := s.apply("winner", 0, settingsOf(win.Fabric))
	best := &Best{Evaluation: b + 1, Objective: *win.Objective, Fabric: map[string]string{}, EffectiveFabric: effective(wc.cfg)}
	space := s.p.Space
	if len(s.p.Arms) > 0 {
		// The winner's arm: its space, and every choice written out.
		if k := s.p.armOf(wc.cfg); k >= 0 {
			space = s.p.Arms[k].Space
			for _, kv := range s.p.Arms[k].Choice {
				best.Fabric[kv[0]] = kv[1]
			}
		}
	}
	for _, q := range space {
		best.Fabric[q.Key] = q.Text(q.Get(wc.cfg))
	}
	for k, v := range win.Fabric {
		best.Fabric[k] = v
	}
	s.res.Best = best
}

// checks re-evaluates the winner beside the references on unseen seeds and on the second mix
// (one batch), and fills Best and Checks.
func (s *searcher) checks(ctx context.Context) error {
	r, p := s.res, s.p
	if r.Best == nil {
		return nil
	}
	win := r.Evaluations[r.Best.Evaluation-1]
	winSettings := settingsOf(win.Fabric)

	type cond struct {
		name, what string
		seed       uint64
		mixed      bool
	}
	u := p.unseenSeed()
	conds := []cond{
		{"search seeds", s.seedText(p.Seed), p.Seed, false},
		{"unseen seeds", "seeds not used in the search: " + s.seedText(u), u, false},
	}
	if p.Holdout != nil {
		conds = append(conds, cond{"second mix", p.HoldoutText + " (" + s.seedText(p.Seed) + ")", p.Seed, true})
	}
	// The search's own condition is already evaluated; the others run as one batch.
	rows := map[string]map[string]Evaluation{"search seeds": {"configured": r.Evaluations[0], "winner": win}}
	if len(r.Evaluations) > 1 && r.Evaluations[1].Role == "production" {
		rows["search seeds"]["production"] = r.Evaluations[1]
	}
	for _, e := range r.References {
		if e.Check == "search seeds" {
			rows["search seeds"][e.Role] = e
		}
	}
	var batch []candidate
	for _, c := range conds[1:] {
		if p.IBVariant != "" {
			batch = append(batch, s.ibCandidate(c.name, c.seed, c.mixed))
		}
		for _, x := range []struct {
			role     string
			settings [][2]string
		}{{"configured", nil}, {"production", p.Production}, {"winner", winSettings}} {
			if x.role == "production" && rows["search seeds"]["production"].ID == "" {
				continue
			}
			k := s.apply(x.role, 0, x.settings)
			k.check, k.seed, k.mixed = c.name, c.seed, c.mixed
			batch = append(batch, k)
		}
	}
	es, err := s.evaluate(ctx, batch)
	if err != nil {
		return err
	}
	for _, e := range es {
		if rows[e.Check] == nil {
			rows[e.Check] = map[string]Evaluation{}
		}
		rows[e.Check][e.Role] = e
		r.References = append(r.References, e)
	}
	for _, c := range conds {
		r.Checks = append(r.Checks, s.check(c.name, c.what, rows[c.name], rows["search seeds"]["winner"]))
	}
	return nil
}

func settingsOf(m map[string]string) [][2]string {
	var out [][2]string
	for _, k := range sortedKeys(m) {
		out = append(out, [2]string{k, m[k]})
	}
	return out
}

// seedText says which seeds a condition runs.
func (s *searcher) seedText(seed uint64) string {
	if s.p.Kind == KindCompare && s.p.Steps > 1 {
		return fmt.Sprintf("seed %d (steps on %d + 7919 k, k < %d)", seed, seed, s.p.Steps)
	}
	return fmt.Sprintf("seed %d", seed)
}

// labels of the roles in a check.
func (s *searcher) label(role string) string {
	switch role {
	case "infiniband":
		return "InfiniBand (" + s.p.IBVariant + ")"
	case "configured":
		if s.p.Kind == KindRun {
			return "the scenario's fabric as written"
		}
		if s.p.Variant == "roce-default" {
			return "vendor default (roce-default)"
		}
		return s.p.Variant + " as configured"
	case "production":
		if s.p.Variant == "roce-default" {
			return "production values (roce-tuned)"
		}
		return "production values (roce-tuned's DCQCN settings over it)"
	}
	return "tune's winner"
}

// check builds one condition's rows and verdict.
func (s *searcher) check(name, what string, rows map[string]Evaluation, searchWinner Evaluation) Check {
	c := Check{Name: name, What: what}
	for _, role := range []string{"infiniband", "configured", "production", "winner"} {
		e, ok := rows[role]
		if !ok {
			continue
		}
		c.Rows = append(c.Rows, CheckRow{Role: role, Label: s.label(role), ID: e.ID, Objective: e.Objective, Feasible: e.Feasible, Violations: e.Violations})
	}
	obj := func(role string) (float64, bool) {
		e, ok := rows[role]
		if !ok || e.Objective == nil || !e.Feasible {
			return 0, false
		}
		return *e.Objective, true
	}
	conf, okC := obj("configured")
	win, okW := obj("winner")
	ib, okI := obj("infiniband")
	prod, okP := obj("production")
	if okC && okW && conf > 0 {
		c.Gain = ptr((conf - win) / conf)
	}
	if okC && okW && okI && conf > ib {
		c.GapClosed = ptr((conf - win) / (conf - ib))
		if okP {
			c.ProductionGapClosed = ptr((conf - prod) / (conf - ib))
		}
	}
	unit := s.p.Objective.Unit()
	if rows["winner"].ID == rows["configured"].ID && rows["winner"].ID != "" {
		c.Holds = okW
		c.Verdict = "the winner is the configured fabric itself: the search found nothing better"
		return c
	}
	switch {
	case !okW:
		c.Verdict = "the winner did not run cleanly here: " + fmt.Sprint(rows["winner"].Violations)
	case !okC:
		c.Verdict = "the configured fabric did not run cleanly here, so no gain can be measured"
	case name == "search seeds":
		c.Holds = true
		c.Verdict = fmt.Sprintf("the search's own seeds: %s against %s configured (%s)", formatObjective(win, unit), formatObjective(conf, unit), pct(*c.Gain, "better", "worse"))
	case name == "unseen seeds":
		ref := *searchWinner.Objective
		drift := win/ref - 1
		c.Holds = math.Abs(drift) <= HoldTolerance && win <= conf
		c.Verdict = fmt.Sprintf("the winner gives %s on unseen seeds, %+.1f %% from its %s on the search's seeds (tolerance %.0f %%), %s than configured", formatObjective(win, unit), drift*100, formatObjective(ref, unit), HoldTolerance*100, pct(*c.Gain, "better", "worse"))
		if !c.Holds {
			c.Verdict += ": the gain does not hold"
		} else {
			c.Verdict += ": the gain holds"
		}
	default:
		c.Holds = win <= conf
		c.Verdict = fmt.Sprintf("on the %s the winner gives %s against %s configured (%s)", name, formatObjective(win, unit), formatObjective(conf, unit), pct(*c.Gain, "better", "worse"))
		if c.Holds {
			c.Verdict += ": the gain holds"
		} else {
			c.Verdict += ": the gain does not hold"
		}
	}
	return c
}

// pct writes a relative change as "12.3 % better".
func pct(x float64, better, worse string) string {
	if x >= 0 {
		return fmt.Sprintf("%.1f %% %s", x*100, better)
	}
	return fmt.Sprintf("%.1f %% %s", -x*100, worse)
}

// formatObjective prints an objective value in its unit: seconds and nanoseconds as times
// ("5.12ms"), plain numbers to 4 digits.
func formatObjective(x float64, unit string) string {
	switch unit {
	case "s":
		return seconds(x)
	case "ns":
		return seconds(x * 1e-9)
	}
	return fmt.Sprintf("%.4g", x)
}

// seconds writes a duration in seconds with the largest unit that keeps it at or above 1, to 4
// significant digits ("5.228ms", "482.1us").
func seconds(x float64) string { return compare.FormatSeconds(x) }

// sensitivity ranks each setting's effect by the rank correlation between its position in the
// range and the objective over the valid evaluations of the search.
func (s *searcher) sensitivity() {
	var pts []Evaluation
	for _, e := range s.res.Evaluations {
		if e.Feasible && e.unit != nil {
			pts = append(pts, e)
		}
	}
	var win fabric.Config
	if s.res.Best != nil {
		win = s.apply("winner", 0, settingsOf(s.res.Best.Fabric)).cfg
	}
	for i := range s.p.Space {
		q := &s.p.Space[i]
		var xs, ys []float64
		for _, e := range pts {
			if !math.IsNaN(e.unit[i]) { // NaN: not a setting of the evaluation's arm
				xs, ys = append(xs, e.unit[i]), append(ys, *e.Objective)
			}
		}
		sen := Sensitivity{Key: q.Key, Points: len(xs), Spearman: spearman(xs, ys), Start: q.Text(q.Get(s.p.Base))}
		if s.res.Best != nil {
			sen.Best = q.Text(q.Get(win))
		}
		s.res.Sensitivity = append(s.res.Sensitivity, sen)
	}
}

// spearman is Spearman's rank correlation of xs and ys (ties get their mean rank); 0 when
// fewer than 3 points or either is constant.
func spearman(xs, ys []float64) float64 {
	if len(xs) < 3 {
		return 0
	}
	rx, ry := ranks(xs), ranks(ys)
	var mx, my float64
	for i := range rx {
		mx += rx[i]
		my += ry[i]
	}
	n := float64(len(rx))
	mx, my = mx/n, my/n
	var sxy, sxx, syy float64
	for i := range rx {
		dx, dy := rx[i]-mx, ry[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return 0
	}
	return sxy / math.Sqrt(sxx*syy)
}

func ranks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return v[idx[a]] < v[idx[b]] })
	r := make([]float64, len(v))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && v[idx[j+1]] == v[idx[i]] {
			j++
		}
		for k := i; k <= j; k++ {
			r[idx[k]] = float64(i+j)/2 + 1
		}
		i = j + 1
	}
	return r
}
