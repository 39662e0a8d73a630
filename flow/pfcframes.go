package flow

import "math"

// PFC's PAUSE frames, counted as a port sends them (fabric/pfc.go) rather than at the step's
// resolution. A switch sends XOFF when an ingress port-priority's counter reaches XOFF,
// refreshes it while the counter stays above XON, and sends XON once the counter has fallen to
// XON (802.1Qbb, [IEEE 802.1Q]; [Guo16]). Upstream stops and restarts a loop delay d after each
// frame, so a congested ingress saws between about XON - D d and XOFF + (L - D) d: amplitude
//
//	A = H + L d,
//
// H = XOFF - XON (the hysteresis), L the link's rate, D the rate the counter drains at. One
// pause (XOFF to XON) lasts the time the counter takes to fall by A, Tp = A / D, and the
// upstream is paused for about as long; so a throttle paused for s seconds in all (the flow
// backend's paused time, which does not depend on the step) has sent s / Tp pauses, each one
// XOFF, its ceil(Tp / R) - 1 refreshes at every R of the pause (fabric: half the pause time of
// PauseQuanta) and one XON. Counted so, the frames do not depend on the step's length: a
// throttle that flips between binding and free at the step's resolution (its counter near
// XOFF, the rate it is offered near its drain) adds paused time, not pauses (docs/flow.md, "PFC
// pause frames").

// pauseFrameBytes is a PAUSE frame without its preamble and gap: a MAC control frame of the
// minimum 64 bytes (IEEE 802.3 Annex 31D, as fabric/pfc.go sends it).
const pauseFrameBytes = 64

// minPaused is the least paused time (seconds) that counts as a pause: the packet backend's
// clock tick, 1 ps (below it, what the sums of paused fractions leave by rounding).
const minPaused = 1e-12

// pauseCounter is one ingress port-priority's (a resource and lossless class's) pause state:
// how far its counter has fallen toward XON in the open pause and for how long the pause has
// held its upstream paused (16 bytes: the planned bytesPerChannel counts it).
type pauseCounter struct {
	// counted is the throttle's paused time (backpressure.stalled) already counted in frames.
	counted float64
	// fallen is the part of the saw's amplitude the counter has drained in the open pause, in
	// [0, 1); held the paused seconds since its XOFF (the refresh timer's clock), 0 when no
	// pause is open.
	fallen, held float32
}

// open reports whether the port holds its upstream paused (XOFF sent, no XON yet).
func (p *pauseCounter) open() bool { return p.held > 0 }

// pauseFrames are the frames a pauseCounter sends over a stretch.
type pauseFrames struct {
	xoff, refresh, xon int64
}

// advance counts the frames of s more paused seconds over which the counter drains k saw
// amplitudes (k = s / Tp; 0: the counter does not drain, the pause lasts), refreshed every r
// seconds: the first paused second opens a pause (XOFF), each pause closes once its counter has
// drained one amplitude (XON), the paused time beyond opens the next, and a pause sends a refresh
// at every r seconds it has held.
func (p *pauseCounter) advance(s, k, r float64) pauseFrames {
	var f pauseFrames
	if !(s > 0) {
		return f
	}
	fallen, held := float64(p.fallen), float64(p.held)
	if !p.open() {
		fallen, held = 0, 0
		f.xoff++
	}
	x := fallen + k
	if !(x >= 1) {
		f.refresh += int64(math.Floor((held+s)/r) - math.Floor(held/r))
		p.fallen, p.held = float32(x), float32(held+s)
		return f
	}
	tp := s / k // a whole pause's paused seconds at this drain
	n := math.Floor(x)
	rest := (x - n) * tp
	// The open pause ends after (1 - fallen) tp more seconds; refreshes at r, 2r, ... before it.
	end := held + (1-fallen)*tp
	f.refresh += int64(math.Ceil(end/r) - 1 - math.Floor(held/r))
	f.refresh += int64(n-1) * int64(math.Ceil(tp/r)-1)
	f.xon += int64(n)
	if rest > 0 {
		f.xoff += int64(n)
		f.refresh += int64(math.Floor(rest / r))
		p.fallen, p.held = float32(x-n), float32(rest)
	} else {
		f.xoff += int64(n) - 1
		p.fallen, p.held = 0, 0
	}
	return f
}

// release closes the open pause (XON): the counter fell below the saw's range.
func (p *pauseCounter) release() pauseFrames {
	if !p.open() {
		return pauseFrames{}
	}
	p.fallen, p.held = 0, 0
	return pauseFrames{xon: 1}
}

// pfcSaw is the amplitude A (bytes) of a congested ingress counter of resource r, per link: the
// hysteresis H plus what one link delivers in the loop delay d, the time from the counter
// reaching XOFF to upstream's last byte arriving (and from XON to its first): the PAUSE frame
// waits for the frame on the wire and crosses the reverse link, upstream finishes the frame it is
// sending, which crosses the link (each crossing its propagation and the receiving node's
// latency, as fabric's Port.delay).
func (b *backpressure) pfcSaw(r int32) float64 {
	if int(r) < len(b.saw) && b.saw[r] > 0 {
		return b.saw[r]
	}
	e := b.e
	c := &e.cfg.RoCE
	res := &e.net.res[r]
	h := float64(c.XONOffset)
	if b.alpha == 0 {
		h = float64(c.XOFF - c.XON)
	}
	l := float64(res.linkRate) / 8
	wire := e.ideal.maxWire + float64(pauseFrameBytes+e.cfg.L1Overhead)
	d := (res.delay + e.net.res[e.net.reverse(res.first)].delay).Seconds() + wire/l
	a := h + l*d
	if len(b.saw) < len(e.net.res) {
		b.saw = append(b.saw, make([]float64, len(e.net.res)-len(b.saw))...)
	}
	b.saw[r] = a
	return a
}

// countPauses counts the frames of ingress idx (resource r, a lossless class) for the paused
// time added since it last counted, at the drain rate of the stretch (bytes/s); at a stretch with
// no paused time a counter ing that has fallen the saw's amplitude below XOFF (bound) releases
// its pause. A bundle's links each saw at their share of the drain: its frames are per link times
// its links.
func (b *backpressure) countPauses(idx int, r int32, drain, ing, bound float64) {
	p := &b.pc[idx]
	s := b.stalled[idx] - p.counted
	if s <= minPaused {
		if !p.open() {
			return
		}
		s = 0 // rounding of the paused time's sums, not a pause
	}
	p.counted = b.stalled[idx]
	links := float64(b.e.net.res[r].links)
	a := b.pfcSaw(r)
	switch {
	case s > 0:
		// Each link's counter drains drain/links and falls one amplitude in a pause.
		b.addFrames(idx, r, p.advance(s, s*drain/(a*links), b.refreshAt(r)))
	case ing <= bound-a*links:
		b.addFrames(idx, r, p.release())
	}
}

func (b *backpressure) addFrames(idx int, r int32, f pauseFrames) {
	n := int64(b.e.net.res[r].links)
	b.pauseFrames[idx] += (f.xoff + f.refresh) * n
	b.resumes[idx] += f.xon * n
}

// flushPauses counts the paused time not yet counted (the last step's) and releases every open
// pause: at the end of a run every counter has drained.
func (b *backpressure) flushPauses() {
	if b.kind != bpPFC {
		return
	}
	e := b.e
	for idx := range b.pc {
		r := int32(idx / e.nc)
		drain := 0.0
		if b.tau > 0 {
			drain = e.rc[idx].lastDrain / b.tau
		}
		b.countPauses(idx, r, drain, math.Inf(1), 0)
		b.addFrames(idx, r, b.pc[idx].release())
	}
}
