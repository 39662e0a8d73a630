package scenario

import (
	"strings"
	"testing"
)

const closBase = `name: c
topology:
  kind: clos
  servers: 30
  nics_per_server: 2
  radix: 8
  tiers: 3
  host_link: {rate: 400Gbps, latency: 500ns}
fabric:
  kind: ethernet
traffic:
  kind: permutation
  size: 64KB
`

func TestClosTopology(t *testing.T) {
	s, err := Parse([]byte(closBase), "c.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Build()
	if err != nil {
		t.Fatal(err)
	}
	// 30 servers x 2 rails on radix 8: SUs of 4 servers (8 SUs), 2 rail leaves and 2 spines per
	// SU, 2 groups of ceil(8*4/8) = 4 cores: 60 NIC ports, 16 + 16 + 8 switches.
	if len(b.Graph.Hosts) != 60 || b.Graph.NumSwitches() != 40 || b.Routes.Form() != "tree" {
		t.Fatalf("%d hosts, %d switches, routes %s", len(b.Graph.Hosts), b.Graph.NumSwitches(), b.Routes.Form())
	}
}

func TestClosBadInput(t *testing.T) {
	for _, c := range []struct {
		name, from, to, want string
	}{
		{"tiers", "tiers: 3", "tiers: 4", "topology.tiers: want 1, 2 or 3"},
		{"two tiers too small", "tiers: 3", "tiers: 2", "two tiers of radix-8 switches hold at most 8 leaves"},
		{"three tiers too small", "servers: 30", "servers: 300", "join at most 8 pods"},
		{"radix too small", "radix: 8", "radix: 8\n  oversubscription: 0.1", "cannot hold even one NIC port"},
		{"no servers", "servers: 30", "servers: 0", "topology.servers: need at least 1 server"},
		{"LIDs", "servers: 30\n  nics_per_server: 2\n  radix: 8\n  tiers: 3", "servers: 6400\n  nics_per_server: 8\n  radix: 128", "unicast LIDs one subnet holds"},
		{"clos key on a fat tree", "kind: clos\n  servers: 30\n  nics_per_server: 2\n  radix: 8\n  tiers: 3", "kind: fat-tree\n  k: 4\n  radix: 8", "topology.radix: applies to kind clos only"},
	} {
		y := strings.Replace(closBase, c.from, c.to, 1)
		if c.name == "LIDs" {
			y = strings.Replace(y, "kind: ethernet", "kind: infiniband", 1)
		}
		s, err := Parse([]byte(y), "c.yaml", "")
		if err == nil {
			_, err = s.Build()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
		if err != nil && !IsUserError(err) {
			t.Errorf("%s: %v is not a user error (exit 2)", c.name, err)
		}
	}
}
