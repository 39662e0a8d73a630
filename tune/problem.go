package tune

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/compare"
	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/scenario"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
	"github.com/fabricsim/fabricsim/yamlstrict"
)

// Kind is the kind of scenario tuned.
type Kind string

// Kinds.
const (
	KindCompare Kind = "compare" // a compare scenario: one variant of it
	KindRun     Kind = "run"     // a run scenario: its fabric
)

// Objective is what the search minimizes.
type Objective string

// Objectives: compare's mean step time and 99th-percentile network collective completion, a
// run's 99th-percentile flow completion time and mean slowdown.
const (
	Step          Objective = "step"
	P99Collective Objective = "p99-collective"
	P99FCT        Objective = "p99-fct"
	MeanSlowdown  Objective = "mean-slowdown"
)

// objectives lists each kind's objectives, its default first.
var objectives = map[Kind][]Objective{
	KindCompare: {Step, P99Collective},
	KindRun:     {P99FCT, MeanSlowdown},
}

// Metric is the evaluation metric an objective reads, and Unit how it prints ("s" seconds,
// "ns" nanoseconds, "" a plain number).
func (o Objective) Metric() string {
	switch o {
	case Step:
		return "step_s"
	case P99Collective:
		return "coll_p99_s"
	case P99FCT:
		return "fct_ns.p99"
	}
	return "slowdown.mean"
}

// Unit is the unit of the objective's metric.
func (o Objective) Unit() string {
	switch o {
	case Step, P99Collective:
		return "s"
	case P99FCT:
		return "ns"
	}
	return ""
}

func objectiveList(k Kind) string {
	var s []string
	for _, o := range objectives[k] {
		s = append(s, string(o))
	}
	return strings.Join(s, ", ")
}

// ObjectiveNames lists every objective, for the command's help.
func ObjectiveNames() []string {
	return []string{string(Step), string(P99Collective), string(P99FCT), string(MeanSlowdown)}
}

// DefaultBudget is the number of evaluations a search may make unless told otherwise.
const DefaultBudget = 64

// MaxBudget bounds --budget and tune.budget: a typo should not ask for a month of simulation.
const MaxBudget = 10000

// Problem is a scenario read for tuning: what is tuned, the search space, the objective, the
// budget and the second traffic mix for the overfitting check.
type Problem struct {
	// File is the scenario's path as given, Dir resolves its relative paths.
	File, Dir string
	Kind      Kind
	// Name is the scenario's name.
	Name string
	// Source is the scenario without its tune: section, which every evaluation embeds (so that
	// editing the section, a budget say, does not change what evaluations are).
	Source string
	// Variant is the compare variant tuned ("" for a run scenario), Base its fabric as
	// configured: the vendor default when the variant is roce-default.
	Variant string
	Base    fabric.Config
	// IBVariant is the compare scenario's InfiniBand variant, the reference for the gap (the
	// scenario's first InfiniBand variant, else the built-in ib-ndr); "" for a run scenario.
	IBVariant string
	// Production are the published production values (the built-in roce-tuned's settings over
	// roce-default, [ByteDance25]) when the base is RoCE with DCQCN on; nil otherwise.
	Production [][2]string
	Space      []Param
	Objective  Objective
	Budget     int
	Backend    backend.Name
	// Seed is the scenario's seed: the search evaluates every candidate with it. Steps is a
	// compare scenario's simulated steps (step k runs with Seed + 7919 k).
	Seed  uint64
	Steps int
	// Holdout is the second traffic mix, a mapping merged over the scenario, and HoldoutText
	// says what it is; Holdout is nil when there is none.
	Holdout     *yaml.Node
	HoldoutText string
	// NeedHeadroom is the PFC headroom per port and lossless class the longest cable needs,
	// LinkRate the host link rate the built-in ranges scale with.
	NeedHeadroom units.Size
	LinkRate     units.Rate
	// Population is the optimizer's generation size (0: CMA-ES's default for the dimension).
	Population int
	// Arms are the combinations of the categorical choices (tune.choices), each with its own
	// space; nil when the scenario lists none (Space is then the one space searched, else the
	// union of the arms').
	Arms []Arm
}

// LoadOptions are what the command line says over the scenario's tune: section.
type LoadOptions struct {
	// Variant, Objective and Backend, when set, override the section and the scenario.
	Variant   string
	Objective string
	Backend   backend.Name
	// Budget, when positive, overrides the section's budget.
	Budget int
}

// section is a scenario's tune: section as written (docs/tune.md).
type section struct {
	Variant    string     `yaml:"variant"`
	Objective  string     `yaml:"objective"`
	Budget     int        `yaml:"budget"`
	Space      string     `yaml:"space"`
	Params     *yaml.Node `yaml:"params"`
	Holdout    *yaml.Node `yaml:"holdout"`
	Population int        `yaml:"population"`
	Choices    *yaml.Node `yaml:"choices"`
}

// paramSpec is one entry of tune.params.
type paramSpec struct {
	Min   *yaml.Node `yaml:"min"`
	Max   *yaml.Node `yaml:"max"`
	Scale string     `yaml:"scale"`
}

// Load reads a compare or run scenario for tuning. Every error in it is a *yamlstrict.Error
// naming the file, line, column and field (the command exits 2 on it).
func Load(path string, o LoadOptions) (*Problem, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if pe, ok := err.(*os.PathError); ok {
			err = pe.Err
		}
		return nil, &yamlstrict.Error{File: path, Msg: "cannot read scenario: " + err.Error()}
	}
	return Parse(data, path, filepath.Dir(path), o)
}

// Parse is Load on the bytes of a scenario file named path; dir resolves relative paths.
func Parse(data []byte, path, dir string, o LoadOptions) (*Problem, error) {
	root, err := yamlstrict.Parse(data, path, "a compare or run scenario with a fabric to tune")
	if err != nil {
		return nil, err
	}
	top := root.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil, &yamlstrict.Error{File: path, Pos: yamlstrict.Pos{Line: top.Line, Col: top.Column}, Msg: "want a compare scenario (cluster, workload, variants) or a run scenario (topology, fabric, traffic)"}
	}
	p := &Problem{File: path, Dir: dir, Kind: KindRun}
	if lookup(top, "cluster") != nil || lookup(top, "workload") != nil {
		p.Kind = KindCompare
	}
	stripped := clone(top)
	deleteKey(stripped, "tune")
	if p.Source, err = encode(stripped); err != nil {
		return nil, &yamlstrict.Error{File: path, Msg: "cannot re-encode the scenario: " + err.Error()}
	}
	sec, d, err := decodeSection(lookup(top, "tune"), path)
	if err != nil {
		return nil, err
	}
	var links []linkClass
	if p.Kind == KindCompare {
		s, err := compare.Parse(data, path, dir) // strictly, with its own messages
		if err != nil {
			return nil, err
		}
		if links, err = p.fromCompare(s, sec, d, o); err != nil {
			return nil, err
		}
	} else {
		s, err := scenario.Parse(data, path, dir)
		if err != nil {
			return nil, err
		}
		if links, err = p.fromRun(s, sec, d, o); err != nil {
			return nil, err
		}
	}
	if o.Backend != "" {
		p.Backend = o.Backend
	}
	if _, err := backend.Lookup(p.Backend); err != nil {
		return nil, &yamlstrict.Error{File: path, Field: "backend", Msg: err.Error()}
	}
	p.NeedHeadroom = requiredHeadroom(p.Base, links)
	if p.Base.Kind == fabric.KindRoCE && p.Base.RoCE.DCQCN {
		_, p.Production, _ = compare.BuiltinOverrides("roce-tuned")
	}
	if err := p.applySection(sec, d, o); err != nil {
		return nil, err
	}
	return p, nil
}

// decodeSection decodes the tune: node (nil: none) with positions in file.
func decodeSection(n *yaml.Node, file string) (section, *yamlstrict.Decoder, error) {
	var sec section
	d := yamlstrict.NewDecoder(file)
	if n == nil {
		return sec, d, nil
	}
	d.Record("tune", n)
	if n.Kind != yaml.MappingNode {
		return sec, d, d.ErrAt(n, "tune", "want a mapping {variant, objective, budget, space, params, choices, holdout, population}, got %s", yamlstrict.KindName(n))
	}
	if err := d.Decode(n, reflect.ValueOf(&sec).Elem(), "tune"); err != nil {
		return sec, d, err
	}
	return sec, d, nil
}

// flagOr returns an error for the flag named where (a "--" flag) or at the section's key.
func flagOr(d *yamlstrict.Decoder, file, where, format string, args ...any) error {
	if strings.HasPrefix(where, "--") {
		return &yamlstrict.Error{File: file, Field: where, Msg: fmt.Sprintf(format, args...)}
	}
	return d.At(where, format, args...)
}

// fromCompare takes the variant to tune, its fabric, the InfiniBand reference and the default
// second mix from a compare scenario, and returns the network's link classes.
func (p *Problem) fromCompare(s *compare.Scenario, sec section, d *yamlstrict.Decoder, o LoadOptions) ([]linkClass, error) {
	p.Name, p.Seed, p.Steps, p.Backend = s.Name, s.Seed, s.Steps, s.Backend
	where := "tune.variant"
	p.Variant = "roce-default"
	if sec.Variant != "" {
		p.Variant = sec.Variant
	}
	if o.Variant != "" {
		p.Variant, where = o.Variant, "--variant"
	}
	var names []string
	found := false
	for _, v := range s.Variants {
		names = append(names, v.Name)
		if v.Name == p.Variant {
			p.Base, found = v.Fabric, true
		}
		if v.Kind == fabric.KindInfiniBand && p.IBVariant == "" {
			p.IBVariant = v.Name
		}
	}
	if !found {
		// A built-in variant the scenario does not list can be tuned too.
		var builtin []string
		for _, b := range compare.BuiltinVariants() {
			builtin = append(builtin, b[0])
		}
		if slices.Contains(builtin, p.Variant) {
			s2, err := p.parseCompare(p.Variant, nil, s.Seed, "")
			if err != nil {
				return nil, err
			}
			p.Base, found = s2.Variants[len(s2.Variants)-1].Fabric, true
		} else {
			return nil, flagOr(d, p.File, where, "%q is neither a variant of this scenario (%s) nor a built-in one (%s)", p.Variant, strings.Join(names, ", "), strings.Join(builtin, ", "))
		}
	}
	if p.Base.Kind != fabric.KindRoCE && !d.Has("tune.params") {
		return nil, flagOr(d, p.File, where, "%s is not a RoCE variant (its fabric kind is %s): the built-in search space is RoCE's (PFC, ECN, DCQCN); list the settings to search under tune.params", p.Variant, p.Base.Kind)
	}
	switch {
	case p.IBVariant == "":
		p.IBVariant = "ib-ndr"
	case p.IBVariant == p.Variant:
		p.IBVariant = ""
	}
	g, err := s.Topology()
	if err != nil {
		return nil, err
	}
	p.LinkRate = s.Cluster.LinkRate
	// The second mix: the same cluster with twice the global batch (larger messages per
	// collective, twice the micro-batches per step).
	if s.Workload == nil {
		return nil, flagOr(d, p.File, where, "tune needs a model workload for its second traffic mix (the same model at twice the global batch); this scenario replays Chakra traces")
	}
	w := *s.Workload
	w.Defaults()
	p.Holdout = mappingNode("workload", mappingNode("global_batch", 2*w.GlobalBatch))
	p.HoldoutText = fmt.Sprintf("the same cluster and model with global_batch %d instead of %d", 2*w.GlobalBatch, w.GlobalBatch)
	return linkClasses(g), nil
}

// parseCompare parses the problem's compare scenario with variant listed (added when absent),
// a candidate variant over it when fab is not nil (its name is candidateName), the seed set and
// the mix merged over it.
func (p *Problem) parseCompare(variant string, fab [][2]string, seed uint64, mix string) (*compare.Scenario, error) {
	doc, _, err := compareDoc(p.Source, variant, fab, seed, mix)
	if err != nil {
		return nil, err
	}
	return compare.Parse([]byte(doc), p.File, p.Dir)
}

// fromRun takes a run scenario's fabric and the default second mix.
func (p *Problem) fromRun(s *scenario.Scenario, sec section, d *yamlstrict.Decoder, o LoadOptions) ([]linkClass, error) {
	p.Name, p.Seed, p.Base = s.Name, s.Seed, s.FabricConfig()
	p.Backend = backend.Packet
	if s.Backend != "" {
		p.Backend = backend.Name(s.Backend)
	}
	if o.Variant != "" {
		return nil, &yamlstrict.Error{File: p.File, Field: "--variant", Msg: "a run scenario has one fabric and no variants (--variant is for compare scenarios)"}
	}
	if sec.Variant != "" {
		return nil, d.At("tune.variant", "a run scenario has one fabric and no variants")
	}
	if p.Base.Kind != fabric.KindRoCE && !d.Has("tune.params") {
		return nil, &yamlstrict.Error{File: p.File, Field: "fabric.kind", Msg: fmt.Sprintf("%s: the built-in search space is RoCE's (PFC, ECN, DCQCN); list this fabric's settings under tune.params to search them", p.Base.Kind)}
	}
	g, err := s.BuildTopology()
	if err != nil {
		return nil, err
	}
	for _, h := range g.Hosts {
		p.LinkRate = max(p.LinkRate, g.Links[g.Nodes[h].Ports[0].Link].Rate)
	}
	// The second mix of a run scenario: generated flows twice as large.
	switch s.Traffic.Kind {
	case "permutation", "shift", "incast", "all-to-all":
		p.Holdout = mappingNode("traffic", mappingNode("size", (2*s.Traffic.Size).String()))
		p.HoldoutText = fmt.Sprintf("the same %s traffic with flows of %v instead of %v", s.Traffic.Kind, 2*s.Traffic.Size, s.Traffic.Size)
	}
	return linkClasses(g), nil
}

// linkClasses lists the distinct (rate, latency) pairs of g's links, in order of appearance.
func linkClasses(g *topo.Graph) []linkClass {
	var out []linkClass
	for _, l := range g.Links {
		c := linkClass{l.Rate, l.Latency}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// applySection applies the tune: section and the command line: objective, budget, population,
// space, second mix.
func (p *Problem) applySection(sec section, d *yamlstrict.Decoder, o LoadOptions) error {
	p.Objective = objectives[p.Kind][0]
	obj, where := sec.Objective, "tune.objective"
	if o.Objective != "" {
		obj, where = o.Objective, "--objective"
	}
	if obj != "" {
		if !slices.Contains(objectives[p.Kind], Objective(obj)) {
			return flagOr(d, p.File, where, "%q is not an objective of a %s scenario (valid: %s)", obj, p.Kind, objectiveList(p.Kind))
		}
		p.Objective = Objective(obj)
	}
	p.Budget = DefaultBudget
	if d.Has("tune.budget") {
		if sec.Budget < 1 || sec.Budget > MaxBudget {
			return d.At("tune.budget", "%d: want 1..%d evaluations", sec.Budget, MaxBudget)
		}
		p.Budget = sec.Budget
	}
	if o.Budget > 0 {
		p.Budget = o.Budget
	}
	if d.Has("tune.population") {
		if sec.Population < 2 || sec.Population > 1000 {
			return d.At("tune.population", "%d: want 2..1000 candidates per generation (leave it out for CMA-ES's 4 + 3 ln(parameters))", sec.Population)
		}
		p.Population = sec.Population
	}
	switch sec.Space {
	case "", "builtin":
		p.Space = builtinSpace(p.Base, p.LinkRate, p.NeedHeadroom)
	case "listed":
	default:
		return d.At("tune.space", "%q unknown (valid: builtin = the built-in parameters and those listed under params, listed = only those listed)", sec.Space)
	}
	if err := p.readParams(sec.Params, d); err != nil {
		return err
	}
	choices, err := p.readChoices(sec.Choices, d)
	if err != nil {
		return err
	}
	if len(choices) > 0 {
		var listed []Param
		for _, q := range p.Space {
			if q.Source == "scenario" {
				listed = append(listed, q)
			}
		}
		p.buildArms(choices, sec.Space != "listed", listed)
		if !slices.ContainsFunc(p.Arms, func(a Arm) bool { return a.Invalid == "" }) {
			return d.At("tune.choices", "no combination of the choices is a valid configuration (%s: %s)", p.Arms[0].Name, p.Arms[0].Invalid)
		}
	}
	if len(p.Space) == 0 {
		return flagOr(d, p.File, "tune.params", "nothing to search: list settings with their ranges under tune.params (e.g. fabric.dcqcn_rate_ai: {min: 5Mbps, max: 100Mbps})")
	}
	if sec.Holdout != nil {
		if sec.Holdout.Kind != yaml.MappingNode {
			return d.At("tune.holdout", "want a mapping merged over the scenario, e.g. {workload: {global_batch: 24}}")
		}
		p.Holdout, p.HoldoutText = sec.Holdout, "the scenario with "+flowText(sec.Holdout)
	}
	if p.Holdout != nil {
		// The second mix must be a valid scenario before anything runs.
		if err := p.checkHoldout(); err != nil {
			var ye *yamlstrict.Error
			if errors.As(err, &ye) {
				// Its position is in the merged document, which no file holds.
				err = fmt.Errorf("%s: %s", ye.Field, ye.Msg)
			}
			if sec.Holdout != nil {
				return d.At("tune.holdout", "the second traffic mix is not a valid scenario: %v", err)
			}
			return &yamlstrict.Error{File: p.File, Field: "tune.holdout", Msg: fmt.Sprintf("the default second traffic mix (%s) is not valid here: %v; give tune.holdout", p.HoldoutText, err)}
		}
	}
	return nil
}

// checkHoldout loads the scenario with the second mix merged over it.
func (p *Problem) checkHoldout() error {
	if p.Kind == KindCompare {
		_, err := p.parseCompare(p.Variant, nil, p.Seed, flowText(p.Holdout))
		return err
	}
	doc, err := runDoc(p.Source, nil, p.Seed, flowText(p.Holdout))
	if err != nil {
		return err
	}
	_, err = scenario.Parse([]byte(doc), p.File, p.Dir)
	return err
}

// readParams adds the tune.params entries to the space: a key already there takes the
// section's range.
func (p *Problem) readParams(n *yaml.Node, d *yamlstrict.Decoder) error {
	if n == nil {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return d.ErrAt(n, "tune.params", "want a mapping of fabric keys to ranges, e.g. {fabric.dcqcn_rate_ai: {min: 5Mbps, max: 100Mbps, scale: log}}")
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		path := "tune.params." + kn.Value
		name, ok := strings.CutPrefix(kn.Value, "fabric.")
		if !ok {
			return d.ErrAt(kn, path, "want a fabric setting written as fabric.KEY (e.g. fabric.dcqcn_rate_ai)")
		}
		if seen[name] {
			return d.ErrAt(kn, path, "listed twice")
		}
		seen[name] = true
		par, err := paramFor(name, p.Base.Kind)
		if err != nil {
			return d.ErrAt(kn, path, "%v", err)
		}
		var spec paramSpec
		if err := d.Decode(vn, reflect.ValueOf(&spec).Elem(), path); err != nil {
			return err
		}
		for _, b := range []struct {
			key string
			n   *yaml.Node
			to  *float64
		}{{"min", spec.Min, &par.Min}, {"max", spec.Max, &par.Max}} {
			if b.n == nil {
				return d.ErrAt(vn, path+"."+b.key, "missing: a range needs min and max")
			}
			v := reflect.New(par.typ).Elem()
			if err := d.Decode(b.n, v, path+"."+b.key); err != nil {
				return err
			}
			*b.to = (&Param{index: nil}).valueOf(v)
		}
		if par.Min > par.Max {
			return d.ErrAt(spec.Min, path+".min", "%s above max %s: min must be at most max", par.Text(par.Min), par.Text(par.Max))
		}
		switch spec.Scale {
		case "":
			par.Scale = Linear
			if par.Min > 0 && par.Max/par.Min >= 10 {
				par.Scale = Log
			}
		case "log":
			if par.Min <= 0 {
				return d.At(path+".scale", "log needs min above 0 (min is %s)", par.Text(par.Min))
			}
			par.Scale = Log
		case "linear":
			par.Scale = Linear
		default:
			return d.At(path+".scale", "%q unknown (valid: log, linear)", spec.Scale)
		}
		par.Source = "scenario"
		// The scenario's own check of the bounds (a negative timer, a factor above 1).
		for _, x := range []float64{par.Min, par.Max} {
			c := p.Base
			par.Set(&c, x)
			var fe *yamlstrict.FieldError
			if err := c.Validate(); errors.As(err, &fe) && fe.Key == name {
				which := "min"
				if x == par.Max && x != par.Min {
					which = "max"
				}
				return d.At(path+"."+which, "%s: %s", par.Text(x), fe.Msg)
			}
		}
		if j := slices.IndexFunc(p.Space, func(q Param) bool { return q.Key == name }); j >= 0 {
			p.Space[j] = par
		} else {
			p.Space = append(p.Space, par)
		}
	}
	return nil
}

// valueOf reads a numeric reflect value as a float.
func (*Param) valueOf(v reflect.Value) float64 {
	switch {
	case v.CanInt():
		return float64(v.Int())
	case v.CanUint():
		return float64(v.Uint())
	}
	return v.Float()
}
