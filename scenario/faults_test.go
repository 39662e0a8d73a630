package scenario

import (
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/units"
)

const faultBase = `name: f
seed: 2
topology:
  kind: leaf-spine
  leaves: 2
  spines: 2
  hosts_per_leaf: 2
fabric:
  kind: roce
traffic:
  kind: permutation
`

// Faults name links by their two nodes (either order) and switches by name; the recovery timers
// the file leaves out take their documented defaults; a flap is down half its period by default.
func TestFaultsResolve(t *testing.T) {
	src := faultBase + `faults:
  - {kind: link_down, link: spine1-leaf0, at: 10us, for: 1ms}
  - {kind: link_flap, link: leaf1-spine0, at: 20us, period: 100us, count: 2}
  - {kind: switch_down, switch: spine0, at: 30us}
  - {kind: link_degrade, link: random, at: 1us, rate: 25Gbps}
  - {kind: pfc_storm, host: 3, at: 5us, for: 10us}
  - {kind: slow_receiver, host: 2, at: 1us, rate: 50Gbps}
fault_recovery:
  bfd_interval: 50ms
`
	s, err := Parse([]byte(src), "f.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Build()
	if err != nil {
		t.Fatal(err)
	}
	p := b.Fabric.Faults
	def := fabric.DefaultFaultRecovery()
	if p.Recovery.BFDInterval != 50*units.Millisecond || p.Recovery.BFDMultiplier != def.BFDMultiplier || p.Recovery.SMSweepInterval != 10*units.Second || !p.Recovery.SMTraps {
		t.Errorf("recovery %+v", p.Recovery)
	}
	g := b.Graph
	if n := fabric.LinkName(g, p.Faults[0].Link); n != "leaf0-spine1" {
		t.Errorf("faults[0] link %s", n)
	}
	if f := p.Faults[1]; fabric.LinkName(g, f.Link) != "leaf1-spine0" || f.Down != 50*units.Microsecond || f.Count != 2 {
		t.Errorf("faults[1] %+v", f)
	}
	if f := p.Faults[2]; g.Nodes[f.Node].Name != "spine0" || f.Kind != fabric.FaultSwitchDown {
		t.Errorf("faults[2] %+v", f)
	}
	if L := g.Links[p.Faults[3].Link]; g.Nodes[L.A].Kind != g.Nodes[L.B].Kind {
		t.Errorf("random link %s is not switch-to-switch", fabric.LinkName(g, p.Faults[3].Link))
	}
	if f := p.Faults[4]; g.Nodes[f.Node].Host != 3 {
		t.Errorf("faults[4] %+v", f)
	}
	if f := p.Faults[5]; g.Nodes[f.Node].Host != 2 || f.Kind != fabric.FaultSlowReceiver || f.Rate != 50*units.Gbps {
		t.Errorf("faults[5] %+v", f)
	}
}

// Bad faults: one clear message each, at the key's line and column, saying what is valid.
func TestFaultsBadInput(t *testing.T) {
	for _, c := range []struct {
		name, src, want string
	}{
		{"no such link", `faults:
  - {kind: link_down, link: leaf0-spine7, at: 1us}
`, `f.yaml:13:29: faults[0].link: "leaf0-spine7" is not a link of this topology (8 links, named by their two nodes: leaf0-spine0, leaf0-spine1, leaf1-spine0, ...; or random)`},
		{"no such switch", `faults:
  - {kind: switch_down, switch: host0, at: 1us}
`, `faults[0].switch: "host0" is not a switch of this topology`},
		{"after the run", `duration: 1ms
faults:
  - {kind: link_down, link: leaf0-spine0, at: 2ms}
`, `f.yaml:14:47: faults[0].at: 2ms is after the run ends (duration 1ms): a fault must begin within 0..1ms`},
		{"unknown kind", `faults:
  - {kind: link_melt, link: leaf0-spine0}
`, `faults[0].kind: "link_melt" is not a fault kind (valid: link_down, link_flap, switch_down, link_degrade, pfc_storm, slow_receiver)`},
		{"missing link", `faults:
  - {kind: link_down, at: 1us}
`, `faults[0]: link_down needs link`},
		{"key of another kind", `faults:
  - {kind: link_down, link: leaf0-spine0, period: 1us}
`, `faults[0].period: does not apply to link_down`},
		{"flap down too long", `faults:
  - {kind: link_flap, link: leaf0-spine0, period: 10us, down: 20us}
`, `faults[0].down: 20us: a flap is down for part of its period 10us (valid: 0 < down < period)`},
		{"storm without pfc", `faults:
  - {kind: pfc_storm, host: 1}
`, ``},
		{"storm host", `faults:
  - {kind: pfc_storm, host: 9}
`, `faults[0].host: host 9 does not exist (valid: 0..3)`},
		{"bad multiplier", `fault_recovery: {bfd_multiplier: 0}
`, `fault_recovery.bfd_multiplier: 0 outside 1..255`},
		{"ib_timeout out of range", `fault_recovery: {ib_timeout: 32}
`, `fault_recovery.ib_timeout: 32 outside 0..31`},
		{"ib_retry_cnt out of range", `fault_recovery: {ib_retry_cnt: 8}
`, `fault_recovery.ib_retry_cnt: 8 outside 0..7`},
		{"ber on roce", `faults:
  - {kind: link_degrade, link: leaf0-spine0, ber: 1e-5}
`, `faults[0].ber: is an InfiniBand link's bit error rate before its RS-FEC (the fabric is roce; use error_rate)`},
		{"llr without ber", `faults:
  - {kind: link_degrade, link: leaf0-spine0, rate: 25Gbps, llr: true}
`, `faults[0].llr: link-level retry resends what the FEC leaves of a bit error rate: give ber too`},
		{"ber out of range", `faults:
  - {kind: link_degrade, link: leaf0-spine0, ber: 0.7}
`, `faults[0].ber: 0.7: a pre-FEC bit error rate is in (0, 0.5)`},
		{"ber on a link down", `faults:
  - {kind: link_down, link: leaf0-spine0, ber: 1e-5}
`, `faults[0].ber: does not apply to link_down`},
		{"analytic backend", `backend: analytic
faults:
  - {kind: link_down, link: leaf0-spine0}
`, `faults: the analytic backend does not model faults (valid with faults: packet, flow, auto)`},
	} {
		src := faultBase + c.src
		if c.name == "storm without pfc" {
			src = strings.Replace(src, "kind: roce", "kind: ethernet", 1)
			c.want = "faults[0].kind: a PFC storm needs fabric kind roce with pfc: true (the fabric is ethernet)"
		}
		s, err := Parse([]byte(src), "f.yaml", "")
		if err == nil {
			_, err = s.Build()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v\nwant %s", c.name, err, c.want)
			continue
		}
		if !IsUserError(err) {
			t.Errorf("%s: %v is not a user error (exit 2)", c.name, err)
		}
	}
}
