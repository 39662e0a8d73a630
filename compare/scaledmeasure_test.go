package compare

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/units"
)

// cpuNow is the process's CPU time so far (user and system).
func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestScaledMeasure is a measurement harness, skipped unless SCALED_MEASURE names a compare
// scenario: it runs the scenario on the flow backend whole (Options.WholeCollectives), with the
// probe (scaledsend.go) and with every send at fixed floors (Options.ScaledSendFloor; the
// SCALED_SIZES list in MiB, -1 whole, 0 the probe), and logs each run's step time and
// collective percentiles against the whole run's and its CPU seconds. It asserts nothing
// (docs/flow.md, "Scaled-down sends", has what it measured).
func TestScaledMeasure(t *testing.T) {
	path := os.Getenv("SCALED_MEASURE")
	if path == "" {
		t.Skip()
	}
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(src, path, ".")
	if err != nil {
		t.Fatal(err)
	}
	var whole *Result
	sizes := []units.Size{-1, 0, 16 * units.MiB, 8 * units.MiB, 4 * units.MiB, 2 * units.MiB, 1 * units.MiB}
	if l := os.Getenv("SCALED_SIZES"); l != "" { // MiB, comma-separated; -1 whole, 0 the probe rule
		sizes = nil
		for _, f := range strings.Split(l, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, units.Size(n)*units.MiB)
		}
	}
	for _, m := range sizes {
		c0 := cpuNow()
		r, err := Run(context.Background(), s, Options{Backend: backend.Flow, WholeCollectives: m < 0, ScaledSendFloor: max(m, 0)})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("floor %d MiB (0: rule, -1 whole): cpu %.2f s", m/units.MiB, (cpuNow() - c0).Seconds())
		if m < 0 {
			whole = r
			for _, v := range r.Variants {
				t.Logf("  whole %s step %.6g p50 %.6g p99 %.6g", v.Variant.Name, v.Steps[0].StepTime, v.CollP50, v.CollP99)
			}
			continue
		}
		for _, v := range r.Variants {
			t.Logf("  abs %s step %.6g p50 %.6g p99 %.6g", v.Variant.Name, v.Steps[0].StepTime, v.CollP50, v.CollP99)
		}
		if whole == nil {
			continue
		}
		for i, v := range r.Variants {
			w := whole.Variants[i]
			t.Logf("  %s step %+.3f %% p50 %+.3f %% p99 %+.3f %%", v.Variant.Name, 100*(v.Steps[0].StepTime/w.Steps[0].StepTime-1), 100*(v.CollP50/w.CollP50-1), 100*(v.CollP99/w.CollP99-1))
		}
	}
}
