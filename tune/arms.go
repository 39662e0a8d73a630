package tune

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/yamlstrict"
)

// Categorical choices: settings that are modes or switches rather than numbers (PFC's static or
// dynamic XOFF, DCQCN on or off, QP-aware hashing, ECMP or spraying) have no range for CMA-ES,
// and a count with few sensible values (QPs per connection: 1, 2, 4) is better tried value by
// value than rounded from a continuous coordinate.
// A scenario lists them under tune.choices; every combination of their values is an arm with
// its own continuous space (a static-PFC arm searches XOFF and XON, a dynamic one alpha; an arm
// without DCQCN searches no DCQCN or ECN setting), searched by its own CMA-ES, and successive
// halving (Karnin, Koren and Somekh, ICML 2013) shares the budget among the arms: every arm
// still in the race runs one generation per round, then the better half goes on, until one arm
// is left, which gets the rest of the budget.

// MaxArms bounds the combinations of tune.choices: each arm needs at least a generation.
const MaxArms = 16

// Arm is one combination of the categorical choices.
type Arm struct {
	// Name is the combination as key=value pairs ("pfc_threshold=static dcqcn=false").
	Name string
	// Choice is every choice key with the arm's value (and ecn when it follows dcqcn);
	// Settings are those that differ from the configured fabric, written over it.
	Choice   [][2]string
	Settings [][2]string
	// Base is the configured fabric with the arm's choices, Space its continuous search space.
	Base  fabric.Config
	Space []Param
	// Invalid says why the arm's configuration cannot run ("" when it can).
	Invalid string
}

// choiceKey is one tune.choices entry: a fabric key and its values as text.
type choiceKey struct {
	key    string
	values []string
}

// builtinChoices are `choices: builtin` for a RoCE fabric: the PFC threshold rule (when PFC is
// on) and DCQCN on or off (ECN marking follows it: without DCQCN nothing reacts to a mark),
// the configured value first.
func builtinChoices(c fabric.Config) []choiceKey {
	if c.Kind != fabric.KindRoCE {
		return nil
	}
	var out []choiceKey
	if c.RoCE.PFC {
		v := []string{string(fabric.PFCDynamic), string(fabric.PFCStatic)}
		if c.RoCE.PFCThreshold == fabric.PFCStatic {
			v[0], v[1] = v[1], v[0]
		}
		out = append(out, choiceKey{"pfc_threshold", v})
	}
	v := []string{"true", "false"}
	if !c.RoCE.DCQCN {
		v[0], v[1] = v[1], v[0]
	}
	return append(out, choiceKey{"dcqcn", v})
}

// readChoices reads tune.choices: "builtin", or a mapping of fabric.KEY to a list of values
// for true/false and named (mode) settings of the fabric's kind.
func (p *Problem) readChoices(n *yaml.Node, d *yamlstrict.Decoder) ([]choiceKey, error) {
	if n == nil {
		return nil, nil
	}
	if n.Kind == yaml.ScalarNode {
		if n.Value != "builtin" {
			return nil, d.ErrAt(n, "tune.choices", "%q unknown: want builtin (PFC threshold rule and DCQCN on or off) or a mapping of fabric keys to lists of values, e.g. {fabric.pfc_threshold: [dynamic, static]}", n.Value)
		}
		ch := builtinChoices(p.Base)
		if ch == nil {
			return nil, d.ErrAt(n, "tune.choices", "the built-in choices are RoCE's (PFC threshold rule, DCQCN on or off); fabric kind %s: list its choices as fabric keys", p.Base.Kind)
		}
		return ch, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, d.ErrAt(n, "tune.choices", "want builtin or a mapping of fabric keys to lists of values, e.g. {fabric.pfc_threshold: [dynamic, static], fabric.dcqcn: [true, false]}")
	}
	var out []choiceKey
	arms := 1
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		path := "tune.choices." + kn.Value
		name, ok := strings.CutPrefix(kn.Value, "fabric.")
		if !ok {
			return nil, d.ErrAt(kn, path, "want a fabric setting written as fabric.KEY (e.g. fabric.pfc_threshold)")
		}
		if slices.ContainsFunc(out, func(c choiceKey) bool { return c.key == name }) {
			return nil, d.ErrAt(kn, path, "listed twice")
		}
		if err := choosable(name, p.Base.Kind); err != nil {
			return nil, d.ErrAt(kn, path, "%v", err)
		}
		if vn.Kind != yaml.SequenceNode || len(vn.Content) == 0 {
			return nil, d.ErrAt(vn, path, "want a list of the values to try, e.g. [dynamic, static]")
		}
		ck := choiceKey{key: name}
		for _, x := range vn.Content {
			c := p.Base
			if x.Kind != yaml.ScalarNode {
				return nil, d.ErrAt(x, path, "want a value, got a %s", yamlstrict.KindName(x))
			}
			if err := applyText(&c, name, x.Value); err != nil {
				msg := strings.TrimPrefix(err.Error(), name+": ")
				if !strings.Contains(msg, x.Value) {
					msg = fmt.Sprintf("%q: %s", x.Value, msg)
				}
				return nil, d.ErrAt(x, path, "%s", msg)
			}
			v := settingText(c, name)
			if slices.Contains(ck.values, v) {
				return nil, d.ErrAt(x, path, "%s listed twice", v)
			}
			ck.values = append(ck.values, v)
		}
		arms *= len(ck.values)
		if arms > MaxArms {
			return nil, d.ErrAt(kn, path, "%d combinations of the choices so far, more than %d: every combination needs generations of its own", arms, MaxArms)
		}
		out = append(out, ck)
	}
	return out, nil
}

// choosable says whether a fabric key can be a categorical choice of fabric kind: a true/false
// or named setting, or a few values of a numeric one (qps_per_conn: [1, 2, 4]); lists cannot.
func choosable(name string, kind fabric.Kind) error {
	for _, k := range fabric.Keys() {
		if k.Name != name {
			continue
		}
		if !k.For(kind) {
			return fmt.Errorf("is not a setting of fabric kind %s", kind)
		}
		switch t := reflect.TypeOf(fabric.Config{}).FieldByIndex(k.Index).Type; t.Kind() {
		case reflect.Slice, reflect.Array, reflect.Struct, reflect.Map:
			return fmt.Errorf("is a %s setting; choices are true/false, named or numeric settings", describeType(t))
		}
		return nil
	}
	var keys []string
	for _, k := range fabric.Keys() {
		if k.For(kind) {
			keys = append(keys, k.Name)
		}
	}
	return fmt.Errorf("is not a fabric key (keys of kind %s: %s)", kind, strings.Join(keys, ", "))
}

// settingText is key's value in c as a scenario writes it.
func settingText(c fabric.Config, key string) string {
	for _, k := range fabric.Keys() {
		if k.Name == key {
			return yamlstrict.Text(reflect.ValueOf(c).FieldByIndex(k.Index))
		}
	}
	return ""
}

// buildArms makes one arm per combination of the choices (the first key varying slowest), each
// with its space: the built-in ranges for what the arm turns on (when the space is builtin),
// then the scenario's listed ranges.
func (p *Problem) buildArms(choices []choiceKey, builtin bool, listed []Param) {
	n := 1
	for _, c := range choices {
		n *= len(c.values)
	}
	explicitECN := slices.ContainsFunc(choices, func(c choiceKey) bool { return c.key == "ecn" })
	for i := range n {
		a := Arm{Base: p.Base}
		var names []string
		rest := i
		idx := make([]int, len(choices))
		for j := len(choices) - 1; j >= 0; j-- {
			idx[j] = rest % len(choices[j].values)
			rest /= len(choices[j].values)
		}
		for j, c := range choices {
			v := c.values[idx[j]]
			a.Choice = append(a.Choice, [2]string{c.key, v})
			names = append(names, c.key+"="+v)
			if c.key == "dcqcn" && !explicitECN && p.Base.Kind == fabric.KindRoCE {
				// DCQCN needs ECN marking, and ECN marks do nothing without it.
				a.Choice = append(a.Choice, [2]string{"ecn", v})
			}
		}
		a.Name = strings.Join(names, " ")
		for _, kv := range a.Choice {
			if err := applyText(&a.Base, kv[0], kv[1]); err != nil {
				a.Invalid = fmt.Sprintf("%s: %v", kv[0], err)
			}
		}
		for _, kv := range a.Choice {
			if settingText(p.Base, kv[0]) != kv[1] {
				a.Settings = append(a.Settings, kv)
			}
		}
		if a.Invalid == "" {
			if err := a.Base.Validate(); err != nil {
				a.Invalid = err.Error()
			}
		}
		if builtin {
			a.Space = builtinSpace(a.Base, p.LinkRate, p.NeedHeadroom)
		}
		for _, q := range listed {
			if slices.ContainsFunc(choices, func(c choiceKey) bool { return c.key == q.Key }) {
				continue
			}
			if j := slices.IndexFunc(a.Space, func(x Param) bool { return x.Key == q.Key }); j >= 0 {
				a.Space[j] = q
			} else {
				a.Space = append(a.Space, q)
			}
		}
		// A numeric setting chosen from values is not searched within the arm.
		a.Space = slices.DeleteFunc(a.Space, func(q Param) bool {
			return slices.ContainsFunc(choices, func(c choiceKey) bool { return c.key == q.Key })
		})
		p.Arms = append(p.Arms, a)
	}
	// The problem's space is the union of the arms' (for tune.json, the report and the
	// sensitivity), in order of first appearance.
	p.Space = nil
	for _, a := range p.Arms {
		for _, q := range a.Space {
			if !slices.ContainsFunc(p.Space, func(x Param) bool { return x.Key == q.Key }) {
				p.Space = append(p.Space, q)
			}
		}
	}
}

// armOf returns the index of the arm whose choices cfg has, or -1.
func (p *Problem) armOf(cfg fabric.Config) int {
	for i, a := range p.Arms {
		if !slices.ContainsFunc(a.Choice, func(kv [2]string) bool { return settingText(cfg, kv[0]) != kv[1] }) {
			return i
		}
	}
	return -1
}

// ArmResult is one arm of a search over categorical choices, in tune.json.
type ArmResult struct {
	Name string `json:"name"`
	// Settings are the arm's choices written over the configured fabric.
	Settings map[string]string `json:"settings,omitempty"`
	// Invalid says why the arm could not run (its configuration is not valid).
	Invalid string `json:"invalid,omitempty"`
	// Dimensions is the size of its continuous space, Population its generations' size.
	Dimensions int `json:"dimensions"`
	Population int `json:"population,omitempty"`
	// Evaluations counts the search's evaluations in this arm, Rounds the successive-halving
	// rounds it ran in.
	Evaluations int `json:"evaluations"`
	Rounds      int `json:"rounds"`
	// Best is its best valid objective and BestEvaluation that evaluation's number (0: none).
	Best           *float64 `json:"best"`
	BestEvaluation int      `json:"best_evaluation,omitempty"`
	// Outcome: "winner", "eliminated after round N", "kept to the end" or "not run".
	Outcome string `json:"outcome"`
}

// armState is an arm during the search.
type armState struct {
	i     int
	arm   *Arm
	c     *cma
	start [][2]string // the settings every candidate of the arm carries beneath its own
	evals []int       // indices into the search's evaluations
	round int
	out   string
	stuck bool // a generation was cut short by the budget: the method cannot go on
}

func (a *armState) best(es []Evaluation) (float64, int) {
	b, at := math.Inf(1), -1
	for _, i := range a.evals {
		if e := es[i]; e.Feasible && *e.Objective < b {
			b, at = *e.Objective, i
		}
	}
	return b, at
}

// searchArms is the search over categorical choices: the start points as search does, then each
// arm's start (its choices over the better start point), then successive halving over the arms,
// one CMA-ES generation per arm and round, and the last arm's generations to the budget.
func (s *searcher) searchArms(ctx context.Context) error {
	p := s.p
	starts, err := s.evaluateStarts(ctx)
	if err != nil {
		return err
	}
	startSettings, startRole := [][2]string(nil), "configured"
	if b := s.best(); b >= 0 {
		startSettings, startRole = starts[b].settings, starts[b].role
	}
	// Each valid arm starts from its choices over the better start point; the configured arm
	// (no settings of its own) from that point itself, already evaluated.
	var arms []*armState
	var armCands []candidate
	var armAt []*armState
	for i := range p.Arms {
		a := &p.Arms[i]
		st := &armState{i: i, arm: a}
		s.armStates = append(s.armStates, st)
		if a.Invalid != "" {
			st.out = "not run"
			continue
		}
		st.start = overlay(armStart(startSettings, a.Base), a.Settings)
		arms = append(arms, st)
		if len(a.Settings) == 0 {
			for j := range s.res.Evaluations {
				st.evals = append(st.evals, j)
			}
			continue
		}
		if len(s.res.Evaluations)+len(armCands) >= p.Budget {
			st.out = "not run"
			arms = arms[:len(arms)-1]
			continue
		}
		armCands = append(armCands, s.apply("arm start", 0, st.start))
		armAt = append(armAt, st)
	}
	if len(armCands) > 0 {
		es, err := s.evaluate(ctx, armCands)
		if err != nil {
			return err
		}
		for j := range es {
			es[j].Arm = armAt[j].arm.Name
			armAt[j].evals = append(armAt[j].evals, len(s.res.Evaluations)+j)
		}
		s.record(es)
	}
	for j := range s.res.Evaluations[:len(starts)] {
		if k := p.armOf(s.apply("", 0, settingsOf(s.res.Evaluations[j].Fabric)).cfg); k >= 0 {
			s.res.Evaluations[j].Arm = p.Arms[k].Name
		}
	}
	s.note()
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
	if used >= p.Budget || len(arms) == 0 {
		s.finishArms(arms)
		return nil
	}
	// Generations before the last arm is alone: one per arm and round while more than one is
	// left; the population is CMA-ES's default for the arm's dimension, smaller when the budget
	// would not hold those rounds and a generation of the last arm (at least 4).
	gens := 0
	for k := len(arms); k > 1; k = (k + 1) / 2 {
		gens += k
	}
	popCap := max(4, (p.Budget-used)/(gens+1))
	for _, a := range arms {
		pop := p.Population
		if pop == 0 {
			pop = min(4+int(3*math.Log(float64(len(a.arm.Space)))), popCap)
		}
		mean := s.armUnit(a.arm, s.res.Evaluations[a.evals[0]])
		if b, at := a.best(s.res.Evaluations); !math.IsInf(b, 1) {
			mean = s.armUnit(a.arm, s.res.Evaluations[at])
		}
		// Each arm its own stream of samples: arm i's is the search seed's stream i.
		a.c = newCMAStream(len(a.arm.Space), mean, SearchSigma, pop, s.o.Seed, uint64(a.i))
		defer a.c.stop()
	}
	s.res.Method = fmt.Sprintf("successive halving over %d arms of the categorical choices (one generation per arm and round, the better half goes on), CMA-ES (gonum optimize.CmaEsChol) within each arm, population 4 + 3 ln(the arm's settings) up to %d, initial step %.2f of each range, each arm from its choices over the %s point",
		len(arms), popCap, SearchSigma, startRole)
	alive := arms
	for gen := 1; used < p.Budget && len(alive) > 0; gen++ {
		var cands []candidate
		var from []*armState
		left := p.Budget - used
		for k, a := range alive {
			if a.stuck {
				continue
			}
			x := a.c.ask()
			if x == nil {
				a.stuck = true
				continue
			}
			// Where the budget cannot hold every arm's generation, it is shared evenly.
			share := left / len(alive)
			if k < left%len(alive) {
				share++
			}
			n := min(len(x), share)
			if n < len(x) {
				a.stuck = true
			}
			for _, pt := range x[:n] {
				cands = append(cands, s.apply("search", gen, s.settingsIn(a.arm, pt, a.start)))
				from = append(from, a)
			}
			a.round++
		}
		if len(cands) == 0 {
			break
		}
		es, err := s.evaluate(ctx, cands)
		if err != nil {
			return err
		}
		for j := range es {
			es[j].Arm = from[j].arm.Name
			from[j].evals = append(from[j].evals, len(s.res.Evaluations)+j)
		}
		s.record(es)
		used += len(cands)
		s.note()
		// Tell each arm whose generation ran whole.
		j := 0
		for _, a := range alive {
			n := 0
			for j+n < len(from) && from[j+n] == a {
				n++
			}
			if n > 0 && !a.stuck {
				fs := make([]float64, n)
				for q := range n {
					fs[q] = penalty
					if e := es[j+q]; e.Feasible {
						fs[q] = *e.Objective
					}
				}
				a.c.tell(fs)
				if a.c.done {
					a.stuck = true
				}
			}
			j += n
		}
		if len(alive) > 1 {
			// The better half goes on (ties: the earlier arm).
			ranked := append([]*armState(nil), alive...)
			sort.SliceStable(ranked, func(x, y int) bool {
				bx, _ := ranked[x].best(s.res.Evaluations)
				by, _ := ranked[y].best(s.res.Evaluations)
				return bx < by
			})
			keep := (len(alive) + 1) / 2
			for _, a := range ranked[keep:] {
				a.out = fmt.Sprintf("eliminated after round %d", gen)
			}
			alive = slices.DeleteFunc(slices.Clone(alive), func(a *armState) bool { return a.out != "" })
		}
		if !slices.ContainsFunc(alive, func(a *armState) bool { return !a.stuck }) {
			break
		}
	}
	s.finishArms(arms)
	return nil
}

// finishArms fills tune.json's arms.
func (s *searcher) finishArms(arms []*armState) {
	winner := -1
	if b := s.best(); b >= 0 {
		winner = s.p.armOf(s.apply("", 0, settingsOf(s.res.Evaluations[b].Fabric)).cfg)
	}
	for _, a := range s.armStates {
		r := ArmResult{Name: a.arm.Name, Settings: settingsMap(a.arm.Settings), Invalid: a.arm.Invalid, Dimensions: len(a.arm.Space),
			Evaluations: len(a.evals), Rounds: a.round, Outcome: a.out}
		if a.c != nil {
			r.Population = a.c.pop
		}
		if b, at := a.best(s.res.Evaluations); at >= 0 {
			r.Best, r.BestEvaluation = ptr(b), at+1
		}
		switch {
		case a.i == winner:
			r.Outcome = "winner"
		case r.Outcome == "":
			r.Outcome = "kept to the end"
		}
		s.res.Arms = append(s.res.Arms, r)
	}
}

// armStart is the start point's settings that matter in an arm: without DCQCN, none of DCQCN's
// or ECN's (the production values are DCQCN settings).
func armStart(start [][2]string, c fabric.Config) [][2]string {
	if c.Kind != fabric.KindRoCE || c.RoCE.DCQCN {
		return start
	}
	var out [][2]string
	for _, kv := range start {
		if !strings.HasPrefix(kv[0], "dcqcn_") && !strings.HasPrefix(kv[0], "ecn_") {
			out = append(out, kv)
		}
	}
	return out
}

// overlay writes over's settings over base's (a key in both takes over's value).
func overlay(base, over [][2]string) [][2]string {
	out := append([][2]string(nil), base...)
	for _, kv := range over {
		if j := indexOfKey(out, kv[0]); j >= 0 {
			out[j] = kv
		} else {
			out = append(out, kv)
		}
	}
	return out
}

// armUnit places an evaluation's configuration in an arm's space.
func (s *searcher) armUnit(a *Arm, e Evaluation) []float64 {
	cfg := s.apply("", 0, settingsOf(e.Fabric)).cfg
	u := make([]float64, len(a.Space))
	for i := range a.Space {
		u[i] = a.Space[i].Unit(a.Space[i].Get(cfg))
	}
	return u
}

// settingsIn is settingsAt in an arm's space.
func (s *searcher) settingsIn(a *Arm, x []float64, start [][2]string) [][2]string {
	saved := s.p.Space
	s.p.Space = a.Space
	defer func() { s.p.Space = saved }()
	return s.settingsAt(x, start)
}
