package compare

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/units"
)

// classRuns records every class run of a compare through classRunHook: by backend and class key
// (the first message's tag up to its group), each run's message completions, in the order they
// ran (a class's runs are one job's: a flow probe, then its sizes).
type classRuns struct {
	mu   sync.Mutex
	runs map[string][][]units.Time
}

func (c *classRuns) hook(name backend.Name, job *backend.Job, res *result.Run) {
	key := string(name) + " " + strings.Fields(job.Work.Msgs[0].Tag)[0]
	fin := make([]units.Time, len(res.Messages))
	for i, m := range res.Messages {
		fin[i] = m.Finish
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.runs[key] = append(c.runs[key], fin)
}

// runRecorded runs src with opt and records its class runs.
func runRecorded(t *testing.T, src string, opt Options) (*Result, map[string][][]units.Time) {
	t.Helper()
	rec := &classRuns{runs: map[string][][]units.Time{}}
	classRunHook = rec.hook
	defer func() { classRunHook = nil }()
	return run(t, src, opt), rec.runs
}

// TestAutoClassBackends: backend auto running a compare on the flow backend in class fidelity
// (the compare's budget 1 ms) runs each class whose packet estimate for one run is within the
// class budget on the packet backend (classPlan). The 24-GPU MoE step at 3:1 on InfiniBand with
// adaptive routing has an EP all-to-all class and DP classes of other sizes; a class budget
// between the smallest class estimate and the largest puts some on each backend. A class run on
// the packet backend is the packet backend's run of that class, exactly: the same message
// completions as `--backend packet`'s run of it (the same job: the class's whole graph, the
// step's seeds); a class over the budget is the flow backend's run, the same completions as
// `--backend flow`'s. Every class of the compare ran, once, on the backend the plan names,
// and compare.json and the table say how many on each.
func TestAutoClassBackends(t *testing.T) {
	src := strings.Replace(fmt.Sprintf(moe, 3.0, "ib-ndr"), "steps: 1", "steps: 1\nfidelity: classes", 1)
	_, pkt := runRecorded(t, src, Options{Backend: backend.Packet})
	_, flw := runRecorded(t, src, Options{Backend: backend.Flow})
	// Every class on flow first: the estimates, and the same runs as --backend flow.
	all, allRuns := runRecorded(t, src, Options{AutoBudget: time.Millisecond, ClassBudget: time.Nanosecond})
	var est []float64
	for _, c := range all.Fidelity.Classes {
		if c.Backend != backend.Flow || c.PacketSeconds <= 0 {
			t.Fatalf("class budget 1ns: class %s on %q, estimate %g s; want flow and a positive estimate", c.Key, c.Backend, c.PacketSeconds)
		}
		est = append(est, c.PacketSeconds)
	}
	slices.Sort(est)
	if len(est) < 2 || est[0] == est[len(est)-1] {
		t.Fatalf("class estimates %v: want at least two classes of different sizes", est)
	}
	for k, fin := range allRuns {
		if !sameRuns(fin, flw[k]) {
			t.Errorf("class budget 1ns: run %s differs from --backend flow's", k)
		}
	}
	// Every class on flow: compare.json counts them, the table keeps its lines.
	var allTable bytes.Buffer
	if err := all.WriteTable(&allTable); err != nil {
		t.Fatal(err)
	}
	if n := all.Variants[0].ClassBackends; n[backend.Flow] != len(est) || n[backend.Packet] != 0 || strings.Contains(allTable.String(), "classes (all variants)") {
		t.Errorf("class budget 1ns: class backends %v, want %d on flow; the table:\n%s", n, len(est), allTable.String())
	}
	budget := time.Duration((est[0] + est[len(est)-1]) / 2 * 1e9)
	mixed, runs := runRecorded(t, src, Options{AutoBudget: time.Millisecond, ClassBudget: budget})
	if mixed.Backend != backend.Flow {
		t.Fatalf("compare ran on %s, want flow (budget 1 ms)", mixed.Backend)
	}
	want := map[backend.Name]int{}
	compared := map[backend.Name]int{} // classes whose runs were compared
	for _, c := range mixed.Fidelity.Classes {
		name := backend.Flow
		if c.PacketSeconds <= budget.Seconds() {
			name = backend.Packet
		}
		want[name]++
		if c.Backend != name {
			t.Errorf("class %s: estimate %.3g s, budget %v: ran on %s, want %s", c.Key, c.PacketSeconds, budget, c.Backend, name)
		}
		ref := map[backend.Name]map[string][][]units.Time{backend.Packet: pkt, backend.Flow: flw}[name]
		k := string(name) + " " + c.Key
		got, ok := runs[k]
		if !ok {
			// A class sharing an earlier class's run (sameAs: a reduce-scatter and the
			// all-gather of its size) has no run of its own.
			continue
		}
		compared[name]++
		if !sameRuns(got, ref[k]) {
			t.Errorf("class %s on %s: message completions differ from --backend %s's run of the class", c.Key, name, name)
		}
	}
	if want[backend.Packet] == 0 || want[backend.Flow] == 0 {
		t.Fatalf("budget %v between the estimates %v put %v classes on each backend; want some on each", budget, est, want)
	}
	if compared[backend.Packet] == 0 || compared[backend.Flow] == 0 {
		t.Errorf("compared %v classes' runs with the named backends'; want some on each", compared)
	}
	v := mixed.Variants[0]
	if v.Backend != backend.Flow || v.ClassBackends[backend.Packet] != want[backend.Packet] || v.ClassBackends[backend.Flow] != want[backend.Flow] {
		t.Errorf("variant backend %s, class backends %v; want flow and %v", v.Backend, v.ClassBackends, want)
	}
	for k := range runs {
		name, key, _ := strings.Cut(k, " ")
		for _, c := range mixed.Fidelity.Classes {
			if c.Key == key && string(c.Backend) != name {
				t.Errorf("run %s: the plan runs the class on %s", k, c.Backend)
			}
		}
	}
	var table, js bytes.Buffer
	if err := mixed.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if err := mixed.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	line := fmt.Sprintf("classes (all variants) %d class", want[backend.Packet])
	if !strings.Contains(table.String(), line) || !strings.Contains(table.String(), "within the "+backend.SecondsString(budget)+" class budget") {
		t.Errorf("table lacks %q and the budget %v:\n%s", line, budget, table.String())
	}
	for _, f := range []string{`"class_backends"`, `"class_backend_reason"`, `"packet_s_estimate"`} {
		if !strings.Contains(js.String(), f) {
			t.Errorf("compare.json lacks %s", f)
		}
	}
	// The same bytes with one worker and four.
	var one, four bytes.Buffer
	for _, w := range []struct {
		n   int
		out *bytes.Buffer
	}{{1, &one}, {4, &four}} {
		r := run(t, src, Options{AutoBudget: time.Millisecond, ClassBudget: budget, Workers: w.n})
		if err := r.WriteJSON(w.out); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(one.Bytes(), four.Bytes()) || !bytes.Equal(one.Bytes(), js.Bytes()) {
		t.Errorf("compare.json differs between 1, 4 and GOMAXPROCS workers")
	}
	// Named backends keep their runs: no class plan.
	for _, name := range []backend.Name{backend.Flow, backend.Packet} {
		r := run(t, src, Options{Backend: name, ClassBudget: time.Hour})
		if r.Variants[0].ClassBackends != nil || r.Fidelity.Classes[0].Backend != "" {
			t.Errorf("--backend %s: class backends %v, class 0 %q; want none", name, r.Variants[0].ClassBackends, r.Fidelity.Classes[0].Backend)
		}
	}
	s, err := Parse([]byte(src), "test.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), s, Options{ClassBudget: -time.Second})
	var ce *Error
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "--class-budget -1s: want a positive duration") {
		t.Errorf("negative class budget: %v", err)
	}
}

// sameRuns reports whether two lists of runs have the same message completions.
func sameRuns(a, b [][]units.Time) bool {
	return slices.EqualFunc(a, b, func(x, y []units.Time) bool { return slices.Equal(x, y) })
}

// TestClassPlanRule: classPlan's rule on estimates of the 1,024-GPU jitter example's classes
// (its EP all-to-all 11.4 M packet events at 2.5 M a second, 4.56 s; a ring class 8.13 s): within
// the budget (equal included) packet, above it flow, 0 the default 5 s; the reason gives the
// counts, both sides' estimates and the budget.
func TestClassPlanRule(t *testing.T) {
	ep := backend.Estimate{PacketHops: 11.4e6 / backend.EventsPerPacketHop, Seconds: 4.56}
	ring := backend.Estimate{PacketHops: 20.3e6 / backend.EventsPerPacketHop, Seconds: 8.13}
	for _, c := range []struct {
		budget time.Duration
		want   []bool
	}{
		{0, []bool{true, false}},
		{4560 * time.Millisecond, []bool{true, false}},
		{4559 * time.Millisecond, []bool{false, false}},
		{10 * time.Second, []bool{true, true}},
	} {
		p := newClassPlan([]backend.Estimate{ep, ring}, []string{"ep", "ring"}, c.budget)
		if !slices.Equal(p.packet, c.want) {
			t.Errorf("budget %v: packet %v, want %v", c.budget, p.packet, c.want)
		}
	}
	p := newClassPlan([]backend.Estimate{ep, ring}, []string{"ep", "ring"}, 0)
	want := "1 class on packet (estimated 11.4 M packet events, about 4.6 s a run), 1 class on flow (estimated 20.3 M packet events, about 8.1 s a run): packet where one run's estimate (the largest over the variants) is within the 5 s class budget"
	if got := p.reason(); got != want {
		t.Errorf("reason %q, want %q", got, want)
	}
	if n := p.counts(); n[backend.Packet] != 1 || n[backend.Flow] != 1 || p.backendOf(0, backend.Flow) != backend.Packet || p.backendOf(1, backend.Flow) != backend.Flow {
		t.Errorf("counts %v, backends %s %s", n, p.backendOf(0, backend.Flow), p.backendOf(1, backend.Flow))
	}
}

// TestAutoClassSameInEveryVariant: the plan decides each class on the largest estimate over the
// variants, so a class runs on one backend in all of them. With a second InfiniBand variant at
// a 1,024-byte MTU (four times the packets of ib-ndr's 4,096: estimates four times larger), a
// budget between a class's ib-ndr estimate and its 1 KiB one runs that class on the flow
// backend in both variants, where ib-ndr alone would run it on the packet backend.
func TestAutoClassSameInEveryVariant(t *testing.T) {
	src := strings.Replace(fmt.Sprintf(moe, 3.0, "ib-ndr, {name: ib-mtu1k, base: ib-ndr, fabric: {mtu: 1024}}"), "steps: 1", "steps: 1\nfidelity: classes", 1)
	opt := Options{AutoBudget: time.Millisecond, ClassBudget: time.Nanosecond, Variants: []string{"ib-ndr"}}
	alone := run(t, src, opt)
	opt.Variants = nil
	both := run(t, src, opt)
	c := 0 // the class to move: the smallest on ib-ndr
	for i, ci := range alone.Fidelity.Classes {
		if ci.PacketSeconds < alone.Fidelity.Classes[c].PacketSeconds {
			c = i
		}
	}
	lo, hi := alone.Fidelity.Classes[c].PacketSeconds, both.Fidelity.Classes[c].PacketSeconds
	if hi < 3*lo {
		t.Fatalf("class %s: estimate %.3g s on ib-ndr, %.3g s the largest over both variants; want the 1 KiB MTU's about 4x", alone.Fidelity.Classes[c].Key, lo, hi)
	}
	opt.ClassBudget = time.Duration((lo + hi) / 2 * 1e9)
	opt.Variants = []string{"ib-ndr"}
	a, aRuns := runRecorded(t, src, opt)
	opt.Variants = nil
	b, bRuns := runRecorded(t, src, opt)
	key := a.Fidelity.Classes[c].Key
	if a.Fidelity.Classes[c].Backend != backend.Packet || len(aRuns["packet "+key]) != 1 {
		t.Errorf("ib-ndr alone, budget %v: class %s on %s with %d packet runs; want 1 packet run", opt.ClassBudget, key, a.Fidelity.Classes[c].Backend, len(aRuns["packet "+key]))
	}
	if b.Fidelity.Classes[c].Backend != backend.Flow || len(bRuns["packet "+key]) != 0 || len(bRuns["flow "+key]) < 2 {
		t.Errorf("both variants, budget %v: class %s on %s, %d packet and %d flow runs; want flow runs in both variants and no packet run", opt.ClassBudget, key, b.Fidelity.Classes[c].Backend, len(bRuns["packet "+key]), len(bRuns["flow "+key]))
	}
	if v0, v1 := b.Variants[0], b.Variants[1]; v0.ClassBackendReason != v1.ClassBackendReason || v0.ClassBackends[backend.Packet] != v1.ClassBackends[backend.Packet] {
		t.Errorf("variants' class backends differ: %v %q, %v %q", v0.ClassBackends, v0.ClassBackendReason, v1.ClassBackends, v1.ClassBackendReason)
	}
}

// twins are two jobs of the same small dense model on 6 servers each (12 x 2 GPUs, 3:1): their
// data-parallel classes have the same keys, so a shared class holds both jobs' groups and its
// packet estimate is about twice a job's alone.
const twins = `name: twins
steps: 1
cluster: {servers: 12, gpus_per_server: 2, link_rate: 400Gbps, radix: 8, oversubscription: 3}
jobs:
  - name: a
    servers: 6
    placement: scattered
    workload: &w
      kind: training
      model: {base: llama3-8b, layers: 2, hidden: 1024, ffn: 4096, heads: 8, kv_heads: 8, vocab: 16000}
      gpu: h100
      tp: 2
      dp: 6
      zero: 1
      global_batch: 6
      seq_len: 2048
  - name: b
    servers: 6
    placement: scattered
    workload: *w
variants: [ib-ndr]
`

// TestAutoClassAloneFollowsShared: with --fidelity classes under auto, a job's alone run runs
// each class on the backend the shared run gave the class with its key and groups
// (classPlan.follow), not on its own smaller estimate. A class budget between a class's alone
// estimate and its shared one puts it on flow shared and, decided alone, on packet: following,
// the alone run has it on flow too, every class as shared, and compare.json's reason says so.
func TestAutoClassAloneFollowsShared(t *testing.T) {
	s, err := Parse([]byte(twins), "test.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	opt := Options{Backend: backend.Auto, Fidelity: FidelityClasses, AutoBudget: time.Millisecond, ClassBudget: time.Nanosecond}
	estimates := func(r *Result) map[string]float64 {
		m := map[string]float64{}
		for _, c := range r.Fidelity.Classes {
			m[c.Key] = c.PacketSeconds
		}
		return m
	}
	// Estimates shared and alone: every class on flow (1 ns class budget).
	one := opt
	one.EveryClass = true
	sharedEst := estimates(run1(t, s, one))
	aloneEst := estimates(run1(t, s.alone(0), one))
	var key string
	var budget time.Duration
	keys := slices.Sorted(maps.Keys(aloneEst))
	for _, k := range keys {
		if a, sh := aloneEst[k], sharedEst[k]; sh > 0 && a < sh {
			key, budget = k, time.Duration((a+sh)/2*1e9)
			break
		}
	}
	if key == "" {
		t.Fatalf("no class of job a has a smaller estimate alone (%v) than shared (%v)", aloneEst, sharedEst)
	}
	opt.ClassBudget = budget
	t.Logf("class %s: packet estimate alone %.3g s, shared %.3g s; class budget %v", key, aloneEst[key], sharedEst[key], budget)
	shared := run1(t, s, opt)
	backends := func(r *Result) map[string]backend.Name {
		m := map[string]backend.Name{}
		for _, c := range r.Fidelity.Classes {
			m[c.Key] = c.Backend
		}
		return m
	}
	sb := backends(shared)
	if sb[key] != backend.Flow {
		t.Fatalf("class %s shared (estimate %.3g s, budget %v) on %s, want flow", key, sharedEst[key], budget, sb[key])
	}
	own := run1(t, s.alone(0), opt)
	if b := backends(own)[key]; b != backend.Packet {
		t.Fatalf("class %s alone on its own estimate (%.3g s, budget %v) on %s, want packet: the test would show nothing", key, aloneEst[key], budget, b)
	}
	o := opt
	o.sharedClasses = shared.classPlan
	alone := run1(t, s.alone(0), o)
	ab := backends(alone)
	for k, b := range ab {
		if b != sb[k] {
			t.Errorf("class %s: alone on %s, shared on %s", k, b, sb[k])
		}
	}
	if len(ab) == 0 || len(alone.classPlan.unmatched) != 0 {
		t.Errorf("alone: %d classes, unmatched %v; want every class matched", len(ab), alone.classPlan.unmatched)
	}
	if r := shared.Variants[0].ClassBackendReason; !strings.Contains(r, "job a alone: every class as here") || !strings.Contains(r, "job b alone: every class as here") {
		t.Errorf("compare.json's reason does not say the alone runs followed: %q", r)
	}
}

// run1 runs s with opt on one worker.
func run1(t *testing.T, s *Scenario, opt Options) *Result {
	t.Helper()
	opt.Workers = 1
	r, err := Run(context.Background(), s, opt)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
