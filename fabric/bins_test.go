package fabric

import (
	"testing"

	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/units"
)

// TestBinsSplitAndCoarsen: a stall from 5 to 35 ps in 10 ps bins is 5, 10, 10, 5; an event at
// MaxBins x 10 ps doubles the width and merges pairs (15, 15), keeping every sum.
func TestBinsSplitAndCoarsen(t *testing.T) {
	b := &Bins{Width: 10}
	b.stall(5, 35)
	b.mark(12)
	b.pause(39)
	if got := b.Stall; len(got) != 4 || got[0] != 5 || got[1] != 10 || got[2] != 10 || got[3] != 5 {
		t.Fatalf("stall bins %v, want [5 10 10 5]", got)
	}
	b.pause(MaxBins * 10)
	if b.Width != 20 || b.Len() != MaxBins/2+1 {
		t.Fatalf("width %v, %d bins; want 20 ps and %d", b.Width, b.Len(), MaxBins/2+1)
	}
	if b.Stall[0] != 15 || b.Stall[1] != 15 || b.Marks[0] != 1 || b.Pauses[1] != 1 || b.Pauses[MaxBins/2] != 1 {
		t.Errorf("after coarsening: stall %v, marks %v, pauses %v...", b.Stall[:3], b.Marks[:3], b.Pauses[:3])
	}
}

func sum64(xs []int64) (s int64) {
	for _, x := range xs {
		s += x
	}
	return s
}

// TestBinsSumToCounters: the bins of a RoCE incast (PFC pauses with PFC alone, ECN marks with
// DCQCN) and of an
// InfiniBand incast with IB CC (credit stalls and FECN marks) sum exactly to the run's
// counters, stay within MaxBins (coarsened from 1 ns as the run went on), and turning them on
// changes nothing the run computes.
func TestBinsSumToCounters(t *testing.T) {
	roceIncast := func() *msggraph.Graph {
		mg := &msggraph.Graph{Endpoints: 33}
		for i := 1; i <= 32; i++ {
			mg.Add(msggraph.Message{Src: int32(i), Dst: 0, Bytes: units.MB})
		}
		return mg
	}
	pfcOnly := DefaultRoCE()
	pfcOnly.RoCE.ECN, pfcOnly.RoCE.DCQCN = false, false
	ib := ibConfig(t, "edr")
	ib.IB.CC.Enabled = true
	for _, c := range []struct {
		name  string
		cfg   Config
		net   func() *Network
		graph *msggraph.Graph
	}{
		{"roce-pfc", pfcOnly, func() *Network { return newNet(t, star(33, 100*units.Gbps, units.Microsecond), pfcOnly) }, roceIncast()},
		{"roce-dcqcn", DefaultRoCE(), func() *Network { return newNet(t, star(33, 100*units.Gbps, units.Microsecond), DefaultRoCE()) }, roceIncast()},
		{"infiniband", ib, func() *Network {
			return newNet(t, twoSwitch(100*units.Gbps, 400*units.Gbps, 500*units.Nanosecond), ib)
		}, congestionGraph(8*units.MB, 4*units.MB, 0)},
	} {
		t.Run(c.name, func(t *testing.T) {
			plain := c.net()
			run(t, plain, c.graph)
			n := c.net()
			b := n.EnableBins(units.Nanosecond) // far too fine: the run must coarsen it
			run(t, n, c.graph)
			res := n.lastRun
			pauses, marks := sum64(b.Pauses), sum64(b.Marks)
			var stall units.Time
			for _, s := range b.Stall {
				stall += s
			}
			if float64(pauses) != res.Counters["pfc_pause_frames_sent"] {
				t.Errorf("pause bins sum to %d, counter %v", pauses, res.Counters["pfc_pause_frames_sent"])
			}
			if float64(marks) != res.Counters["ecn_marks"]+res.Counters["ib_fecn_marked"] {
				t.Errorf("mark bins sum to %d, counters %v + %v", marks, res.Counters["ecn_marks"], res.Counters["ib_fecn_marked"])
			}
			if stall.Nanoseconds() != res.Counters["ib_credit_stall_ns"] {
				t.Errorf("stall bins sum to %v ns, counter %v", stall.Nanoseconds(), res.Counters["ib_credit_stall_ns"])
			}
			if pauses+marks == 0 && stall == 0 {
				t.Fatal("nothing happened: the case does not test the bins")
			}
			if b.Len() > MaxBins || b.Width == units.Nanosecond {
				t.Errorf("%d bins of %v: want at most %d, coarsened from 1ns", b.Len(), b.Width, MaxBins)
			}
			if res.Events != plain.lastRun.Events || res.SimTime != plain.lastRun.SimTime {
				t.Errorf("bins changed the run: %d events, end %v; without %d, %v", res.Events, res.SimTime, plain.lastRun.Events, plain.lastRun.SimTime)
			}
			t.Logf("%d pauses, %d marks, %v stalled, in %d bins of %v", pauses, marks, stall, b.Len(), b.Width)
		})
	}
}
