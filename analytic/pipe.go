package analytic

import (
	"fmt"
	"math"
	"slices"

	"github.com/fabricsim/fabricsim/units"
)

// PipeHop is one connection of a pipelined collective that sends every chunk over every
// connection once, such as a tree all-reduce: each rank's connection to its parent carries every
// chunk up, the parent's connection to it every chunk down.
type PipeHop struct {
	Lat    units.Time
	BW     units.Rate
	Tx, Rx Port
	// Deps are the hops (indices in the group) whose copy of a chunk must have arrived before
	// this hop sends it; they come before it in the group.
	Deps []int32
}

// PipeGroup is one pipeline: its hops and the bytes of its chunks, in order (a connection sends
// them one after the other).
type PipeGroup struct {
	Hops   []PipeHop
	Chunks []int64
}

// PipeTime is the pipeline model of such a collective: the completion time Run would find on
// its message graph (per chunk one message per hop, each waiting for its Deps' messages of the
// same chunk and, on its connection, for the hop's previous chunk), without building it:
//
//   - Sharing by overlap: a hop is busy from its first chunk's leaving to its last one's and
//     sends during a fraction of that window (its duty); on each port it crosses it gets the
//     port's rate over one plus the other hops' duties times their overlap with its window,
//     capped by its own bandwidth, iterated to a fixed point from the uncontended rates. (All
//     hops at once, as RingTime assumes for a ring, overstates a tree's sharing: a rank's up
//     and down hops of a chunk do not send at the same time, and with one chunk not at all
//     together.) A hop's chunk k then takes t_e(k) on the wire and t_e(k) + latency until
//     delivered.
//   - The longest path of the chunk graph (each chunk's message at each hop, waiting for its
//     dependencies' copies of the chunk and for the hop's previous chunk) stays at one hop while
//     it serializes chunk after chunk and otherwise advances along dependencies: for hop e, the
//     longest dependency path to e with the first chunk, every chunk's t_e, e's latency, and the
//     longest path on from e with the last chunk. With equal chunks a path that stays at several
//     hops is never longer than one staying as many chunks at the slowest of them, so the
//     maximum over e is the longest path.
//
// O(hops) per group and iteration, where the message graph has hops x chunks messages.
// TestTreeTimeMatchesMessageGraph (package nccl) checks it against Run on tree all-reduces.
func PipeTime(groups []PipeGroup) (units.Time, error) {
	var all []*PipeHop // every group's hops, group by group
	for gi := range groups {
		g := &groups[gi]
		if len(g.Chunks) == 0 {
			return 0, fmt.Errorf("pipeline: group %d has no chunks", gi)
		}
		for i := range g.Hops {
			h := &g.Hops[i]
			if h.BW <= 0 || h.Tx.Rate <= 0 || h.Rx.Rate <= 0 {
				return 0, fmt.Errorf("pipeline: group %d hop %d: bandwidth %v, ports %v/%v: not positive", gi, i, h.BW, h.Tx.Rate, h.Rx.Rate)
			}
			for _, d := range h.Deps {
				if d < 0 || int(d) >= i {
					return 0, fmt.Errorf("pipeline: group %d hop %d depends on hop %d, not an earlier one", gi, i, d)
				}
			}
			all = append(all, h)
		}
	}
	rates := shareByOverlap(groups, all)
	var best float64
	k := 0
	for _, g := range groups {
		n := len(g.Hops)
		r := rates[k : k+n]
		k += n
		pre, suf := pipePaths(g, r)
		_, _, total := chunkSizes(g.Chunks)
		for i := range g.Hops {
			best = max(best, pre[i]+wireTime(total, r[i])+float64(g.Hops[i].Lat)+suf[i])
		}
	}
	if best >= float64(units.MaxTime) {
		return 0, fmt.Errorf("pipeline: completion time overflows")
	}
	return units.Time(math.Ceil(best)), nil
}

func wireTime(bytes, rate float64) float64 { return 8 * bytes / rate * float64(units.Second) }

func chunkSizes(chunks []int64) (first, last, total float64) {
	for _, c := range chunks {
		total += float64(c)
	}
	return float64(chunks[0]), float64(chunks[len(chunks)-1]), total
}

// pipePaths returns, per hop of g at rates r, the longest dependency path to its first chunk's
// leaving (pre) and from its last chunk's delivery to the end (suf).
func pipePaths(g PipeGroup, r []float64) (pre, suf []float64) {
	n := len(g.Hops)
	first, last, _ := chunkSizes(g.Chunks)
	pre, suf = make([]float64, n), make([]float64, n)
	for i, h := range g.Hops {
		for _, d := range h.Deps {
			pre[i] = max(pre[i], pre[d]+wireTime(first, r[d])+float64(g.Hops[d].Lat))
		}
	}
	for i := n - 1; i >= 0; i-- {
		for _, d := range g.Hops[i].Deps {
			suf[d] = max(suf[d], wireTime(last, r[i])+float64(g.Hops[i].Lat)+suf[i])
		}
	}
	return pre, suf
}

// shareByOverlap gives each hop its share of the ports it crosses while it is busy: a hop is
// busy from its first chunk's leaving to its last one's, sending a fraction (its duty) of that
// window; on each port it gets the rate over one plus the other hops' duty times their overlap
// with its window. Iterated from the uncontended rates to a fixed point (damped).
func shareByOverlap(groups []PipeGroup, all []*PipeHop) []float64 {
	// The hops on each port, as ranges of one array (port index: transmit and receive ports
	// numbered apart), and each hop's two ports.
	type portKey struct {
		side int
		id   int64
	}
	index := map[portKey]int32{}
	txOf, rxOf := make([]int32, len(all)), make([]int32, len(all))
	var count []int32
	for i, h := range all {
		for side, id := range [2]int64{h.Tx.ID, h.Rx.ID} {
			p, ok := index[portKey{side, id}]
			if !ok {
				p = int32(len(count))
				index[portKey{side, id}] = p
				count = append(count, 0)
			}
			count[p]++
			if side == 0 {
				txOf[i] = p
			} else {
				rxOf[i] = p
			}
		}
	}
	start := make([]int32, len(count)+1)
	for p, c := range count {
		start[p+1] = start[p] + c
	}
	on := make([]int32, start[len(count)])
	fill := slices.Clone(start[:len(count)])
	for i := range all {
		for _, p := range [2]int32{txOf[i], rxOf[i]} {
			on[fill[p]] = int32(i)
			fill[p]++
		}
	}
	rates := make([]float64, len(all))
	for i, h := range all {
		rates[i] = min(float64(h.BW), float64(h.Tx.Rate), float64(h.Rx.Rate))
	}
	s, e, duty := make([]float64, len(all)), make([]float64, len(all)), make([]float64, len(all))
	for iter := 0; iter < 50; iter++ {
		k := 0
		for _, g := range groups {
			n := len(g.Hops)
			r := rates[k : k+n]
			pre, _ := pipePaths(g, r)
			_, last, total := chunkSizes(g.Chunks)
			for i, h := range g.Hops {
				busy := wireTime(total, r[i])
				end := pre[i] + busy
				for _, d := range h.Deps {
					end = max(end, e[k+int(d)]+float64(g.Hops[d].Lat)+wireTime(last, r[i]))
				}
				s[k+i], e[k+i], duty[k+i] = pre[i], end, busy/max(end-pre[i], 1e-9)
			}
			k += n
		}
		change := 0.0
		for i, h := range all {
			load := func(p int32) float64 {
				l := 1.0
				for _, f := range on[start[p]:start[p+1]] {
					if int(f) == i {
						continue
					}
					ov := min(e[i], e[f]) - max(s[i], s[f])
					if ov > 0 {
						l += duty[f] * ov / max(e[i]-s[i], 1e-9)
					}
				}
				return l
			}
			nr := min(float64(h.BW), float64(h.Tx.Rate)/load(txOf[i]), float64(h.Rx.Rate)/load(rxOf[i]))
			nr = (rates[i] + nr) / 2
			change = max(change, math.Abs(nr-rates[i])/rates[i])
			rates[i] = nr
		}
		if change < 1e-6 {
			break
		}
	}
	return rates
}
