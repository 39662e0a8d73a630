package flow

import (
	"encoding/binary"
	"slices"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/units"
)

// idealCache computes a message's completion time alone on an idle network, exactly as the
// packet backend's store-and-forward pipeline produces it (fabric/ideal.go): each packet starts
// on a link when it has fully arrived and the previous packet has left. The flow model adds the
// part of it that is latency (beyond the bytes at the bottleneck rate) to every flow.
type idealCache struct {
	cfg     *fabric.Config
	memo    map[string]units.Time
	key     []byte
	maxWire float64 // wire bytes of a full data packet
	links   []int32 // scratch: a path without its pair constraints
}

func newIdealCache(cfg *fabric.Config) *idealCache {
	return &idealCache{cfg: cfg, memo: map[string]units.Time{},
		maxWire: float64(max(int(cfg.MTU)+cfg.HeaderBytes, cfg.MinFrame) + cfg.L1Overhead)}
}

// fct is the alone-on-the-network completion time of payload bytes over path (a bundle counts as
// one of its links: a lone packet uses one; a pair constraint, no link, not at all).
func (c *idealCache) fct(net *network, path []int32, payload int64) units.Time {
	if len(net.pairMark) > 0 && slices.ContainsFunc(path, net.isPair) {
		c.links = c.links[:0]
		for _, r := range path {
			if !net.isPair(r) {
				c.links = append(c.links, r)
			}
		}
		path = c.links
	}
	c.key = binary.LittleEndian.AppendUint64(c.key[:0], uint64(payload))
	for _, r := range path {
		res := &net.res[r]
		c.key = binary.LittleEndian.AppendUint64(c.key, uint64(res.linkRate))
		c.key = binary.LittleEndian.AppendUint64(c.key, uint64(res.delay))
	}
	if v, ok := c.memo[string(c.key)]; ok {
		return v
	}
	cfg := c.cfg
	free := make([]units.Time, len(path))
	var done units.Time
	mtu := int64(cfg.MTU)
	frame := func(p int64, hdr int) units.Size {
		return units.Size(max(p+int64(hdr), int64(cfg.MinFrame)) + int64(cfg.L1Overhead))
	}
	// Packets of the same size follow the same pipeline: the bulk of full packets is computed by
	// its steady state once the pipeline is full (every packet then adds the bottleneck's time).
	for sent := int64(0); sent < payload; {
		p := min(payload-sent, mtu)
		hdr := cfg.HeaderBytes
		if sent == 0 {
			hdr += cfg.FirstHeaderExtra
		}
		sent += p
		wire := frame(p, hdr)
		var ready units.Time
		for j, r := range path {
			res := &net.res[r]
			end := max(ready, free[j]) + res.linkRate.TransmitTime(wire)
			free[j] = end
			ready = end + res.delay
		}
		done = ready
		if p == mtu && sent > 0 && payload-sent > 2*mtu && len(path) > 0 {
			// Skip ahead: with the pipeline primed by this packet, each further full packet
			// finishes one bottleneck time later at every hop at or after the bottleneck.
			n := (payload-sent)/mtu - 1
			var bott units.Time
			for _, r := range path {
				bott = max(bott, net.res[r].linkRate.TransmitTime(frame(mtu, cfg.HeaderBytes)))
			}
			if sent > mtu && n > 0 {
				for j := range free {
					free[j] += units.Time(n) * bott
				}
				sent += n * mtu
				done += units.Time(n) * bott
			}
		}
	}
	c.memo[string(c.key)] = done
	return done
}
