package topo

import (
	"encoding/binary"
	"slices"
	"strconv"
	"strings"
	"unsafe"
)

// treeRoutes computes minimum-hop next hops on a layered tree, the shape of every fat tree,
// leaf-spine and multi-tier Clos, from its regularity instead of a switches x hosts table.
//
// The tree is the network switches (Tier >= 1) and "attachments": the links by which
// destinations hang off tier-1 switches (a host's NIC link; in a GPU cluster, a NIC's network
// port). It qualifies when
//
//   - every switch-to-switch link joins tiers t and t+1, and attachments hang off tier 1 only
//     (layered);
//   - grouping the switches of a tier by the set of attachments below them (their descendants)
//     gives groups whose descendant sets are equal or disjoint (laminar): a group's children
//     belong to no other group;
//   - all up-neighbours of a switch lie in one group, the same for every switch of its group
//     (up-uniform), and a switch has up-links exactly when its group has a parent.
//
// Then a shortest path from switch n (tier t) to attachment a goes down when a is below n's
// group: to the neighbours in the child group that holds a, t links; otherwise up over every
// up-link, to the lowest ancestor group that holds a, and down: (t' - t) + t' links for that
// tier t'. No other path is shorter: a path that goes down and up again reaches, by laminarity
// and up-uniformity, an ancestor the up-only path reaches no later (the argument is in
// docs/architecture.md, "Routing without tables"). tree_test.go checks every next-hop set against
// the breadth-first table.
//
// Memory: per attachment and tier a (group, child index) pair, per switch one entry per child
// group and the interned port sets: linear in the size of the network.
type treeRoutes struct {
	tiers  int
	node   []treeNode // per node; group < 0 for nodes outside the tree
	att    []treeAtt  // [a*tiers + t-1]: the tier-t group above attachment a, and its child index
	root   []int32    // per attachment: the topmost group above it
	leaf   []NodeID   // per attachment: its tier-1 switch
	parent []int32    // per group: the parent group, -1 at the top
	down   []uint32   // per switch, from node.down: the port set toward each child of its group

	// sets[i] is port set i, a slice of ports (set 0 is empty): kept as slices, not as the
	// offsets they were built with, so that a lookup loads the set instead of slicing ports
	// (two offsets and their index checks) on every packet's route.
	sets  [][]int32
	ports []int32

	// desc[descStart[g]:descStart[g+1]] lists the attachments below group g, ascending (for
	// SameSetRank; hosts x tiers entries in all).
	descStart []int32
	desc      []int32
}

type treeNode struct {
	group int32 // -1: not a tree switch
	tier  int32
	down  int32  // first entry of this switch in treeRoutes.down
	up    uint32 // port set of the up-links
	root  int32  // the topmost group above this switch's group
}

type treeAtt struct{ group, child int32 }

// treeAttachment is one destination of a tree: the tier-1 switch it hangs off and that switch's
// port toward it.
type treeAttachment struct {
	leaf NodeID
	port int32
}

// hostAttachments lists g's hosts as tree attachments (host h is attachment h).
func hostAttachments(g *Graph) []treeAttachment {
	out := make([]treeAttachment, len(g.Hosts))
	for h, id := range g.Hosts {
		p := g.Nodes[id].Ports[0]
		out[h] = treeAttachment{leaf: p.Peer, port: p.PeerPort}
	}
	return out
}

// nodeTiers returns the tiers of g's nodes as Node.Tier has them.
func nodeTiers(g *Graph) []int32 {
	t := make([]int32, len(g.Nodes))
	for i := range g.Nodes {
		t[i] = int32(g.Nodes[i].Tier)
	}
	return t
}

// inferTiers gives the switches of Tier >= 1 the tier a layered tree would give them: 1 for the
// switches the attachments hang off, and one more per link away from them (imported topologies
// carry no tiers: the HPCC format gives every switch tier 1). Other nodes keep tier 0.
func inferTiers(g *Graph, atts []treeAttachment) []int32 {
	t := make([]int32, len(g.Nodes))
	var queue []NodeID
	for _, x := range atts {
		if t[x.leaf] == 0 {
			t[x.leaf] = 1
			queue = append(queue, x.leaf)
		}
	}
	for qi := 0; qi < len(queue); qi++ {
		n := queue[qi]
		for _, p := range g.Nodes[n].Ports {
			if m := &g.Nodes[p.Peer]; m.Kind == Switch && m.Tier >= 1 && t[p.Peer] == 0 {
				t[p.Peer] = t[n] + 1
				queue = append(queue, p.Peer)
			}
		}
	}
	return t
}

// buildTree returns the tree routes of g's switches of tier >= 1 (tier gives every node's tier)
// with the given attachments, or nil and the reason when the network does not qualify (see
// treeRoutes).
func buildTree(g *Graph, atts []treeAttachment, tier []int32) (*treeRoutes, string) {
	r := &treeRoutes{node: make([]treeNode, len(g.Nodes))}
	setStart := []uint32{0, 0} // port set i is ports[setStart[i]:setStart[i+1]] until sets is built
	T := 0
	for i := range g.Nodes {
		r.node[i].group = -1
		if g.Nodes[i].Kind == Switch && tier[i] >= 1 {
			T = max(T, int(tier[i]))
		}
	}
	if T == 0 {
		return nil, "no switch has a tier"
	}
	r.tiers = T
	inTree := func(id NodeID) bool { return g.Nodes[id].Kind == Switch && tier[id] >= 1 }
	// Attachments: the child index of each among its leaf's, in port order.
	attOf := map[[2]int32]int32{} // (leaf, port) -> attachment
	for a, x := range atts {
		if !inTree(x.leaf) || tier[x.leaf] != 1 {
			return nil, g.Nodes[x.leaf].Name + " has an attachment but is not a tier-1 switch"
		}
		attOf[[2]int32{int32(x.leaf), x.port}] = int32(a)
	}
	byTier := make([][]NodeID, T+1)
	for i := range g.Nodes {
		id := NodeID(i)
		if !inTree(id) {
			continue
		}
		n := &g.Nodes[i]
		byTier[tier[i]] = append(byTier[tier[i]], id)
		for pi, p := range n.Ports {
			if inTree(p.Peer) {
				if d := tier[p.Peer] - tier[i]; d != 1 && d != -1 {
					return nil, "link " + n.Name + "-" + g.Nodes[p.Peer].Name + " does not join adjacent tiers"
				}
			} else if _, ok := attOf[[2]int32{int32(i), int32(pi)}]; !ok {
				return nil, n.Name + " links to " + g.Nodes[p.Peer].Name + ", which is neither a tree switch nor an attachment"
			}
		}
	}
	attChild := make([]int32, len(atts))
	var groupOfChildIdx []int32 // per group: its index among its parent's children
	var children [][]int32      // per group: child groups (tier >= 2), ascending
	nGroups := int32(0)
	// Tier 1: a group per leaf; its children are its attachments, in port order.
	for _, id := range byTier[1] {
		k := int32(0)
		for pi := range g.Nodes[id].Ports {
			if a, ok := attOf[[2]int32{int32(id), int32(pi)}]; ok {
				attChild[a] = k
				k++
			}
		}
		if k == 0 {
			return nil, g.Nodes[id].Name + " has no attachment below it"
		}
		r.node[id].group, r.node[id].tier = nGroups, 1
		nGroups++
		children = append(children, nil)
		groupOfChildIdx = append(groupOfChildIdx, -1)
	}
	parent := make([]int32, nGroups)
	for i := range parent {
		parent[i] = -1
	}
	var key strings.Builder
	for t := 2; t <= T; t++ {
		keyed := map[string]int32{}
		for _, id := range byTier[t] {
			var kids []int32
			for _, p := range g.Nodes[id].Ports {
				if inTree(p.Peer) && int(tier[p.Peer]) == t-1 {
					kids = append(kids, r.node[p.Peer].group)
				}
			}
			if len(kids) == 0 {
				return nil, g.Nodes[id].Name + " has nothing below it"
			}
			slices.Sort(kids)
			kids = slices.Compact(kids)
			key.Reset()
			for _, c := range kids {
				key.WriteString(strconv.Itoa(int(c)))
				key.WriteByte(',')
			}
			grp, ok := keyed[key.String()]
			if !ok {
				grp = nGroups
				nGroups++
				keyed[key.String()] = grp
				children = append(children, kids)
				groupOfChildIdx = append(groupOfChildIdx, -1)
				parent = append(parent, -1)
				for ci, c := range kids {
					if parent[c] >= 0 {
						return nil, "the switches above " + g.Nodes[id].Name + " overlap other groups' (not a tree)"
					}
					parent[c] = grp
					groupOfChildIdx[c] = int32(ci)
				}
			}
			r.node[id].group, r.node[id].tier = grp, int32(t)
		}
	}
	r.parent = parent
	root := make([]int32, nGroups)
	for gi := range root {
		x := int32(gi)
		for parent[x] >= 0 {
			x = parent[x]
		}
		root[gi] = x
	}
	intern := map[string]uint32{"": 0}
	var kb []byte
	set := func(ports []int32) uint32 {
		kb = kb[:0]
		for _, p := range ports {
			kb = binary.LittleEndian.AppendUint32(kb, uint32(p))
		}
		id, ok := intern[string(kb)]
		if !ok {
			id = uint32(len(setStart) - 1)
			intern[string(kb)] = id
			r.ports = append(r.ports, ports...)
			setStart = append(setStart, uint32(len(r.ports)))
		}
		return id
	}
	var buf []int32
	for t := 1; t <= T; t++ {
		for _, id := range byTier[t] {
			n := &g.Nodes[id]
			nd := &r.node[id]
			nd.root = root[nd.group]
			nd.down = int32(len(r.down))
			if t == 1 {
				for pi := range n.Ports {
					if _, ok := attOf[[2]int32{int32(id), int32(pi)}]; ok {
						r.down = append(r.down, set([]int32{int32(pi)}))
					}
				}
			} else {
				for _, c := range children[nd.group] {
					buf = buf[:0]
					for pi, p := range n.Ports {
						if inTree(p.Peer) && int(tier[p.Peer]) == t-1 && r.node[p.Peer].group == c {
							buf = append(buf, int32(pi))
						}
					}
					r.down = append(r.down, set(buf))
				}
			}
			buf = buf[:0]
			for pi, p := range n.Ports {
				if inTree(p.Peer) && int(tier[p.Peer]) == t+1 {
					if r.node[p.Peer].group != parent[nd.group] {
						return nil, n.Name + "'s up-links reach more than one group (not up-uniform)"
					}
					buf = append(buf, int32(pi))
				}
			}
			if (len(buf) > 0) != (parent[nd.group] >= 0) {
				return nil, n.Name + " has no up-link while other switches of its group have"
			}
			nd.up = set(buf)
		}
	}
	r.sets = make([][]int32, len(setStart)-1)
	for i := range r.sets {
		r.sets[i] = r.ports[setStart[i]:setStart[i+1]:setStart[i+1]]
	}
	// Descendant lists, bottom up: a leaf's attachments, then each group's children merged.
	lists := make([][]int32, nGroups)
	for a, x := range atts {
		grp := r.node[x.leaf].group
		lists[grp] = append(lists[grp], int32(a))
	}
	for gi := int32(0); gi < nGroups; gi++ {
		if children[gi] != nil {
			for _, c := range children[gi] {
				lists[gi] = append(lists[gi], lists[c]...)
			}
		}
		slices.Sort(lists[gi])
	}
	r.descStart = make([]int32, nGroups+1)
	for gi, l := range lists {
		r.desc = append(r.desc, l...)
		r.descStart[gi+1] = int32(len(r.desc))
	}
	r.att = make([]treeAtt, len(atts)*T)
	r.root = make([]int32, len(atts))
	r.leaf = make([]NodeID, len(atts))
	for a, x := range atts {
		grp := r.node[x.leaf].group
		r.leaf[a] = x.leaf
		r.root[a] = root[grp]
		r.att[a*T] = treeAtt{grp, attChild[a]}
		for t := 2; t <= T; t++ {
			c := grp
			if c >= 0 {
				grp = parent[c]
			}
			if grp < 0 {
				r.att[a*T+t-1] = treeAtt{-1, -1}
				continue
			}
			r.att[a*T+t-1] = treeAtt{grp, groupOfChildIdx[c]}
		}
	}
	return r, ""
}

// nextHops returns the ports of tree switch n on shortest paths to attachment a (empty when a
// is unreachable from n).
func (r *treeRoutes) nextHops(n NodeID, a int) []int32 {
	nd := &r.node[n]
	at := r.att[a*r.tiers+int(nd.tier)-1]
	var s uint32
	switch {
	case at.group == nd.group:
		s = r.down[nd.down+at.child]
	case r.root[a] == nd.root:
		s = nd.up
	}
	return r.sets[s]
}

// hops is the number of links from tree switch n to attachment a (to the node behind it), or
// -1 when unreachable.
func (r *treeRoutes) hops(n NodeID, a int) int {
	nd := &r.node[n]
	t := int(nd.tier)
	if r.att[a*r.tiers+t-1].group == nd.group {
		return t
	}
	if r.root[a] != nd.root {
		return -1
	}
	x := nd.group
	for tt := t + 1; tt <= r.tiers; tt++ {
		x = r.parent[x]
		if r.att[a*r.tiers+tt-1].group == x {
			return tt - t + tt
		}
	}
	return -1
}

// below returns how many attachments below group g have an index below a.
func (r *treeRoutes) below(g int32, a int) int {
	l := r.desc[r.descStart[g]:r.descStart[g+1]]
	i, _ := slices.BinarySearch(l, int32(a))
	return i
}

// sameSetRank is the number of attachments below a that tree switch n forwards over the same
// next-hop set as a (see Routes.SameSetRank).
func (r *treeRoutes) sameSetRank(n NodeID, a int) int {
	nd := &r.node[n]
	at := r.att[a*r.tiers+int(nd.tier)-1]
	switch {
	case at.group == nd.group:
		if nd.tier == 1 {
			return 0 // the port to the attachment itself
		}
		// Down into the child group holding a: the attachments below that group.
		return r.below(r.att[a*r.tiers+int(nd.tier)-2].group, a)
	case r.root[a] == nd.root:
		// Up: every attachment of the same top group that is not below n's group.
		return r.below(nd.root, a) - r.below(nd.group, a)
	}
	return 0
}

func (r *treeRoutes) bytes() int64 {
	return int64(len(r.node))*int64(unsafe.Sizeof(treeNode{})) + int64(len(r.att))*8 + int64(len(r.root))*4 + int64(len(r.leaf))*4 +
		int64(len(r.parent))*4 + int64(len(r.down))*4 + int64(len(r.sets))*24 + int64(len(r.ports))*4 +
		int64(len(r.descStart))*4 + int64(len(r.desc))*4
}
