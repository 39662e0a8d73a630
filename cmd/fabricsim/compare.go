package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/fabricsim/fabricsim/compare"
	"github.com/fabricsim/fabricsim/examples"
	"github.com/fabricsim/fabricsim/flow"
)

// DefaultCompare is the embedded scenario `fabricsim compare` runs when given none.
const DefaultCompare = "compare-default.yaml"

type compareFlags struct {
	out      string
	variants string
	backend  string
	steps    int
	fidelity string
	quiet    bool
}

func newCompareCmd() *cobra.Command {
	var f compareFlags
	c := &cobra.Command{
		Use:   "compare [SCENARIO.yaml] [--out DIR] [--variants a,b] [--backend packet|flow|analytic] [--fidelity auto|full|classes]",
		Short: "Run one training workload on InfiniBand and RoCEv2 variants, with cost, in one report",
		Long: `Compare simulates one training step of a transformer workload on a GPU cluster for every
fabric variant of the scenario (by default InfiniBand NDR, RoCEv2 with vendor-default DCQCN and
RoCEv2 tuned), prices each network, and prints one row per variant: step time, exposed
communication, collective completion percentiles, step-to-step variation, drops, pauses and
stalls, network cost, cost per GPU, and the time and cost to train the scenario's tokens.

With no argument it runs the built-in ` + DefaultCompare + ` (Llama-3-8B on 64 H100s). It writes
DIR/compare.json (every number and the scenario) and DIR/report.html (self-contained charts).
See docs/compare.md for the scenario format and what is simulated at packet level.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return runCompare(c, args, &f)
		},
	}
	c.Flags().StringVar(&f.out, "out", "compare-out", "write compare.json and report.html into this directory (\"\" for none)")
	c.Flags().StringVar(&f.variants, "variants", "", "run only these variants, comma-separated (e.g. ib-ndr,roce-tuned)")
	c.Flags().StringVar(&f.backend, "backend", "", "network backend: packet, flow or analytic (default: the scenario's)")
	c.Flags().IntVar(&f.steps, "steps", 0, "simulated steps (default: the scenario's)")
	c.Flags().StringVar(&f.fidelity, "fidelity", "", "auto, full (whole steps) or classes (collective classes one by one); default: the scenario's")
	c.Flags().BoolVar(&f.quiet, "quiet", false, "no progress bar")
	return c
}

func loadCompare(args []string) (*compare.Scenario, error) {
	if len(args) == 0 {
		data, err := examples.Read(DefaultCompare)
		if err != nil {
			return nil, err
		}
		return compare.Parse(data, "<embedded>/"+DefaultCompare, "")
	}
	return compare.Load(args[0])
}

func runCompare(c *cobra.Command, args []string, f *compareFlags) error {
	s, err := loadCompare(args)
	if err != nil {
		return usageErr(err)
	}
	if f.backend != "" && f.backend != "packet" && f.backend != "analytic" && f.backend != "flow" {
		return usageErr(fmt.Errorf("--backend %q: valid: packet, flow, analytic", f.backend))
	}
	if f.steps != 0 {
		if f.steps < 1 || f.steps > 100 {
			return usageErr(fmt.Errorf("--steps %d: valid: 1..100", f.steps))
		}
		s.Steps = f.steps
	}
	switch f.fidelity {
	case "", compare.FidelityAuto, compare.FidelityFull, compare.FidelityClasses:
	default:
		return usageErr(fmt.Errorf("--fidelity %q: valid: auto, full, classes", f.fidelity))
	}
	opt := compare.Options{Backend: f.backend, Fidelity: f.fidelity}
	if f.variants != "" {
		for _, v := range strings.Split(f.variants, ",") {
			if v = strings.TrimSpace(v); v != "" {
				opt.Variants = append(opt.Variants, v)
			}
		}
	}
	errw := c.ErrOrStderr()
	var bar *progressbar.ProgressBar
	if ef, ok := errw.(*os.File); ok && !f.quiet && term.IsTerminal(int(ef.Fd())) {
		opt.Progress = func(done, total int) {
			if bar == nil {
				bar = progressbar.NewOptions(total,
					progressbar.OptionSetWriter(errw),
					progressbar.OptionSetDescription("compare "+s.Name),
					progressbar.OptionShowCount(),
					progressbar.OptionSetPredictTime(true),
					progressbar.OptionSetElapsedTime(true),
					progressbar.OptionThrottle(100*time.Millisecond),
					progressbar.OptionShowDescriptionAtLineEnd(),
					progressbar.OptionClearOnFinish(),
				)
			}
			_ = bar.Set(done)
		}
	}
	res, err := compare.Run(s, opt)
	if bar != nil {
		_ = bar.Finish()
	}
	if err != nil {
		var le *flow.LimitError
		if _, ok := err.(*compare.Error); ok || errors.As(err, &le) {
			return usageErr(err)
		}
		return failureErr(err)
	}
	out := c.OutOrStdout()
	if err := res.WriteTable(out); err != nil {
		return failureErr(err)
	}
	if f.out == "" {
		return nil
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return failureErr(err)
	}
	for name, write := range map[string]func(io.Writer) error{"compare.json": res.WriteJSON, "report.html": res.WriteHTML} {
		path := filepath.Join(f.out, name)
		fh, err := os.Create(path)
		if err != nil {
			return failureErr(err)
		}
		werr := write(fh)
		if cerr := fh.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return failureErr(fmt.Errorf("%s: %w", path, werr))
		}
	}
	fmt.Fprintf(out, "\nwrote %s and %s (%.1f s)\n", filepath.Join(f.out, "compare.json"), filepath.Join(f.out, "report.html"), res.WallSeconds)
	return nil
}
