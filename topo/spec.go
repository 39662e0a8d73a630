package topo

import (
	"fmt"
	"strconv"

	"github.com/fabricsim/fabricsim/units"
)

// LinkSpec is the rate and one-way propagation delay of a class of links (host links, uplinks).
type LinkSpec struct {
	Rate    units.Rate
	Latency units.Time
}

// check reports a spec that cannot make a link; what names the link class for the message.
func (s LinkSpec) check(what string) error {
	if s.Rate <= 0 {
		return fmt.Errorf("%s rate %d bit/s: must be positive (e.g. 400Gbps)", what, int64(s.Rate))
	}
	if s.Latency < 0 {
		return fmt.Errorf("%s latency %s: must not be negative", what, s.Latency)
	}
	return nil
}

// maxGeneratedNodes bounds generated graphs so that NodeID (int32) and every derived index fits.
// Long before this, EstimateMemory will have told the user to pick a smaller fabric.
const maxGeneratedNodes = 1 << 28

func itoa(i int) string { return strconv.Itoa(i) }
