package compare

import (
	"context"
	"strings"
	"testing"
)

const scaleBase = `name: s
backend: analytic
cluster:
  servers: 2048
  gpus_per_server: 8
  tiers: 3
workload:
  kind: training
  model: llama3-70b
  gpu: h100
  tp: 8
  pp: 8
  dp: 256
  zero: 1
  global_batch: 2048
  seq_len: 8192
variants: [roce-default]
`

// TestClusterTiers: a 16,384-GPU cluster builds as the DGX SuperPOD-shaped three-tier rail Clos
// (512 leaves, 512 spines, 256 cores); keys that cannot build it, or an InfiniBand subnet of more
// than 49,151 LIDs, are input errors.
func TestClusterTiers(t *testing.T) {
	s, err := Parse([]byte(scaleBase), "s.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	g, err := s.Topology()
	if err != nil {
		t.Fatal(err)
	}
	var tiers [4]int
	for i := range g.Nodes {
		if g.Nodes[i].Tier > 0 {
			tiers[g.Nodes[i].Tier]++
		}
	}
	if len(g.Hosts) != 16384 || tiers[1] != 512 || tiers[2] != 512 || tiers[3] != 256 {
		t.Fatalf("%d NIC ports, %v switches per tier", len(g.Hosts), tiers)
	}
	for _, c := range []struct{ from, to, want string }{
		{"tiers: 3", "tiers: 2", "two tiers of radix-64 switches hold at most 64 leaves"},
		{"tiers: 3", "tiers: 4", "cluster.tiers: 4: want 2 or 3"},
		{"tiers: 3", "tiers: 3\n  radix: 32", "join at most 32 pods"},
		// 65,536 NIC ports on one plane: an InfiniBand subnet of 68,096 LIDs.
		{"servers: 2048", "servers: 8192\n  radix: 128", "needs 68096 LIDs"},
	} {
		src := strings.Replace(scaleBase, c.from, c.to, 1)
		if strings.Contains(c.to, "8192") {
			src = strings.NewReplacer("dp: 256", "dp: 1024", "global_batch: 2048", "global_batch: 8192", "[roce-default]", "[ib-ndr]").Replace(src)
		}
		s, err := Parse([]byte(src), "s.yaml", "")
		if err == nil {
			_, err = Run(context.Background(), s, Options{})
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s -> %s: error %v, want %q", c.from, c.to, err, c.want)
			continue
		}
		if _, ok := err.(*Error); !ok {
			t.Errorf("%s -> %s: %T is not an input error", c.from, c.to, err)
		}
	}
}
