package collective

import (
	"fmt"

	"github.com/fabricsim/fabricsim/msggraph"
)

// servers groups ranks by Spec.ServerOf: servers in order of their first rank, each server's
// ranks in rank order. Rail j is the set of ranks with local index j on every server.
func (b *builder) servers() ([][]int, error) {
	index := map[int]int{}
	var out [][]int
	for r := 0; r < b.n; r++ {
		sv := b.s.ServerOf(r)
		i, ok := index[sv]
		if !ok {
			i = len(out)
			index[sv] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], r)
	}
	for i := range out {
		if len(out[i]) != len(out[0]) {
			return nil, fmt.Errorf("%s hierarchical: server %d holds %d ranks but server %d holds %d (every server needs the same number)",
				b.s.Op, b.s.ServerOf(out[0][0]), len(out[0]), b.s.ServerOf(out[i][0]), len(out[i]))
		}
	}
	return out, nil
}

func rail(servers [][]int, j int) []int {
	r := make([]int, len(servers))
	for s := range servers {
		r[s] = servers[s][j]
	}
	return r
}

// arrivals returns, for each position of a ring run, the messages that arrived there at steps
// from..to-1 (nil when the ring did not run).
func arrivals(msgs [][]msggraph.ID, n, from, to int) [][]msggraph.ID {
	out := make([][]msggraph.ID, n)
	for p := 0; p < n; p++ {
		for s := from; s < to; s++ {
			out[p] = append(out[p], msgs[s][mod(p-1, n)])
		}
	}
	return out
}

func (b *builder) hierarchical() error {
	servers, err := b.servers()
	if err != nil {
		return err
	}
	g, m := len(servers[0]), len(servers)
	for ch, d := range Split(int64(b.s.Bytes), b.s.channels()) {
		for k, l := range b.loops(d, b.n) {
			label := fmt.Sprintf("hier/c%d/k%d", ch, k)
			switch b.s.Op {
			case AllReduce:
				b.hierAllReduce(servers, g, m, b.conn(ch), l, label)
			case AllGather:
				b.hierAllGather(servers, g, m, b.conn(ch), l, label)
			case ReduceScatter:
				b.hierReduceScatter(servers, g, m, b.conn(ch), l, label)
			}
		}
	}
	return nil
}

// intraReduceScatter runs a ring reduce-scatter of blocks (one per local rank) inside each
// server and returns, per rank, the arrivals after which its own block is reduced there (nil for
// every rank when a server has one GPU).
func (b *builder) intraReduceScatter(servers [][]int, blocks []int64, g int, conn int32, label string) [][]msggraph.ID {
	ready := make([][]msggraph.ID, b.n)
	if g > 1 {
		for _, sv := range servers {
			msgs := b.run(ring{members: sv, blocks: blocks, conn: conn, steps: g - 1, blockOf: rsBlock(g),
				reduce: func(s int) bool { return s >= 1 }, label: label + "/intra-rs"})
			for p, a := range arrivals(msgs, g, g-2, g-1) {
				ready[sv[p]] = a
			}
		}
	}
	return ready
}

// hierAllReduce: reduce-scatter inside each server (local rank j ends up owning block j), an
// all-reduce of block j across servers on rail j, then an all-gather inside each server.
// Each rank sends (g-1)/g S + 2(m-1)/m S/g + (g-1)/g S = 2(n-1)/n S, as the flat ring does.
func (b *builder) hierAllReduce(servers [][]int, g, m int, conn int32, l int64, label string) {
	blocks := Split(l, g)
	ready := b.intraReduceScatter(servers, blocks, g, conn, label) // per rank: its own block is reduced within the server
	if m > 1 {
		for j := 0; j < g; j++ {
			members := rail(servers, j)
			own := make([][]msggraph.ID, m)
			for p, r := range members {
				own[p] = ready[r]
			}
			msgs := b.run(ring{members: members, blocks: Split(blocks[j], m), conn: conn, steps: 2 * (m - 1),
				blockOf: arBlock(m), own: own, ownSteps: m,
				reduce: func(s int) bool { return (s >= 1 && s <= m-1) || (s == 0 && g > 1) },
				label:  label + "/rail-ar"})
			for p, a := range arrivals(msgs, m, m-2, 2*(m-1)) {
				ready[members[p]] = a
			}
		}
	}
	if g > 1 {
		for _, sv := range servers {
			own := make([][]msggraph.ID, g)
			for p, r := range sv {
				own[p] = ready[r]
			}
			b.run(ring{members: sv, blocks: blocks, conn: conn, steps: g - 1, blockOf: agBlock(g), own: own, ownSteps: 1,
				reduce: func(s int) bool { return s == 0 && m == 1 }, label: label + "/intra-ag"})
		}
	}
}

// hierAllGather: an all-gather of the per-rank pieces across servers on each rail, then an
// all-gather inside each server of what each rail gathered.
func (b *builder) hierAllGather(servers [][]int, g, m int, conn int32, l int64, label string) {
	pieces := Split(l, b.n) // pieces[r]: rank r's input in this loop
	ready := make([][]msggraph.ID, b.n)
	railBytes := make([]int64, g)
	for j := 0; j < g; j++ {
		members := rail(servers, j)
		blocks := make([]int64, m)
		for p, r := range members {
			blocks[p] = pieces[r]
		}
		railBytes[j] = sum(blocks)
		if m > 1 {
			msgs := b.run(ring{members: members, blocks: blocks, conn: conn, steps: m - 1, blockOf: agBlock(m), label: label + "/rail-ag"})
			for p, a := range arrivals(msgs, m, 0, m-1) {
				ready[members[p]] = a
			}
		}
	}
	if g > 1 {
		for _, sv := range servers {
			own := make([][]msggraph.ID, g)
			for p, r := range sv {
				own[p] = ready[r]
			}
			b.run(ring{members: sv, blocks: railBytes, conn: conn, steps: g - 1, blockOf: agBlock(g), own: own, ownSteps: 1, label: label + "/intra-ag"})
		}
	}
}

// hierReduceScatter: a reduce-scatter inside each server that leaves local rank j with the
// server's partial sums of rail j's data, then a reduce-scatter across servers on each rail.
func (b *builder) hierReduceScatter(servers [][]int, g, m int, conn int32, l int64, label string) {
	pieces := Split(l, b.n) // pieces[r]: rank r's output in this loop
	railBytes := make([]int64, g)
	for j := 0; j < g; j++ {
		for _, r := range rail(servers, j) {
			railBytes[j] += pieces[r]
		}
	}
	ready := b.intraReduceScatter(servers, railBytes, g, conn, label)
	if m > 1 {
		for j := 0; j < g; j++ {
			members := rail(servers, j)
			own := make([][]msggraph.ID, m)
			blocks := make([]int64, m)
			for p, r := range members {
				own[p] = ready[r]
				blocks[p] = pieces[r]
			}
			msgs := b.run(ring{members: members, blocks: blocks, conn: conn, steps: m - 1, blockOf: rsBlock(m), own: own, ownSteps: m - 1,
				reduce: func(s int) bool { return s >= 1 || g > 1 }, label: label + "/rail-rs"})
			for p, a := range arrivals(msgs, m, m-2, m-1) {
				ready[members[p]] = a
			}
		}
	}
	for r := 0; r < b.n; r++ {
		b.reduceNode(r, pieces[r], ready[r], label+"/reduce")
	}
}
