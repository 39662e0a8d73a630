package compare

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/chakra"
	"github.com/fabricsim/fabricsim/units"
)

// traceScenario is a compare scenario on the Chakra fixture chakra/testdata/dp16 (16 ranks);
// %s is the workload's extra keys.
const traceScenario = `name: trace
steps: 1
cluster: {gpus_per_server: 8, link_rate: 400Gbps}
workload:
  chakra: ../chakra/testdata/dp16
  %s
variants: [ib-ndr, roce-default]
`

func parseTrace(t *testing.T, extra string) *Scenario {
	t.Helper()
	s, err := Parse([]byte(fmt.Sprintf(traceScenario, extra)), "t.yaml", ".")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestTraceWorkload: a compare scenario runs the Chakra fixture on every variant; each
// network collective class holds the trace's collectives with the trace's sizes and groups, the
// step's network bytes are the collectives' wire bytes worked out by hand, and the step splits
// into the trace's compute and exposed communication exactly.
func TestTraceWorkload(t *testing.T) {
	s := parseTrace(t, "tokens_per_step: 65536")
	if s.Workload != nil || s.Trace == nil || s.Cluster.Servers != 2 {
		t.Fatalf("workload %v, trace %+v, %d servers (want 2 from 16 ranks)", s.Workload, s.Trace, s.Cluster.Servers)
	}
	plan, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	// Network bytes of the whole step (NVLink hops become delay nodes of 0 bytes), by hand:
	//   all-to-all, 2 groups of 8 ranks (4 per server), 4 MiB: each rank sends 4 MiB / 8 to each
	//     of its 4 peers on the other server: 8 x 4 x 0.5 MiB = 16 MiB per group, 32 MiB;
	//   all-reduce 8 MiB over 2 servers x 8 (hierarchical): on each of the 8 rails a 2-rank ring
	//     all-reduces the rail's 1 MiB block, each rank sending 2 (m-1)/m x 1 MiB = 1 MiB: 16 MiB;
	//   all-reduce 4 MiB: 8 MiB;  8 sends of 1 MiB: 8 MiB.  In all 64 MiB.
	g, _, err := s.CompileStep(plan)
	if err != nil {
		t.Fatal(err)
	}
	var wire units.Size
	for _, m := range g.Msgs {
		wire += m.Bytes
	}
	if wire != 64*units.MiB {
		t.Errorf("the step sends %d bytes over the network, want 64 MiB = %d", wire, 64*units.MiB)
	}

	r, err := Run(context.Background(), s, Options{Backend: backend.Analytic})
	if err != nil {
		t.Fatal(err)
	}
	// The classes are the trace's collectives: kind, size (the nodes' comm_size), groups and
	// ranks per group.
	var got []string
	for _, c := range r.Fidelity.Classes {
		got = append(got, fmt.Sprintf("%s groups=%d ranks=%d bytes=%d per-step=%d", c.Key, c.Groups, c.RanksPerGroup, c.Bytes, c.InstancesTotal))
	}
	sort.Strings(got)
	want := []string{
		"all-reduce/pg 0/stage0/4194304 groups=1 ranks=16 bytes=4194304 per-step=1",
		"all-reduce/pg 0/stage0/8388608 groups=1 ranks=16 bytes=8388608 per-step=1",
		"all-to-all/pg 1/stage0/4194304 groups=1 ranks=8 bytes=4194304 per-step=1",
		"all-to-all/pg 2/stage0/4194304 groups=1 ranks=8 bytes=4194304 per-step=1",
		"send-recv/p2p/stage0/1048576 groups=8 ranks=2 bytes=1048576 per-step=8",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("classes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The sizes come from the files: every COMM_COLL_NODE's comm_size is one of the classes'.
	sizes := map[int64]bool{}
	for _, c := range r.Fidelity.Classes {
		sizes[c.Bytes] = true
	}
	for rank := range 16 {
		tr, err := chakra.ReadFile(fmt.Sprintf("../chakra/testdata/dp16.%d.et", rank))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range tr.Nodes {
			if a := n.Attr("comm_size"); a != nil && !sizes[a.Ints[0]] {
				t.Errorf("rank %d node %d: comm_size %d is in no class", rank, n.ID, a.Ints[0])
			}
		}
	}
	if r.Plan.Trace != "../chakra/testdata/dp16" || r.Plan.GPUs != 16 || r.Plan.TokensPerStep != 65536 {
		t.Errorf("plan summary %+v", r.Plan)
	}
	for _, v := range r.Variants {
		// Every rank's compute is on the critical path: 1500 + 1500 + 3000 + 3000 + 500 us and
		// the 0-us node's 1 ns.
		if math.Abs(v.Compute-0.009500001) > 1e-12 {
			t.Errorf("%s: compute %.9f s, want 0.009500001", v.Variant.Name, v.Compute)
		}
		if math.Abs(v.StepTime-v.Compute-v.ExposedComm) > 1e-12 || v.ExposedComm <= 0 {
			t.Errorf("%s: step %g != compute %g + exposed %g", v.Variant.Name, v.StepTime, v.Compute, v.ExposedComm)
		}
		if v.TrainSteps != math.Ceil(1e12/65536) {
			t.Errorf("%s: %g steps to train 1T tokens at 65536 per step", v.Variant.Name, v.TrainSteps)
		}
	}
	var table strings.Builder
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "trace: Chakra trace ../chakra/testdata/dp16 (16 ranks, 108 ops (96 compute, 2 all-reduce, 2 all-to-all, 8 send-recv)), 65536 tokens/step") {
		t.Errorf("table header:\n%s", table.String())
	}
}

// TestTracePacket: the fixture on the packet backend: the same split of the step, no drops on
// the lossless fabrics, and a step within 1 % of the analytic backend's (the network is idle
// but for these few collectives, so queueing adds little).
func TestTracePacket(t *testing.T) {
	s := parseTrace(t, "")
	pk, err := Run(context.Background(), s, Options{Backend: backend.Packet})
	if err != nil {
		t.Fatal(err)
	}
	an, err := Run(context.Background(), s, Options{Backend: backend.Analytic})
	if err != nil {
		t.Fatal(err)
	}
	if pk.Fidelity.Mode != FidelityFull {
		t.Errorf("fidelity %s, want the whole step", pk.Fidelity.Mode)
	}
	for i, v := range pk.Variants {
		checkIdentity(t, pk)
		if v.Drops != 0 || v.Events == 0 {
			t.Errorf("%s: %g drops, %d events", v.Variant.Name, v.Drops, v.Events)
		}
		if a := an.Variants[i].StepTime; math.Abs(v.StepTime/a-1) > 0.01 {
			t.Errorf("%s: packet step %g vs analytic %g", v.Variant.Name, v.StepTime, a)
		}
		// Without tokens_per_step the time to train is unknown, not 0 days.
		if v.TrainSteps != 0 || v.trainDays() != "-" || v.trainMoney() != "-" {
			t.Errorf("%s: %g steps, %q, %q", v.Variant.Name, v.TrainSteps, v.trainDays(), v.trainMoney())
		}
	}
}

// TestTraceBadInput: a bad trace or trace workload is a parse error at the scenario's
// workload line that names the trace file, the node and what is wrong.
func TestTraceBadInput(t *testing.T) {
	dir := t.TempDir()
	copyFixture := func(sub string, edit func(rank int, data []byte) []byte) string {
		d := filepath.Join(dir, sub)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for r := range 16 {
			data, err := os.ReadFile(fmt.Sprintf("../chakra/testdata/dp16.%d.et", r))
			if err != nil {
				t.Fatal(err)
			}
			if data = edit(r, data); data != nil {
				os.WriteFile(filepath.Join(d, fmt.Sprintf("dp16.%d.et", r)), data, 0o644)
			}
		}
		return filepath.Join(d, "dp16")
	}
	truncated := copyFixture("truncated", func(r int, b []byte) []byte {
		if r == 3 {
			return b[:len(b)-10]
		}
		return b
	})
	missing := copyFixture("missing", func(r int, b []byte) []byte {
		if r == 5 {
			return nil
		}
		return b
	})
	// Rank 2's zero_grad (the last record, id 10) rewritten as type 2 (MEM_LOAD_NODE): in its
	// record "08 0a 12 09 'zero_grad' 18 04 ..." the type's value follows the name and its tag.
	memNode := copyFixture("mem", func(r int, b []byte) []byte {
		if r == 2 {
			i := strings.LastIndex(string(b), "zero_grad")
			b[i+len("zero_grad")+1] = 2
		}
		return b
	})
	for _, c := range []struct{ name, workload, want string }{
		{"corrupt trace", "chakra: " + truncated,
			"t.yaml:5:11: workload.chakra: " + truncated + ".3.et: node record 10 at byte 1532: record length: 67 bytes, but only 57 are left in the file: truncated"},
		{"missing rank", "chakra: " + missing, "t.yaml:5:11: workload.chakra: " + missing + ".5.et: missing: the trace has files for ranks up to 15"},
		{"node type not modelled", "chakra: " + memNode,
			`t.yaml:5:11: workload.chakra: ` + memNode + `.2.et: node 10 "zero_grad" (record 10, byte 1532): type: MEM_LOAD_NODE is not modelled`},
		{"no such traces", "chakra: nothere/x", "workload.chakra: nothere/x: cannot list nothere"},
		{"empty prefix", `chakra: ""`, "t.yaml:5:11: workload.chakra: empty"},
		{"model keys with a trace", "chakra: ../chakra/testdata/dp16\n  model: llama3-8b", "t.yaml:6:3: workload.model: unknown key"},
		{"bad comm groups", "chakra: ../chakra/testdata/dp16\n  comm_groups: nope.json", "t.yaml:6:16: workload.comm_groups: nope.json: cannot read the communicator groups"},
		{"negative tokens", "chakra: ../chakra/testdata/dp16\n  tokens_per_step: -1", "t.yaml:6:20: workload.tokens_per_step: -1: must not be negative"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(fmt.Sprintf(traceScenario, ""), "chakra: ../chakra/testdata/dp16", c.workload, 1)
			_, err := Parse([]byte(src), "t.yaml", ".")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v\nwant it to contain %q", err, c.want)
			}
		})
	}
	// A cluster of the wrong size for the trace's ranks.
	src := strings.Replace(fmt.Sprintf(traceScenario, ""), "gpus_per_server: 8", "servers: 1, gpus_per_server: 8", 1)
	if _, err := Parse([]byte(src), "t.yaml", "."); err == nil || !strings.Contains(err.Error(), "t.yaml:5:11: workload.chakra: the traces have 16 ranks (one per GPU), but the cluster has 1 servers x 8 = 8 GPUs") {
		t.Errorf("cluster size: %v", err)
	}
}

// TestTraceBroadcastReduce: BROADCAST and REDUCE from a trace run as NCCL's pipelined chains
// from the group's first rank. On 2 servers x 8 ranks the broadcast chain 0 -> 1 -> ... -> 15
// crosses the network once (7 -> 8) and the reduce chain 1 -> ... -> 15 -> 0 twice (7 -> 8 and
// 15 -> 0): a 1 MiB broadcast and a 2 MiB reduce send 1 + 2 x 2 = 5 MiB over the network.
func TestTraceBroadcastReduce(t *testing.T) {
	dir := t.TempDir()
	for r := range 16 {
		attrs := func(ct chakra.CollectiveType, size int64) []chakra.Attr {
			return []chakra.Attr{{Name: "comm_type", Type: chakra.Int64Val, Ints: []int64{int64(ct)}},
				{Name: "comm_size", Type: chakra.Int64Val, Ints: []int64{size}}}
		}
		tr := &chakra.Trace{Nodes: []chakra.Node{
			{ID: 1, Type: chakra.CommCollNode, Attrs: attrs(chakra.Broadcast, 1<<20)},
			{ID: 2, Type: chakra.CompNode, DurationMicros: 10, DataDeps: []uint64{1}},
			{ID: 3, Type: chakra.CommCollNode, Attrs: attrs(chakra.Reduce, 2<<20), DataDeps: []uint64{2}},
		}}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("br.%d.et", r)), chakra.Encode(tr), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src := strings.Replace(fmt.Sprintf(traceScenario, ""), "../chakra/testdata/dp16", filepath.Join(dir, "br"), 1)
	s, err := Parse([]byte(src), "t.yaml", ".")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := s.Plan()
	if err != nil {
		t.Fatal(err)
	}
	g, _, err := s.CompileStep(plan)
	if err != nil {
		t.Fatal(err)
	}
	var wire units.Size
	for _, m := range g.Msgs {
		wire += m.Bytes
	}
	if wire != 5*units.MiB {
		t.Errorf("%d bytes over the network, want 5 MiB", wire)
	}
	r, err := Run(context.Background(), s, Options{Backend: backend.Analytic})
	if err != nil {
		t.Fatal(err)
	}
	checkIdentity(t, r)
	if v := r.Variants[0]; v.StepTime <= 10e-6 || math.Abs(v.Compute-10e-6) > 1e-12 {
		t.Errorf("step %g, compute %g (want 10 us)", v.StepTime, v.Compute)
	}
}
