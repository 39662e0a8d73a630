package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/examples"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/scenario"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/traffic"
	"github.com/fabricsim/fabricsim/units"
)

func example(t testing.TB, name string) *scenario.Scenario {
	t.Helper()
	data, err := examples.Read(name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := scenario.Parse(data, name, "")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func outputs(t *testing.T, r *result.Run) (summary, flows []byte) {
	t.Helper()
	sum := r.Summary()
	var a, b bytes.Buffer
	if err := sum.WriteJSON(&a); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteFlowsCSV(&b); err != nil {
		t.Fatal(err)
	}
	return a.Bytes(), b.Bytes()
}

// The reference run: random permutation, k=8 fat tree, 100 Gb/s, 1 us links, 2 MB flows,
// 4096 B MTU. It completes with bytes conserved, and the same seed gives identical outputs.
func TestPermutationK8DeterministicAndConserved(t *testing.T) {
	r1, _, err := Run(example(t, "permutation-k8.yaml"), Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	// 128 hosts each send one 2 MB flow.
	if got, want := r1.BytesDelivered, int64(128*2000000); got != want {
		t.Fatalf("delivered %d B, want %d", got, want)
	}
	for _, m := range r1.Messages {
		if m.Finish == 0 || m.FCT() < m.IdealFCT {
			t.Fatalf("flow %d: FCT %v below its idle-network bound %v (or unfinished)", m.ID, m.FCT(), m.IdealFCT)
		}
	}
	r2, _, err := Run(example(t, "permutation-k8.yaml"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	s1, f1 := outputs(t, r1)
	s2, f2 := outputs(t, r2)
	if !bytes.Equal(s1, s2) || !bytes.Equal(f1, f2) {
		t.Fatal("same scenario and seed gave different summary.json or flows.csv")
	}
	seed := uint64(2)
	r3, _, err := Run(example(t, "permutation-k8.yaml"), Options{Seed: &seed})
	if err != nil {
		t.Fatal(err)
	}
	if _, f3 := outputs(t, r3); bytes.Equal(f1, f3) {
		t.Fatal("a different seed gave the same flows.csv")
	}
}

// 32-to-1 incast of 2 MB flows at 100 Gb/s: the receiver's link carries 64 MB of payload plus
// headers, so the last flow cannot end before that many wire bytes at line rate; tail drops
// are recovered so every byte arrives.
func TestIncast32(t *testing.T) {
	r, _, err := Run(example(t, "incast-32.yaml"), Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	// Per flow: 488 packets of 4096 B and one of 1152 B; each carries 62 B of headers and 20 B
	// of preamble/IFG on the wire ([IEEE 802.3]).
	perFlow := int64(488*(4096+82) + (1152 + 82))
	bound := (100 * units.Gbps).TransmitTime(units.Size(32 * perFlow))
	if r.SimTime < bound {
		t.Fatalf("last flow ended at %v, before the line-rate bound %v", r.SimTime, bound)
	}
	if r.BytesDelivered != 32*2000000 {
		t.Fatalf("delivered %d B, want %d", r.BytesDelivered, 32*2000000)
	}
	if r.Drops == 0 || r.DropsByCause["buffer"] != r.Drops {
		t.Fatalf("drops %v: a 16 MiB buffer cannot absorb 62 MB of excess without tail drops", r.DropsByCause)
	}
	t.Logf("incast: last flow %v (bound %v, %.2fx), %d drops, %d B retransmitted", r.SimTime, bound, float64(r.SimTime)/float64(bound), r.Drops, r.BytesRetransmitted)
}

// The same topology and flows given as HPCC ns-3 topology.txt/flow.txt and as native YAML give
// the same results, flow for flow.
func TestHPCCImportMatchesNative(t *testing.T) {
	native := example(t, "permutation-k8.yaml")
	b, err := native.Build()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var tb, fb bytes.Buffer
	if err := topo.WriteHPCCTopology(&tb, b.Graph); err != nil {
		t.Fatal(err)
	}
	var flows []traffic.Flow
	for i, m := range b.Work.Msgs {
		flows = append(flows, traffic.Flow{ID: i, Src: int(m.Src), Dst: int(m.Dst), Size: m.Bytes, Start: m.Start, Prio: 3, DPort: 100})
	}
	if err := traffic.WriteHPCCFlows(&fb, flows, b.Graph.NodeOfHost); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "topology.txt"), tb.Bytes(), 0o644)
	os.WriteFile(filepath.Join(dir, "flow.txt"), fb.Bytes(), 0o644)
	yaml := "name: permutation-k8\nseed: 1\ntopology: {kind: hpcc, file: topology.txt}\nfabric: {kind: ethernet, mtu: 4096}\ntraffic: {kind: hpcc, file: flow.txt}\n"
	os.WriteFile(filepath.Join(dir, "s.yaml"), []byte(yaml), 0o644)
	imported, err := scenario.Load(filepath.Join(dir, "s.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r1, _, err := Run(native, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r2, _, err := Run(imported, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, f1 := outputs(t, r1)
	_, f2 := outputs(t, r2)
	if !bytes.Equal(f1, f2) {
		t.Fatalf("HPCC-imported run differs from native:\n%s\nvs\n%s", f1[:200], f2[:200])
	}
	if r1.Events != r2.Events {
		t.Fatalf("events %d vs %d", r1.Events, r2.Events)
	}
}

// A run stopped by its duration reports only the flows that finished: the 4 KB flow completes
// (about 2.3 us alone), the 10 MB flow cannot by 100 us (it needs 800 us at 100 Gb/s), so it
// counts as unfinished and has no FCT in flows.csv.
func TestDurationStopsWithPartialResults(t *testing.T) {
	s, err := scenario.Parse([]byte(`name: partial
duration: 100us
topology: {kind: fat-tree, k: 4}
traffic:
  kind: flows
  flows:
    - {src: 0, dst: 1, size: 4KB}
    - {src: 2, dst: 3, size: 10MB}
`), "partial.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := Run(s, Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	sum := r.Summary()
	if sum.Flows != 2 || sum.Unfinished != 1 || sum.FCTNs.Max == 0 || sum.FCTNs.Max > 100e3 {
		t.Fatalf("flows %d unfinished %d fct max %v", sum.Flows, sum.Unfinished, sum.FCTNs.Max)
	}
	if r.EndTime > 100*units.Microsecond {
		t.Fatalf("stopped at %v, after the 100us duration", r.EndTime)
	}
	var b bytes.Buffer
	r.WriteFlowsCSV(&b)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.HasSuffix(lines[2], ",0,,"+strings.Split(lines[2], ",")[6]) {
		t.Fatalf("flows.csv:\n%s", b.String())
	}
}
