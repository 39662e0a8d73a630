package compare

import (
	"bytes"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/cost"
)

// threeTier is the dense model on 16 servers x 2 GPUs in a three-tier rail-optimized Clos of
// radix-8 switches with scalable units of 4 servers. Closed form (R = 8, 1:1): a leaf has 4 NIC
// ports and 4 uplinks; leaves = 2 rails x 4 SUs = 8; an SU's 2 leaves x 4 uplinks over spines of
// 4 down ports: 2 spines per SU, 8 in all (4 down, 4 up); core group i joins spine i of every SU:
// 4 SUs x 4 uplinks / 8 ports = 2 cores per group, 4 in all; 32 links per tier (NIC-leaf and
// leaf-spine in a row, spine-core across the hall).
const threeTier = `name: three-tier
steps: 1
backend: analytic
cluster: {servers: 16, gpus_per_server: 2, link_rate: 400Gbps, radix: 8, tiers: 3, servers_per_su: 4}
workload:
  kind: training
  model: {base: llama3-8b, layers: 2, hidden: 1024, ffn: 4096, heads: 8, kv_heads: 8, vocab: 16000}
  gpu: h100
  tp: 2
  dp: 16
  zero: 1
  global_batch: 16
  seq_len: 2048
variants: [ib-ndr, roce-default]
`

func TestBOMByTierInReport(t *testing.T) {
	r := run(t, threeTier, Options{})
	row := func(reach, medium string) []cost.CableCount {
		return []cost.CableCount{{Reach: reach, Medium: medium, Links: 32}}
	}
	for _, c := range []struct {
		variant   string
		switchKey string
		media     [3][]cost.CableCount // leaf, spine, core
	}{
		// InfiniBand: no NDR AOC in the catalogue, optics in the rows too.
		{"ib-ndr", "ib-ndr-switch-64x400g", [3][]cost.CableCount{row("row", "optical"), row("row", "optical"), row("hall", "optical")}},
		{"roce-default", "eth-switch-25.6t-64x400g", [3][]cost.CableCount{row("row", "aoc"), row("row", "aoc"), row("hall", "optical")}},
	} {
		var v *VariantResult
		for _, x := range r.Variants {
			if x.Variant.Name == c.variant {
				v = x
			}
		}
		if v == nil || v.Bill == nil {
			t.Fatalf("%s: no bill (%v)", c.variant, v)
		}
		tiers := v.Bill.Tiers
		if len(tiers) != 4 || tiers[0].NICs != 32 {
			t.Fatalf("%s: tiers %+v; want NICs (32) and three switch tiers", c.variant, tiers)
		}
		for i, sw := range []int{8, 8, 4} {
			tb := tiers[i+1]
			if tb.Tier != i+1 || tb.Switches != sw || tb.SwitchModels[c.switchKey] != sw || len(tb.Cables) != 1 || tb.Cables[0] != c.media[i][0] {
				t.Errorf("%s %s: %d switches %v, cables %+v; want %d x %s, %+v", c.variant, tb.Name(), tb.Switches, tb.SwitchModels, tb.Cables, sw, c.switchKey, c.media[i])
			}
		}
	}
	var html bytes.Buffer
	if err := r.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	page := html.String()
	for _, s := range []string{"Bill of materials by tier", "<caption>infiniband: ", "<caption>ethernet: ", "8 x ib-ndr-switch-64x400g",
		"4 x eth-switch-25.6t-64x400g", "row 32 aoc", "hall 32 optical", "<td>core</td>", "<td>total</td>"} {
		if !strings.Contains(page, s) {
			t.Errorf("report.html lacks %q", s)
		}
	}
	if i, j := strings.Index(page, ">Cost<"), strings.Index(page, ">Bill of materials by tier<"); i < 0 || j < i {
		t.Errorf("the tier section should follow Cost (at %d and %d)", i, j)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 16384: "16,384", 1234567: "1,234,567", -4096: "-4,096"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}
