package compare

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/examples"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/units"
)

// TestSlowStepClasses is a diagnostic, run by hand (docs/jitter.md, "RoCEv2's two slow steps at
// 1,024 GPUs"): it runs steps of a network_per_step scenario (by default
// examples/compare-jitter-moe-1024.yaml, roce-default) without the others (skewStepHook), prints
// each step's time and each of its class runs' completion (the latest message's finish less the
// earliest start), and optionally reruns one class of those steps under other draw seeds or on
// the packet backend:
//
//	JITTER_STEPS=35,36 [JITTER_SCENARIO=file] [JITTER_VARIANT=name] go test ./compare -run TestSlowStepClasses -v
//
// JITTER_CLASS=prefix picks the class (the tag prefix of its messages, as printed; by default
// all-to-all/ep) whose job the options below rerun, with the offsets of the first of the steps:
//
//   - JITTER_DRAWS=N [JITTER_FROM=k] [JITTER_BACKENDS=flow,packet]: the class under the draw
//     seeds of steps k .. k+N-1 on the flow backend (or those named; two workers), its
//     completions and the runs more than 5 % above the median;
//   - JITTER_PACKET=1: the class of every step of JITTER_STEPS on the packet backend as well.
//
// JITTER_COUNTERS=1 logs each draw's run counters (ECN marks, CNPs, rate decreases, ...).
// JITTER_OUT=file writes the draws' completions, the longest message's index and the five
// longest message times, one line a draw and backend.
func TestSlowStepClasses(t *testing.T) {
	stepsEnv := os.Getenv("JITTER_STEPS")
	if stepsEnv == "" {
		t.Skip("a diagnostic: JITTER_STEPS=k,... runs it")
	}
	var steps []int
	for _, f := range strings.Split(stepsEnv, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			t.Fatalf("JITTER_STEPS: %v", err)
		}
		steps = append(steps, k)
	}
	file := os.Getenv("JITTER_SCENARIO")
	if file == "" {
		file = "compare-jitter-moe-1024.yaml"
	}
	variant := os.Getenv("JITTER_VARIANT")
	if variant == "" {
		variant = "roce-default"
	}
	prefix := os.Getenv("JITTER_CLASS")
	if prefix == "" {
		prefix = "all-to-all/ep"
	}
	data, err := examples.Read(file)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(data, file, "../examples")
	if err != nil {
		t.Fatal(err)
	}
	if !s.perStepNetwork() {
		t.Fatalf("%s: not a network_per_step scenario", file)
	}
	seedStep := map[uint64]int{}
	for _, k := range steps {
		seedStep[s.drawSeed(k)] = k
	}
	type classRunRec struct {
		tag  string
		msgs int
		span units.Time
		job  *backend.Job
		res  *result.Run
	}
	var mu sync.Mutex
	runs := map[int][]classRunRec{}
	classRunHook = func(_ backend.Name, job *backend.Job, res *result.Run) {
		k, ok := seedStep[job.Flow.DrawSeed]
		if !ok || len(job.Work.Msgs) == 0 {
			return
		}
		tag := classTag(job.Work.Msgs[0].Tag)
		mu.Lock()
		defer mu.Unlock()
		runs[k] = append(runs[k], classRunRec{tag: tag, msgs: len(job.Work.Msgs), span: runSpan(job, res), job: job, res: res})
	}
	skewStepHook = func(k int) bool { return slices.Contains(steps, k) }
	defer func() { classRunHook, skewStepHook = nil, nil }()
	r, err := Run(context.Background(), s, Options{Variants: []string{variant}})
	classRunHook, skewStepHook = nil, nil
	if err != nil && !errors.Is(err, ErrInterrupted) { // the other steps did not run
		t.Fatal(err)
	}
	top, _ := strconv.Atoi(os.Getenv("JITTER_TOP"))
	vr := r.Variants[0]
	sorted := slices.Clone(steps)
	slices.Sort(sorted)
	for i, k := range sorted {
		if i >= len(vr.Steps) {
			break
		}
		st := vr.Steps[i]
		t.Logf("step %d: %.3f us, exposed %.3f us %v", k, st.StepTime*1e6, st.ExposedComm*1e6, st.Exposed)
		rs := runs[k]
		slices.SortFunc(rs, func(a, b classRunRec) int { return strings.Compare(a.tag, b.tag) })
		for _, c := range rs {
			t.Logf("  %-40s %6d msgs  %10.3f us", c.tag, c.msgs, c.span.Seconds()*1e6)
			if top > 0 && strings.HasPrefix(c.tag, prefix) && c.span > 0 {
				logLatest(t, c.job, c.res, top)
			}
		}
	}
	var job *backend.Job
	for _, c := range runs[steps[0]] {
		if strings.HasPrefix(c.tag, prefix) && !c.job.Flow.StopOnControl && (job == nil || len(c.job.Work.Msgs) > len(job.Work.Msgs)) {
			job = c.job
		}
	}
	if job == nil {
		t.Fatalf("step %d: no class run %q", steps[0], prefix)
	}
	if os.Getenv("JITTER_PACKET") != "" {
		for _, k := range steps {
			for _, c := range runs[k] {
				if !strings.HasPrefix(c.tag, prefix) || c.job.Flow.StopOnControl || c.span == 0 {
					continue
				}
				j := *c.job
				j.Packet.DrawSeed = j.Flow.DrawSeed
				res, err := backend.Run(context.Background(), backend.Packet, &j)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("step %d, %s: packet %.3f us (flow %.3f us); the longest message times, packet %v, flow %v", k, c.tag, runSpan(&j, res).Seconds()*1e6, c.span.Seconds()*1e6, topFCTs(&j, res, 10), topFCTs(c.job, c.res, 10))
				if top > 0 {
					logLatest(t, &j, res, top)
				}
				break // a class's twins run the same messages
			}
		}
	}
	n, _ := strconv.Atoi(os.Getenv("JITTER_DRAWS"))
	if n <= 0 {
		return
	}
	from, _ := strconv.Atoi(os.Getenv("JITTER_FROM"))
	names := []backend.Name{backend.Flow}
	if os.Getenv("JITTER_BACKENDS") != "" {
		names = nil
		for _, f := range strings.Split(os.Getenv("JITTER_BACKENDS"), ",") {
			names = append(names, backend.Name(f))
		}
	}
	// ends[b][i], tops[b][i]: backend b's completion and longest message times under draw i.
	ends := make([][]units.Time, len(names))
	tops := make([][][]units.Time, len(names))
	longest := make([][]int, len(names))
	for b := range names {
		ends[b], tops[b], longest[b] = make([]units.Time, n), make([][]units.Time, n), make([]int, n)
	}
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				for b, name := range names {
					j := *job
					j.Flow.DrawSeed = s.drawSeed(from + i)
					j.Packet.DrawSeed = j.Flow.DrawSeed
					res, err := backend.Run(context.Background(), name, &j)
					if err != nil {
						errs[i] = err
						break
					}
					ends[b][i], tops[b][i] = runSpan(&j, res), topFCTs(&j, res, 5)
					if os.Getenv("JITTER_COUNTERS") != "" {
						t.Logf("draw %d, %s: %s", from+i, name, countersLine(res.Counters))
					}
					for m := range res.Messages {
						if res.Messages[m].Finish-j.Work.Msgs[m].Start > res.Messages[longest[b][i]].Finish-j.Work.Msgs[longest[b][i]].Start && j.Work.Msgs[m].Bytes > 0 {
							longest[b][i] = m
						}
					}
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var out strings.Builder
	for i := range n {
		fmt.Fprintf(&out, "%d", from+i)
		for b := range names {
			fmt.Fprintf(&out, " %s %.3f", names[b], ends[b][i].Seconds()*1e6)
			fmt.Fprintf(&out, " (msg %d)", longest[b][i])
			for _, x := range tops[b][i] {
				fmt.Fprintf(&out, " %.3f", x.Seconds()*1e6)
			}
		}
		out.WriteString("\n")
	}
	if p := os.Getenv("JITTER_OUT"); p != "" {
		if err := os.WriteFile(p, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for b, name := range names {
		v := slices.Clone(ends[b])
		slices.Sort(v)
		med := v[(n-1)/2]
		var slow []string
		for i, x := range ends[b] {
			if float64(x) > 1.05*float64(med) {
				slow = append(slow, fmt.Sprintf("%d: %.1f us", from+i, x.Seconds()*1e6))
			}
		}
		t.Logf("%s, %s with step %d's offsets: %d draws, median %.2f us, range %.2f-%.2f us; %d more than 5 %% above the median %v",
			name, prefix, steps[0], n, med.Seconds()*1e6, v[0].Seconds()*1e6, v[n-1].Seconds()*1e6, len(slow), slow)
	}
}

// classTag is a message tag without its last element (the channel or the ring position): the
// class's collective.
func classTag(tag string) string {
	if i := strings.LastIndexByte(tag, '/'); i > 0 {
		return tag[:i]
	}
	return tag
}

// runSpan is a run's latest message finish less its earliest message start.
func runSpan(job *backend.Job, res *result.Run) units.Time {
	var lo, hi units.Time
	for i, m := range res.Messages {
		st := job.Work.Msgs[i].Start
		if i == 0 || st < lo {
			lo = st
		}
		hi = max(hi, m.Finish)
	}
	return hi - lo
}

// logLatest logs the class's start offsets (the distinct message starts, with their counts) and
// its n latest messages.
func logLatest(t *testing.T, job *backend.Job, res *result.Run, n int) {
	starts := map[units.Time]int{}
	for _, m := range job.Work.Msgs {
		starts[m.Start]++
	}
	keys := make([]units.Time, 0, len(starts))
	for k := range starts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %.3f (%d)", k.Seconds()*1e6, starts[k])
	}
	t.Logf("    starts, us (messages):%s", b.String())
	idx := make([]int, len(res.Messages))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return int(res.Messages[b].Finish - res.Messages[a].Finish) })
	for _, i := range idx[:min(n, len(idx))] {
		m := job.Work.Msgs[i]
		t.Logf("    msg %d: %d -> %d, %d B, start %.3f us, finish %.3f us", i, m.Src, m.Dst, m.Bytes, m.Start.Seconds()*1e6, res.Messages[i].Finish.Seconds()*1e6)
	}
}

// topFCTs is the n longest message times (finish less start) of a run, longest first.
func topFCTs(job *backend.Job, res *result.Run, n int) []units.Time {
	v := make([]units.Time, len(res.Messages))
	for i, m := range res.Messages {
		v[i] = m.Finish - job.Work.Msgs[i].Start
	}
	slices.Sort(v)
	slices.Reverse(v)
	return v[:min(n, len(v))]
}

// countersLine is a run's counters, sorted by name.
func countersLine(c map[string]float64) string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%.0f", k, c[k])
	}
	return b.String()
}
