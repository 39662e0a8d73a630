package scenario

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/examples"
	"github.com/fabricsim/fabricsim/units"
)

const good = `name: t
seed: 3
topology:
  kind: fat-tree
  k: 4
  link: {rate: 100Gbps, latency: 1us}
fabric:
  kind: ethernet
traffic:
  kind: permutation
  size: 2MB
`

func TestDefaults(t *testing.T) {
	s, err := Parse([]byte(good), "t.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	if s.Seed != 3 || s.Fabric.MTU != 4096 || s.Fabric.HeaderBytes != 62 || s.Fabric.RTO != 4*units.Millisecond || s.Traffic.Size != 2*units.MB {
		t.Fatalf("defaults not applied: %+v", s)
	}
	b, err := s.Build()
	if err != nil {
		t.Fatal(err)
	}
	// k=4 fat tree: k^3/4 = 16 hosts, 5k^2/4 = 20 switches, permutation = 16 flows.
	if len(b.Graph.Hosts) != 16 || b.Graph.NumSwitches() != 20 || len(b.Work.Msgs) != 16 {
		t.Fatalf("built %d hosts %d switches %d msgs", len(b.Graph.Hosts), b.Graph.NumSwitches(), len(b.Work.Msgs))
	}
}

func TestExamplesValidate(t *testing.T) {
	for _, name := range examples.Names() {
		if strings.HasPrefix(name, "compare-") || strings.HasPrefix(name, "sweep-") {
			continue // `fabricsim compare` scenarios; compare.TestExamples validates them
		}
		data, _ := examples.Read(name)
		s, err := Parse(data, name, "../examples")
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if _, err := s.Build(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestBadInput: every malformed input gets one error line naming the file, the line and the
// field, and says what is wrong.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("empty.txt", "")
	write("trunc-topo.txt", "4 1 3\n3\n0 3 100Gbps 0.001ms 0\n1 3 100Gbps 0.001ms 0\n")
	write("topo.txt", "4 1 3\n3\n0 3 100Gbps 0.001ms 0\n1 3 100Gbps 0.001ms 0\n2 3 100Gbps 0.001ms 0\n")
	write("trunc-flow.txt", "3\n0 1 3 100 1000 0\n")
	write("badhost-flow.txt", "1\n0 3 3 100 1000 0\n")
	write("bad.cm", "Nodes 4\nConnections 1\n0->1 id 1 start 0 size -5\n")
	sub := func(old, new string) string {
		if !strings.Contains(good, old) {
			t.Fatalf("test setup: %q not in base scenario", old)
		}
		return strings.Replace(good, old, new, 1)
	}
	topoHPCC := func(file string) string {
		return sub("  kind: fat-tree\n  k: 4\n  link: {rate: 100Gbps, latency: 1us}\n", "  kind: hpcc\n  file: "+file+"\n")
	}
	traffic := func(tr string) string { return sub("  kind: permutation\n  size: 2MB\n", tr) }
	cases := []struct {
		name, body, want string
		line             int
	}{
		{"unknown top-level key", good + "colour: blue\n", "colour: unknown key", 12},
		{"unknown nested key", sub("k: 4", "k: 4\n  ports: 4"), "topology.ports: unknown key (valid keys here:", 6},
		{"zero rate", sub("rate: 100Gbps", "rate: 0Gbps"), "topology.link.rate: rate \"0Gbps\" must be positive", 6},
		{"negative rate", sub("rate: 100Gbps", "rate: -100Gbps"), "must be positive", 6},
		{"unit typo", sub("rate: 100Gbps", "rate: 100Gbs"), `unknown unit "Gbs"`, 6},
		{"rate without unit", sub("rate: 100Gbps", "rate: 100"), "has no unit", 6},
		{"negative latency", sub("latency: 1us", "latency: -1us"), "topology.link.latency: duration \"-1us\" must not be negative", 6},
		{"odd k", sub("k: 4", "k: 5"), "topology.k: a k-ary fat tree needs an even k >= 2, got 5", 5},
		{"k not a number", sub("k: 4", "k: eight"), `topology.k: "eight" is not a whole number`, 5},
		{"k too large", sub("k: 4", "k: 256"), "topology.k: a k=256 fat tree", 5},
		{"missing topology kind", sub("  kind: fat-tree\n", ""), "topology.kind: missing", 0},
		{"unknown topology kind", sub("kind: fat-tree", "kind: torus"), `"torus" is not a topology kind`, 4},
		{"unknown fabric kind", sub("kind: ethernet", "kind: token-ring"), `fabric.kind: "token-ring" is not a fabric kind (valid: ethernet, roce, infiniband)`, 8},
		{"mtu zero", sub("kind: ethernet", "kind: ethernet\n  mtu: 0"), "fabric.mtu: payload MTU 0 B outside 64..9216", 9},
		{"buffer below a packet", sub("kind: ethernet", "kind: ethernet\n  buffer: 1KB"), "fabric.buffer: 1KB cannot hold one 4158 B packet", 9},
		{"unknown routing", sub("kind: ethernet", "kind: ethernet\n  routing: ospf"), `fabric.routing: "ospf" is not a routing policy`, 9},
		{"ack_every zero", sub("kind: ethernet", "kind: ethernet\n  ack_every: 0"), "fabric.ack_every: must be at least 1", 9},
		{"unknown traffic kind", traffic("  kind: storm\n"), `traffic.kind: "storm" is not a traffic kind`, 10},
		{"zero size", traffic("  kind: permutation\n  size: 0\n"), "traffic.size: must be positive", 11},
		{"size unit typo", traffic("  kind: permutation\n  size: 2Mb\n"), `unknown unit "Mb"`, 11},
		{"flow to missing host", traffic("  kind: flows\n  flows:\n    - {src: 0, dst: 99}\n"), "traffic.flows[0].dst: host 99 does not exist (the topology has hosts 0..15)", 12},
		{"flow to itself", traffic("  kind: flows\n  flows:\n    - {src: 2, dst: 2}\n"), "traffic.flows[0].dst: flow from host 2 to itself", 12},
		{"incast receiver missing", traffic("  kind: incast\n  receiver: 40\n  senders: 3\n"), "traffic.receiver: host 40 does not exist (valid: 0..15)", 11},
		{"incast too many senders", traffic("  kind: incast\n  senders: 32\n"), "traffic.senders: 32 senders into one receiver needs 33 hosts", 11},
		{"missing hpcc file", topoHPCC("nope.txt"), "topology.file: cannot read", 5},
		{"empty hpcc file", topoHPCC("empty.txt"), "empty.txt", 0},
		{"truncated hpcc topology", topoHPCC("trunc-topo.txt"), "trunc-topo.txt", 0},
		{"truncated hpcc flows", sub("  kind: permutation\n  size: 2MB\n", "  kind: hpcc\n  file: trunc-flow.txt\n"), "trunc-flow.txt", 0},
		{"hpcc flow to a switch node", strings.Replace(topoHPCC("topo.txt"), "  kind: permutation\n  size: 2MB\n", "  kind: hpcc\n  file: badhost-flow.txt\n", 1), "badhost-flow.txt:2", 0},
		{"bad htsim file", traffic("  kind: htsim\n  file: bad.cm\n"), "bad.cm:3", 0},
		{"duplicate key", sub("seed: 3", "seed: 3\nseed: 4"), "seed: key given twice", 3},
		{"not yaml", "topology: [unclosed\n", "not valid YAML", 0},
		{"list instead of mapping", sub("  link: {rate: 100Gbps, latency: 1us}", "  link: [100Gbps, 1us]"), "topology.link: want a mapping of keys, got a list", 6},
		{"negative seed", sub("seed: 3", "seed: -3"), `seed: "-3" is not a whole number >= 0`, 2},
		{"oversubscription zero", sub("  kind: fat-tree\n  k: 4\n  link: {rate: 100Gbps, latency: 1us}\n", "  kind: leaf-spine\n  leaves: 2\n  spines: 2\n  hosts_per_leaf: 4\n  oversubscription: 0\n"), "topology.oversubscription: must be positive", 8},
		{"hosts above topology", traffic("  kind: permutation\n  hosts: 64\n"), "traffic.hosts: 64 hosts asked for, the topology has 16", 11},
	}
	seen := map[string]bool{}
	n := 0
	for _, c := range cases {
		n++
		if seen[c.name] {
			t.Fatalf("duplicate case %q", c.name)
		}
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			path := write("s.yaml", c.body)
			s, err := Load(path)
			if err == nil {
				_, err = s.Build()
			}
			if err == nil {
				t.Fatalf("accepted:\n%s", c.body)
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error spans several lines: %q", msg)
			}
			if !strings.Contains(msg, c.want) {
				t.Errorf("error %q\nwant it to contain %q", msg, c.want)
			}
			if c.line > 0 && !strings.Contains(msg, "s.yaml:"+strconv.Itoa(c.line)+":") {
				t.Errorf("error %q does not name s.yaml line %d", msg, c.line)
			}
			if !strings.Contains(msg, ".yaml") && !strings.Contains(msg, ".txt") && !strings.Contains(msg, ".cm") {
				t.Errorf("error %q names no file", msg)
			}
		})
	}
	if n < 25 {
		t.Fatalf("only %d distinct malformed inputs; the issue asks for at least 25", n)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(good))
	for _, name := range examples.Names() {
		data, _ := examples.Read(name)
		f.Add(data)
	}
	f.Add([]byte("topology: {kind: fat-tree, k: 4}\nfabric: {kind: roce, dcqcn: true, pfc: true}\ntraffic: {kind: incast, senders: 4}\n"))
	f.Add([]byte("topology: {kind: fat-tree, k: 3}"))
	f.Add([]byte("topology: {kind: fat-tree, k: 4}\nfabric: {kind: infiniband, vls: 2, sl2vl: [0, 1, 1], vl_arb_low: [{vl: 0, weight: 1}, {vl: 1, weight: 9}], ib_cc: {cct: [0ns, 1ns], enabled: true}}\ntraffic: {kind: permutation}\n"))
	f.Add([]byte("topology: {kind: fat-tree, k: 4}\nfabric: {kind: roce, pfc_priorities: [1, 3], weights: [1, 2, 3, 4, 5, 6, 7, 8], transport: irn, pfc_threshold: static}\ntraffic: {kind: permutation}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data, "fuzz.yaml", t.TempDir())
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not start with the file name: %v", err)
			}
			return
		}
		// Keep fuzzing cheap: only build small networks.
		if s.Topology.Kind == "fat-tree" && s.Topology.K > 8 || s.Topology.Kind == "leaf-spine" && s.Topology.Leaves*s.Topology.HostsPerLeaf > 256 ||
			s.Topology.Kind == "clos" && s.Topology.Servers*max(1, s.Topology.NICsPerServer)*max(1, s.Topology.NICPorts) > 256 {
			return
		}
		s.Build()
	})
}

// A single leaf needs no spines: the 1:1 default oversubscription applies only when there are
// spines to connect to (4 hosts on one switch, a 3-to-1 incast: 3 flows).
func TestSingleLeafNoSpines(t *testing.T) {
	s, err := Parse([]byte("topology: {kind: leaf-spine, leaves: 1, spines: 0, hosts_per_leaf: 4}\ntraffic: {kind: incast, senders: 3}\n"), "one-leaf.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Build()
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Graph.Hosts) != 4 || b.Graph.NumSwitches() != 1 || len(b.Work.Msgs) != 3 {
		t.Fatalf("%d hosts, %d switches, %d flows", len(b.Graph.Hosts), b.Graph.NumSwitches(), len(b.Work.Msgs))
	}
}
