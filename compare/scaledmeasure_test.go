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
// default rule (scaledsend.go: the probe, then two sizes), with the one-size rule
// (Options.OneSizeScaledSends), with pairs (Options.ScaledSendPair) and with every send at fixed
// floors (Options.ScaledSendFloor; the SCALED_SIZES list: MiB, -1 whole, sends the sends whole
// with the rings' prefixes, the reference where whole rings cost too much, 0 the default rule,
// one the one-size rule, a:b a pair, seedcorr the default rule with Options.SeedCorrection, nospread
// the default rule with Options.NoPauseSpread), and logs each run's step time and
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
	twoSizeByMessage = os.Getenv("SCALED_BYMESSAGE") != "" // pair the two sizes' messages by identity
	defer func() { twoSizeByMessage = false }()
	var whole *Result
	type config struct {
		what string
		opt  Options
	}
	var cfgs []config
	list := os.Getenv("SCALED_SIZES") // comma-separated; MiB, -1 whole, "sends" the sends whole (ring prefixes kept), 0 the default rule, "one" the one-size rule, "a:b" a pair in MiB
	if list == "" {
		list = "-1,0,one,16,8,4,2,1"
	}
	for _, f := range strings.Split(list, ",") {
		c := config{what: f, opt: Options{Backend: backend.Flow}}
		switch lo, hi, pair := strings.Cut(f, ":"); {
		case f == "one":
			c.opt.OneSizeScaledSends = true
		case f == "seedcorr": // the default rule, seeds after the first with its correction
			c.opt.SeedCorrection = true
		case f == "nospread": // the default rule without doubling the pair where pauses spread
			c.opt.NoPauseSpread = true
		case f == "sends": // the sends whole, the rings' prefixes kept: the reference where whole rings cost too much
			c.opt.ScaledSendFloor = 1 << 40
		case pair:
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 != nil || err2 != nil {
				t.Fatalf("SCALED_SIZES: %q", f)
			}
			c.opt.ScaledSendPair = [2]units.Size{units.Size(a) * units.MiB, units.Size(b) * units.MiB}
		default:
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			c.opt.WholeCollectives, c.opt.ScaledSendFloor = n < 0, units.Size(max(n, 0))*units.MiB
		}
		cfgs = append(cfgs, c)
	}
	for _, c := range cfgs {
		c0 := cpuNow()
		r, err := Run(context.Background(), s, c.opt)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s (MiB floor; 0: the default rule, -1 whole, one: the one-size rule, a:b a pair): cpu %.2f s", c.what, (cpuNow() - c0).Seconds())
		m := c.opt.ScaledSendFloor
		if c.opt.WholeCollectives || c.what == "sends" {
			m = -1
		}
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
			for k := 1; k < len(v.Steps) && k < len(w.Steps); k++ {
				t.Logf("  %s step %d %+.3f %%", v.Variant.Name, k+1, 100*(v.Steps[k].StepTime/w.Steps[k].StepTime-1))
			}
		}
	}
}
