package compare

import (
	"context"
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

// TestEPClassDraws is a diagnostic, run by hand (docs/jitter.md, "The congested case at 24 GPUs,
// 200 steps"): the EP all-to-all class of the congested 24-GPU MoE (examples/compare-moe-3to1.yaml,
// roce-default, class fidelity, one routing seed) run under the draw seeds of steps FROM ..
// FROM+N-1 (Scenario.drawSeed, as `network_per_step` draws them; its groups start together, so
// the draw seed is all that moves a step's run) on the flow and the packet backend, printing each
// run's completion and, per backend, the runs more than 5 % above the median:
//
//	JITTER_DRAWS=N [JITTER_FROM=k] [JITTER_OUT=file] go test ./compare -run TestEPClassDraws -v
//
// JITTER_BACKENDS=flow runs the flow backend alone. Two workers; the output is by step whatever
// the order the runs finish in.
func TestEPClassDraws(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("JITTER_DRAWS"))
	if n <= 0 {
		t.Skip("a diagnostic: JITTER_DRAWS=N runs it")
	}
	from, _ := strconv.Atoi(os.Getenv("JITTER_FROM"))
	names := []backend.Name{backend.Flow, backend.Packet}
	if os.Getenv("JITTER_BACKENDS") == "flow" {
		names = names[:1]
	}
	data, err := examples.Read("compare-moe-3to1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := strings.NewReplacer("steps: 2", "steps: 1\nfidelity: classes",
		"variants: [ib-ndr, roce-default, roce-tuned, roce-pfc-only]", "variants: [roce-default]").Replace(string(data)) +
		"noise: {dist: none, network_seeds: 1, network_per_step: true}\n"
	s, err := Parse([]byte(src), "test.yaml", "../examples")
	if err != nil {
		t.Fatal(err)
	}
	// The EP class's run at its whole size: the class job carrying the most all-to-all bytes (the
	// scaled-send probe carries fewer).
	var mu sync.Mutex
	var ep *backend.Job
	var epBytes int64
	classRunHook = func(_ backend.Name, job *backend.Job, _ *result.Run) {
		var b int64
		for _, m := range job.Work.Msgs {
			if strings.HasPrefix(m.Tag, "all-to-all/ep") {
				b += int64(m.Bytes)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if b > epBytes {
			ep, epBytes = job, b
		}
	}
	_, err = Run(context.Background(), s, Options{Backend: backend.Flow})
	classRunHook = nil
	if err != nil {
		t.Fatal(err)
	}
	if ep == nil {
		t.Fatal("no EP all-to-all class run")
	}
	ends := make([][]units.Time, n)
	jobs := make(chan int)
	var wg sync.WaitGroup
	var errs []error
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				for _, name := range names {
					j := *ep
					j.Flow.DrawSeed = s.drawSeed(from + i)
					j.Packet.DrawSeed = j.Flow.DrawSeed
					res, err := backend.Run(context.Background(), name, &j)
					if err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
						continue
					}
					var end units.Time
					for _, m := range res.Messages {
						end = max(end, m.Finish)
					}
					ends[i] = append(ends[i], end)
				}
			}
		}()
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatal(errs[0])
	}
	var out strings.Builder
	for i, e := range ends {
		fmt.Fprintf(&out, "%d", from+i)
		for _, x := range e {
			fmt.Fprintf(&out, " %.3f", x.Seconds()*1e6)
		}
		out.WriteString("\n")
	}
	if p := os.Getenv("JITTER_OUT"); p != "" {
		if err := os.WriteFile(p, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for b, name := range names {
		v := make([]units.Time, n)
		for i := range ends {
			v[i] = ends[i][b]
		}
		sorted := slices.Clone(v)
		slices.Sort(sorted)
		med := sorted[(n-1)/2]
		var slow []string
		for i, x := range v {
			if float64(x) > 1.05*float64(med) {
				slow = append(slow, fmt.Sprintf("%d: %.1f us", from+i, x.Seconds()*1e6))
			}
		}
		t.Logf("%s: %d draws, median %.2f us, range %.2f-%.2f us; %d more than 5 %% above the median %v",
			name, n, med.Seconds()*1e6, sorted[0].Seconds()*1e6, sorted[n-1].Seconds()*1e6, len(slow), slow)
	}
}
