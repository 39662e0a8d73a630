package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bad faults exit with status 2 and a file:line message: a link the topology does not have, a
// fault after the run ended, faults on a backend without them (--backend analytic).
func TestRunFaultsBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(link, at string) string {
		p := filepath.Join(dir, link+at+".yaml")
		src := "name: f\ntopology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 2}\nfabric: {kind: roce}\n" +
			"traffic: {kind: permutation, size: 64KB}\nfaults:\n  - {kind: link_down, link: " + link + ", at: " + at + "}\n"
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", write("leaf0-spine9", "1us")}, `.yaml:6:29: faults[0].link: "leaf0-spine9" is not a link of this topology`},
		{[]string{"run", write("leaf0-spine1", "1s")}, `.yaml:6:47: faults[0].at: 1s is after the run ended at`},
		{[]string{"run", write("leaf0-spine1", "1us"), "--backend", "analytic"}, `the analytic backend does not model faults (the job has 1); run it on the packet or flow backend`},
	} {
		if code, out := run(t, c.args...); code != exitUsage || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d, output %q; want exit %d and %q", c.args, code, out, exitUsage, c.want)
		}
	}
}

// nccl-tests with a cluster file that has faults: every size runs with the same plan. An
// InfiniBand 2-tier fabric (8 servers of one GPU) loses spine0 at 100 us with a 2 ms reroute:
// sizes whose all-reduce is over before 100 us take exactly their healthy time, the large
// ones at least 2 ms more (ring edges through spine0 wait for the new tables).
func TestNCCLTestsFaults(t *testing.T) {
	dir := t.TempDir()
	base := "topology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 4}\nfabric: {kind: infiniband, generation: edr, rto: 40us}\n"
	healthy, faulty := filepath.Join(dir, "h.yaml"), filepath.Join(dir, "f.yaml")
	os.WriteFile(healthy, []byte(base), 0o644)
	os.WriteFile(faulty, []byte(base+"faults:\n  - {kind: switch_down, switch: spine0, at: 100us}\nfault_recovery: {sm_reroute: 2ms}\n"), 0o644)
	times := func(file string) map[int64]float64 {
		code, out := run(t, "nccl-tests", "all_reduce_perf", "-b", "64K", "-e", "16M", "-f", "16", "--gpus-per-node", "1", "--cluster", file, "--json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", file, code, out)
		}
		var rep struct {
			Results []struct {
				Size       int64 `json:"size"`
				OutOfPlace struct {
					Time float64 `json:"time"`
				} `json:"out_of_place"`
			} `json:"results"`
		}
		if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):strings.LastIndex(out, "}")+1]), &rep); err != nil {
			t.Fatal(err)
		}
		m := map[int64]float64{}
		for _, r := range rep.Results {
			m[r.Size] = r.OutOfPlace.Time
		}
		return m
	}
	h, f := times(healthy), times(faulty)
	t.Logf("healthy %v\nspine0 down at 100us %v", h, f)
	for size, th := range h {
		tf := f[size]
		switch {
		case th < 100 && tf != th:
			t.Errorf("%d B: over in %.1f us before the fault, but %.1f us with it", size, th, tf)
		case th > 100 && tf < th+2000:
			t.Errorf("%d B: %.1f us with spine0 down, want at least the healthy %.1f us + the 2 ms reroute", size, tf, th)
		}
	}
}
