package fabric

import (
	"testing"

	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/units"
)

// twoToOne is the 2:1 incast of the congestion-control headline tests: a three-host star at
// line rate with 1 us links, hosts 1 and 2 each sending 400 MB to host 0 (long enough never to
// finish within the test), and a sampler of the switch's egress queue to host 0 (class 3, the
// RoCE data class) every period until until; the caller schedules the sampler (or a wrapper).
func twoToOne(t *testing.T, cfg Config, line units.Rate, period, until units.Time) (*Network, *msggraph.Graph, *sampler) {
	t.Helper()
	n := newNet(t, star(3, line, units.Microsecond), cfg)
	mg := &msggraph.Graph{Endpoints: 3}
	mg.Add(msggraph.Message{Src: 1, Dst: 0, Bytes: 400 * units.MB})
	mg.Add(msggraph.Message{Src: 2, Dst: 0, Bytes: 400 * units.MB})
	return n, mg, &sampler{n: n, period: period, until: until, port: n.Switches[0].Ports[0], prio: 3}
}
