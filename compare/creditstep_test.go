package compare

import (
	"context"
	"math"
	"os"
	"testing"
)

// TestCreditStepNearPacket: the two jobs of compare/testdata/shared-ib-232.yaml, each alone on
// its servers, InfiniBand NDR with 128 KiB VL buffers and adaptive routing, where the flow
// backend's FIFO (a step's arrivals one segment) made the result depend on the step once credits
// bind (docs/flow.md, "Where the step is not a resolution"). With the credit step (the default)
// the step becomes flow.CreditStep, 500 ns, once a credit throttle binds, with queues that serve
// a partly sent segment in its bytes' arrival order (the default); with the proportional FIFO
// (FlowProportionalFIFO) flow.ProportionalCreditStep, 250 ns. Recorded figures, ms:
//   - the fine-step limits, every step at 125 ns, proportional FIFO (Options.FlowStep,
//     FlowFixedStep): aggressor 17.983, victim 6.203 (250 ns: 17.685, 6.203); re-measured when
//     the path latency became the first packet's (flow's engine.latency): aggressor 17.709,
//     victim 6.212 (250 ns: 17.553, 6.206);
//   - the packet backend (`fabricsim compare FILE --backend packet`; docs/jobs.md): aggressor
//     20.94, victim 6.804;
//   - the proportional FIFO with its credit step (the default before arrival order): aggressor
//     17.878, victim 6.247; with the plain 1 us stepping (FlowCoarseCreditStep too): 20.744 and
//     7.276.
//
// All flow figures with the NICs' round-robin order (flow's joinDelay; before it the fine-step
// limits were 18.37 and 6.198 ms, the plain stepping 27.31 and 6.347 ms: the plain aggressor's
// agreement with the packet backend now is the step's error cancelling the model's, not a
// converged result).
//
// The test holds that the credit step converges (within 5 % of both the 125 ns and the 250 ns
// figures) and that it is near the packet backend: the victim within 10 %, the aggressor within
// 15 %: the flow model's own fine-step limit is 14.1 % short of packet there (its all-to-all is
// not limited by the core tier's pairs alone; docs/jobs.md item 2), so 10 % is not met. At this
// commit: aggressor 17.807 ms (-15.0 % against packet), victim 6.193 ms (-9.0 %); since the path
// latency became the first packet's (flow's engine.latency) 17.949 (-14.3 %) and 6.177 ms
// (-9.2 %). The proportional FIFO's runs are made too, to check that they keep their recorded
// figures (the seam keeps the plain version; re-recorded with the first packet's latency: the
// proportional FIFO 17.878 -> 17.608 and 6.247 -> 6.217 ms, the plain stepping 20.744 -> 20.165
// and 7.276 -> 6.919 ms).
func TestCreditStepNearPacket(t *testing.T) {
	if testing.Short() {
		t.Skip("six flow-level runs of 232 GPUs")
	}
	for _, c := range []struct {
		job                                   string
		fine125, fine250, packet, prop, plain float64
		tolPacket                             float64
	}{
		{"victim", 6.212, 6.206, 6.804, 6.217, 6.919, 0.10},
		{"aggressor", 17.709, 17.553, 20.94, 17.608, 20.165, 0.15},
	} {
		s := parseFile(t, "testdata/shared-ib-232-"+c.job+".yaml")
		var got [3]float64
		for i, o := range []Options{{}, {FlowProportionalFIFO: true}, {FlowProportionalFIFO: true, FlowCoarseCreditStep: true}} {
			r, err := Run(context.Background(), s, o)
			if err != nil {
				t.Fatal(err)
			}
			got[i] = r.Variants[0].Jobs[0].Alone * 1e3
		}
		t.Logf("%s alone: credit step %.3f ms (%+.1f %% against 125 ns, %+.1f %% against packet), proportional FIFO %.3f ms, plain %.3f ms",
			c.job, got[0], 100*(got[0]/c.fine125-1), 100*(got[0]/c.packet-1), got[1], got[2])
		for _, fine := range []float64{c.fine125, c.fine250} {
			if math.Abs(got[0]/fine-1) > 0.05 {
				t.Errorf("%s alone: credit step %.3f ms, fine-step figure %.3f ms: want within 5 %%", c.job, got[0], fine)
			}
		}
		if math.Abs(got[0]/c.packet-1) > c.tolPacket {
			t.Errorf("%s alone: credit step %.3f ms, packet backend %.3f ms: want within %.0f %%", c.job, got[0], c.packet, 100*c.tolPacket)
		}
		for i, want := range []float64{c.prop, c.plain} {
			if math.Abs(got[i+1]/want-1) > 0.001 {
				t.Errorf("%s alone: %s %.3f ms, recorded %.3f ms: the plain version moved", c.job, []string{"proportional FIFO", "plain stepping"}[i], got[i+1], want)
			}
		}
	}
}

// BenchmarkCreditStep: the aggressor of compare/testdata/shared-ib-232.yaml alone, with the
// credit step (arrival order, 500 ns), with the proportional FIFO's credit step (250 ns; the
// default before arrival order) and with the plain stepping (FlowCoarseCreditStep, arrival
// order), reporting the flow backend's steps (flow_steps, load-independent) beside the CPU time.
// At this commit 34,653, 69,486 and 17,627 steps (docs/flow.md, "Where the step is not a
// resolution").
func BenchmarkCreditStep(b *testing.B) {
	s := parseFile(b, "testdata/shared-ib-232-aggressor.yaml")
	for _, c := range []struct {
		name string
		opt  Options
	}{{"credit", Options{}}, {"proportional", Options{FlowProportionalFIFO: true}}, {"plain", Options{FlowCoarseCreditStep: true}}} {
		b.Run(c.name, func(b *testing.B) {
			var steps float64
			for i := 0; i < b.N; i++ {
				o := c.opt
				o.Workers = 1
				r, err := Run(context.Background(), s, o)
				if err != nil {
					b.Fatal(err)
				}
				steps = r.Variants[0].Counters["flow_steps"]
			}
			b.ReportMetric(steps, "steps/op")
		})
	}
}

// parseFile reads and parses a scenario file of the package's tests.
func parseFile(tb testing.TB, file string) *Scenario {
	tb.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := Parse(data, file, "")
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
