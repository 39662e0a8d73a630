package tune

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"time"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/sweep"
	"github.com/fabricsim/fabricsim/yamlstrict"
)

// Options adjust a tune.
type Options struct {
	// Out is the output directory: tune.json, report.html, the committed evaluations.
	Out string
	// Jobs is how many evaluations run at once on this machine (0: one per CPU).
	Jobs int
	// Seed seeds the optimizer's samples (0 is taken as 1).
	Seed uint64
	// Resume requires Out to hold a tune of the same problem (the evaluations are reused in any
	// case: they are keyed by what they evaluate).
	Resume bool
	// NewEngine makes the engine of each worker; nil runs the simulator (Engine).
	NewEngine func() sweep.Engine
	// Slurm, when set, runs each batch as a Slurm job array.
	Slurm *SlurmOptions
	// Progress, when set, is told evaluations done and the total planned.
	Progress func(done, total int)
	// Note, when set, is told after each batch how the search stands ("best 4.719ms (evaluation
	// 5), 0 violating"), for the progress line.
	Note func(string)
}

// SearchSigma is CMA-ES's initial step size in units of each range (the unit cube's edge): a
// generation's first samples spread about a quarter of each range around the start.
const SearchSigma = 0.25

// manifest is DIR/tune-manifest.json: which problem DIR holds, for --resume.
type manifest struct {
	Scenario string `json:"scenario"`
	Digest   string `json:"digest"`
	Budget   int    `json:"budget"`
}

// digest identifies what a search proposes: the scenario, the variant, the space, the
// objective, the backend, the population and the seed. The budget is left out: a tune resumed
// with a larger budget continues the same sequence of candidates.
func (p *Problem) digest(seed uint64) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%s\n%s\n%d\n%d\n", p.Source, p.Variant, p.Objective, p.Backend, p.Population, seed)
	for _, q := range p.Space {
		fmt.Fprintf(h, "%s %g %g %s\n", q.Key, q.Min, q.Max, q.Scale)
	}
	if p.Holdout != nil {
		fmt.Fprintf(h, "%s\n", flowText(p.Holdout))
	}
	for _, a := range p.Arms {
		fmt.Fprintf(h, "arm %s\n", a.Name)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// candidate is something to evaluate: settings over a variant (the tuned one unless variant
// is set), on a seed, on the scenario or its second mix.
type candidate struct {
	role     string
	check    string
	gen      int
	variant  string      // "" = the tuned variant
	settings [][2]string // scenario keys and values written over the variant
	seed     uint64
	mixed    bool
	cfg      fabric.Config
	static   []string // violations found before running
	ref      bool     // not a point of the space (InfiniBand)
}

// searcher holds a tune in progress.
type searcher struct {
	p   *Problem
	o   Options
	ev  *evaluator
	res *Result
	// armStates are the arms of a search over categorical choices.
	armStates []*armState
	done      int
	total     int
}

// Run tunes the problem: the start points, CMA-ES generations up to the budget, the checks of
// the winner on unseen seeds and the second mix, the sensitivity. When ctx is cancelled it
// returns what finished with an error wrapping ErrInterrupted; every finished evaluation is
// committed, and running it again (with Resume) continues.
func Run(ctx context.Context, p *Problem, o Options) (*Result, error) {
	wall := time.Now()
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.NewEngine == nil {
		o.NewEngine = func() sweep.Engine { return Engine{} }
	}
	if err := prepareOut(p, o); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(p.Dir) // Slurm tasks may start elsewhere
	if err != nil {
		dir = p.Dir
	}
	s := &searcher{p: p, o: o,
		ev: &evaluator{out: o.Out, name: "tune-" + p.Name, dir: dir, jobs: o.Jobs, newEngine: o.NewEngine, slurm: o.Slurm}}
	r := &Result{Tool: "fabricsim tune", Scenario: p.File, Name: p.Name, Kind: p.Kind, Variant: p.Variant,
		Objective: p.Objective, Metric: p.Objective.Metric(), Unit: p.Objective.Unit(), Backend: p.Backend,
		Seed: o.Seed, ScenarioSeed: p.Seed, Budget: p.Budget, Violations: map[string]int{}}
	s.res = r
	for _, q := range p.Space {
		r.Space = append(r.Space, SpaceEntry{Key: q.Key, Min: q.Text(q.Min), Max: q.Text(q.Max), Scale: q.Scale, Source: q.Source, Start: q.Text(q.Get(p.Base))})
	}
	// The evaluations planned: the budget, InfiniBand on the search's seeds, and the checks
	// (InfiniBand, configured, production, winner on unseen seeds and the second mix).
	perCheck := 2
	if p.IBVariant != "" {
		s.total++
		perCheck++
	}
	if p.Production != nil {
		perCheck++
	}
	checks := 1
	if p.Holdout != nil {
		checks++
	}
	s.total += p.Budget + checks*perCheck
	if len(p.Arms) > 0 {
		err = s.searchArms(ctx)
	} else {
		err = s.search(ctx)
	}
	s.pickBest()
	if err == nil {
		err = s.checks(ctx)
	}
	s.sensitivity()
	for _, e := range append(append([]Evaluation(nil), r.Evaluations...), r.References...) {
		seen := map[string]bool{}
		for _, v := range e.Violations {
			if k := violationKind(v); !seen[k] {
				r.Violations[k]++
				seen[k] = true
			}
		}
	}
	r.Ran = s.ev.ran
	r.WallSeconds = time.Since(wall).Seconds()
	if errors.Is(err, ErrInterrupted) {
		r.Interrupted = true
		return r, fmt.Errorf("%w after %d evaluations (%d run now); run the same command with --resume to continue", ErrInterrupted, s.done, s.ev.ran)
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// prepareOut creates DIR and checks or writes its manifest.
func prepareOut(p *Problem, o Options) error {
	if err := os.MkdirAll(filepath.Join(o.Out, evalsDir), 0o755); err != nil {
		return &yamlstrict.Error{Field: "--out", Msg: fmt.Sprintf("%s: %v", o.Out, err)}
	}
	path := filepath.Join(o.Out, "tune-manifest.json")
	m := manifest{Scenario: p.File, Digest: p.digest(o.Seed), Budget: p.Budget}
	if o.Resume {
		var old manifest
		b, err := os.ReadFile(path)
		if err != nil || json.Unmarshal(b, &old) != nil {
			return &yamlstrict.Error{Field: "--resume", Msg: fmt.Sprintf("%s holds no tune (no tune-manifest.json); run without --resume to start one", o.Out)}
		}
		if old.Digest != m.Digest {
			return &yamlstrict.Error{Field: "--resume", Msg: fmt.Sprintf("%s holds a tune of another problem (%s, digest %s; this one is %s): the scenario, variant, space, objective, backend or seed changed; run without --resume to start this one there (evaluations they share are reused)", o.Out, old.Scenario, old.Digest, m.Digest)}
		}
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func (s *searcher) progress(n int) {
	s.done += n
	if s.o.Progress != nil {
		s.o.Progress(s.done, s.total)
	}
}

// apply builds a candidate's configuration: the variant's with the settings written over it.
func (s *searcher) apply(role string, gen int, settings [][2]string) candidate {
	c := candidate{role: role, gen: gen, settings: settings, cfg: s.p.Base, seed: s.p.Seed}
	for _, kv := range settings {
		if err := applyText(&c.cfg, kv[0], kv[1]); err != nil {
			c.static = append(c.static, fmt.Sprintf("invalid configuration: %s: %v", kv[0], err))
		}
	}
	if len(c.static) == 0 {
		c.static = s.p.staticViolations(c.cfg)
	}
	return c
}

// doc is the evaluation of settings over variant (or the variant as configured when settings
// is nil) with seed and mix.
func (s *searcher) doc(variant string, settings [][2]string, seed uint64, mixed bool) evalDoc {
	// The file's base name only: it names the scenario in messages, and an evaluation's identity
	// should not depend on the directory tune was started from.
	d := evalDoc{Kind: s.p.Kind, File: filepath.Base(s.p.File), Variant: variant, Seed: seed, Backend: string(s.p.Backend), Source: s.p.Source}
	if len(settings) > 0 {
		d.Fabric = map[string]string{}
		for _, kv := range settings {
			d.Fabric[kv[0]] = kv[1]
		}
	}
	if mixed {
		d.Mix = flowText(s.p.Holdout)
	}
	return d
}

// evaluate runs candidates as one batch (those rejected statically are not run) and returns
// their evaluations, in order.
func (s *searcher) evaluate(ctx context.Context, cands []candidate) ([]Evaluation, error) {
	var docs []evalDoc
	var at []int
	out := make([]Evaluation, len(cands))
	for i, c := range cands {
		variant := c.variant
		if variant == "" {
			variant = s.p.Variant
		}
		d := s.doc(variant, c.settings, c.seed, c.mixed)
		id, _, err := runID(d)
		if err != nil {
			return nil, err
		}
		out[i] = Evaluation{ID: id, Generation: c.gen, Role: c.role, Check: c.check, Seed: c.seed, Fabric: settingsMap(c.settings), Violations: c.static}
		if len(c.static) == 0 {
			docs = append(docs, d)
			at = append(at, i)
		}
	}
	res, err := s.ev.run(ctx, docs)
	if err != nil {
		return nil, err
	}
	for j, o := range res {
		i := at[j]
		e := &out[i]
		e.Violations = s.p.runViolations(cands[i].cfg, o)
		if o.Err == "" {
			e.Metrics = finite(o.Metrics)
			if x, ok := o.Metrics[s.p.Objective.Metric()]; ok {
				e.Objective = ptr(x)
			} else {
				e.Violations = append(e.Violations, fmt.Sprintf("run failed: no %s in the evaluation's metrics", s.p.Objective.Metric()))
			}
		}
	}
	for i := range out {
		out[i].Feasible = len(out[i].Violations) == 0 && out[i].Objective != nil
		if !cands[i].ref {
			out[i].unit = s.unitOf(cands[i].cfg)
		}
	}
	s.progress(len(cands))
	return out, nil
}

// ibCandidate is the InfiniBand reference under a check's condition.
func (s *searcher) ibCandidate(check string, seed uint64, mixed bool) candidate {
	return candidate{role: "infiniband", check: check, variant: s.p.IBVariant, seed: seed, mixed: mixed, cfg: fabric.Config{Kind: "infiniband"}, ref: true}
}

func settingsMap(kv [][2]string) map[string]string {
	if len(kv) == 0 {
		return nil
	}
	m := map[string]string{}
	for _, x := range kv {
		m[x[0]] = x[1]
	}
	return m
}

// unitOf places a configuration in the space. With categorical choices, a setting outside the
// space of the configuration's arm (pfc_alpha in a static-PFC arm) is NaN: it had no effect.
func (s *searcher) unitOf(c fabric.Config) []float64 {
	u := make([]float64, len(s.p.Space))
	var in []Param
	if len(s.p.Arms) > 0 {
		if k := s.p.armOf(c); k >= 0 {
			in = s.p.Arms[k].Space
		}
	}
	for i := range s.p.Space {
		q := &s.p.Space[i]
		u[i] = q.Unit(q.Get(c))
		if len(s.p.Arms) > 0 && !slices.ContainsFunc(in, func(x Param) bool { return x.Key == q.Key }) {
			u[i] = math.NaN()
		}
	}
	return u
}

func (s *searcher) record(es []Evaluation) {
	for i := range es {
		es[i].N = len(s.res.Evaluations) + 1
		s.res.Evaluations = append(s.res.Evaluations, es[i])
	}
}

// best returns the index of the best feasible search evaluation (the earliest of equals), or -1.
func (s *searcher) best() int {
	b := -1
	for i, e := range s.res.Evaluations {
		if e.Feasible && (b < 0 || *e.Objective < *s.res.Evaluations[b].Objective) {
			b = i
		}
	}
	return b
}

// evaluateStarts is generation 0 of every search: the variant as configured and with the
// production values, and (not counted in the budget) the InfiniBand reference on the same seed.
// It records the start points and returns them.
func (s *searcher) evaluateStarts(ctx context.Context) ([]candidate, error) {
	p := s.p
	starts := []candidate{s.apply("configured", 0, nil)}
	if p.Production != nil && p.Budget >= 2 {
		starts = append(starts, s.apply("production", 0, p.Production))
	}
	batch := starts
	if p.IBVariant != "" {
		batch = append(batch[:len(starts):len(starts)], s.ibCandidate("search seeds", p.Seed, false))
	}
	es, err := s.evaluate(ctx, batch)
	if err != nil {
		return nil, err
	}
	s.record(es[:len(starts)])
	s.res.References = append(s.res.References, es[len(starts):]...)
	return starts, nil
}

// search evaluates the start points and CMA-ES's generations up to the budget.
func (s *searcher) search(ctx context.Context) error {
	p := s.p
	starts, err := s.evaluateStarts(ctx)
	if err != nil {
		return err
	}
	s.note()
	// CMA-ES from the better start point, which every candidate then carries (settings outside
	// the space keep its values).
	start, startSettings := 0, [][2]string(nil)
	if b := s.best(); b >= 0 {
		start = b
		startSettings = starts[b].settings
	}
	// A violating candidate ranks below every valid one: twice the worse start point's
	// objective (CMA-ES uses only the ranks), or a huge value when neither start was valid.
	penalty := 0.0
	for _, e := range s.res.Evaluations {
		if e.Feasible {
			penalty = math.Max(penalty, 2*math.Abs(*e.Objective))
		}
	}
	if penalty == 0 {
		penalty = 1e12
	}
	used := len(s.res.Evaluations)
	if used >= p.Budget {
		return nil
	}
	c := newCMA(len(p.Space), s.res.Evaluations[start].unit, SearchSigma, p.Population, s.o.Seed)
	defer c.stop()
	s.res.Population = c.pop
	s.res.Method = fmt.Sprintf("CMA-ES (gonum optimize.CmaEsChol), population %d, initial step %.2f of each range, from the %s point, %d generation(s) in the budget",
		c.pop, SearchSigma, s.res.Evaluations[start].Role, (p.Budget-used+c.pop-1)/c.pop)
	for gen := 1; used < p.Budget; gen++ {
		xs := c.ask()
		if xs == nil {
			s.res.Converged = true
			break
		}
		n := min(len(xs), p.Budget-used)
		cands := make([]candidate, n)
		for i := range cands {
			cands[i] = s.apply("search", gen, s.settingsAt(xs[i], startSettings))
		}
		es, err := s.evaluate(ctx, cands)
		if err != nil {
			return err
		}
		s.record(es)
		used += n
		s.note()
		if n < len(xs) {
			break
		}
		fs := make([]float64, len(es))
		for i, e := range es {
			fs[i] = penalty
			if e.Feasible {
				fs[i] = *e.Objective
			}
		}
		c.tell(fs)
	}
	return nil
}

// settingsAt turns a point of CMA-ES's space into settings: each parameter's value where the
// point folds into its range, the ordered pairs kept in order, over the start's settings.
func (s *searcher) settingsAt(x []float64, start [][2]string) [][2]string {
	vals := map[string]float64{}
	idx := map[string]int{}
	for i := range s.p.Space {
		q := &s.p.Space[i]
		vals[q.Key] = q.Value(fold(x[i]))
		idx[q.Key] = i
	}
	for _, pr := range pairs {
		lo, okLo := vals[pr[0]]
		hi, okHi := vals[pr[1]]
		if !okLo || !okHi || lo <= hi {
			continue
		}
		if pr[0] == "pfc_xon" {
			vals[pr[0]] = hi // XON lowered to XOFF
		} else {
			vals[pr[1]] = lo // Kmax raised to Kmin (a step marking threshold), R_HAI to R_AI
		}
	}
	out := append([][2]string(nil), start...)
	for i := range s.p.Space {
		q := &s.p.Space[i]
		kv := [2]string{q.Key, q.Text(vals[q.Key])}
		if j := indexOfKey(out, q.Key); j >= 0 {
			out[j] = kv
		} else {
			out = append(out, kv)
		}
	}
	return out
}

func indexOfKey(kv [][2]string, key string) int {
	for i, x := range kv {
		if x[0] == key {
			return i
		}
	}
	return -1
}

// note tells Options.Note the best valid objective so far and how many violated.
func (s *searcher) note() {
	if s.o.Note == nil {
		return
	}
	bad := 0
	for _, e := range s.res.Evaluations {
		if !e.Feasible {
			bad++
		}
	}
	text := "no valid candidate yet"
	if b := s.best(); b >= 0 {
		text = fmt.Sprintf("best %s (evaluation %d)", formatObjective(*s.res.Evaluations[b].Objective, s.p.Objective.Unit()), b+1)
	}
	s.o.Note(fmt.Sprintf("%s, %d violating", text, bad))
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// effective lists every key of c's kind with its value as text.
func effective(c fabric.Config) map[string]string {
	out := map[string]string{}
	v := reflect.ValueOf(c)
	for _, k := range fabric.Keys() {
		if k.For(c.Kind) {
			out[k.Name] = yamlstrict.Text(v.FieldByIndex(k.Index))
		}
	}
	return out
}
