package compare

import (
	"context"
	"errors"
	"reflect"

	"go.yaml.in/yaml/v3"

	"github.com/fabricsim/fabricsim/chakra"
	"github.com/fabricsim/fabricsim/training"
	"github.com/fabricsim/fabricsim/yamlstrict"
)

// TraceWorkload is `workload: {chakra: PREFIX}`: a job replayed from Chakra execution traces,
// one file per rank, PREFIX.<rank>.et (package chakra; docs/chakra.md has the mapping), in
// place of a training model. Rank r runs on GPU r.
type TraceWorkload struct {
	// Chakra is the traces' path prefix, relative to the scenario file.
	Chakra string `yaml:"chakra" json:"chakra"`
	// CommGroups is an ASTRA-sim communicator-group file (JSON {"<pg id>": [ranks]}), relative
	// to the scenario file; optional.
	CommGroups string `yaml:"comm_groups" json:"comm_groups,omitempty"`
	// TokensPerStep, when set, gives the time and cost to train the scenario's tokens.
	TokensPerStep int64 `yaml:"tokens_per_step" json:"tokens_per_step,omitempty"`
}

// decodeTrace decodes a trace workload, when the workload mapping has a chakra key, and returns
// the top mapping without it for the rest of the scenario's decoding.
func (s *Scenario) decodeTrace(top *yaml.Node) (*yaml.Node, error) {
	w := yamlstrict.Lookup(top, "workload")
	if yamlstrict.Lookup(w, "chakra") == nil {
		return top, nil
	}
	s.Trace = &TraceWorkload{}
	if err := s.d.Decode(w, reflect.ValueOf(s.Trace).Elem(), "workload"); err != nil {
		return nil, err
	}
	rest := *top
	rest.Content = nil
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value != "workload" {
			rest.Content = append(rest.Content, top.Content[i], top.Content[i+1])
		}
	}
	return &rest, nil
}

// loadTrace reads the traces and builds their plan; an unreadable or unreplayable trace is an
// error at workload.chakra whose message names the trace file, the node and the field.
func (s *Scenario) loadTrace() error {
	t := s.Trace
	switch {
	case t.Chakra == "":
		return s.d.At("workload.chakra", "empty: want the traces' path prefix, e.g. traces/step for traces/step.0.et, traces/step.1.et, ...")
	case t.TokensPerStep < 0:
		return s.d.At("workload.tokens_per_step", "%d: must not be negative", t.TokensPerStep)
	}
	opt := chakra.Options{}
	if t.CommGroups != "" {
		opt.CommGroups = s.Path(t.CommGroups)
	}
	job, err := chakra.Load(s.Path(t.Chakra), opt)
	if err != nil {
		field := "workload.chakra"
		var ce *chakra.Error
		if errors.As(err, &ce) && opt.CommGroups != "" && ce.File == opt.CommGroups {
			field = "workload.comm_groups"
		}
		return s.d.At(field, "%v", err)
	}
	job.Plan.TokensPerStep = t.TokensPerStep
	s.trace = job
	return nil
}

// Plan is the step the scenario simulates: the training model's plan (training.Build), or the
// plan of its Chakra traces. A trace's plan is built once, when the scenario is parsed.
func (s *Scenario) Plan() (*training.Plan, error) { return s.plan(context.Background()) }

// plan is Plan stopped by ctx (training.BuildContext): a 16,384-GPU plan takes seconds to build.
func (s *Scenario) plan(ctx context.Context) (*training.Plan, error) {
	if s.trace != nil {
		return s.trace.Plan, nil
	}
	if len(s.Jobs) > 0 {
		return s.jobsPlan(ctx) // jobs.go
	}
	cfg := *s.Workload
	return training.BuildContext(ctx, &cfg)
}
