package compare

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/fabric"
)

// faultCompare is two servers of one GPU on two leaves (radix 3 at 0.5:1: one NIC and two
// uplinks per leaf, two spines), a data-parallel step whose one-channel ring all-reduce sends
// 0->1 and 1->0 across the spines; leaf0's link to spine0 fails 1 ms into step 2, during the
// gradient all-reduce, and stays down. The timers are docs/faults.md's test timers, the RTO
// 2 % of the stall so that the resend after the reroute comes at once.
const faultCompare = `name: fault-test
backend: packet
steps: 2
cluster: {servers: 2, gpus_per_server: 1, link_rate: 100Gbps, radix: 3, oversubscription: 0.5}
collective: {channels: 1}
workload:
  kind: training
  model: {base: llama3-8b, layers: 2, hidden: 1024, ffn: 4096, heads: 8, kv_heads: 8, vocab: 16000}
  gpu: h100
  dp: 2
  zero: 1
  global_batch: 2
  seq_len: 512
faults:
  - {kind: link_down, link: rail0_leaf0-spine0, at: 1ms, step: 2}
fault_recovery: {sm_reroute: 2ms, bfd_interval: 400us, bfd_multiplier: 3, route_convergence: 200us}
variants: [{name: ib, base: ib-ndr, fabric: {rto: 40us}}, {name: roce, base: roce-default, fabric: {rto: 40us}}]
`

// TestFaultTimeLost: the time a step loses to a leaf uplink failure during its all-reduce is the
// control plane's detection + reroute within 5 % (docs/faults.md): InfiniBand's SM trap and
// reroute, sm_reroute = 2 ms; RoCE's BFD detection and route convergence, 3 x 400 us + 200 us =
// 1.4 ms. Only step 2 has the fault; its clean run is the same step without it. The packet
// engine's run-time invariant checks (--check: bytes conserved, each message completed once)
// run in every simulation.
func TestFaultTimeLost(t *testing.T) {
	s, err := Parse([]byte(faultCompare), "test.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	r := runChecked(t, s)
	want := map[string]float64{"ib": 2e-3, "roce": 3*400e-6 + 200e-6}
	for _, v := range r.Variants {
		if len(v.Faults) != 1 {
			t.Fatalf("%s: %d fault results, want 1", v.Variant.Name, len(v.Faults))
		}
		l := v.Faults[0]
		w := want[v.Variant.Name]
		if math.Abs(l.Recovery-w) > 1e-12 {
			t.Errorf("%s: recovery %g s, want %g s from the timers", v.Variant.Name, l.Recovery, w)
		}
		if math.Abs(l.Lost-w) > 0.05*w {
			t.Errorf("%s: lost %g s to the link failure, want detection + reroute %g s within 5 %%", v.Variant.Name, l.Lost, w)
		}
		if len(l.Steps) != 1 || l.Steps[0] != 2 {
			t.Errorf("%s: fault steps %v, want [2]", v.Variant.Name, l.Steps)
		}
		// The compare's step 2 is the faulted run, step 1 a clean one.
		if got := v.Steps[1].StepTime; math.Abs(got-l.Faulted) > 1e-12 {
			t.Errorf("%s: step 2 %g s, want the faulted run's %g s", v.Variant.Name, got, l.Faulted)
		}
		if v.Counters["drops"] == 0 {
			t.Errorf("%s: no packets lost on the failed link", v.Variant.Name)
		}
	}
	var tab strings.Builder
	if err := r.WriteTable(&tab); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tab.String(), "faults[0] link_down rail0_leaf0-spine0 at 1ms, step 2") {
		t.Errorf("table does not name the fault:\n%s", tab.String())
	}
}

// Bad faults are errors at their line, before or while the steps run.
func TestFaultBadInput(t *testing.T) {
	for _, c := range []struct{ from, to, want string }{
		{"link: rail0_leaf0-spine0", "link: leaf9-spine0", `test.yaml:15:29: faults[0].link: "leaf9-spine0" is not a link of this topology`},
		{"step: 2}", "step: 3}", "test.yaml:15:64: faults[0].step: 3: the compare simulates steps 1..2"},
		{"at: 1ms", "at: 1s", "test.yaml:15:53: faults[0].at: 1s is after the run ended"},
		{"kind: link_down, link: rail0_leaf0-spine0", "kind: pfc_storm, host: 9", "faults[0].host: host 9 does not exist (valid: 0..1)"},
		{"backend: packet", "backend: analytic", "backend: analytic: the scenario has faults, which the analytic backend does not model"},
		{"kind: link_down", "kind: link_fold", `faults[0].kind: "link_fold" is not a fault kind`},
	} {
		src := strings.Replace(faultCompare, c.from, c.to, 1)
		s, err := Parse([]byte(src), "test.yaml", "")
		if err == nil {
			_, err = Run(context.Background(), s, Options{})
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s -> %s: got %v, want %q", c.from, c.to, err, c.want)
			continue
		}
		if _, ok := err.(*Error); !ok {
			t.Errorf("%s -> %s: %T is not a scenario error (exit 2)", c.from, c.to, err)
		}
	}
}

// A fault without a step hits every step, one with a step only that one; the time lost is the
// mean over a fault's steps of faulted - clean, and faults in the same step are named together.
func TestFaultLossesBySteps(t *testing.T) {
	src := strings.Replace(faultCompare, "  - {kind: link_down, link: rail0_leaf0-spine0, at: 1ms, step: 2}",
		"  - {kind: link_down, link: rail0_leaf0-spine0, at: 1ms}\n  - {kind: switch_down, switch: spine1, at: 2ms, step: 2}", 1)
	s, err := Parse([]byte(src), "test.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(s.faultsOf(0), s.faultsOf(1)); got != "[0] [0 1]" {
		t.Errorf("faults of steps 1 and 2: %s, want [0] [0 1]", got)
	}
	ls := s.faultLosses(&fabric.Config{Kind: fabric.KindRoCE}, map[int]float64{0: 1, 1: 1}, map[int]float64{0: 1.5, 1: 2}, nil)
	if got := fmt.Sprintf("%v %v %g %v %v %g", ls[0].Steps, ls[0].With, ls[0].Lost, ls[1].Steps, ls[1].With, ls[1].Lost); got != "[1 2] [1] 0.75 [2] [0] 1" {
		t.Errorf("losses: %s, want [1 2] [1] 0.75 [2] [0] 1", got)
	}
	// RoCE: 3 x 400 us + 200 us after the failure, whenever it comes.
	if ls[1].Recovery != 1.4e-3 {
		t.Errorf("switch_down recovery %g s, want 1.4e-3", ls[1].Recovery)
	}
}

// TestFaultTimeLostFlow: the same compare on the flow backend (docs/faults.md, "On the flow
// backend"). The time lost is detection + reroute within 5 %, and within 10 % of the packet
// backend's figures for this scenario (TestFaultTimeLost: InfiniBand 2.030 ms, RoCE 1.407 ms),
// with the flow engine's invariant checks on.
func TestFaultTimeLostFlow(t *testing.T) {
	s, err := Parse([]byte(strings.Replace(faultCompare, "backend: packet", "backend: flow", 1)), "test.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	r := runChecked(t, s)
	want := map[string]float64{"ib": 2e-3, "roce": 3*400e-6 + 200e-6}
	packet := map[string]float64{"ib": 2.030e-3, "roce": 1.407e-3}
	for _, v := range r.Variants {
		if v.Backend != "flow" || len(v.Faults) != 1 {
			t.Fatalf("%s: backend %s, %d fault results; want flow, 1", v.Variant.Name, v.Backend, len(v.Faults))
		}
		l := v.Faults[0]
		n := v.Variant.Name
		t.Logf("%s: lost %.4g ms (%.4g -> %.4g ms), recovery %.4g ms, packet backend %.4g ms", n, l.Lost*1e3, l.Clean*1e3, l.Faulted*1e3, l.Recovery*1e3, packet[n]*1e3)
		if math.Abs(l.Lost-want[n]) > 0.05*want[n] {
			t.Errorf("%s: lost %g s, want detection + reroute %g s within 5 %%", n, l.Lost, want[n])
		}
		if math.Abs(l.Lost-packet[n]) > 0.10*packet[n] {
			t.Errorf("%s: lost %g s, the packet backend %g s: want within 10 %%", n, l.Lost, packet[n])
		}
	}
}

// TestFaultPFCStorm: a pfc_storm in a compare hits the RoCE variants with PFC and is reported
// as not applied on InfiniBand; the time lost is shown with the PFC watchdog off and on. Host 0
// storms for 2 ms from 1 ms into step 2, during the ring all-reduce whose edge 1->0 it stops.
func TestFaultPFCStorm(t *testing.T) {
	src := strings.Replace(faultCompare, "{kind: link_down, link: rail0_leaf0-spine0, at: 1ms, step: 2}", "{kind: pfc_storm, host: 0, at: 1ms, for: 2ms, step: 2}", 1)
	s, err := Parse([]byte(src), "test.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(context.Background(), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	lost := map[string]FaultLoss{}
	for _, v := range r.Variants {
		if len(v.Faults) != 1 {
			t.Fatalf("%s: %d fault results", v.Variant.Name, len(v.Faults))
		}
		lost[v.Variant.Name] = v.Faults[0]
		t.Logf("%s: %+v, backend %s", v.Variant.Name, v.Faults[0], v.Backend)
	}
	if lost["ib"].NotApplied == "" {
		t.Errorf("ib: the storm applied to InfiniBand: %+v", lost["ib"])
	}
	// The NIC drains nothing for 2 ms and the ring's edge into it cannot deliver meanwhile.
	if l := lost["roce"]; l.NotApplied != "" || l.Lost < 2e-3 || l.Watchdog != 0 {
		t.Errorf("roce: %+v, want at least the storm's 2 ms lost and no watchdog", l)
	}
	var tab strings.Builder
	if err := r.WriteTable(&tab); err != nil {
		t.Fatal(err)
	}
	t.Log(tab.String())
}

// runChecked runs a compare with every variant's run-time invariant checks on (--check: bytes
// conserved, each message completed once) and checks the result's step identity.
func runChecked(t *testing.T, s *Scenario) *Result {
	t.Helper()
	for _, v := range s.Variants {
		v.Fabric.Check = true
	}
	r, err := Run(context.Background(), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkIdentity(t, r)
	return r
}

// TestFaultClassesVsWhole: in class fidelity a fault applies to the class runs its window
// meets (classFaultInput): the leaf uplink failure of faultCompare, on the flow backend, costs
// the class-composed step what it costs the whole step run as one graph, within 5 %, and both
// are the derived detection + reroute within 5 %. The steps without the fault are the class
// runs' own (the same on both modes here: one network class, the gradient all-reduce).
func TestFaultClassesVsWhole(t *testing.T) {
	want := map[string]float64{"ib": 2e-3, "roce": 3*400e-6 + 200e-6}
	lost := map[FidelityMode]map[string]float64{}
	for _, mode := range []FidelityMode{FidelityFull, FidelityClasses} {
		s, err := Parse([]byte(strings.Replace(faultCompare, "backend: packet", "backend: flow\nfidelity: "+string(mode), 1)), "test.yaml", "")
		if err != nil {
			t.Fatal(err)
		}
		r := runChecked(t, s)
		lost[mode] = map[string]float64{}
		for _, v := range r.Variants {
			l := v.Faults[0]
			lost[mode][v.Variant.Name] = l.Lost
			t.Logf("%s %s: lost %.4g ms (%.4g -> %.4g ms), recovery %.4g ms", mode, v.Variant.Name, l.Lost*1e3, l.Clean*1e3, l.Faulted*1e3, l.Recovery*1e3)
		}
	}
	for n, w := range want {
		c, f := lost[FidelityClasses][n], lost[FidelityFull][n]
		if math.Abs(c-f) > 0.05*f {
			t.Errorf("%s: classes lost %g s, the whole step %g s: want within 5 %%", n, c, f)
		}
		if math.Abs(c-w) > 0.05*w {
			t.Errorf("%s: classes lost %g s, want detection + reroute %g s within 5 %%", n, c, w)
		}
	}
}

// TestFaultRetryLimitFailsStep: with the QPs' retry limit between the two fabrics' stalls,
// 4.096 us x 2^7 x (2 + 1) = 1.573 ms (fault_recovery.ib_timeout 7, ib_retry_cnt 2), the leaf
// uplink failure of faultCompare fails InfiniBand's step (2 ms until the SM's reroute: its QP
// goes to the error state) and costs RoCE its 1.4 ms stall as without a limit; on the packet
// backend with whole steps and on the flow backend in class fidelity.
func TestFaultRetryLimitFailsStep(t *testing.T) {
	for _, c := range []struct{ backend, fidelity string }{{"packet", "full"}, {"flow", "classes"}} {
		src := strings.Replace(faultCompare, "backend: packet", "backend: "+c.backend+"\nfidelity: "+c.fidelity, 1)
		src = strings.Replace(src, "route_convergence: 200us}", "route_convergence: 200us, ib_timeout: 7, ib_retry_cnt: 2}", 1)
		s, err := Parse([]byte(src), "test.yaml", "")
		if err != nil {
			t.Fatal(err)
		}
		r := runChecked(t, s)
		var tab strings.Builder
		r.writeFaults(&tab)
		t.Logf("%s/%s:%s", c.backend, c.fidelity, tab.String())
		for _, v := range r.Variants {
			l := v.Faults[0]
			switch v.Variant.Name {
			case "ib":
				if !strings.Contains(l.Failed, "retry limit 1.572864ms") || len(l.FailedSteps) != 1 || l.FailedSteps[0] != 2 || len(l.Steps) != 0 {
					t.Errorf("%s/%s ib: %+v, want step 2 failed by the 1.573 ms retry limit", c.backend, c.fidelity, l)
				}
			case "roce":
				if l.Failed != "" || math.Abs(l.Lost-1.4e-3) > 0.05*1.4e-3 {
					t.Errorf("%s/%s roce: %+v, want the 1.4 ms stall lost within 5 %% and no failure", c.backend, c.fidelity, l)
				}
			}
		}
	}
}
