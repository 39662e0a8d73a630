package tune

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sort"

	"go.yaml.in/yaml/v3"

	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/compare"
	"github.com/fabricsim/fabricsim/runner"
	"github.com/fabricsim/fabricsim/scenario"
)

// candidateName is the variant a compare evaluation adds for the candidate's settings.
const candidateName = "tune-candidate"

// evalDoc is one evaluation as the sweep machinery carries it (sweep.Run.Scenario, the record's
// scenario): the scenario's text without its tune: section, what to run of it and with which
// settings. Its bytes identify the evaluation (runID), so the same candidate on the same
// scenario is evaluated once however often the search proposes it.
type evalDoc struct {
	Kind Kind   `yaml:"kind"`
	File string `yaml:"file"`
	// Variant is the compare variant run (with Fabric over it when Fabric is not empty).
	Variant string `yaml:"variant,omitempty"`
	// Fabric are the candidate's settings under their scenario keys.
	Fabric  map[string]string `yaml:"fabric,omitempty"`
	Seed    uint64            `yaml:"seed"`
	Backend string            `yaml:"backend"`
	// Mix, when set, is a mapping merged over the scenario (the second traffic mix), as YAML.
	Mix    string `yaml:"mix,omitempty"`
	Source string `yaml:"source"`
}

func (e *evalDoc) settings() [][2]string {
	var out [][2]string
	for k, v := range e.Fabric {
		out = append(out, [2]string{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

func (e *evalDoc) marshal() ([]byte, error) { return yaml.Marshal(e) }

func parseEvalDoc(b []byte) (*evalDoc, error) {
	var e evalDoc
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&e); err != nil {
		return nil, fmt.Errorf("not a tune evaluation: %v", err)
	}
	if e.Kind != KindCompare && e.Kind != KindRun {
		return nil, fmt.Errorf("not a tune evaluation: kind %q", e.Kind)
	}
	return &e, nil
}

// compareDoc is a compare scenario's text with the seed set, mix merged over it, variant
// listed (added when absent) and, when fab is not nil, a candidate variant of fab over it; it
// also returns the variant to run.
func compareDoc(source, variant string, fab [][2]string, seed uint64, mixText string) (string, string, error) {
	mix, err := parseMix(mixText)
	if err != nil {
		return "", "", err
	}
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(source), &root); err != nil || len(root.Content) == 0 {
		return "", "", fmt.Errorf("scenario text does not parse: %v", err)
	}
	top := root.Content[0]
	setKey(top, "seed", scalarNode(fmt.Sprint(seed)))
	if mix != nil {
		top = merge(top, mix)
	}
	list := lookup(top, "variants")
	if list == nil || list.Kind != yaml.SequenceNode {
		list = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, n := range compare.DefaultVariantNames {
			list.Content = append(list.Content, scalarNode(n))
		}
	} else {
		list = clone(list)
	}
	listed := slices.ContainsFunc(list.Content, func(n *yaml.Node) bool {
		return n.Kind == yaml.ScalarNode && n.Value == variant || lookup(n, "name") != nil && lookup(n, "name").Value == variant
	})
	if !listed {
		list.Content = append(list.Content, scalarNode(variant))
	}
	run := variant
	if fab != nil {
		list.Content = append(list.Content, mappingNode("name", candidateName, "base", variant, "fabric", nested(fab)))
		run = candidateName
	}
	setKey(top, "variants", list)
	out, err := encode(top)
	return out, run, err
}

// runDoc is a run scenario's text with the seed set, fab over its fabric section and mix merged
// over it.
func runDoc(source string, fab [][2]string, seed uint64, mixText string) (string, error) {
	mix, err := parseMix(mixText)
	if err != nil {
		return "", err
	}
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(source), &root); err != nil || len(root.Content) == 0 {
		return "", fmt.Errorf("scenario text does not parse: %v", err)
	}
	top := root.Content[0]
	setKey(top, "seed", scalarNode(fmt.Sprint(seed)))
	if len(fab) > 0 {
		setKey(top, "fabric", merge(lookup(top, "fabric"), nested(fab)))
	}
	if mix != nil {
		top = merge(top, mix)
	}
	return encode(top)
}

// parseMix reads a second mix's YAML ("" for none).
func parseMix(text string) (*yaml.Node, error) {
	if text == "" {
		return nil, nil
	}
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(text), &n); err != nil || len(n.Content) == 0 || n.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("mix %q is not a YAML mapping", text)
	}
	return n.Content[0], nil
}

// Engine runs tune evaluations for the sweep machinery (sweep.Engine): compare scenarios through
// compare.Run, run scenarios through runner.RunContext.
type Engine struct{}

// Validate loads the evaluation's scenario without running it.
func (Engine) Validate(b []byte, name, dir string) error {
	e, err := parseEvalDoc(b)
	if err != nil {
		return err
	}
	if e.Kind == KindCompare {
		doc, _, err := compareDoc(e.Source, e.Variant, nilIfEmpty(e.settings()), e.Seed, e.Mix)
		if err != nil {
			return err
		}
		_, err = compare.Parse([]byte(doc), e.File, dir)
		return err
	}
	doc, err := runDoc(e.Source, e.settings(), e.Seed, e.Mix)
	if err != nil {
		return err
	}
	s, err := scenario.Parse([]byte(doc), e.File, dir)
	if err != nil {
		return err
	}
	_, err = s.Build()
	return err
}

func nilIfEmpty(s [][2]string) [][2]string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// Run runs the evaluation and returns its metrics: a compare variant's step time (step_s),
// collective completion (coll_p50_s, coll_p99_s), step variation, drops, PFC pauses and ECN
// marks per step and every fabric counter per step; a run's summary metrics (fct_ns.p99,
// slowdown.mean, drops.<cause>, counters). A simulation that fails (a PFC deadlock, no
// progress) returns its error, which the search reports as a violation.
func (Engine) Run(ctx context.Context, b []byte, name, dir string) (map[string]float64, error) {
	e, err := parseEvalDoc(b)
	if err != nil {
		return nil, err
	}
	if e.Kind == KindCompare {
		return runCompare(ctx, e, dir)
	}
	doc, err := runDoc(e.Source, e.settings(), e.Seed, e.Mix)
	if err != nil {
		return nil, err
	}
	s, err := scenario.Parse([]byte(doc), e.File, dir)
	if err != nil {
		return nil, err
	}
	if e.Backend != "" {
		s.Backend = e.Backend
	}
	res, _, err := runner.RunContext(ctx, s, runner.Options{})
	if err != nil {
		return nil, err
	}
	return res.Summary().Metrics(), nil
}

func runCompare(ctx context.Context, e *evalDoc, dir string) (map[string]float64, error) {
	doc, run, err := compareDoc(e.Source, e.Variant, nilIfEmpty(e.settings()), e.Seed, e.Mix)
	if err != nil {
		return nil, err
	}
	s, err := compare.Parse([]byte(doc), e.File, dir)
	if err != nil {
		return nil, err
	}
	// One simulation at a time: the sweep's pool runs evaluations side by side.
	opt := compare.Options{Variants: []string{run}, Workers: 1, Backend: backend.Name(e.Backend)}
	res, err := compare.Run(ctx, s, opt)
	if err != nil {
		return nil, err
	}
	v := res.Variants[0]
	m := map[string]float64{}
	for k, x := range v.Counters {
		m[k] = x
	}
	for k, x := range map[string]float64{
		"step_s": v.StepTime, "compute_s": v.Compute, "exposed_comm_s": v.ExposedComm,
		"coll_p50_s": v.CollP50, "coll_p99_s": v.CollP99, "step_variation": v.Variation,
		"drops": v.Drops, "pfc_pauses": v.Pauses, "ecn_marks": v.ECNMarks, "credit_stall_s": v.CreditStall,
		"events": float64(v.Events),
	} {
		m[k] = x
	}
	return m, nil
}
