package collective

import (
	"fmt"
	"slices"

	"github.com/fabricsim/fabricsim/msggraph"
)

// binaryTree is a binary tree over positions 0..n-1 numbered in order: position v>0 whose
// lowest set bit is b hangs below v with that bit cleared and the next bit set (or, if that is
// past the end, below v with the bit cleared); odd positions are leaves and position 0 is the
// root with a single child. This is the shape NCCL 2.4 uses for each of its two trees.
type binaryTree struct {
	parent   []int   // -1 for the root
	children [][]int // at most two each
	depth    []int
}

func newBinaryTree(n int) binaryTree {
	t := binaryTree{parent: make([]int, n), children: make([][]int, n), depth: make([]int, n)}
	t.parent[0] = -1
	for v := 1; v < n; v++ {
		low := v & -v
		up := (v ^ low) | (low << 1)
		if up >= n {
			up = v ^ low
		}
		t.parent[v] = up
		t.children[up] = append(t.children[up], v)
	}
	// Parents can have larger or smaller numbers than their children, so compute depths by
	// walking up.
	for v := 1; v < n; v++ {
		d := 0
		for u := v; u != 0; u = t.parent[u] {
			d++
		}
		t.depth[v] = d
	}
	return t
}

// treeRanks maps the positions of tree 0 or 1 to ranks. The second tree is the first mirrored
// (n even) or shifted by one (n odd), so that the leaves of one are interior nodes of the other
// (NVIDIA, "Massively Scale Your Deep Learning Training with NCCL 2.4", 2019).
func treeRanks(which, n int) []int {
	r := make([]int, n)
	for v := range r {
		switch {
		case which == 0:
			r[v] = v
		case n%2 == 0:
			r[v] = n - 1 - v
		default:
			r[v] = (v + 1) % n
		}
	}
	return r
}

// treeAllReduce is the double binary tree: each tree carries half of S over its own channels;
// per chunk, partial sums go up from the leaves, the root completes the sum and the result
// goes back down.
func (b *builder) treeAllReduce() {
	n, c := b.n, b.s.channels()
	t := newBinaryTree(n)
	bottomUp := allRanks(n)[1:]
	slices.SortStableFunc(bottomUp, func(x, y int) int { return t.depth[y] - t.depth[x] })
	topDown := slices.Clone(bottomUp)
	slices.Reverse(topDown)
	for which, half := range Split(int64(b.s.Bytes), 2) {
		rank := treeRanks(which, n)
		for ch, d := range Split(half, c) {
			conn := b.conn(which*c + ch)
			for k, l := range b.loops(d, 1) {
				label := fmt.Sprintf("tree%d/c%d/k%d", which, ch, k)
				up := make([]msggraph.ID, n)
				for _, v := range bottomUp {
					var deps []msggraph.ID
					for _, cv := range t.children[v] {
						deps = append(deps, up[cv])
					}
					up[v] = b.add(rank[v], rank[t.parent[v]], l, conn, deps, len(deps) > 0, label+"/up")
				}
				down := make([]msggraph.ID, n)
				var rootDeps []msggraph.ID
				for _, cv := range t.children[0] {
					rootDeps = append(rootDeps, up[cv])
				}
				for _, cv := range t.children[0] {
					down[cv] = b.add(rank[0], rank[cv], l, conn, rootDeps, true, label+"/down")
				}
				for _, v := range topDown {
					for _, cv := range t.children[v] {
						down[cv] = b.add(rank[v], rank[cv], l, conn, []msggraph.ID{down[v]}, false, label+"/down")
					}
				}
			}
		}
	}
}

// TreeParents returns, for tree which (0 or 1) of the double binary tree over n ranks, each
// rank's parent (-1 for the root), as Tree all-reduce lays the tree out (for models that time
// the tree without building its messages: nccl.TreeTime).
func TreeParents(which, n int) []int {
	t := newBinaryTree(n)
	rank := treeRanks(which, n)
	out := make([]int, n)
	for v := range rank {
		out[rank[v]] = -1
		if t.parent[v] >= 0 {
			out[rank[v]] = rank[t.parent[v]]
		}
	}
	return out
}
