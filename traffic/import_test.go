package traffic

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// star is the shape of HPCC's mix/topology.txt: switch 0 with hosts 1..8 (dense hosts 0..7).
const star = "9 1 8\n0\n0 1 100Gbps 1us 0\n0 2 100Gbps 1us 0\n0 3 100Gbps 1us 0\n0 4 100Gbps 1us 0\n0 5 100Gbps 1us 0\n0 6 100Gbps 1us 0\n0 7 100Gbps 1us 0\n0 8 100Gbps 1us 0\n"

func starGraph(t testing.TB) *topo.Graph {
	g, err := topo.ImportHPCC(strings.NewReader(star), "star.txt")
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestImportHPCCFlows(t *testing.T) {
	g := starGraph(t)
	f, err := os.Open("testdata/hpcc_flow.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	flows, err := ImportHPCCFlows(f, "testdata/hpcc_flow.txt", g.HostOfNode)
	if err != nil {
		t.Fatal(err)
	}
	// Node n of the star is host n-1.
	want := []Flow{
		{ID: 0, Src: 1, Dst: 0, Size: 200000000, Start: 2 * units.Second, Prio: 3, DPort: 100},
		{ID: 1, Src: 2, Dst: 0, Size: 150000000, Start: 2 * units.Second, Prio: 3, DPort: 100},
		{ID: 2, Src: 3, Dst: 4, Size: 5000000, Start: 2000000001000, Prio: 3, DPort: 100},
		{ID: 3, Src: 7, Dst: 5, Size: 1, Start: 2500 * units.Millisecond, Prio: 0, DPort: 200},
	}
	if !equalFlows(flows, want) {
		t.Fatalf("got %+v\nwant %+v", flows, want)
	}
}

func TestImportHPCCFlowsErrors(t *testing.T) {
	g := starGraph(t)
	for _, c := range []struct{ name, in, want string }{
		{"empty", "", "flow.txt: empty file"},
		{"count", "two\n", `flow.txt:1: flow count "two": want a whole number`},
		{"count fields", "2 3\n", "flow.txt:1: first line has 2 fields, want 1"},
		{"truncated", "3\n1 2 3 100 1000 2\n2 1 3 100 1000 2\n", "flow.txt:3: file ends after 2 of the 3 flows declared on line 1"},
		{"fields", "1\n1 2 3 100 1000\n", "flow.txt:2: flow 0: 5 fields, want 6"},
		{"switch dst", "1\n1 0 3 100 1000 2\n", "flow.txt:2: flow 0: dst node 0 is not a host of the topology"},
		{"missing host", "1\n9 1 3 100 1000 2\n", "flow.txt:2: flow 0: src node 9 is not a host of the topology"},
		{"bad node", "1\n-1 1 3 100 1000 2\n", `flow.txt:2: flow 0: src node "-1": want a node id`},
		{"self", "1\n2 2 3 100 1000 2\n", "flow 0: sends from node 2 to itself"},
		{"prio", "1\n1 2 8 100 1000 2\n", `flow.txt:2: flow 0: priority "8": want a priority group 0..7`},
		{"dport", "1\n1 2 3 70000 1000 2\n", `dport "70000": want a port number 0..65535`},
		{"zero size", "1\n1 2 3 100 0 2\n", `flow.txt:2: flow 0: size "0": want a whole number of bytes >= 1`},
		{"negative size", "1\n1 2 3 100 -5 2\n", `size "-5"`},
		{"start word", "1\n1 2 3 100 1000 soon\n", `flow.txt:2: flow 0: start "soon" is not a decimal number`},
		{"start negative", "1\n1 2 3 100 1000 -2\n", `start "-2" must not be negative`},
		{"start sub-ps", "1\n1 2 3 100 1000 2.0000000000001\n", "more decimal places than the unit resolves: want seconds >= 0 with at most 12 decimal places"},
		{"order", "2\n1 2 3 100 1000 2\n2 1 3 100 1000 1.5\n", "flow.txt:3: flow 1 starts at 1.5s, before flow 0 (2s)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ImportHPCCFlows(strings.NewReader(c.in), "flow.txt", g.HostOfNode)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v; want it to contain %q", err, c.want)
			}
		})
	}
}

// A native scenario written as HPCC files (topology + flows) imports back to the same graph and
// the same flows.
func TestHPCCScenarioRoundTrip(t *testing.T) {
	ft, err := topo.FatTree(4, topo.LinkSpec{Rate: 100 * units.Gbps, Latency: units.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	flows, err := PermutationFlows(len(ft.Hosts), 1*units.MB, 2*units.Second+1500*units.Nanosecond, NewRand(9))
	if err != nil {
		t.Fatal(err)
	}
	flows = append(flows, Flow{ID: 16, Src: 3, Dst: 12, Size: 4097, Start: 3*units.Second + 1, Prio: 7, DPort: 4791})
	var tb, fb bytes.Buffer
	if err := topo.WriteHPCCTopology(&tb, ft); err != nil {
		t.Fatal(err)
	}
	if err := WriteHPCCFlows(&fb, flows, ft.NodeOfHost); err != nil {
		t.Fatal(err)
	}
	flowText := fb.String()
	g, err := topo.ImportHPCC(&tb, "topology.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Hosts) != 16 || g.NumSwitches() != 20 || len(g.Links) != 48 {
		t.Fatalf("re-imported topology: %d hosts %d switches %d links", len(g.Hosts), g.NumSwitches(), len(g.Links))
	}
	for i := range ft.Links {
		a, b := ft.Links[i], g.Links[i]
		if a.A != b.A || a.B != b.B || a.Rate != b.Rate || a.Latency != b.Latency {
			t.Fatalf("link %d: %+v vs %+v", i, b, a)
		}
	}
	back, err := ImportHPCCFlows(&fb, "flow.txt", g.HostOfNode)
	if err != nil {
		t.Fatalf("%v\n%s", err, fb.String())
	}
	if !equalFlows(back, flows) {
		t.Fatalf("flows differ:\n%+v\n%+v", back, flows)
	}
	if !strings.Contains(flowText, "\n3 12 7 4791 4097 3.000000000001\n") || !strings.HasPrefix(flowText, "17\n") {
		t.Fatalf("flow file not as expected:\n%s", flowText)
	}
}

func TestWriteHPCCFlowsErrors(t *testing.T) {
	id := func(h int) int { return h }
	for _, c := range []struct {
		flows []Flow
		want  string
	}{
		{[]Flow{{Src: 0, Dst: 1, Size: 1, Deps: []int{0}}}, "depends on other flows"},
		{[]Flow{{Src: 0, Dst: 1, Size: 1, Prio: 9}}, "priority 9"},
		{[]Flow{{Src: 0, Dst: 1, Size: 1, Start: 5}, {Src: 0, Dst: 1, Size: 1, Start: 4}}, "sort flows by start time"},
	} {
		if err := WriteHPCCFlows(&bytes.Buffer{}, c.flows, id); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
}

func importCM(t *testing.T, path string) ([]Flow, int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	flows, n, err := ImportHtsimCM(f, path)
	if err != nil {
		t.Fatal(err)
	}
	return flows, n
}

func TestImportHtsimPermutation(t *testing.T) {
	flows, n := importCM(t, "testdata/perm_8n_8c_2MB.cm")
	if n != 8 || len(flows) != 8 {
		t.Fatalf("%d nodes, %d flows; want 8, 8", n, len(flows))
	}
	if f := flows[0]; f.ID != 1 || f.Src != 3 || f.Dst != 5 || f.Size != 2000000 || f.Start != 0 || f.Deps != nil {
		t.Fatalf("flow 0: %+v", f)
	}
	recv := make([]int, n)
	for _, f := range flows {
		recv[f.Dst]++
	}
	for h, c := range recv {
		if c != 1 {
			t.Fatalf("host %d receives %d flows in a permutation", h, c)
		}
	}
}

// testdata/allreduce_3.cm follows htsim's gen_allreduce.py: 3 chains of 2*3-1 = 5 steps, each
// step started by a oneshot trigger that the previous step signals with send_done_trigger.
func TestImportHtsimAllReduceTriggers(t *testing.T) {
	flows, n := importCM(t, "testdata/allreduce_3.cm")
	if n != 4 || len(flows) != 15 {
		t.Fatalf("%d nodes, %d flows; want 4, 15", n, len(flows))
	}
	for i, f := range flows {
		if f.ID != i+1 {
			t.Fatalf("flow %d has ID %d, want file order", i, f.ID)
		}
		if i%5 == 0 {
			if f.Deps != nil {
				t.Fatalf("chain head %d has deps %v", i, f.Deps)
			}
			continue
		}
		if !slices.Equal(f.Deps, []int{i - 1}) || f.Start != 0 {
			t.Fatalf("flow %d: deps %v start %s, want [%d] and 0", i, f.Deps, f.Start, i-1)
		}
		if flows[i-1].Dst != f.Src {
			t.Fatalf("ring step %d sends from %d, but the previous step delivered to %d", i, f.Src, flows[i-1].Dst)
		}
	}
	g := ToGraph(flows, n)
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	if g.Msgs[4].Tag != "flow5" || len(g.Msgs[4].Deps) != 1 || g.Msgs[4].Deps[0] != 3 {
		t.Fatalf("message 4: %+v", g.Msgs[4])
	}
}

func TestImportHtsimReordersAndBarriers(t *testing.T) {
	// Flow 1 waits (barrier) for flows 2 and 3, which come later in the file; flow 4 has no id.
	in := `# comment
Nodes 4
Connections 4
Triggers 1
0->1 id 10 trigger 7 size 100 prio 2
1->2 id 20 start 0 size 100 recv_done_trigger 7
2->3 id 30 start 5 size 100 send_done_trigger 7
3->0 start 1000 size 1
trigger id 7 barrier count 2
`
	flows, _, err := ImportHtsimCM(strings.NewReader(in), "x.cm")
	if err != nil {
		t.Fatal(err)
	}
	ids := []int{}
	for _, f := range flows {
		ids = append(ids, f.ID)
	}
	if !slices.Equal(ids, []int{20, 30, 10, 31}) {
		t.Fatalf("order by ID %v, want [20 30 10 31]", ids)
	}
	if f := flows[2]; !slices.Equal(f.Deps, []int{0, 1}) || f.Prio != 2 {
		t.Fatalf("barrier target: %+v", f)
	}
	if flows[1].Start != 5 || flows[3].Start != 1000 {
		t.Fatalf("start times %s %s", flows[1].Start, flows[3].Start)
	}
	if err := ToGraph(flows, 4).Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestImportHtsimErrors(t *testing.T) {
	h := "Nodes 4\nConnections 1\n"
	for _, c := range []struct{ name, in, want string }{
		{"empty", "", "x.cm: empty file"},
		{"no nodes", "Connections 1\n0->1 start 0 size 1\n", "x.cm:2: no `Nodes <N>` line"},
		{"no conns", "Nodes 4\n0->1 start 0 size 1\n", "x.cm:2: no `Connections <C>` line"},
		{"header word", "Nodes 4\nConections 1\n", `x.cm:2: unknown header keyword "Conections"`},
		{"header value", "Nodes four\n", `x.cm:1: Nodes "four": want a whole number`},
		{"header dup", "Nodes 4\nNodes 5\n", "x.cm:2: Nodes given twice (first on line 1)"},
		{"truncated", "Nodes 4\nConnections 3\n0->1 start 0 size 1\n1->2 start 0 size 1\n", "x.cm:4: file ends after 2 of the 3 connections declared on line 2"},
		{"too many", h + "0->1 start 0 size 1\n1->2 start 0 size 1\n", "x.cm:4: more connections than the 1 declared on line 2"},
		{"no such host", h + "0->4 start 0 size 1\n", "x.cm:3: connection 1: destination host 4 does not exist: Nodes 4 declares hosts 0..3"},
		{"bad host", h + "a->1 start 0 size 1\n", `x.cm:3: connection 1: source "a" in "a->1": want a host number`},
		{"self", h + "2->2 start 0 size 1\n", "host 2 sends to itself"},
		{"zero size", h + "0->1 start 0 size 0\n", `x.cm:3: connection 1: size "0": want a whole number of bytes >= 1`},
		{"negative size", h + "0->1 start 0 size -3\n", `size "-3"`},
		{"no size", h + "0->1 start 0\n", "no size"},
		{"bad start", h + "0->1 start 1.5 size 1\n", `start "1.5" has more decimal places`},
		{"unknown field", h + "0->1 start 0 size 1 colour red\n", `x.cm:3: connection 1: unknown field "colour"`},
		{"dangling", h + "0->1 start 0 size\n", "size has no value"},
		{"twice", h + "0->1 start 0 size 1 size 2\n", "size given twice"},
		{"no start", h + "0->1 size 1\n", "no start method"},
		{"both", "Nodes 4\nConnections 1\nTriggers 1\n0->1 id 1 start 0 trigger 1 size 1\ntrigger id 1 oneshot\n", "both a start time and a trigger"},
		{"id zero", h + "0->1 id 0 start 0 size 1\n", `id "0": want a whole number >= 1`},
		{"dup id", "Nodes 4\nConnections 2\n0->1 id 3 start 0 size 1\n1->2 id 3 start 0 size 1\n", "x.cm:4: connection 2: id 3 is already used by the connection on line 3"},
		{"prio", h + "0->1 start 0 size 1 prio 2000000\n", `prio "2000000": want a priority 0..255`},
		{"addon", h + "0->1 start 0 size 1 addon\n", "addon flag"},
		{"failure", "Nodes 4\nConnections 0\nFailures 1\nfailure switch_type TOR switch_id 0 link_id 0\n", "Failures 1: link and switch failures are not supported"},
		{"undeclared trigger", "Nodes 4\nConnections 1\n0->1 id 1 start 0 size 1 send_done_trigger 4\n", "x.cm:3: connection 1: trigger 4 is not declared by a `trigger id 4 <type>` line"},
		{"trigger count", "Nodes 4\nConnections 1\n0->1 id 1 start 0 size 1\ntrigger id 1 oneshot\n", "x.cm: 1 trigger lines, but the Triggers line declares 0"},
		{"unresolved", "Nodes 4\nConnections 1\nTriggers 1\n0->1 id 1 start 0 size 1 send_done_trigger 4\ntrigger id 1 oneshot\n", "x.cm:4: connection 1: trigger 4 is not declared"},
		{"trigger no type", "Nodes 4\nConnections 0\nTriggers 1\ntrigger id 1\n", "x.cm:4: trigger: trigger 1 has no type"},
		{"trigger two types", "Nodes 4\nConnections 0\nTriggers 1\ntrigger id 1 oneshot barrier\n", "two types"},
		{"trigger dup", "Nodes 4\nConnections 0\nTriggers 2\ntrigger id 1 oneshot\ntrigger id 1 oneshot\n", "x.cm:5: trigger id 1 declared twice (first on line 4)"},
		{"barrier count", "Nodes 4\nConnections 0\nTriggers 1\ntrigger id 1 barrier\n", "barrier 1 needs `count <K>`"},
		{"never fires", "Nodes 4\nConnections 1\nTriggers 1\n0->1 id 1 trigger 1 size 1\ntrigger id 1 oneshot\n", "x.cm:5: trigger 1 is signalled by 0 connections, so it never fires and the connection on line 4 never starts"},
		{"oneshot twice", "Nodes 4\nConnections 3\nTriggers 1\n0->1 id 1 start 0 size 1 send_done_trigger 1\n1->2 id 2 start 0 size 1 send_done_trigger 1\n2->3 id 3 trigger 1 size 1\ntrigger id 1 oneshot\n", "use `barrier count 2`"},
		{"barrier partial", "Nodes 4\nConnections 3\nTriggers 1\n0->1 id 1 start 0 size 1 send_done_trigger 1\n1->2 id 2 start 0 size 1 send_done_trigger 1\n2->3 id 3 trigger 1 size 1\ntrigger id 1 barrier count 1\n", "fires after the first 1 of its 2 signalling connections"},
		{"multishot", "Nodes 4\nConnections 3\nTriggers 1\n0->1 id 1 start 0 size 1 send_done_trigger 1\n1->2 id 2 trigger 1 size 1\n2->3 id 3 trigger 1 size 1\ntrigger id 1 multishot\n", "multishot trigger 1 starts its k-th connection"},
		{"cycle", "Nodes 4\nConnections 2\nTriggers 2\n0->1 id 1 trigger 1 size 1 send_done_trigger 2\n1->2 id 2 trigger 2 size 1 send_done_trigger 1\ntrigger id 1 oneshot\ntrigger id 2 oneshot\n", "x.cm:4: connection 1 waits, through its trigger, on connections that wait on it"},
		{"header late", h + "0->1 start 0 size 1\nNodes 5\n", `x.cm:4: header line "Nodes" after the first connection`},
		{"garbage", h + "0->1 start 0 size 1\nhello\n", `x.cm:4: unknown line starting "hello"`},
		{"triggered no id", "Nodes 4\nConnections 1\nTriggers 1\n0->1 trigger 1 size 1\ntrigger id 1 oneshot\n", "a triggered connection needs an `id`"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := ImportHtsimCM(strings.NewReader(c.in), "x.cm")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v; want it to contain %q", err, c.want)
			}
		})
	}
}

func TestHtsimRoundTrip(t *testing.T) {
	for _, path := range []string{"testdata/allreduce_3.cm", "testdata/perm_8n_8c_2MB.cm"} {
		flows, n := importCM(t, path)
		var buf bytes.Buffer
		if err := WriteHtsimCM(&buf, flows, n); err != nil {
			t.Fatal(err)
		}
		back, n2, err := ImportHtsimCM(&buf, "rt.cm")
		if err != nil || n2 != n || !equalFlows(back, flows) {
			t.Fatalf("%s: round trip: %v, %d nodes\n%+v\n%+v\n%s", path, err, n2, back, flows, buf.String())
		}
	}
	// Generated flows (IDs from 0) are renumbered 1..n.
	flows, _ := Shift(4, 1, 10, 7)
	var buf bytes.Buffer
	if err := WriteHtsimCM(&buf, flows, 4); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), "Nodes 4\nConnections 4\n0->1 id 1 start 7 size 10\n") {
		t.Fatalf("unexpected output:\n%s", buf.String())
	}
}

func equalFlows(a, b []Flow) bool {
	return slices.EqualFunc(a, b, func(x, y Flow) bool {
		return x.ID == y.ID && x.Src == y.Src && x.Dst == y.Dst && x.Size == y.Size && x.Start == y.Start &&
			x.Prio == y.Prio && x.DPort == y.DPort && slices.Equal(x.Deps, y.Deps)
	})
}

func FuzzImportHPCCFlows(f *testing.F) {
	b, err := os.ReadFile("testdata/hpcc_flow.txt")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte("2\n1 2 3 100 1000 2\n2 1 3 100 1000 2.5e0\n"))
	f.Add([]byte("1\n8 1 7 65535 9223372036854775807 0.000000000001\n"))
	g := starGraph(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		flows, err := ImportHPCCFlows(bytes.NewReader(data), "fuzz.txt", g.HostOfNode)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.txt") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		if err := ToGraph(flows, len(g.Hosts)).Validate(); err != nil {
			t.Fatalf("imported flows make an invalid graph: %v", err)
		}
		var buf bytes.Buffer
		if err := WriteHPCCFlows(&buf, flows, g.NodeOfHost); err != nil {
			t.Fatal(err)
		}
		back, err := ImportHPCCFlows(&buf, "fuzz.txt", g.HostOfNode)
		if err != nil || !equalFlows(back, flows) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, back, flows)
		}
	})
}

func FuzzImportHtsimCM(f *testing.F) {
	for _, p := range []string{"testdata/allreduce_3.cm", "testdata/perm_8n_8c_2MB.cm"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("Nodes 4\nConnections 4\nTriggers 1\n0->1 id 10 trigger 7 size 100 prio 2\n1->2 id 20 start 0 size 100 recv_done_trigger 7\n2->3 id 30 start 5 size 100 send_done_trigger 7\n3->0 start 1000 size 1\ntrigger id 7 barrier count 2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		flows, n, err := ImportHtsimCM(bytes.NewReader(data), "fuzz.cm")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.cm") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		if err := ToGraph(flows, n).Validate(); err != nil {
			t.Fatalf("imported flows make an invalid graph: %v", err)
		}
		var buf bytes.Buffer
		if err := WriteHtsimCM(&buf, flows, n); err != nil {
			return // not every accepted dependency pattern is writable (see WriteHtsimCM)
		}
		if _, _, err := ImportHtsimCM(&buf, "fuzz.cm"); err != nil {
			t.Fatalf("re-import of written matrix: %v\n%s", err, buf.String())
		}
	})
}
