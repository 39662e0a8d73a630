package topo

// HostOfNode returns the dense host index of node n, or ok=false when n is a switch or out of
// range. Importers of peer tools' flow files (which name topology nodes) use it.
func (g *Graph) HostOfNode(n int) (host int, ok bool) {
	if n < 0 || n >= len(g.Nodes) || g.Nodes[n].Kind != Host {
		return 0, false
	}
	return int(g.Nodes[n].Host), true
}

// NodeOfHost returns the node ID of dense host index h as an int (for writers of peer formats).
func (g *Graph) NodeOfHost(h int) int { return int(g.Hosts[h]) }
