// Package traffic makes the synthetic traffic patterns used to stress a fabric (permutation,
// shift, incast, all-to-all) and imports and exports the flow files of peer simulators (HPCC
// ns-3 flow.txt, htsim connection matrices), so a scenario can be run here and there and the
// results compared. Flows compile to a msggraph.Graph, the common input of every backend.
package traffic

import (
	"fmt"
	"math/rand/v2"

	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/units"
)

// Flow is one transfer of Size bytes from host Src to host Dst (dense host indices of the
// topology), offered at time Start.
type Flow struct {
	ID       int
	Src, Dst int
	Size     units.Size
	Start    units.Time
	Prio     uint8
	// DPort is the destination port for formats that carry one (HPCC flow.txt); 0 otherwise.
	DPort uint16
	// Deps are indices, into the same slice, of earlier flows that must complete before this
	// one starts (htsim triggers); nil for flows that start at Start alone.
	Deps []int
}

// randStream is the second PCG word for traffic RNGs, so that a scenario seed drives a traffic
// stream distinct from other components seeded with the same number.
const randStream = 0x7472616666696300 // "traffic\0"

// NewRand returns the deterministic generator traffic uses for a scenario seed (PCG, from
// math/rand/v2): the same seed always gives the same flows.
func NewRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, randStream)) }

// ToGraph compiles flows into a message graph with one message per flow, in the same order
// (message i is flows[i]), tagged "flow<ID>", starting at Start after its Deps.
func ToGraph(flows []Flow, hosts int) *msggraph.Graph {
	g := &msggraph.Graph{Msgs: make([]msggraph.Message, 0, len(flows)), Endpoints: hosts}
	for _, f := range flows {
		m := msggraph.Message{
			Src:   int32(f.Src),
			Dst:   int32(f.Dst),
			Bytes: f.Size,
			Start: f.Start,
			Prio:  f.Prio,
			Tag:   fmt.Sprintf("flow%d", f.ID),
		}
		if len(f.Deps) > 0 {
			m.Deps = make([]msggraph.ID, len(f.Deps))
			for i, d := range f.Deps {
				m.Deps[i] = msggraph.ID(d)
			}
		}
		g.Add(m)
	}
	return g
}

// checkSize rejects sizes a flow cannot have.
func checkSize(size units.Size) error {
	if size <= 0 {
		return fmt.Errorf("flow size %d B: must be at least 1 byte", int64(size))
	}
	return nil
}

func checkStart(start units.Time) error {
	if start < 0 {
		return fmt.Errorf("flow start %s: must not be negative", start)
	}
	return nil
}
