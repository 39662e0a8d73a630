package flow

import (
	"slices"

	"github.com/fabricsim/fabricsim/fabric"
)

// Traffic classes at an egress: the fabric's scheduler between its queues in the fluid limit.
//
// The packet backend picks one packet at a time (fabric/roce_sched.go, fabric/ibarb.go); over a
// step of many packets that becomes a split of the link's bytes among the classes that have
// something to send:
//
//   - RoCEv2 (IEEE 802.1Qaz ETS): each strict-priority class, highest first, takes what it can
//     send; deficit round robin with quantum weight x one frame shares the rest among the other
//     classes in proportion to their weights, max-min (a class that needs less than its share
//     leaves the rest to the others).
//   - InfiniBand (IBA vol. 1 §7.6.9, VL arbitration): the VLs of the high-priority table first,
//     weighted by their entries' weights in it, then those of the low-priority table by theirs.
//     While a low-priority VL has packets waiting, the high table may send VL_HIGH_LIMIT x 4 KiB
//     before the low table gets one packet, so the high VLs keep that fraction of the link:
//     limit x 4096 / (limit x 4096 + MTU) (255: all of it; 0: one packet each, half).
//
// A class no table or weight serves (an InfiniBand VL with weight 0 in both tables) gets what
// the others leave: the packet backend would never send it and the run would stall.

// classTier is a set of classes served together, each in proportion to its weight, after the
// tiers before it.
type classTier struct {
	cls    []int32 // class indices (engine.classes)
	weight []float64
	// cap is the fraction of the link this tier may take while a later tier has bytes waiting
	// (InfiniBand's high limit); 1 without a limit.
	cap float64
}

// classSched is an egress's split of its link among classes.
type classSched struct {
	tiers []classTier
	// equal says the split is equal shares among all classes (the plain water fill).
	equal bool
}

// newClassSched builds the scheduler of the engine's classes from the fabric configuration.
func newClassSched(cfg *fabric.Config, classes []uint8) *classSched {
	s := &classSched{}
	switch cfg.Kind {
	case fabric.KindRoCE:
		r := &cfg.RoCE
		var strict []int32
		rest := classTier{cap: 1}
		for c, p := range classes {
			if r.Strict.Has(p) {
				strict = append(strict, int32(c))
				continue
			}
			w := 1.0
			if p < 8 && r.Weights[p] > 1 {
				w = float64(r.Weights[p])
			}
			rest.cls, rest.weight = append(rest.cls, int32(c)), append(rest.weight, w)
		}
		// Strict classes: highest priority first, each its own tier.
		slices.SortFunc(strict, func(a, b int32) int { return int(classes[b]) - int(classes[a]) })
		for _, c := range strict {
			s.tiers = append(s.tiers, classTier{cls: []int32{c}, weight: []float64{1}, cap: 1})
		}
		if len(rest.cls) > 0 {
			s.tiers = append(s.tiers, rest)
		}
	case fabric.KindInfiniBand:
		ib := &cfg.IB
		hi := classTier{cap: 1}
		if ib.HighLimit != 255 {
			lim := float64(ib.HighLimit) * 4096
			hi.cap = max(lim, float64(cfg.MTU)) / (max(lim, float64(cfg.MTU)) + float64(cfg.MTU))
		}
		lo := classTier{cap: 1}
		var none classTier
		none.cap = 1
		for c, vl := range classes {
			wh, wl := tableWeight(ib.ArbHigh, vl), tableWeight(ib.ArbLow, vl)
			switch {
			case wh > 0:
				hi.cls, hi.weight = append(hi.cls, int32(c)), append(hi.weight, wh)
			case wl > 0:
				lo.cls, lo.weight = append(lo.cls, int32(c)), append(lo.weight, wl)
			default:
				none.cls, none.weight = append(none.cls, int32(c)), append(none.weight, 1)
			}
		}
		for _, t := range []classTier{hi, lo, none} {
			if len(t.cls) > 0 {
				s.tiers = append(s.tiers, t)
			}
		}
	default:
		t := classTier{cap: 1}
		for c := range classes {
			t.cls, t.weight = append(t.cls, int32(c)), append(t.weight, 1)
		}
		s.tiers = []classTier{t}
	}
	if len(s.tiers) <= 1 {
		s.equal = true
		for _, t := range s.tiers {
			for _, w := range t.weight {
				s.equal = s.equal && w == t.weight[0]
			}
		}
	}
	return s
}

// tableWeight is the weight a VL arbitration table gives vl (the sum of its entries' weights).
func tableWeight(t []fabric.VLWeight, vl uint8) float64 {
	var w float64
	for _, e := range t {
		if e.VL == vl {
			w += float64(e.Weight)
		}
	}
	return w
}

// share splits budget among the classes' demands d (d[k].i a class index, d[k].d what it could
// send), writing each grant into d.
func (s *classSched) share(budget float64, d []fill, scratch []fill) []fill {
	if s.equal {
		waterFill(budget, d)
		return scratch
	}
	var want [16]int // class -> index in d, -1 without demand
	for c := range want {
		want[c] = -1
	}
	for k := range d {
		want[d[k].i] = k
	}
	left := budget
	for ti, t := range s.tiers {
		sub := scratch[:0]
		var wbuf [16]float64
		ws := wbuf[:0]
		for j, c := range t.cls {
			if k := want[c]; k >= 0 {
				sub = append(sub, fill{d: d[k].d, i: c})
				ws = append(ws, t.weight[j])
			}
		}
		if len(sub) == 0 {
			continue
		}
		avail := left
		if t.cap < 1 && s.laterWaiting(ti, &want) {
			avail = min(left, t.cap*budget)
		}
		used := weightedFill(avail, sub, ws[:len(sub)])
		for _, x := range sub {
			d[want[x.i]].d = x.d
		}
		left = max(0, left-used)
		scratch = sub
	}
	return scratch
}

// laterWaiting says whether a tier after ti has a class with demand.
func (s *classSched) laterWaiting(ti int, want *[16]int) bool {
	for _, t := range s.tiers[ti+1:] {
		for _, c := range t.cls {
			if want[c] >= 0 {
				return true
			}
		}
	}
	return false
}

// weightedFill shares capacity c among demands d max-min fairly in proportion to weights w:
// each gets min(demand, level x weight), level the largest that fits. It writes the grants into
// d and returns what was used.
func weightedFill(c float64, d []fill, w []float64) float64 {
	var sum float64
	for _, x := range d {
		sum += x.d
	}
	if sum <= c {
		return sum
	}
	// Raise the level class by class, in the order in which their demands are met.
	var ibuf [16]int
	idx := ibuf[:len(d)]
	for k := range idx {
		idx[k] = k
	}
	slices.SortFunc(idx, func(a, b int) int {
		ra, rb := d[a].d/w[a], d[b].d/w[b]
		switch {
		case ra < rb:
			return -1
		case ra > rb:
			return 1
		}
		return int(d[a].i - d[b].i)
	})
	left := c
	var wleft float64
	for _, k := range idx {
		wleft += w[k]
	}
	for n, k := range idx {
		level := left / wleft
		if d[k].d > level*w[k] {
			for _, j := range idx[n:] {
				d[j].d = level * w[j]
			}
			return c
		}
		left -= d[k].d
		wleft -= w[k]
	}
	return c - left
}
