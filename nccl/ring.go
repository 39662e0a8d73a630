package nccl

import (
	"github.com/fabricsim/fabricsim/analytic"
	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/cluster"
	"github.com/fabricsim/fabricsim/collective"
	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/units"
)

// RingModelMessages is the size of a collective's message graph, in messages, above which
// RingTime models a flat ring (and TreeTime a tree all-reduce) instead of running it message by
// message on the analytic backend: 2^21 keeps every ring of up to 256 GPUs (8 channels of a
// 1 GiB all-reduce: 1.04 M messages) and every 1 GiB tree of up to 512 GPUs (2.1 M) on the
// message graph, as before, and costs the engine a few seconds.
const RingModelMessages = 1 << 21

// RingMessages is the number of messages Compile would build for a flat ring collective on the
// cluster (channels x loops x steps x ranks), 0 when op does not run as a flat ring.
func RingMessages(c *cluster.Cluster, op collective.Op, bytes units.Size, o Options) float64 {
	chans, steps, ok := ringPlan(c, op, bytes, o)
	if !ok {
		return 0
	}
	var m float64
	for _, ch := range chans {
		m += float64(len(collective.RingBlocks(ch))) * float64(steps) * float64(c.GPUs)
	}
	return m
}

// ringPlan returns the per-channel specs of a flat ring collective as Compile lays it out, and
// its steps per loop; ok is false for collectives that do not run as a flat ring (other
// algorithms, other operations, PXN).
func ringPlan(c *cluster.Cluster, op collective.Op, bytes units.Size, o Options) ([]collective.Spec, int, bool) {
	ring := o.Algo == collective.Ring || o.Algo == collective.Default && (op == collective.AllReduce || op == collective.AllGather || op == collective.ReduceScatter)
	if !ring || o.PXN || c.GPUs < 2 || (op != collective.AllReduce && op != collective.AllGather && op != collective.ReduceScatter) {
		return nil, 0, false
	}
	chunk := o.ChunkBytes
	if chunk == 0 {
		chunk = DefaultChunk
	}
	ch := o.Channels
	if ch == 0 {
		ch = c.Server.GPUs
	}
	unit := int64(1)
	if op == collective.AllGather || op == collective.ReduceScatter {
		unit = int64(c.GPUs)
	}
	rings := Rings(c, ch)
	total := int64(bytes) / unit
	var out []collective.Spec
	for i := 0; i < ch; i++ {
		part := total / int64(ch)
		if int64(i) < total%int64(ch) {
			part++
		}
		if part == 0 {
			continue
		}
		out = append(out, collective.Spec{Op: op, Algo: collective.Ring, Ranks: rings[i], Bytes: units.Size(part * unit), Channels: 1, ChunkBytes: chunk})
	}
	steps := c.GPUs - 1
	if op == collective.AllReduce {
		steps = 2 * (c.GPUs - 1)
	}
	return out, steps, true
}

// RingTime is the analytic backend's time for a flat ring collective laid out as Compile lays it
// out (Rings, channels, chunks; GPUDirect), from analytic.RingTime, the ring pipeline model: each
// hop's latency, bandwidth and ports are those backend.PathNetwork gives the message (its routes' first
// path), all channels share the ports at once. Linear in the number of GPUs, where the message
// graph has GPUs x steps messages per channel. ok is false when op does not run as a flat ring.
func RingTime(c *cluster.Cluster, op collective.Op, bytes units.Size, o Options, cfg fabric.Config) (t units.Time, ok bool, err error) {
	specs, steps, ok := ringPlan(c, op, bytes, o)
	if !ok {
		return 0, false, nil
	}
	r, err := c.Routes()
	if err != nil {
		return 0, true, err
	}
	a := backend.NewPathNetwork(c.Graph, r, cfg)
	chans := make([]analytic.RingChannel, 0, len(specs))
	for _, sp := range specs {
		n := len(sp.Ranks)
		rc := analytic.RingChannel{Blocks: collective.RingBlocks(sp), Hops: make([]analytic.RingHop, n)}
		for p := 0; p < n; p++ {
			src, dst := c.Route(sp.Ranks[p], sp.Ranks[(p+1)%n])
			rc.Hops[p] = analytic.RingHop{Lat: a.Latency(src, dst), BW: a.Bandwidth(src, dst), Tx: a.TxPort(src, dst), Rx: a.RxPort(src, dst)}
		}
		chans = append(chans, rc)
	}
	t, err = analytic.RingTime(chans, steps)
	return t, true, err
}
