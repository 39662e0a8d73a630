package scenario

import (
	"strconv"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/units"
)

const goodIB = `name: ib
topology:
  kind: fat-tree
  k: 4
fabric:
  kind: infiniband
traffic:
  kind: permutation
  size: 1MB
`

// TestInfiniBandDefaults: an IB fabric with no keys is NDR (400 Gb/s links, 140 ns switches),
// IB framing (LRH 8 + BTH 12 + ICRC 4 + VCRC 2 = 26 B, ACK 30 B, no L1 overhead or minimum
// frame, RETH 16 on a first packet), 4 VLs with SL i on VL i mod 4, 128 KiB per VL, min-hop
// routing, IB CC off.
func TestInfiniBandDefaults(t *testing.T) {
	s, err := Parse([]byte(goodIB), "ib.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Build()
	if err != nil {
		t.Fatal(err)
	}
	c := b.Fabric
	if c.Kind != "infiniband" || c.HeaderBytes != 26 || c.AckBytes != 30 || c.CNPBytes != 42 || c.FirstHeaderExtra != 16 ||
		c.L1Overhead != 0 || c.MinFrame != 0 || c.MTU != 4096 || c.SwitchLatency != 140*units.Nanosecond || c.Priorities != 16 {
		t.Errorf("framing/latency defaults wrong: %+v", c)
	}
	ib := c.IB
	if ib.Generation != "ndr" || ib.VLs != 4 || ib.SL2VL[5] != 1 || ib.VLBuffer != 128*units.KiB || ib.HCABuffer != 128*units.KiB ||
		ib.Routing != "minhop" || ib.Adaptive || ib.CC.Enabled || len(ib.ArbLow) != 4 || len(ib.ArbHigh) != 0 {
		t.Errorf("IB defaults wrong: %+v", ib)
	}
	for _, l := range b.Graph.Links {
		if l.Rate != 400*units.Gbps || l.Latency != units.Microsecond {
			t.Fatalf("link %d: %v %v, want the NDR preset's 400Gbps and the default 1us", l.ID, l.Rate, l.Latency)
		}
	}
	if _, err := fabric.New(b.Graph, b.Routes, c); err != nil {
		t.Fatal(err)
	}
}

// TestInfiniBandPresetRates: the generation sets link rates the file leaves out and keeps the
// ones it writes; GRH adds 40 B to the headers.
func TestInfiniBandPresetRates(t *testing.T) {
	cases := []struct {
		body string
		rate units.Rate
		hdr  int
		lat  units.Time
	}{
		{strings.Replace(goodIB, "kind: infiniband", "kind: infiniband\n  generation: hdr", 1), 200 * units.Gbps, 26, 90 * units.Nanosecond},
		{strings.Replace(goodIB, "kind: infiniband", "kind: infiniband\n  generation: xdr\n  grh: true", 1), 800 * units.Gbps, 66, 140 * units.Nanosecond},
		{strings.Replace(strings.Replace(goodIB, "k: 4", "k: 4\n  link: {rate: 100Gbps}", 1), "kind: infiniband", "kind: infiniband\n  generation: edr\n  switch_latency: 200ns", 1), 100 * units.Gbps, 26, 200 * units.Nanosecond},
		{strings.Replace(strings.Replace(goodIB, "k: 4", "k: 4\n  link: {rate: 25Gbps}", 1), "kind: infiniband", "kind: infiniband\n  generation: ndr", 1), 25 * units.Gbps, 26, 140 * units.Nanosecond},
	}
	for i, c := range cases {
		s, err := Parse([]byte(c.body), "ib.yaml", "")
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		b, err := s.Build()
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if r := b.Graph.Links[0].Rate; r != c.rate || b.Fabric.HeaderBytes != c.hdr || b.Fabric.SwitchLatency != c.lat {
			t.Errorf("case %d: rate %v header %d latency %v, want %v %d %v", i, r, b.Fabric.HeaderBytes, b.Fabric.SwitchLatency, c.rate, c.hdr, c.lat)
		}
	}
}

// TestInfiniBandKeys: every key reaches the backend configuration.
func TestInfiniBandKeys(t *testing.T) {
	body := strings.Replace(goodIB, "kind: infiniband", `kind: infiniband
  generation: hdr
  mtu: 2048
  vls: 2
  sl2vl: [1, 0, 1]
  vl_buffer: 64KiB
  hca_buffer: 32KiB
  vl_arb_high: [{vl: 1, weight: 16}]
  vl_arb_low: [{vl: 0, weight: 32}, {vl: 1, weight: 8}]
  vl_high_limit: 4
  routing_engine: updown
  adaptive_routing: true
  fc_refresh: 2us
  ib_cc:
    enabled: true
    threshold: 16KiB
    marking_rate: 3
    victim_mask: true
    ccti_increase: 2
    ccti_min: 1
    ccti_timer: 5us
    cct: [0ns, 10ns, 30ns, 70ns]`, 1)
	s, err := Parse([]byte(body), "ib.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	c := s.FabricConfig()
	ib := c.IB
	if c.MTU != 2048 || ib.VLs != 2 || ib.SL2VL[0] != 1 || ib.SL2VL[1] != 0 || ib.SL2VL[2] != 1 || ib.SL2VL[3] != 1 ||
		ib.VLBuffer != 64*units.KiB || ib.HCABuffer != 32*units.KiB || len(ib.ArbHigh) != 1 || ib.ArbHigh[0] != (fabric.VLWeight{VL: 1, Weight: 16}) ||
		len(ib.ArbLow) != 2 || ib.ArbLow[1] != (fabric.VLWeight{VL: 1, Weight: 8}) || ib.HighLimit != 4 || ib.Routing != "updown" || !ib.Adaptive ||
		ib.FCRefresh != 2*units.Microsecond {
		t.Errorf("keys not applied: %+v", ib)
	}
	cc := ib.CC
	if !cc.Enabled || cc.Threshold != 16*units.KiB || cc.MarkingRate != 3 || !cc.VictimMask || cc.CCTIIncrease != 2 || cc.CCTIMin != 1 ||
		cc.CCTITimer != 5*units.Microsecond || len(cc.Table) != 4 || cc.CCTILimit != 3 {
		t.Errorf("ib_cc not applied: %+v", cc)
	}
	if _, err := s.Build(); err != nil {
		t.Fatal(err)
	}
}

// TestInfiniBandBadInput: every invalid InfiniBand parameter is one error line naming the file,
// the line, the field and what would be valid.
func TestInfiniBandBadInput(t *testing.T) {
	with := func(keys string) string {
		return strings.Replace(goodIB, "kind: infiniband", "kind: infiniband\n  "+keys, 1)
	}
	cases := []struct {
		name, body, want string
		line             int
	}{
		{"unknown generation", with("generation: fdr"), `fabric.generation: "fdr" is not an InfiniBand generation (valid: edr, hdr, ndr, xdr)`, 7},
		{"mtu not a power of two", with("mtu: 3000"), "fabric.mtu: InfiniBand MTU 3000 B is not one of 256, 512, 1024, 2048, 4096", 7},
		{"mtu above 4096", with("mtu: 8192"), "fabric.mtu: InfiniBand MTU 8192", 7},
		{"mtu below 256", with("mtu: 128"), "fabric.mtu: InfiniBand MTU 128", 7},
		{"zero VLs", with("vls: 0"), "fabric.vls: 0 data VLs outside 1..15", 7},
		{"sixteen VLs", with("vls: 16"), "fabric.vls: 16 data VLs outside 1..15 (VL15 is management only)", 7},
		{"sl2vl names a missing VL", with("vls: 2\n  sl2vl: [0, 1, 2]"), "fabric.sl2vl[2]: maps SL 2 to VL 2, but only VL0..VL1 exist", 8},
		{"sl2vl too long", with("sl2vl: [0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]"), "fabric.sl2vl: 17 entries; at most 16", 7},
		{"zero VL buffer", with("vl_buffer: 0"), "fabric.vl_buffer: 0B is 0 credits of 64 B, less than one 4138 B packet", 7},
		{"VL buffer below a packet", with("vl_buffer: 4KiB"), "fabric.vl_buffer: 4KiB is 64 credits", 7},
		{"HCA buffer below a packet", with("mtu: 1024\n  hca_buffer: 1000"), "fabric.hca_buffer: 1KB is 15 credits of 64 B, less than one 1066 B packet", 8},
		{"arbitration weight too large", with("vl_arb_low: [{vl: 0, weight: 256}]"), "fabric.vl_arb_low[0].weight: 256 outside 0..255", 7},
		{"arbitration weight negative", with("vl_arb_high: [{vl: 1, weight: -1}]"), "fabric.vl_arb_high[0].weight: -1 outside 0..255", 7},
		{"arbitration names a missing VL", with("vl_arb_low: [{vl: 4, weight: 1}]"), "fabric.vl_arb_low[0].vl: VL 4 does not exist (valid: 0..3)", 7},
		{"VL never served", with("vl_arb_low: [{vl: 0, weight: 64}, {vl: 1, weight: 0}]"), "no entry of vl_arb_high or vl_arb_low serves VL 1 (used by SL 1)", 7},
		{"high limit out of range", with("vl_high_limit: 300"), "fabric.vl_high_limit: 300 outside 0..255", 7},
		{"unknown routing engine", with("routing_engine: ftree"), `fabric.routing_engine: "ftree" is not a routing engine (valid: minhop, dmodk, updown)`, 7},
		{"ethernet routing on IB", with("routing: ecmp"), "fabric.routing: InfiniBand routes by the subnet manager: use routing_engine", 7},
		{"negative fc refresh", with("fc_refresh: -1us"), "fabric.fc_refresh", 7},
		{"ccti_increase zero", with("ib_cc: {enabled: true, ccti_increase: 0}"), "fabric.ib_cc.ccti_increase: must be at least 1, got 0", 7},
		{"ccti_min above limit", with("ib_cc: {ccti_limit: 10, ccti_min: 11}"), "fabric.ib_cc.ccti_min: 11 outside 0..ccti_limit (10)", 7},
		{"ccti_limit beyond table", with("ib_cc: {cct: [0ns, 5ns], ccti_limit: 5}"), "fabric.ib_cc.ccti_limit: 5 indexes beyond the 2-entry cct", 7},
		{"ccti_timer zero", with("ib_cc: {ccti_timer: 0}"), "fabric.ib_cc.ccti_timer: must be positive", 7},
		{"marking rate negative", with("ib_cc: {marking_rate: -1}"), "fabric.ib_cc.marking_rate: -1 outside 0..65535", 7},
		{"unknown ib_cc key", with("ib_cc: {enable: true}"), "fabric.ib_cc.enable: unknown key (valid keys here: cct, cct_step, ccti_increase", 7},
		{"IB key on ethernet", strings.Replace(goodIB, "kind: infiniband", "kind: ethernet\n  vls: 4", 1), "fabric.vls: is an InfiniBand key; it needs `kind: infiniband`", 7},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Parse([]byte(c.body), dir+"/s.yaml", dir)
			if err == nil {
				_, err = s.Build()
			}
			if err == nil {
				t.Fatalf("accepted:\n%s", c.body)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.want) {
				t.Errorf("error %q\nwant it to contain %q", msg, c.want)
			}
			if want := "s.yaml:" + strconv.Itoa(c.line) + ":"; !strings.Contains(msg, want) {
				t.Errorf("error %q does not name %s", msg, want)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error spans several lines: %q", msg)
			}
		})
	}
}
