package compare

import (
	"fmt"
	"math"
	"sort"

	"github.com/fabricsim/fabricsim/report"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/units"
)

// Message-level completion times (compare.json's "messages", report.html's "Messages" table):
// the distribution of the completion time (FCT) of every point-to-point network message of the
// step's collectives (a ring step's block, one peer's share of an all-to-all, a pipeline send:
// what flows.csv lists for a run), on every backend, with its slowdown against the message's
// ideal FCT (alone on an idle network, the backend's closed form). Intra-server hops (NVLink
// delay nodes) and compute carry no bytes and are not messages.
//
// A class run plays one collective of every group; the step has Instances[g] of group g's, so
// each of the run's messages stands for Instances[g] messages of the step. A ring run as a prefix
// (flow backend) stands for the whole ring's steps/k messages per prefix message; a send run
// scaled down by f completes in f times its run's FCT (scaledsend.go's extrapolation), with the
// same slowdown. Steps pool: the figures are over every message of every simulated step.
//
// The distribution is held as a mergeable log-binned histogram (DDSketch, Masson, Rim and Lee,
// VLDB 2019): bin i counts the values in (gamma^(i-1), gamma^i], gamma = (1+a)/(1-a), and a
// percentile is read as 2 gamma^i / (gamma+1), within a relative error a of the exact
// nearest-rank percentile. It merges exactly (bin by bin, in a fixed order: deterministic) and
// its size grows with the range of the values, not their number, so a compare keeps one per run.

// fctAccuracy is the sketch's relative accuracy a: 0.1 %, below the fourth digit the report
// prints.
const fctAccuracy = 0.001

var fctLogGamma = math.Log((1 + fctAccuracy) / (1 - fctAccuracy))

// sketch is a weighted log-binned histogram of positive values.
type sketch struct {
	lo    int       // the bin index of bins[0]
	bins  []float64 // weight per bin
	total float64
}

func (s *sketch) add(x, w float64) {
	if w <= 0 || !(x > 0) || math.IsInf(x, 1) {
		return
	}
	s.addBin(int(math.Ceil(math.Log(x)/fctLogGamma)), w)
}

func (s *sketch) addBin(i int, w float64) {
	switch {
	case len(s.bins) == 0:
		s.lo, s.bins = i, []float64{0}
	case i < s.lo:
		grown := make([]float64, s.lo-i+len(s.bins))
		copy(grown[s.lo-i:], s.bins)
		s.lo, s.bins = i, grown
	case i >= s.lo+len(s.bins):
		s.bins = append(s.bins, make([]float64, i-s.lo-len(s.bins)+1)...)
	}
	s.bins[i-s.lo] += w
	s.total += w
}

// merge adds o's weights times w.
func (s *sketch) merge(o *sketch, w float64) {
	for j, x := range o.bins {
		if x > 0 {
			s.addBin(o.lo+j, x*w)
		}
	}
}

// percentile is the nearest-rank p-th percentile (p in (0, 100]): the value of the smallest bin
// whose cumulative weight reaches p % of the total; 0 when empty.
func (s *sketch) percentile(p float64) float64 {
	if s.total <= 0 {
		return 0
	}
	want := p / 100 * s.total
	cum := 0.0
	i := len(s.bins) - 1
	for j, x := range s.bins {
		cum += x
		if cum >= want*(1-1e-12) { // weights are sums of products: allow for their rounding
			i = j
			break
		}
	}
	gamma := math.Exp(fctLogGamma)
	return 2 * math.Exp(float64(s.lo+i)*fctLogGamma) / (gamma + 1)
}

// msgStats is a run's (or a variant's) message completion times and slowdowns.
type msgStats struct {
	fct, slow sketch
}

// foldRange is a folded ring's messages [from, to) in a graph: one position compiled for n
// (the analytic backend, compile.go's foldsRing), each message standing for n.
type foldRange struct{ from, to, n int }

// msgWeights is what a run's messages count for: group g's collectives per step (group[g]; nil:
// one) and the folded rings' positions.
type msgWeights struct {
	group []int
	folds []foldRange // in ascending order
	// bw is the path's payload rate a scaled-down send's fixed latency is taken at (fixedLatency;
	// 0: none).
	bw units.Rate
}

// messageStats collects the network messages of a run: group g's (ranges[g]) weighted by
// mw.group[g] and by their folded ring's positions, a ring prefix's by its steps over the
// prefix's, a scaled-down send's FCT multiplied by its factor. Unfinished messages (an
// interrupted run) are left out.
func messageStats(msgs []result.Message, ranges [][2]int, pre []groupExtrap, mw msgWeights) *msgStats {
	st := &msgStats{}
	for g, r := range ranges {
		w := 1.0
		var stretch scaledSend = 1
		if mw.group != nil {
			w = float64(mw.group[g])
		}
		if g < len(pre) {
			switch x := pre[g].(type) {
			case *ringPrefix:
				w *= x.scale()
			case scaledSend:
				stretch = x
			}
		}
		f := sort.Search(len(mw.folds), func(k int) bool { return mw.folds[k].to > r[0] })
		for i := r[0]; i < r[1]; i++ {
			m := &msgs[i]
			if m.Bytes == 0 || !m.Done() {
				continue
			}
			for f < len(mw.folds) && mw.folds[f].to <= i {
				f++
			}
			wi := w
			if f < len(mw.folds) && mw.folds[f].from <= i {
				wi *= float64(mw.folds[f].n)
			}
			fct := m.FCT()
			if stretch > 1 {
				fct = stretch.whole(fct, fixedLatency(m, mw.bw))
			}
			st.fct.add(fct.Seconds(), wi)
			if m.IdealFCT > 0 {
				st.slow.add(m.FCT().Seconds()/m.IdealFCT.Seconds(), wi)
			}
		}
	}
	return st
}

// MessageStats summarizes the completion times of the step's network messages (fct.go): every
// point-to-point message of the step's collectives, over the simulated steps.
type MessageStats struct {
	// PerStep is the network messages per step.
	PerStep float64 `json:"per_step"`
	// FCTP50 and FCTP99: nearest-rank median and 99th percentile of their completion times,
	// from offered to the sender's NIC to the last byte delivered (within 0.1 %).
	FCTP50 float64 `json:"fct_p50_s"`
	FCTP99 float64 `json:"fct_p99_s"`
	// SlowdownP50 and SlowdownP99: the same of FCT over the message's ideal FCT (alone on an
	// idle network).
	SlowdownP50 float64 `json:"slowdown_p50"`
	SlowdownP99 float64 `json:"slowdown_p99"`
}

// summary reads the figures from a variant's pooled stats over its steps.
func (st *msgStats) summary(steps int) *MessageStats {
	if st == nil || steps == 0 {
		return nil
	}
	return &MessageStats{PerStep: st.fct.total / float64(steps),
		FCTP50: st.fct.percentile(50), FCTP99: st.fct.percentile(99),
		SlowdownP50: st.slow.percentile(50), SlowdownP99: st.slow.percentile(99)}
}

// messagesTable is report.html's table of the message completion times.
func (r *Result) messagesTable() *report.Table {
	t := &report.Table{Caption: "Network messages: every point-to-point message of the step's collectives (a ring step's block, an all-to-all peer's share, a pipeline send), its completion time (FCT) and its slowdown over its ideal FCT alone on an idle network; percentiles over all simulated steps, within 0.1 %",
		Head:       []string{"variant", "messages per step", "FCT p50", "FCT p99", "slowdown p50", "slowdown p99"},
		RightAlign: []bool{false, true, true, true, true, true}}
	for _, v := range r.Variants {
		m := v.Messages
		if m == nil {
			t.Rows = append(t.Rows, []string{v.Variant.Name, "-", "-", "-", "-", "-"})
			continue
		}
		t.Rows = append(t.Rows, []string{v.Variant.Name, count(m.PerStep), seconds(m.FCTP50), seconds(m.FCTP99),
			fmt.Sprintf("%.2f", m.SlowdownP50), fmt.Sprintf("%.2f", m.SlowdownP99)})
	}
	return t
}
