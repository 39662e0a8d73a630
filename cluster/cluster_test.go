package cluster

import (
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/gpu"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// RoCEv2 framing (the generic Ethernet fabric's): 4096 B MTU, 62 B of headers, 20 B of preamble
// and gap.
var ethFraming = Framing{MTU: 4096, Header: 62, L1: 20}

func build(t testing.TB, servers int, srv gpu.Server) *Cluster {
	t.Helper()
	c, err := Build(Spec{Servers: servers, Server: srv, Framing: ethFraming})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func names(c *Cluster, path []topo.NodeID) string {
	var s []string
	for _, n := range path {
		s = append(s, c.Graph.Nodes[n].Name)
	}
	return strings.Join(s, " ")
}

// TestRoutes: minimum-hop routes are NCCL's paths: NVLink inside a server, the GPU's own NIC
// (rail-aligned) between servers, the host buffer's own NIC for rdma-host.
func TestRoutes(t *testing.T) {
	c := build(t, 2, gpu.Presets["h100"])
	r, err := c.Routes()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		src, dst int32
		want     string
	}{
		{c.GPUHost(0, 2), c.GPUHost(0, 5), "srv0_gpu2 srv0_nvswitch srv0_gpu5"},
		{c.DMA(c.GPUHost(0, 3)), c.DMA(c.GPUHost(1, 3)),
			"srv0_gpudma3 srv0_pcie3 srv0_nic3 rail3_leaf0 srv1_nic3 srv1_pcie3 srv1_gpudma3"},
		{c.HostMem(c.GPUHost(0, 6)), c.HostMem(c.GPUHost(1, 6)),
			"srv0_hostmem6 srv0_rootport6 srv0_pcie6 srv0_nic6 rail6_leaf0 srv1_nic6 srv1_pcie6 srv1_rootport6 srv1_hostmem6"},
		{c.DMA(c.GPUHost(1, 1)), c.HostMem(c.GPUHost(1, 1)), "srv1_gpudma1 srv1_pcie1 srv1_rootport1 srv1_hostmem1"},
	} {
		if got := names(c, r.FirstPath(int(tc.src), int(tc.dst))); got != tc.want {
			t.Errorf("route %d->%d:\n got %s\nwant %s", tc.src, tc.dst, got, tc.want)
		}
		// Rail alignment is strict: the NIC hop has one candidate, no ECMP to a neighbour's NIC.
		for _, n := range r.FirstPath(int(tc.src), int(tc.dst)) {
			if c.Graph.Nodes[n].Kind == topo.Switch && strings.Contains(c.Graph.Nodes[n].Name, "pcie") {
				if hops := r.NextHops(n, int(tc.dst)); len(hops) != 1 {
					t.Errorf("%s has %d next hops toward %d, want 1", c.Graph.Nodes[n].Name, len(hops), tc.dst)
				}
			}
		}
	}
}

// TestBadSpecs: a cluster that cannot be built says why.
func TestBadSpecs(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec Spec
		want string
	}{
		{"no servers", Spec{Servers: 0}, "servers"},
		{"gpus not a multiple of nics", Spec{Servers: 1, Server: gpu.Server{GPUs: 8, NICs: 3}}, "multiple of the NIC count"},
		{"too many gpus", Spec{Servers: 1, Server: gpu.Server{GPUs: 100}}, "GPUs per server"},
		{"graph with wrong host count", Spec{Servers: 2, Net: Network{Kind: "graph", Graph: mustLeafSpine(t, 3)}}, "need 16"},
		{"unknown network", Spec{Servers: 1, Net: Network{Kind: "torus"}}, "torus"},
	} {
		_, err := Build(tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

func mustLeafSpine(t *testing.T, hosts int) *topo.Graph {
	g, err := topo.LeafSpine(topo.LeafSpineSpec{Leaves: 1, HostsPerLeaf: hosts, Host: topo.LinkSpec{Rate: 400 * units.Gbps}})
	if err != nil {
		t.Fatal(err)
	}
	return g
}
