package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bad faults exit with status 2 and a file:line message: a link the topology does not have, a
// fault after the run ended, faults on a backend without them (--backend flow).
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
		{[]string{"run", write("leaf0-spine1", "1us"), "--backend", "flow"}, `the flow backend does not model faults (the job has 1); run it on the packet backend`},
	} {
		if code, out := run(t, c.args...); code != exitUsage || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d, output %q; want exit %d and %q", c.args, code, out, exitUsage, c.want)
		}
	}
}
