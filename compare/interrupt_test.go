package compare

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestInterruptKeepsFinished cancels the run as soon as the first variant's simulations are
// done (one worker, so jobs run in order: variant by variant, step by step). The result keeps
// that variant whole, equal to an uninterrupted run's (same seeds), marks the other unfinished
// with no step, still prices it, and says so in the table, compare.json and report.html.
func TestInterruptKeepsFinished(t *testing.T) {
	src := strings.Replace(fmt.Sprintf(dense, "400Gbps", "gpudirect", "ib-ndr, roce-default"), "steps: 1", "steps: 2", 1)
	s, err := Parse([]byte(src), "test.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	whole, err := Run(context.Background(), s, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	opt := Options{Workers: 1, Progress: func(done, total int) {
		calls++
		if done == total/2 { // the first of two variants is complete
			cancel()
		}
	}}
	part, err := Run(ctx, s, opt)
	if !errors.Is(err, ErrInterrupted) || part == nil {
		t.Fatalf("Run returned %v, %v; want a partial result and ErrInterrupted", part, err)
	}
	if !part.Interrupted {
		t.Error("result not marked interrupted")
	}
	ib, roce := variant(t, part, "ib-ndr"), variant(t, part, "roce-default")
	if ib.Unfinished || ib.StepsFinished != 2 {
		t.Errorf("ib-ndr: unfinished %v, %d steps; want finished, 2", ib.Unfinished, ib.StepsFinished)
	}
	if w := variant(t, whole, "ib-ndr"); ib.StepTime != w.StepTime || ib.CollP99 != w.CollP99 || ib.Events != w.Events {
		t.Errorf("ib-ndr interrupted after it finished: step %g, p99 %g, %d events; uninterrupted %g, %g, %d",
			ib.StepTime, ib.CollP99, ib.Events, w.StepTime, w.CollP99, w.Events)
	}
	if !roce.Unfinished || roce.StepsFinished != 0 || len(roce.Steps) != 0 || roce.StepTime != 0 || roce.Events != 0 {
		t.Errorf("roce-default: unfinished %v, %d steps, step %g, %d events; want unfinished with nothing run",
			roce.Unfinished, roce.StepsFinished, roce.StepTime, roce.Events)
	}
	if w := variant(t, whole, "roce-default"); roce.NetworkUSD != w.NetworkUSD || roce.NetworkUSD <= 0 {
		t.Errorf("roce-default cost %g, uninterrupted %g: the bill needs no simulation", roce.NetworkUSD, w.NetworkUSD)
	}
	if !strings.HasPrefix(roce.Verdict, "unfinished (0 of 2 steps)") {
		t.Errorf("roce-default verdict %q", roce.Verdict)
	}
	var b bytes.Buffer
	if err := part.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"roce-default  unfinished", "interrupted: figures are over the finished steps only; unfinished: roce-default (0 of 2 steps)"} {
		if !strings.Contains(strings.Join(strings.Fields(b.String()), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := part.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var js struct {
		Interrupted bool `json:"interrupted"`
		Variants    []struct {
			StepsFinished int  `json:"steps_finished"`
			Unfinished    bool `json:"unfinished"`
		} `json:"variants"`
	}
	if err := json.Unmarshal(b.Bytes(), &js); err != nil {
		t.Fatal(err)
	}
	if !js.Interrupted || js.Variants[0].StepsFinished != 2 || js.Variants[0].Unfinished || js.Variants[1].StepsFinished != 0 || !js.Variants[1].Unfinished {
		t.Errorf("compare.json: %+v", js)
	}
	b.Reset()
	if err := part.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Unfinished: roce-default (0 of 2 steps)") {
		t.Error("report.html does not say which variant is unfinished")
	}
}

// TestInterruptDuringSetup cancels the run after each stage of the setup before the simulations
// (setupHook), with fidelity full and classes under auto so that every stage is passed: Run
// stops there, returns no result and an error that is ErrInterrupted and names the stage, and
// no simulation starts (Progress never called).
func TestInterruptDuringSetup(t *testing.T) {
	defer func() { setupHook = nil }()
	src := fmt.Sprintf(dense, "400Gbps", "gpudirect", "ib-ndr, roce-default")
	s, err := Parse([]byte(src), "test.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []FidelityMode{FidelityFull, FidelityClasses} {
		var stages []string
		setupHook = func(doing string) { stages = append(stages, doing) }
		opt := Options{Workers: 1, Fidelity: mode, Backend: "auto", AutoBudget: time.Millisecond}
		if _, err := Run(context.Background(), s, opt); err != nil {
			t.Fatal(err)
		}
		if len(stages) < 5 {
			t.Fatalf("%s: setup stages %q: want at least the start, plan, graph, classes and compile", mode, stages)
		}
		for _, stage := range stages {
			ctx, cancel := context.WithCancel(context.Background())
			setupHook = func(doing string) {
				if doing == stage {
					cancel()
				}
			}
			o := opt
			o.Progress = func(done, total int) {
				t.Errorf("%s, cancelled %s: a simulation started (%d/%d)", mode, stage, done, total)
			}
			res, err := Run(ctx, s, o)
			cancel()
			if res != nil || !errors.Is(err, ErrInterrupted) || !strings.Contains(err.Error(), "while "+stage+", before any simulation") {
				t.Errorf("%s, cancelled %s: Run returned %v, %v; want no result and ErrInterrupted naming the stage", mode, stage, res, err)
			}
		}
	}
}

// TestInterruptDuringAloneRuns cancels a shared-cluster compare as the first job's alone run
// starts (its setup's first check): the shared run finished and is kept, whole; no job has
// alone or slowdown figures; the result is marked interrupted and the error says where.
func TestInterruptDuringAloneRuns(t *testing.T) {
	defer func() { setupHook = nil }()
	s, err := Parse([]byte(twins), "test.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	starts := 0
	setupHook = func(doing string) {
		if doing == "starting" {
			if starts++; starts == 2 { // the shared run's, then job a's alone
				cancel()
			}
		}
	}
	res, err := Run(ctx, s, Options{Workers: 1, Backend: "flow"})
	if res == nil || !errors.Is(err, ErrInterrupted) || !strings.Contains(err.Error(), "during job a's alone run") {
		t.Fatalf("Run returned %v, %v; want the shared result and ErrInterrupted naming job a", res, err)
	}
	v := res.Variants[0]
	if !res.Interrupted || v.Unfinished || v.StepsFinished != 1 || len(v.Jobs) != 0 {
		t.Errorf("interrupted %v, unfinished %v, %d steps, %d jobs; want interrupted, the shared step finished, no job figures",
			res.Interrupted, v.Unfinished, v.StepsFinished, len(v.Jobs))
	}
	var b bytes.Buffer
	if err := res.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "the jobs' alone runs did not: no alone or slowdown figures") {
		t.Errorf("the table does not say the alone runs were cut:\n%s", b.String())
	}
}
