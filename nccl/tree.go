package nccl

import (
	"github.com/fabricsim/fabricsim/analytic"
	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/cluster"
	"github.com/fabricsim/fabricsim/collective"
	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/units"
)

// TreeMessages is the number of messages Compile would build for a double-binary-tree
// all-reduce on the cluster (per tree, channel and chunk one message up and one down per rank
// but the root, and a completion node per rank), 0 when the collective is not one.
func TreeMessages(c *cluster.Cluster, op collective.Op, bytes units.Size, o Options) float64 {
	groups, ok := treePlan(c, op, bytes, o)
	if !ok {
		return 0
	}
	m := float64(c.GPUs) // a completion node per rank
	for _, g := range groups {
		m += 2 * float64(c.GPUs-1) * float64(len(g))
	}
	return m
}

// treePlan returns the chunks of each (tree, channel) pipeline as Compile lays the tree
// all-reduce out; ok is false for other collectives and for PXN.
func treePlan(c *cluster.Cluster, op collective.Op, bytes units.Size, o Options) ([][]int64, bool) {
	if op != collective.AllReduce || o.Algo != collective.Tree || o.PXN || c.GPUs < 2 {
		return nil, false
	}
	chunk := int64(o.ChunkBytes)
	if chunk == 0 {
		chunk = int64(DefaultChunk)
	}
	ch := max(o.Channels, 1)
	var out [][]int64
	for which := range 2 {
		half := int64(bytes) / 2
		if which == 0 {
			half += int64(bytes) % 2
		}
		for i := range ch {
			d := half / int64(ch)
			if int64(i) < half%int64(ch) {
				d++
			}
			var loops []int64
			for ; d > chunk; d -= chunk {
				loops = append(loops, chunk)
			}
			if d > 0 || len(loops) == 0 {
				loops = append(loops, d)
			}
			out = append(out, loops)
		}
	}
	return out, true
}

// TreeTime is the analytic backend's time for a double-binary-tree all-reduce laid out as
// Compile lays it out (collective.TreeParents, channels, chunks; GPUDirect), from
// analytic.PipeTime: each rank's connection to its parent in each tree and channel carries
// every chunk up, each parent's connection to it every chunk down, every hop's latency,
// bandwidth and ports those backend.PathNetwork gives the message. Linear in the GPUs, where
// the message graph has GPUs x chunks messages per tree and channel. ok is false when op does not
// run as a tree.
func TreeTime(c *cluster.Cluster, op collective.Op, bytes units.Size, o Options, cfg fabric.Config) (t units.Time, ok bool, err error) {
	plan, ok := treePlan(c, op, bytes, o)
	if !ok {
		return 0, false, nil
	}
	r, err := c.Routes()
	if err != nil {
		return 0, true, err
	}
	a := backend.NewPathNetwork(c.Graph, r, cfg)
	n := c.GPUs
	hop := func(from, to int) analytic.PipeHop {
		src, dst := c.Route(int32(from), int32(to))
		return analytic.PipeHop{Lat: a.Latency(src, dst), BW: a.Bandwidth(src, dst), Tx: a.TxPort(src, dst), Rx: a.RxPort(src, dst)}
	}
	shape := [2][]analytic.PipeHop{}
	for which := range 2 {
		parent := collective.TreeParents(which, n)
		children := make([][]int, n)
		root := -1
		for v, p := range parent {
			if p < 0 {
				root = v
				continue
			}
			children[p] = append(children[p], v)
		}
		// Ranks by depth, root first.
		order := []int{root}
		for i := 0; i < len(order); i++ {
			order = append(order, children[order[i]]...)
		}
		up := make([]int32, n)   // hop index of v -> parent(v)
		down := make([]int32, n) // hop index of parent(v) -> v
		var hops []analytic.PipeHop
		for i := n - 1; i >= 1; i-- { // leaves first: children before parents
			v := order[i]
			h := hop(v, parent[v])
			for _, cv := range children[v] {
				h.Deps = append(h.Deps, up[cv])
			}
			up[v] = int32(len(hops))
			hops = append(hops, h)
		}
		for i := 1; i < n; i++ { // the root's children first: parents before children
			v := order[i]
			h := hop(parent[v], v)
			if parent[v] == root {
				for _, cv := range children[root] {
					h.Deps = append(h.Deps, up[cv])
				}
			} else {
				h.Deps = []int32{down[parent[v]]}
			}
			down[v] = int32(len(hops))
			hops = append(hops, h)
		}
		shape[which] = hops
	}
	groups := make([]analytic.PipeGroup, len(plan))
	per := len(plan) / 2
	for i, chunks := range plan {
		groups[i] = analytic.PipeGroup{Hops: shape[i/per], Chunks: chunks}
	}
	t, err = analytic.PipeTime(groups)
	return t, true, err
}
