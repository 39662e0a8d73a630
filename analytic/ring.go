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
	if _, err := lockstepRates(channels); err != nil {
		return 0, err // only to validate the hops
	}
	tx, rx, caps := hopPorts(channels)
	cycle := cycleClasses(channels)
	flows := len(tx)
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
	t := make([]float64, flows) // seconds per step, first loop's block
	for round := 0; round < 5; round++ {
		worst, err := ringPath(channels, rates, steps)
		if err != nil {
			return 0, err
		}
		if round == 4 {
			return units.Time(math.Ceil(worst - 1e-6)), nil
		}
		tau := worst / float64(units.Second) / float64(steps*max(1, len(channels[0].Blocks)))
		i := 0
		for _, ch := range channels {
			for range ch.Hops {
				t[i] = 8 * float64(ch.Blocks[0]) / rates[i]
				i++
			}
		}
		load := map[[2]int64]float64{}
		type pair struct {
			a, b  int64
			cycle int
		}
		same := map[pair][2]float64{} // copies of one hop on one cycle: their count and summed duty
		for i := range t {
			d := min(1, t[i]/tau)
			load[[2]int64{0, tx[i].ID}] += d
			load[[2]int64{1, rx[i].ID}] += d
			k := pair{tx[i].ID, rx[i].ID, cycle[i]}
			s := same[k]
			same[k] = [2]float64{s[0] + 1, s[1] + d}
		}
		for i := range rates {
			s := same[pair{tx[i].ID, rx[i].ID, cycle[i]}]
			// In step: the other copies (s[0]-1) count whole; everything else by duty.
			ka := max(1, s[0]+load[[2]int64{0, tx[i].ID}]-s[1])
			kb := max(1, s[0]+load[[2]int64{1, rx[i].ID}]-s[1])
			rates[i] = min(caps[i], float64(tx[i].Rate)/ka, float64(rx[i].Rate)/kb)
		}
	}
	return 0, nil
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
	for _, ch := range channels {
		for _, h := range ch.Hops {
			tx, rx, caps = append(tx, h.Tx), append(rx, h.Rx), append(caps, float64(h.BW))
		}
	}
	return
}

// ringPath is the longest path (picoseconds) over every channel, with each hop at its rate.
func ringPath(channels []RingChannel, rates []float64, steps int) (float64, error) {
	var worst float64
	off := 0
	for _, ch := range channels {
		n := len(ch.Hops)
		r := rates[off : off+n]
		off += n
		var total float64 // picoseconds
		t := make([]float64, n)
		c := make([]float64, n)
		for k, b := range ch.Blocks {
			bits := 8 * float64(b)
			for p := range ch.Hops {
				t[p] = bits / r[p] * float64(units.Second)
				c[p] = t[p] + float64(ch.Hops[p].Lat)
			}
			total += loopPath(t, c, steps, k > 0)
		}
		worst = max(worst, total)
	}
	if worst >= float64(units.MaxTime) {
		return 0, fmt.Errorf("ring: completion time overflows")
	}
	return worst, nil
}

// lockstepRates is the max-min fair rate (bits/s) of every hop of every channel, all sending at
// once, each capped by its path bandwidth and sharing its transmit and receive ports.
func lockstepRates(channels []RingChannel) ([]float64, error) {
	type prt struct {
		left  float64
		count int
	}
	var ports []prt
	index := [2]map[int64]int32{{}, {}}
	portOf := func(side int, p Port) int32 {
		i, ok := index[side][p.ID]
		if !ok {
			i = int32(len(ports))
			index[side][p.ID] = i
			ports = append(ports, prt{left: float64(p.Rate)})
		}
		return i
	}
	var tx, rx []int32
	var capv []float64
	for ci, ch := range channels {
		for p, h := range ch.Hops {
			if h.BW <= 0 || h.Tx.Rate <= 0 || h.Rx.Rate <= 0 {
				return nil, fmt.Errorf("ring: channel %d hop %d: bandwidth %v, ports %v/%v: not positive", ci, p, h.BW, h.Tx.Rate, h.Rx.Rate)
			}
			a, b := portOf(0, h.Tx), portOf(1, h.Rx)
			ports[a].count++
			ports[b].count++
			tx, rx = append(tx, a), append(rx, b)
			capv = append(capv, float64(h.BW))
		}
	}
	rate := make([]float64, len(tx))
	for i := range rate {
		rate[i] = -1
	}
	left := len(rate)
	for left > 0 {
		x := math.Inf(1)
		for _, p := range ports {
			if p.count > 0 {
				x = min(x, p.left/float64(p.count))
			}
		}
		for i, r := range rate {
			if r < 0 {
				x = min(x, capv[i])
			}
		}
		x = max(x, 0)
		lim := x * (1 + 1e-12)
		var frozen []int
		for i, r := range rate {
			if r >= 0 {
				continue
			}
			a, b := &ports[tx[i]], &ports[rx[i]]
			if capv[i] <= lim || a.left/float64(a.count) <= lim || b.left/float64(b.count) <= lim {
				frozen = append(frozen, i)
			}
		}
		for _, i := range frozen {
			rate[i] = min(x, capv[i])
			for _, p := range [2]int32{tx[i], rx[i]} {
				ports[p].left = max(ports[p].left-rate[i], 0)
				ports[p].count--
			}
		}
		left -= len(frozen)
		if x <= 0 && len(frozen) > 0 {
			return nil, fmt.Errorf("ring: a port has no capacity left")
		}
	}
	return rate, nil
}

// loopPath is the longest path through one pipelining loop of steps steps on a ring whose hop p
// serializes a block in t[p] and delivers it c[p] after it starts; behind means the loop starts
// behind the previous one on the same connections (its first message adds t, not c).
func loopPath(t, c []float64, steps int, behind bool) float64 {
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
	pre := make([]float64, 2*n+1)
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
	bestRight := make([]float64, maxLen)
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
