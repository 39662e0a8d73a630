package fabric

import "github.com/fabricsim/fabricsim/units"

// Bins counts a run's fabric events per interval of simulated time: PFC pause frames sent,
// InfiniBand credit-stall time (summed over ports and VLs) and congestion marks (ECN CE on
// RoCE, FECN on InfiniBand). It is off unless EnableBins asks for it: each counting site tests
// one pointer, and only where the event itself happens (a pause sent, a packet marked, a
// stall ending), never per packet.
//
// The bins start Width wide from time zero. There are at most MaxBins of them: when the run
// outlasts them, Width doubles and neighbouring bins merge, so the bins cover any run with a
// resolution of at least 1/MaxBins of the time seen and always sum exactly to the run's
// counters (pfc_pause_frames_sent, ib_credit_stall_ns, ecn_marks + ib_fecn_marked).
type Bins struct {
	Width units.Time
	// Pauses, Stall and Marks are indexed by bin: bin i covers [i*Width, (i+1)*Width).
	Pauses []int64
	Stall  []units.Time // a stall spanning bins is split among them by its time in each
	Marks  []int64
}

// MaxBins bounds the number of bins; 4096 keeps three series under 100 KB per run.
const MaxBins = 4096

// EnableBins turns on the binned counters, starting with bins of width (coarsened as the run
// needs, see Bins). Call it before Run; the returned Bins fill as the run goes.
func (n *Network) EnableBins(width units.Time) *Bins {
	if width <= 0 {
		width = units.Microsecond
	}
	n.bins = &Bins{Width: width}
	return n.bins
}

// Len is the number of bins (the same for the three series).
func (b *Bins) Len() int { return len(b.Pauses) }

// index returns the bin of time t, coarsening and growing the bins as needed.
func (b *Bins) index(t units.Time) int {
	t = max(t, 0)
	for t/b.Width >= MaxBins {
		b.coarsen()
	}
	i := int(t / b.Width)
	if i >= len(b.Pauses) {
		n := i + 1
		b.Pauses = append(b.Pauses, make([]int64, n-len(b.Pauses))...)
		b.Stall = append(b.Stall, make([]units.Time, n-len(b.Stall))...)
		b.Marks = append(b.Marks, make([]int64, n-len(b.Marks))...)
	}
	return i
}

// coarsen doubles the width, merging bins 2i and 2i+1 into bin i.
func (b *Bins) coarsen() {
	n := (len(b.Pauses) + 1) / 2
	for i := 0; i < n; i++ {
		j := 2 * i
		b.Pauses[i], b.Stall[i], b.Marks[i] = b.Pauses[j], b.Stall[j], b.Marks[j]
		if j+1 < len(b.Pauses) {
			b.Pauses[i] += b.Pauses[j+1]
			b.Stall[i] += b.Stall[j+1]
			b.Marks[i] += b.Marks[j+1]
		}
	}
	b.Pauses, b.Stall, b.Marks = b.Pauses[:n], b.Stall[:n], b.Marks[:n]
	b.Width *= 2
}

func (b *Bins) pause(t units.Time) { b.Pauses[b.index(t)]++ }
func (b *Bins) mark(t units.Time)  { b.Marks[b.index(t)]++ }

// stall adds the stall from a to z, split over the bins it spans. (z < a does not happen in
// the credit accounting; if it did, the negative amount would go to a's bin, as the counter
// takes it.)
func (b *Bins) stall(a, z units.Time) {
	if z <= a {
		b.Stall[b.index(a)] += z - a
		return
	}
	b.index(z - 1) // coarsen first, so that the bins below do not move
	for t := a; t < z; {
		i := b.index(t)
		end := min(z, units.Time(i+1)*b.Width)
		b.Stall[i] += end - t
		t = end
	}
}
