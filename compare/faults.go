package compare

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/report"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/scenario"
	"github.com/fabricsim/fabricsim/training"
	"github.com/fabricsim/fabricsim/units"
	"github.com/fabricsim/fabricsim/yamlstrict"
)

// Fault is one entry of a compare's faults: list: a run scenario's fault (docs/faults.md),
// named on the compare's cluster network, applied to every variant; Step is the step (1-based)
// it hits, 0 or absent: every step. Its at is a time within the step (each step is simulated
// from 0).
type Fault struct {
	scenario.FaultSpec `yaml:",inline"`
	Step               int `yaml:"step" json:"step,omitempty"`
}

// MarshalJSON writes the fault as the file writes it: its keys, times and rates in units
// ("1ms", "25Gbps"), unset keys left out.
func (f Fault) MarshalJSON() ([]byte, error) {
	m := yamlKeys(reflect.ValueOf(f))
	if f.Host < 0 {
		delete(m, "host") // no host: the fault is not a NIC's
	}
	return json.Marshal(m)
}

// FaultTimers are the control planes' timers of a compare's fault_recovery: section.
type FaultTimers struct {
	fabric.FaultRecovery `yaml:",inline"`
}

// MarshalJSON writes the timers by their keys, in units.
func (r FaultTimers) MarshalJSON() ([]byte, error) { return json.Marshal(yamlKeys(reflect.ValueOf(r))) }

// yamlKeys is struct v's non-zero fields by their YAML keys, units types as their strings.
func yamlKeys(v reflect.Value) map[string]any {
	out := map[string]any{}
	for _, f := range yamlstrict.Fields(v.Type()) {
		x := v.FieldByIndex(f.Index)
		if x.IsZero() {
			continue
		}
		if s, ok := x.Interface().(fmt.Stringer); ok {
			out[f.Key] = s.String()
		} else {
			out[f.Key] = x.Interface()
		}
	}
	return out
}

// FaultLoss is the time a variant lost to one fault: its steps simulated with their faults
// minus the same steps (same seed, same compute noise) simulated clean.
type FaultLoss struct {
	// Fault names the entry: "faults[0] link_down leaf0_0-spine0 at 1ms".
	Fault string `json:"fault"`
	// Steps are the steps (1-based) it hit; With the other faults (indices) in those steps,
	// whose losses are measured together with its own.
	Steps []int `json:"steps"`
	With  []int `json:"with,omitempty"`
	// Clean and Faulted are the mean step times of its steps without and with the faults; Lost
	// is their difference, in seconds.
	Clean   float64 `json:"clean_step_s"`
	Faulted float64 `json:"faulted_step_s"`
	Lost    float64 `json:"lost_s"`
	// Recovery is the detection + reroute time the variant's control plane takes for a link or
	// switch failure at the fault's time (fabric.FaultRecovery.RerouteDelay): the stall the
	// loss is compared with; 0 for faults that do not reroute.
	Recovery float64 `json:"recovery_s,omitempty"`
	// Watchdog is, for a pfc_storm, the variant's PFC watchdog detection time (0: off), which
	// bounds how long the storm pauses its victims.
	Watchdog float64 `json:"watchdog_s,omitempty"`
	// NotApplied says why the fault did not hit the variant (a pfc_storm on a fabric without
	// PFC); the times are then absent.
	NotApplied string `json:"not_applied,omitempty"`
	// Failed says how a step it hit failed: a QP went without an ACK past its retry limit
	// (fault_recovery.ib_timeout, ib_retry_cnt; fabric.QPRetryError), so the collective and the
	// job fail. FailedSteps (1-based) are left out of the times above, and shown clean in the
	// step figures.
	Failed      string `json:"failed,omitempty"`
	FailedSteps []int  `json:"failed_steps,omitempty"`
}

// faultsCheck gives the faults a run scenario's defaults and checks, resolves them on the
// cluster's network (so that a link that is not there is an error at its line now) and checks
// their steps and the backend and fidelity they need.
func (s *Scenario) faultsCheck() error {
	if len(s.Faults) == 0 {
		return nil
	}
	specs := make([]scenario.FaultSpec, len(s.Faults))
	for i := range s.Faults {
		specs[i] = s.Faults[i].FaultSpec
	}
	fs, err := scenario.FaultsFrom(s.d, s.Seed, specs, s.FaultRecovery.FaultRecovery)
	if err != nil {
		return err
	}
	for i := range s.Faults {
		s.Faults[i].FaultSpec = fs.Faults[i]
	}
	s.FaultRecovery.FaultRecovery = fs.FaultRecovery
	s.faultScen = fs
	if err := s.faultSteps(); err != nil {
		return err
	}
	switch {
	case s.Backend == backend.Analytic:
		return s.d.At("backend", "%s: the scenario has faults, which the analytic backend does not model (valid: packet, flow, auto)", s.Backend)
	}
	g, err := s.Topology()
	if err != nil {
		return err
	}
	_, err = fs.ResolveFaults(g)
	return err
}

// faultSteps checks every fault's step against the steps simulated (the file's, or --steps').
func (s *Scenario) faultSteps() error {
	for i, f := range s.Faults {
		if f.Step < 0 || f.Step > s.Steps {
			return s.d.At(fmt.Sprintf("faults[%d].step", i), "%d: the compare simulates steps 1..%d (0 or absent: every step)", f.Step, s.Steps)
		}
	}
	return nil
}

// faultsOf are the indices of the faults that hit step k (0-based).
func (s *Scenario) faultsOf(k int) []int {
	var out []int
	for i, f := range s.Faults {
		if f.Step == 0 || f.Step == k+1 {
			out = append(out, i)
		}
	}
	return out
}

// faultPlans resolves, per network and faulted step, the packet backend's fault plan, and
// returns with it each plan entry's fault index (for errors at the fault's line).
type faultPlans struct {
	plan  map[*backend.Network]map[int]fabric.FaultPlan
	index map[int][]int
}

func (s *Scenario) resolveFaultPlans(nets []*backend.Network) (*faultPlans, error) {
	fp := &faultPlans{plan: map[*backend.Network]map[int]fabric.FaultPlan{}, index: map[int][]int{}}
	for k := range s.Steps {
		if idx := s.faultsOf(k); len(idx) > 0 {
			fp.index[k] = idx
		}
	}
	for _, n := range nets {
		if _, ok := fp.plan[n]; ok {
			continue
		}
		all, err := s.faultScen.ResolveFaults(n.Graph)
		if err != nil {
			return nil, err
		}
		byStep := map[int]fabric.FaultPlan{}
		for k, idx := range fp.index {
			p := fabric.FaultPlan{Recovery: all.Recovery}
			for _, i := range idx {
				p.Faults = append(p.Faults, all.Faults[i])
			}
			byStep[k] = p
		}
		fp.plan[n] = byStep
	}
	return fp, nil
}

// stormApplies says whether a pfc_storm applies to a variant of fabric cfg: RoCE with PFC.
func stormApplies(cfg *fabric.Config) bool { return cfg.Kind == fabric.KindRoCE && cfg.RoCE.PFC }

// planFor is the fault plan of step k on network n for a variant of fabric cfg, and the faults'
// indices in the scenario: every fault of the step, but a pfc_storm only where it applies.
func (fp *faultPlans) planFor(n *backend.Network, k int, cfg *fabric.Config) (fabric.FaultPlan, []int) {
	all := fp.plan[n][k]
	p := fabric.FaultPlan{Recovery: all.Recovery, AfterEndOK: all.AfterEndOK}
	var idx []int
	for j, f := range all.Faults {
		if f.Kind == fabric.FaultPFCStorm && !stormApplies(cfg) {
			continue
		}
		p.Faults = append(p.Faults, f)
		idx = append(idx, fp.index[k][j])
	}
	return p, idx
}

// hasStorm says whether the scenario lists a pfc_storm (which only the packet backend models).
func (s *Scenario) hasStorm() bool {
	for _, f := range s.Faults {
		if f.Kind == "pfc_storm" {
			return true
		}
	}
	return false
}

// step says whether step k has faults (false on a nil plan: a compare without faults).
func (fp *faultPlans) step(k int) ([]int, bool) {
	if fp == nil {
		return nil, false
	}
	idx, ok := fp.index[k]
	return idx, ok
}

// faultError turns a fault that begins after the step ended into an error at its line; idx are
// the scenario indices of the plan's faults (planFor).
func (s *Scenario) faultError(idx []int, err error) error {
	var fe *fabric.FaultAfterEndError
	if err == nil {
		return nil
	}
	if errors.As(err, &fe) && fe.Fault < len(idx) {
		return s.faultScen.FaultAfterEnd(idx[fe.Fault], fe.At, fe.End)
	}
	return nil
}

// faultName names fault i for tables: its index, kind, what fails and when.
func (s *Scenario) faultName(i int) string {
	f := &s.Faults[i]
	what := f.Link
	switch f.Kind {
	case "switch_down":
		what = f.Switch
	case "pfc_storm", "slow_receiver":
		what = fmt.Sprintf("host%d", f.Host)
	}
	at := "every step"
	if f.Step > 0 {
		at = fmt.Sprintf("step %d", f.Step)
	}
	return fmt.Sprintf("faults[%d] %s %s at %v, %s", i, f.Kind, what, f.At, at)
}

// faultLosses sums a variant's per-step clean and faulted step times into one FaultLoss per
// fault. clean and faulted are indexed by step; steps without a faulted run are skipped.
func (s *Scenario) faultLosses(cfg *fabric.Config, clean, faulted map[int]float64, failed map[int]string) []FaultLoss {
	kind := cfg.Kind
	var out []FaultLoss
	for i, f := range s.Faults {
		l := FaultLoss{Fault: s.faultName(i)}
		if f.Kind == "pfc_storm" && !stormApplies(cfg) {
			l.NotApplied = fmt.Sprintf("a PFC storm needs RoCE with PFC (the variant is %s)", kind)
			out = append(out, l)
			continue
		}
		for k := range s.Steps {
			if msg := failed[k]; msg != "" && slices.Contains(s.faultsOf(k), i) {
				l.Failed = msg
				l.FailedSteps = append(l.FailedSteps, k+1)
				continue
			}
			fx, ok := faulted[k]
			if !ok || !slices.Contains(s.faultsOf(k), i) {
				continue
			}
			l.Steps = append(l.Steps, k+1)
			l.Clean += clean[k]
			l.Faulted += fx
			for _, j := range s.faultsOf(k) {
				if j != i && !slices.Contains(l.With, j) {
					l.With = append(l.With, j)
				}
			}
		}
		if n := float64(len(l.Steps)); n > 0 {
			l.Clean /= n
			l.Faulted /= n
			l.Lost = l.Faulted - l.Clean
		}
		switch f.Kind {
		case "link_down", "link_flap", "switch_down":
			l.Recovery = s.FaultRecovery.RerouteDelay(kind, f.At, false).Seconds()
		case "pfc_storm":
			l.Watchdog = cfg.RoCE.Watchdog.Seconds()
		}
		out = append(out, l)
	}
	return out
}

// writeFaults prints the time each variant lost to each fault, next to the recovery time its
// control plane needs (detection + reroute).
func (r *Result) writeFaults(w io.Writer) {
	s := r.Scenario
	if len(s.Faults) == 0 || len(r.Variants) == 0 {
		return
	}
	fmt.Fprintf(w, "\n  time lost to faults (step with the fault - the same step without; recovery = detection + reroute):\n")
	for i := range s.Faults {
		fmt.Fprintf(w, "    %s\n", s.faultName(i))
		for _, v := range r.Variants {
			if i < len(v.Faults) && v.Faults[i].NotApplied != "" {
				fmt.Fprintf(w, "      %-16s not applied: %s\n", v.Variant.Name, v.Faults[i].NotApplied)
				continue
			}
			if i < len(v.Faults) && v.Faults[i].Failed != "" {
				fmt.Fprintf(w, "      %-16s FAILED in step %v: %s\n", v.Variant.Name, v.Faults[i].FailedSteps, v.Faults[i].Failed)
			}
			if i >= len(v.Faults) || len(v.Faults[i].Steps) == 0 {
				if i >= len(v.Faults) || v.Faults[i].Failed == "" {
					fmt.Fprintf(w, "      %-16s unfinished\n", v.Variant.Name)
				}
				continue
			}
			l := v.Faults[i]
			line := fmt.Sprintf("      %-16s lost %s per step (%s -> %s)", v.Variant.Name, seconds(l.Lost), seconds(l.Clean), seconds(l.Faulted))
			if l.Recovery > 0 {
				line += fmt.Sprintf(", recovery %s", seconds(l.Recovery))
			}
			if s.Faults[i].Kind == "pfc_storm" {
				if l.Watchdog > 0 {
					line += fmt.Sprintf(", PFC watchdog %s", seconds(l.Watchdog))
				} else {
					line += ", no PFC watchdog"
				}
			}
			if len(l.With) > 0 {
				var with []string
				for _, j := range l.With {
					with = append(with, fmt.Sprintf("faults[%d]", j))
				}
				line += ", together with " + strings.Join(with, ", ")
			}
			fmt.Fprintln(w, line)
		}
	}
}

// faultsSection is report.html's section on faults: per fault and variant the step time with
// and without it, the time lost and the recovery time; a bar chart of the time lost.
func (r *Result) faultsSection() report.Section {
	t := &report.Table{Head: []string{"fault", "variant", "steps", "clean step", "with fault", "lost", "recovery"},
		RightAlign: []bool{false, false, true, true, true, true, true}}
	bars := &report.StackedBars{Title: "Time lost to each fault (per faulted step)", Series: []string{"lost"}, Values: [][]float64{nil},
		Format: axisSeconds, AxisLabel: "step with the fault - step without"}
	for i := range r.Scenario.Faults {
		for _, v := range r.Variants {
			if i < len(v.Faults) && v.Faults[i].NotApplied != "" {
				t.Rows = append(t.Rows, []string{r.Scenario.faultName(i), v.Variant.Name, "not applied", "-", "-", "-", "-"})
				continue
			}
			if i < len(v.Faults) && v.Faults[i].Failed != "" {
				t.Rows = append(t.Rows, []string{r.Scenario.faultName(i), v.Variant.Name, fmt.Sprintf("failed %v", v.Faults[i].FailedSteps), "-", "-", "job failed", v.Faults[i].Failed})
			}
			if i >= len(v.Faults) || len(v.Faults[i].Steps) == 0 {
				if i >= len(v.Faults) || v.Faults[i].Failed == "" {
					t.Rows = append(t.Rows, []string{r.Scenario.faultName(i), v.Variant.Name, "unfinished", "-", "-", "-", "-"})
				}
				continue
			}
			l := v.Faults[i]
			rec := "-"
			switch {
			case l.Recovery > 0:
				rec = seconds(l.Recovery)
			case r.Scenario.Faults[i].Kind == "pfc_storm" && l.Watchdog > 0:
				rec = "watchdog " + seconds(l.Watchdog)
			case r.Scenario.Faults[i].Kind == "pfc_storm":
				rec = "no watchdog"
			}
			t.Rows = append(t.Rows, []string{r.Scenario.faultName(i), v.Variant.Name, fmt.Sprint(len(l.Steps)), seconds(l.Clean), seconds(l.Faulted), seconds(l.Lost), rec})
			bars.Categories = append(bars.Categories, fmt.Sprintf("faults[%d] %s", i, v.Variant.Name))
			bars.Values[0] = append(bars.Values[0], max(0, l.Lost))
		}
	}
	return report.Section{Title: "Faults", Tables: []*report.Table{t}, Charts: []report.Chart{bars},
		Text: []string{"Each faulted step is simulated twice, with its faults and without them (same seed, same compute noise); lost is the difference, averaged over the fault's steps. Recovery is the control plane's detection + reroute for a link or switch failure (InfiniBand: SM trap or sweep + reroute; RoCE: BFD detection + route convergence; docs/faults.md): the stall a collective crossing the failed link waits, before its transport resends what was lost. A PFC storm (a NIC that stops draining and pauses its switch port) applies to the RoCE variants with PFC; their PFC watchdog, when on, flushes the paused queue after its detection time and so bounds how long the storm's pauses spread to other flows."}}
}

// In class fidelity (fidelity: classes) a step is composed from one run per class, every group
// of the class starting at time 0, and the step's schedule is the plan replayed with those
// durations. A fault has no time in such a run, so a faulted step is composed anew: the clean
// step's schedule says which collective instances the fault's window meets, and each class
// they belong to runs again with the fault at its step time and its groups' messages held
// until their instances' start times in the step (faultRound). The other classes, and the
// instances outside the window, keep their clean durations.

// faultRound runs class c once, its whole collectives (no ring prefixes: an extrapolated
// stall would be scaled with the ring), group gi's messages held until off[gi]; with faults
// the step's fault plan applies at its times, else none. Dur is measured from each group's
// offset.
type faultRound func(c int, off []units.Time, faults bool) (*classRun, error)

// faultWindow is when a step's faults disturb the fabric: from the first fault's start t0 to
// ts, after which the fabric is steady again: healthy, or (permanent) running without what
// stays failed, its routes moved. A link's state change disturbs it until the control plane's
// reroute (fabric.FaultRecovery.RerouteDelay).
func faultWindow(p *fabric.FaultPlan, kind fabric.Kind) (t0, ts units.Time, permanent bool) {
	t0 = units.MaxTime
	r := &p.Recovery
	for _, f := range p.Faults {
		t0 = min(t0, f.At)
		end := f.At
		switch f.Kind {
		case fabric.FaultLinkDown, fabric.FaultSwitchDown:
			end = f.At + r.RerouteDelay(kind, f.At, false)
			if f.For > 0 {
				end = max(end, f.At+f.For+r.RerouteDelay(kind, f.At+f.For, true))
			} else {
				permanent = true
			}
		case fabric.FaultLinkFlap:
			for c := range f.Count {
				down := f.At + units.Time(c)*f.Period
				end = max(end, down+r.RerouteDelay(kind, down, false), down+f.Down+r.RerouteDelay(kind, down+f.Down, true))
			}
		default: // degrade, slow receiver, PFC storm: no reroute
			if f.For > 0 {
				end = f.At + f.For
			} else {
				permanent = true
			}
		}
		ts = max(ts, end)
	}
	return t0, ts, permanent
}

// steadyPad is how long after the window's end a steady round's collectives start, so that the
// last reroute has been applied when they begin.
const steadyPad = units.Microsecond

// classFaultInput is faulted step k's input in class fidelity: clean is the step's input from
// its clean class runs; plan the step's faults, idx their indices in the scenario (for errors
// at their lines). An instance of a network collective (one of an op's Repeat) is
//   - clean where it ends before the first fault begins, or starts after the window ends on a
//     fabric that is healthy again;
//   - in the window: its class runs with the faults, its group held until the instance's start
//     (faultRound), other groups of the class with an instance in the window likewise (one
//     round per instance rank), those without at the window's end;
//   - after the window while something stays failed: its class runs with every group starting
//     just after the window (the fabric rerouted, a steady round).
//
// The instance's duration is its clean class run's plus what the fault added: the faulted
// round's minus the same round run without the faults (same offsets, same seed), so that the
// time lost is the fault's alone. Instances' starts move when the faults lengthen what they
// wait for, so the schedule is replayed with the new durations and the instances classified
// again, until no instance moves into or within the window (at most faultPasses times).
func (s *Scenario) classFaultInput(p *training.Plan, cls []*class, opClass, opGroup []int, clean stepInput, plan *fabric.FaultPlan, idx []int, kind fabric.Kind, run faultRound) (stepInput, error) {
	t0, ts, permanent := faultWindow(plan, kind)
	n := len(p.Ops)
	reps := func(i int) int { return max(1, p.Ops[i].Repeat) }
	one := make([]units.Time, n) // a network op's clean duration per instance
	for i := range p.Ops {
		if opClass[i] >= 0 {
			one[i] = clean.dur[i] / units.Time(reps(i))
		}
	}
	type inst struct{ op, rep int }
	delta := map[inst]units.Time{} // what the faults add to an instance
	type roundKey struct {
		c   int
		off string
	}
	rounds := map[roundKey]map[bool]*classRun{}
	counters := map[string]float64{}
	roundOf := func(c int, off []units.Time) (f, cl *classRun, err error) {
		k := roundKey{c, fmt.Sprint(off)}
		if r, ok := rounds[k]; ok {
			return r[true], r[false], nil
		}
		if f, err = run(c, off, true); err != nil {
			return nil, nil, err
		}
		if cl, err = run(c, off, false); err != nil {
			return nil, nil, err
		}
		rounds[k] = map[bool]*classRun{true: f, false: cl}
		for name, x := range f.Counters {
			if result.AggregationOf(name) == result.Max {
				counters[name] = max(counters[name], x)
			} else {
				counters[name] += x - cl.Counters[name] // what the faults added
			}
		}
		return f, cl, nil
	}
	durOf := func(i, r int) units.Time { return max(0, one[i]+delta[inst{i, r}]) }
	start := make([]units.Time, n)
	fin := make([]units.Time, n)
	for pass := 0; ; pass++ {
		// The schedule with the durations so far.
		for i := range p.Ops {
			start[i] = 0
			for _, d := range p.Ops[i].Deps {
				start[i] = max(start[i], fin[d])
			}
			if opClass[i] < 0 {
				fin[i] = start[i] + clean.dur[i]
				continue
			}
			fin[i] = start[i]
			for r := range reps(i) {
				fin[i] += durOf(i, r)
			}
		}
		if pass == 0 {
			var end units.Time
			for i := range fin {
				end = max(end, fin[i])
			}
			for j, f := range plan.Faults {
				if f.At >= end {
					return stepInput{}, s.faultScen.FaultAfterEnd(idx[j], f.At, end)
				}
			}
		}
		// Classify every network instance; per class and group the window's instances in order.
		type member struct {
			in    inst
			start units.Time
		}
		window := map[int][][]member{}
		steady := map[int][]inst{}
		for i := range p.Ops {
			c := opClass[i]
			if c < 0 {
				continue
			}
			st := start[i]
			for r := range reps(i) {
				en := st + durOf(i, r)
				switch {
				case en <= t0 || st >= ts && !permanent:
				case st >= ts:
					steady[c] = append(steady[c], inst{i, r})
				default:
					if window[c] == nil {
						window[c] = make([][]member, len(cls[c].Groups))
					}
					g := opGroup[i]
					window[c][g] = append(window[c][g], member{inst{i, r}, st})
				}
				st = en
			}
		}
		next := map[inst]units.Time{}
		for _, c := range sortedKeys(window) {
			groups := window[c]
			rounds := 0
			for _, m := range groups {
				rounds = max(rounds, len(m))
			}
			for r := range rounds {
				off := make([]units.Time, len(groups))
				for g, m := range groups {
					off[g] = ts + steadyPad
					if r < len(m) {
						off[g] = m[r].start
					}
				}
				f, cl, err := roundOf(c, off)
				if err != nil {
					return stepInput{}, err
				}
				for g, m := range groups {
					if r < len(m) {
						next[m[r].in] = f.Dur[g] - cl.Dur[g]
					}
				}
			}
		}
		for _, c := range sortedKeys(steady) {
			off := make([]units.Time, len(cls[c].Groups))
			for g := range off {
				off[g] = ts + steadyPad
			}
			f, cl, err := roundOf(c, off)
			if err != nil {
				return stepInput{}, err
			}
			for _, in := range steady[c] {
				g := opGroup[in.op]
				next[in] = f.Dur[g] - cl.Dur[g]
			}
		}
		if maps.Equal(next, delta) || pass+1 == faultPasses {
			delta = next
			break
		}
		delta = next
	}
	out := clean
	out.dur = slices.Clone(clean.dur)
	out.coll = nil
	out.counters = map[string]float64{}
	for k, x := range clean.counters {
		out.counters[k] = x
	}
	for k, x := range counters {
		if result.AggregationOf(k) == result.Max {
			out.counters[k] = max(out.counters[k], x)
		} else {
			out.counters[k] += x
		}
	}
	for i := range p.Ops {
		if opClass[i] < 0 {
			continue
		}
		out.dur[i] = 0
		for r := range reps(i) {
			d := durOf(i, r)
			out.dur[i] += d
			out.coll = append(out.coll, d.Seconds())
		}
	}
	return out, nil
}

// faultPasses bounds classFaultInput's replays: each pass can only move instances later.
const faultPasses = 4

// sortedKeys are m's keys in order (deterministic runs).
func sortedKeys[V any](m map[int]V) []int {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// classFaultStep is variant v's faulted step k in class fidelity (classFaultInput), its rounds
// run with the step's network seed, class c's on backend name(c); their events and time go to vr.
func (s *Scenario) classFaultStep(ctx context.Context, name func(c int) backend.Name, p *training.Plan, cls []*class, opClass, opGroup []int,
	fp *faultPlans, net *backend.Network, v *Variant, k, nseeds int, clean stepInput, vr *VariantResult) (stepInput, error) {
	cfg := v.Fabric
	plan, idx := fp.planFor(net, k, &cfg)
	whole := map[int]*msggraph.Graph{}
	ranges := map[int][][2]int{}
	run := func(c int, off []units.Time, faults bool) (*classRun, error) {
		g, ok := whole[c]
		if !ok {
			g = &msggraph.Graph{Endpoints: p.GPUs}
			for gi, o := range cls[c].example {
				from := len(g.Msgs)
				if _, err := s.compileOp(g, o, nil, fmt.Sprintf("%s g%d", cls[c].Key, gi), false); err != nil {
					return nil, fmt.Errorf("compiling %s: %w", cls[c].Key, err)
				}
				ranges[c] = append(ranges[c], [2]int{from, len(g.Msgs)})
			}
			whole[c] = g
		}
		rc := v.Fabric
		if faults {
			rc.Faults = plan
			rc.Faults.AfterEndOK = true // a round's collectives may all end before a later fault
		}
		r, err := runClass(ctx, name(c), net, rc, s.Seed+uint64(k%nseeds)*7919, s.drawSeed(k), skewedClass(g, ranges[c], off), ranges[c], false, nil, msgWeights{}, backend.FlowOptions{})
		if err != nil {
			return nil, fmt.Errorf("variant %s, step %d, %s with its faults: %w", v.Name, k+1, cls[c].Key, err)
		}
		for gi := range r.Dur {
			r.Dur[gi] -= off[gi]
		}
		vr.Events += r.Events
		vr.SimWall += r.Wall
		return r, nil
	}
	return s.classFaultInput(p, cls, opClass, opGroup, clean, &plan, idx, cfg.Kind, run)
}
