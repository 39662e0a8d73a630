package flow

import (
	"math"
	"testing"

	"github.com/fabricsim/fabricsim/transport/cc/dcqcn"
	"github.com/fabricsim/fabricsim/units"
)

// TestRoundRobinWait: a flow its pacer holds to r beside n flows at their share of a busy
// 400 Gb/s NIC waits, on average, half a round of its NIC's round robin once its interval has
// passed (fabric/nic.go, nextData: the pointer passes over it until its interval has passed, and
// the next interval counts from the send). In a round each of the n others sends one frame at
// line rate, so the round is n frames at line rate whatever the paced flow's rate, and the
// flow's packets go every w/r + n w / (2 x line) on average: with n = 30 and 4,186-byte frames,
// 1.2558 us. A flow at the fill's level is served every round (no wait), and so is every flow
// of a NIC that sends less than it could.
func TestRoundRobinWait(t *testing.T) {
	const (
		line = 50e9 // 400 Gb/s, bytes per second
		w    = 4186.0
		n    = 30
		tau  = 1e-6
	)
	tEnd := units.Microsecond
	e := &engine{ideal: &idealCache{maxWire: w}, flows: make([]flowState, n+1)}
	d := &dcqcnModel{e: e, rr: make([]rrHost, 1)}
	flows := make([]int32, n+1)
	for i := range flows {
		flows[i] = int32(i)
	}
	fill1 := func(paced float64, others float64) []fill {
		g := make([]fill, n+1)
		g[0] = fill{d: paced * tau, i: 0}
		for k := 1; k <= n; k++ {
			g[k] = fill{d: others * tau, i: int32(k)}
		}
		waterFill(line*tau, g)
		// (waterFill sorts the grants; the flows' rates as inject sets them)
		for _, x := range g {
			e.flows[x.i].rate = x.d / tau
		}
		d.round(0, g, flows, tEnd, tau, line*tau)
		return g
	}
	for _, r := range []float64{0.1e9, 1e9, 1.5e9} { // 0.8, 8 and 12 Gb/s
		fill1(r, line)
		if got := e.flows[1].rate; math.Abs(got-(line-r)/n) > 1e-6*line {
			t.Fatalf("r %g: the others' share %g, want %g", r, got, (line-r)/n)
		}
		want := n * w / (2 * line) // half of n frames at line rate
		got := d.rrWait(0, r, e.flows[0].rate)
		if math.Abs(got-want) > 1e-12*want {
			t.Errorf("r %g: wait %.6g s, want %.6g s (half a round)", r, got, want)
		}
		// rate: the fluid of a flow whose pacer holds it to r sends a frame per interval plus
		// the wait.
		d.st = []ccFlow{{}}
		d.st[0].rp.RC = r * 8
		wantRate := w / (w/r + want)
		if got := d.rate(0); math.Abs(got-wantRate) > 1e-9*wantRate {
			t.Errorf("r %g: rate %g, want %g (one frame every %.4f us)", r, got, wantRate, (w/r+want)*1e6)
		}
	}
	// A flow at the fill's level (its pacer allows more than its share) waits for nothing.
	fill1(10e9, line)
	if got := d.rrWait(0, 10e9, e.flows[0].rate); got != 0 {
		t.Errorf("a flow at the level waits %g s, want 0", got)
	}
	// A NIC sending less than it could: served at once.
	fill1(0.1e9, 1e9)
	if got := d.rrWait(0, 0.1e9, e.flows[0].rate); got != 0 || d.rr[0].n != 0 {
		t.Errorf("an idle NIC: wait %g s (%d at the level), want 0", got, d.rr[0].n)
	}
}

// TestFrameMarksArrive: one flow at 12.8 Gb/s (less than a frame a 1 us step) through one queue
// that delays every byte by D = 20 us and marks every packet (above Kmax). On the packet
// backend the NIC sends frame j whole at j w / r (when the fluid sends the frame's first byte),
// the packet leaves the queue D later and its last byte reaches the receiver a frame's
// serialisation at 400 Gb/s (83.72 ns) and the path latency after that; the receiver answers the
// first marked packet after each CNP interval (4 us) with a CNP. The flow backend's CNPs must
// come at those times (to the nanosecond: a mark is filed at its frame's first byte), one for
// every frame that arrives 4 us or more after the last CNP: with a frame every 2.6163 us, every
// second frame's.
func TestFrameMarksArrive(t *testing.T) {
	const (
		w   = 4186.0
		r   = 1.6e9 // 12.8 Gb/s
		D   = 20e-6 // (a whole number of steps: the fluid's deliveries start at a step's start)
		tau = 1e-6
		lat = 1500 * units.Nanosecond
	)
	ser := units.Time(math.Round(w / 50e9 * float64(units.Second)))
	e := &engine{ideal: &idealCache{maxWire: w}, flows: make([]flowState, 1), path: []int32{0, 1},
		owner: []slotOwner{{res: 0}, {res: 1}}, net: &network{res: make([]resource, 2)}}
	f := &e.flows[0]
	f.hops, f.lat, f.total, f.ackOff = 2, lat, 1e9, 2
	d := &dcqcnModel{e: e, p: dcqcn.ConnectX(), st: []ccFlow{{on: true, ser: ser}}}
	d.st[0].rp.RC = 400e9 // above the paced range: the fluid's marks (markAt)
	s := &d.st[0]
	var got []units.Time
	steps := 80
	for k := range steps {
		t0, t1 := units.Time(k)*units.Microsecond, units.Time(k+1)*units.Microsecond
		sent := r * t1.Seconds()
		amt := r * tau
		// What has left the queue by the step's end: the bytes sent D earlier.
		deliv := max(0, r*(t1.Seconds()-D))
		f.deliv = deliv
		e.owner[1].back = sent - deliv
		// The bytes that joined the queue this step; above Kmax.
		d.markAt(0, 1, f, amt, 1, math.Inf(-1))
		d.deliveredMarks(0, s, f, t0+f.lat, t1+f.lat)
		for _, c := range s.cnps {
			got = append(got, c-f.lat) // (when the receiver sent it)
		}
		s.cnps = s.cnps[:0]
	}
	// The packet backend's: frame j reaches the receiver at j w / r + D + ser + lat.
	var want []units.Time
	var last units.Time = -1
	for j := 0; float64(j)*w+1 <= f.deliv; j++ { // (the frames delivered by the last step)
		at := units.Time(math.Round((float64(j)*w/r+D)*float64(units.Second))) + ser + lat
		if last < 0 || at >= last+d.p.CNPInterval {
			want = append(want, at)
			last = at
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d CNPs %v, want %d %v", len(got), got, len(want), want)
	}
	for i := range want {
		if d := got[i] - want[i]; d < -units.Nanosecond || d > units.Nanosecond {
			t.Errorf("CNP %d at %v, want %v (the packet's arrival)", i, got[i], want[i])
		}
	}
	t.Logf("%d CNPs, %v ... %v", len(got), got[0], got[len(got)-1])
}

// TestFrameStarts: the frames whose first byte is among a flow's bytes (a, b].
func TestFrameStarts(t *testing.T) {
	for _, c := range []struct {
		a, b, w float64
		j0      float64
		n       int
	}{
		{0, 100, 1000, 0, 1},       // byte 1
		{100, 900, 1000, 1, 0},     // none
		{900, 1001, 1000, 1, 1},    // byte 1001
		{1001, 2000, 1000, 2, 0},   // (1001 is not among them)
		{1000.5, 5200, 1000, 1, 5}, // 1001, 2001, ..., 5001
	} {
		j0, n := frameStarts(c.a, c.b, c.w)
		if n != c.n || n > 0 && j0 != c.j0 {
			t.Errorf("frameStarts(%g, %g, %g) = %g, %d; want %g, %d", c.a, c.b, c.w, j0, n, c.j0, c.n)
		}
	}
}
