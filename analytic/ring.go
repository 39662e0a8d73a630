package analytic

import (
	"fmt"
	"math"

	"github.com/fabricsim/fabricsim/units"
)

// RingHop is one hop of a ring channel: from a rank to the next, with the alpha-beta parameters
// and ports its messages would have on a Network.
type RingHop struct {
	Lat    units.Time
	BW     units.Rate
	Tx, Rx Port
}

// RingChannel is one channel of a flat ring collective: its hops, position by position (hop p
// goes from position p to p+1, the last one back to position 0), and the bytes each position
// sends per step in each pipelining loop.
type RingChannel struct {
	Hops   []RingHop
	Blocks []int64
}

// RingTime is the ring pipeline model: the completion time of a flat ring collective of steps
// steps per loop (2(n-1) for all-reduce, n-1 for all-gather and reduce-scatter) without building
// its n x steps messages. It is what Run computes on the collective's message graph under two
// simplifications, which make it O(n) per channel instead of O(n^2):
//
//   - Lockstep sharing: every hop of every channel is sending at once, and each gets its
//     max-min fair share of the ports it crosses (progressive filling, as Run does at any one
//     instant). A hop's step then takes t = block / rate on the wire and c = t + latency until
//     its last byte is delivered.
//   - The step graph's longest path is found among two families: paths that advance one
//     position per step (each step adds the next hop's c: the ring's latency-bound regime), and
//     paths that advance to the slowest hop, stay there while it serializes block after block
//     (each step adds its t) and advance again (the bandwidth-bound regime); the best window of
//     positions around the slowest hop comes from prefix sums. Loops after the first start
//     where the previous one ends, behind its last message on the same connection.
//
// RingTime agrees with Run on the rings where both run to within the tolerance that
// TestRingTimeMatchesEngine states; docs/architecture.md ("Analytic rings at scale") has the
// derivation and figures.
func RingTime(channels []RingChannel, steps int) (units.Time, error) {
	if steps < 1 {
		return 0, fmt.Errorf("ring: %d steps", steps)
	}
	for ci, ch := range channels {
		for p, h := range ch.Hops {
			if h.BW <= 0 || h.Tx.Rate <= 0 || h.Rx.Rate <= 0 {
				return 0, fmt.Errorf("ring: channel %d hop %d: bandwidth %v, ports %v/%v: not positive", ci, p, h.BW, h.Tx.Rate, h.Rx.Rate)
			}
		}
		if len(ch.Blocks) == 0 {
			return 0, fmt.Errorf("ring: channel %d has no blocks", ci)
		}
	}
	tx, rx, caps := hopPorts(channels)
	cycle := cycleClasses(channels)
	flows := len(tx)
	// Dense numbers for the transmit ports, the receive ports, and the copies of one hop on one
	// cycle (the same transmit and receive port on channels that run the same cycle).
	txOf, rxOf, pairOf := make([]int32, flows), make([]int32, flows), make([]int32, flows)
	{
		txs, rxs := map[int64]int32{}, map[int64]int32{}
		type pair struct {
			a, b  int64
			cycle int
		}
		pairs := map[pair]int32{}
		number := func(m map[int64]int32, id int64) int32 {
			i, ok := m[id]
			if !ok {
				i = int32(len(m))
				m[id] = i
			}
			return i
		}
		for i := range tx {
			txOf[i], rxOf[i] = number(txs, tx[i].ID), number(rxs, rx[i].ID)
			k := pair{tx[i].ID, rx[i].ID, cycle[i]}
			j, ok := pairs[k]
			if !ok {
				j = int32(len(pairs))
				pairs[k] = j
			}
			pairOf[i] = j
		}
		_ = txs
	}
	nTx, nRx, nPair := 0, 0, 0
	for i := range txOf {
		nTx, nRx, nPair = max(nTx, int(txOf[i])+1), max(nRx, int(rxOf[i])+1), max(nPair, int(pairOf[i])+1)
	}
	// Start from every hop alone on its ports and let the sharing below slow them: the lowest
	// fixed point, as the engine, which never idles a port a message could use, finds.
	rates := make([]float64, flows)
	for i := range rates {
		rates[i] = min(caps[i], float64(tx[i].Rate), float64(rx[i].Rate))
	}
	// Hops sharing a port overlap only part of the time: each is busy t of every step, and a
	// step of the ring takes tau. Re-share every port among the hops by their expected overlap:
	// the same hop of another channel that runs the same cycle (the same set of hops, so the
	// same timing at every hop) counts 1, any other hop min(1, t/tau); repeat (a fixed point;
	// four rounds settle it to well under a percent).
	loadTx, loadRx := make([]float64, nTx), make([]float64, nRx)
	sameN, sameD := make([]float64, nPair), make([]float64, nPair) // copies of a hop: count, summed duty
	var ws ringScratch
	for round := 0; round < 5; round++ {
		worst, err := ringPath(channels, rates, steps, &ws)
		if err != nil {
			return 0, err
		}
		if round == 4 {
			return units.Time(math.Ceil(worst - 1e-6)), nil
		}
		tau := worst / float64(units.Second) / float64(steps*len(channels[0].Blocks))
		clear(loadTx)
		clear(loadRx)
		clear(sameN)
		clear(sameD)
		i := 0
		for _, ch := range channels {
			bits := 8 * float64(ch.Blocks[0])
			for range ch.Hops {
				d := min(1, bits/rates[i]/tau)
				loadTx[txOf[i]] += d
				loadRx[rxOf[i]] += d
				sameN[pairOf[i]]++
				sameD[pairOf[i]] += d
				i++
			}
		}
		for i := range rates {
			k := pairOf[i]
			// In step: the other copies count whole; everything else by duty.
			ka := max(1, sameN[k]+loadTx[txOf[i]]-sameD[k])
			kb := max(1, sameN[k]+loadRx[rxOf[i]]-sameD[k])
			rates[i] = min(caps[i], float64(tx[i].Rate)/ka, float64(rx[i].Rate)/kb)
		}
	}
	return 0, nil
}

// ringScratch holds loopPath's and ringPath's buffers across calls.
type ringScratch struct {
	t, c, pre, right []float64
}

func grow(b []float64, n int) []float64 {
	if cap(b) < n {
		return make([]float64, n)
	}
	return b[:n]
}

// cycleClasses numbers the channels by the set of hops they run (channels whose rings are
// rotations of one another run the same cycle) and returns each hop's channel class.
func cycleClasses(channels []RingChannel) []int {
	classOf := map[[2]uint64]int{}
	var out []int
	for _, ch := range channels {
		// An order-independent fingerprint of the hop set: two sums of mixed pair hashes.
		var a, b uint64
		for _, h := range ch.Hops {
			x := uint64(h.Tx.ID)*0x9e3779b97f4a7c15 ^ uint64(h.Rx.ID)*0xc2b2ae3d27d4eb4f
			x ^= x >> 29
			a += x
			b += x * x
		}
		k := [2]uint64{a, b}
		c, ok := classOf[k]
		if !ok {
			c = len(classOf)
			classOf[k] = c
		}
		for range ch.Hops {
			out = append(out, c)
		}
	}
	return out
}

// hopPorts lists every hop's ports and bandwidth cap, channel by channel.
func hopPorts(channels []RingChannel) (tx, rx []Port, caps []float64) {
	n := 0
	for _, ch := range channels {
		n += len(ch.Hops)
	}
	tx, rx, caps = make([]Port, 0, n), make([]Port, 0, n), make([]float64, 0, n)
	for _, ch := range channels {
		for _, h := range ch.Hops {
			tx, rx, caps = append(tx, h.Tx), append(rx, h.Rx), append(caps, float64(h.BW))
		}
	}
	return
}

// ringPath is the longest path (picoseconds) over every channel, with each hop at its rate.
func ringPath(channels []RingChannel, rates []float64, steps int, ws *ringScratch) (float64, error) {
	var worst float64
	off := 0
	for _, ch := range channels {
		n := len(ch.Hops)
		r := rates[off : off+n]
		off += n
		var total float64 // picoseconds
		ws.t, ws.c = grow(ws.t, n), grow(ws.c, n)
		t, c := ws.t, ws.c
		for k, b := range ch.Blocks {
			bits := 8 * float64(b)
			for p := range ch.Hops {
				t[p] = bits / r[p] * float64(units.Second)
				c[p] = t[p] + float64(ch.Hops[p].Lat)
			}
			total += loopPath(t, c, steps, k > 0, ws)
		}
		worst = max(worst, total)
	}
	if worst >= float64(units.MaxTime) {
		return 0, fmt.Errorf("ring: completion time overflows")
	}
	return worst, nil
}

// loopPath is the longest path through one pipelining loop of steps steps on a ring whose hop p
// serializes a block in t[p] and delivers it c[p] after it starts; behind means the loop starts
// behind the previous one on the same connections (its first message adds t, not c).
func loopPath(t, c []float64, steps int, behind bool, ws *ringScratch) float64 {
	n := len(t)
	first := c
	if behind {
		first = t
	}
	// Advancing every step: the first hop's cost then steps-1 more hops around the ring
	// (full laps and a remainder): the best window of `steps` consecutive positions.
	var lap float64
	for _, x := range c {
		lap += x
	}
	laps, rem := (steps-1)/n, (steps-1)%n
	ws.pre = grow(ws.pre, 2*n+1)
	pre := ws.pre
	for i := 0; i < 2*n; i++ {
		pre[i+1] = pre[i] + c[i%n]
	}
	best := math.Inf(-1)
	for p0 := 0; p0 < n; p0++ {
		// positions p0+1 .. p0+rem after the laps.
		v := first[p0] + float64(laps)*lap + pre[p0+1+rem] - pre[p0+1]
		best = max(best, v)
	}
	// Advancing to the slowest hop, staying while it serializes, advancing on: for a window W of
	// at most min(steps, n) positions holding the slowest hop p*, sum over W of c plus
	// (steps - |W|) t[p*] (the first position counts `first`).
	ps := 0
	for p := range t {
		if t[p] > t[ps] {
			ps = p
		}
	}
	ts := t[ps]
	maxLen := min(steps, n)
	// right[j]: sum of (c - ts) over p*+1 .. p*+j; left[j]: over p*-j .. p*-1.
	ws.right = grow(ws.right, maxLen)
	bestRight := ws.right
	var acc, run float64
	run = math.Inf(-1)
	for j := 0; j < maxLen; j++ {
		if j > 0 {
			acc += c[(ps+j)%n] - ts
		}
		run = max(run, acc)
		bestRight[j] = run // best extension to the right using at most j positions
	}
	acc = 0
	for j := 0; j < maxLen; j++ { // j positions to the left of p*, the window starting at p*-j
		if j > 0 {
			acc += c[((ps-j)%n+n)%n] - ts
		}
		start := ((ps-j)%n + n) % n
		// The window's first position costs first[] instead of c[].
		head := first[start] - c[start]
		if j == 0 {
			head = first[ps] - c[ps]
		}
		v := float64(steps)*ts + (c[ps] - ts) + acc + head + bestRight[maxLen-1-j]
		best = max(best, v)
	}
	return best
}
