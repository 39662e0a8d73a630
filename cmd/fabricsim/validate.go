package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/fabricsim/fabricsim/compare"
	"github.com/fabricsim/fabricsim/cost"
	"github.com/fabricsim/fabricsim/runner"
	"github.com/fabricsim/fabricsim/scenario"
	"github.com/fabricsim/fabricsim/sweep"
	"github.com/fabricsim/fabricsim/tune"
)

// The kinds of file fabricsim reads, as validate names them.
const (
	kindRun       = "run scenario"
	kindCompare   = "compare scenario"
	kindSweep     = "sweep file"
	kindCluster   = "nccl-tests cluster file"
	kindCatalogue = "price catalogue"
)

func newValidateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE.yaml",
		Short: "Check any fabricsim file (run or compare scenario, sweep, nccl-tests cluster, price catalogue) without running it",
		Long: `Validate reads a file as the command that uses it would, with the files it imports, and
says what kind of file it is and which command runs it. The kind is told by its top-level keys:
axes (a sweep file), cluster or workload (a compare scenario), items or currency (a price
catalogue), traffic (a run scenario), fabric or topology without traffic (an nccl-tests
--cluster file). A bad file exits 2 with file:line:column and the field.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			msg, err := validateFile(args[0])
			if err != nil {
				return usageErr(err)
			}
			fmt.Fprintln(c.OutOrStdout(), msg)
			return nil
		},
	}
}

// fileKind tells which kind of fabricsim file data is from its top-level keys; a file that is
// not a YAML mapping, or has none of the telling keys, is taken for a run scenario, whose
// parser then says what is wrong with it.
func fileKind(data []byte) string {
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil || len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return kindRun
	}
	has := map[string]bool{}
	m := root.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		has[m.Content[i].Value] = true
	}
	switch {
	case has["axes"]:
		return kindSweep
	case has["cluster"] || has["workload"]:
		return kindCompare
	case has["items"] || has["currency"]:
		return kindCatalogue
	case has["traffic"]:
		return kindRun
	case has["fabric"] || has["topology"]:
		return kindCluster
	}
	return kindRun
}

// validateFile checks path as the command of its kind would and says how to run it.
func validateFile(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fileErr(path, "file", err)
	}
	kind := fileKind(data)
	article := "a"
	if strings.HasPrefix(kind, "nccl") {
		article = "an"
	}
	valid := func(detail, how string) string {
		if detail != "" {
			detail = " (" + detail + ")"
		}
		return fmt.Sprintf("%s: %s %s, valid%s; %s", path, article, kind, detail, how)
	}
	switch kind {
	case kindSweep:
		s, err := sweep.Load(path)
		if err != nil {
			return "", err
		}
		runs, err := s.Expand()
		if err != nil {
			return "", err
		}
		if err := s.Validate(runner.SweepEngine{}, runs); err != nil {
			return "", err
		}
		return valid(fmt.Sprintf("%d runs", len(runs)), fmt.Sprintf("run it with `fabricsim sweep %s --out DIR`", path)), nil
	case kindCompare:
		s, err := compare.Load(path)
		if err != nil {
			return "", err
		}
		if s.Tune != nil {
			if err := checkTune(path); err != nil {
				return "", err
			}
			return valid(fmt.Sprintf("%d variants, a tune: section", len(s.Variants)), fmt.Sprintf("run it with `fabricsim compare %s` or `fabricsim tune %s`", path, path)), nil
		}
		return valid(fmt.Sprintf("%d variants", len(s.Variants)), fmt.Sprintf("run it with `fabricsim compare %s`", path)), nil
	case kindCatalogue:
		c, err := cost.LoadCatalogue(path)
		if err != nil {
			return "", err
		}
		return valid(fmt.Sprintf("%d items with the built-in ones", len(c.Items)), fmt.Sprintf("use it with `fabricsim compare --prices %s`", path)), nil
	case kindCluster:
		if _, _, _, err := ncclFabric(&ncclFlags{cluster: path}); err != nil {
			return "", err
		}
		return valid("", fmt.Sprintf("use it with `fabricsim nccl-tests all_reduce_perf --cluster %s`", path)), nil
	}
	s, err := scenario.Parse(data, path, dirOf(path))
	if err != nil {
		return "", err
	}
	b, err := s.Build()
	if err != nil {
		return "", err
	}
	if s.Tune != nil {
		if err := checkTune(path); err != nil {
			return "", err
		}
	}
	return valid(fmt.Sprintf("%d hosts, %d switches, %d links, %d messages", len(b.Graph.Hosts), b.Graph.NumSwitches(), len(b.Graph.Links), len(b.Work.Msgs)),
		fmt.Sprintf("run it with `fabricsim run %s`", path)), nil
}

// checkTune reads a scenario's tune: section as `fabricsim tune` would.
func checkTune(path string) error {
	_, err := tune.Load(path, tune.LoadOptions{})
	return err
}

// fileErr is every command's message for a file it cannot read: "PATH: cannot read WHAT: REASON",
// the reason in the system's words without the path repeated ("no such file or directory").
func fileErr(path, what string, err error) error {
	if pe, ok := err.(*os.PathError); ok {
		err = pe.Err
	}
	return fmt.Errorf("%s: cannot read %s: %w", path, what, err)
}
