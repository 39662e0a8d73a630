package compare

import (
	"math"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/training"
	"github.com/fabricsim/fabricsim/units"
)

// Timeline is the first finished step's fabric events over time, measured per bin by the
// packet runs (fabric.Bins) and placed on the step's schedule:
//
//   - fidelity full: the step is one run and its schedule is the run's own time axis, so each
//     bin holds exactly the pause frames, stall time and marks the run counted in it (the bins
//     are whole multiples of the run's bins, none split);
//   - fidelity classes: each network collective gets its class run's bins, weighted by one
//     collective of the class's groups (1/groups, as the step's counters are) and laid from
//     the collective's start in the schedule, once per repetition; a class-run bin that
//     straddles two step bins is split by its time in each.
//
// On the analytic backend there are no events and every bin is zero.
type Timeline struct {
	BinSeconds float64   `json:"bin_s"`
	Pauses     []float64 `json:"pfc_pauses"`
	Stalls     []float64 `json:"credit_stall_s"`
	Marks      []float64 `json:"ecn_marks"`    // ECN CE marks on RoCE, FECN marks on InfiniBand
	Network    []float64 `json:"network_busy"` // network collectives in flight (mean per bin)
}

// timelineBins is the most bins a timeline has: 120 across a chart 450 units wide.
const timelineBins = 120

func (s *Scenario) timeline(p *training.Plan, in stepInput, fin []units.Time, end units.Time) *Timeline {
	if end <= 0 {
		return &Timeline{}
	}
	// The bin width: in fidelity full a whole number of the run's bins, so none is split.
	width := (end + timelineBins - 1) / timelineBins
	if b := in.stepBins; b != nil {
		k := (end + b.Width*timelineBins - 1) / (b.Width * timelineBins)
		width = max(1, k) * b.Width
	}
	n := int((end + width - 1) / width)
	t := &Timeline{BinSeconds: width.Seconds(), Pauses: make([]float64, n), Stalls: make([]float64, n),
		Marks: make([]float64, n), Network: make([]float64, n)}
	// spread adds x, which happened over [a, z) of the step, to the bins by time in each; what
	// lies past the step's end (a collective's last ACKs) goes to the last bin.
	spread := func(ys []float64, a, z units.Time, x float64) {
		if x == 0 {
			return
		}
		if z <= a || int(a/width) >= n-1 {
			ys[min(n-1, int(a/width))] += x
			return
		}
		for k := int(a / width); k < n && units.Time(k)*width < z; k++ {
			lo, hi := max(a, units.Time(k)*width), min(z, units.Time(k+1)*width)
			if k == n-1 {
				hi = z
			}
			ys[k] += x * float64(hi-lo) / float64(z-a)
		}
	}
	place := func(b *fabric.Bins, off units.Time, weight float64) {
		for j := 0; j < b.Len(); j++ {
			a, z := off+units.Time(j)*b.Width, off+units.Time(j+1)*b.Width
			spread(t.Pauses, a, z, float64(b.Pauses[j])*weight)
			spread(t.Stalls, a, z, b.Stall[j].Seconds()*weight)
			spread(t.Marks, a, z, float64(b.Marks[j])*weight)
		}
	}
	if in.stepBins != nil {
		place(in.stepBins, 0, 1)
	}
	for i := range p.Ops {
		if !in.network[i] || in.dur[i] <= 0 {
			continue
		}
		start := fin[i] - in.dur[i]
		a, b := float64(start), float64(fin[i])
		bin := float64(width)
		for k := int(a / bin); k < n && float64(k)*bin < b; k++ {
			lo, hi := math.Max(a, float64(k)*bin), math.Min(b, float64(k+1)*bin)
			if hi > lo {
				t.Network[k] += (hi - lo) / bin
			}
		}
		if in.opBins == nil {
			continue
		}
		cb, weight, one := in.opBins(i)
		if cb == nil {
			continue
		}
		for r := 0; r < max(1, p.Ops[i].Repeat); r++ {
			place(cb, start+units.Time(r)*one, weight)
		}
	}
	return t
}
