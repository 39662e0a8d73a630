package ibsm

import "github.com/fabricsim/fabricsim/topo"

// ComputeAllRows computes stored tables with a row for every switch, server-internal nodes
// included (the plain form the GPU-cluster form is checked against).
func ComputeAllRows(g *topo.Graph, engine Engine) (*Tables, error) {
	return computeRows(g, engine, nil)
}

// InnerBytes is the memory of the picks of server-internal nodes (0 without them).
func (t *Tables) InnerBytes() int64 {
	if t.in == nil {
		return 0
	}
	return t.in.bytes()
}
