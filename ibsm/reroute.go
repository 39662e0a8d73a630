package ibsm

import (
	"fmt"

	"github.com/fabricsim/fabricsim/topo"
)

// ComputeStored is Compute with the tables always stored, whatever the size: the subnet
// manager's answer to a changed fabric (the packet backend's fault model passes a graph whose
// failed ports lead back to their own node), whose regularity the on-demand form relies on
// no longer holds.
func ComputeStored(g *topo.Graph, engine Engine) (*Tables, error) {
	if !engine.Valid() {
		return nil, fmt.Errorf("subnet manager: routing engine %q unknown (valid: minhop, dmodk, updown)", engine)
	}
	return computeStored(g, engine)
}
