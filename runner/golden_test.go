package runner

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/examples"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/scenario"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/examples.sha256 from the current outputs")

const goldenFile = "testdata/examples.sha256"

// TestExamplesGolden runs every `fabricsim run` example shipped in examples/ and compares the
// SHA-256 of its deterministic outputs (summary.json, flows.csv,
// ports.csv) with testdata/examples.sha256. It is the guard for refactors and optimizations that
// must not change any result: a changed hash means a changed number. When a change is intended,
// rerun with -update and explain the difference in the commit message.
func TestExamplesGolden(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the golden run of every example takes ~15 s")
	}
	got := exampleHashes(t, Options{Check: true}, nil)
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if *updateGolden {
		var b bytes.Buffer
		for _, k := range keys {
			fmt.Fprintf(&b, "%s %s\n", k, got[k])
		}
		if err := os.WriteFile(goldenFile, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := goldenHashes(t)
	for _, k := range keys {
		if want[k] == "" {
			t.Errorf("%s: not in %s (a new example? run with -update)", k, goldenFile)
		} else if want[k] != got[k] {
			t.Errorf("%s: output changed (sha256 %s, golden %s); see the logged summary, run with -update if intended", k, got[k], want[k])
		}
	}
	for k := range want {
		if got[k] == "" {
			t.Errorf("%s: in %s but no longer produced", k, goldenFile)
		}
	}
}

// exampleHashes runs every `fabricsim run` example with opt (keep, when set, says which to run)
// and returns the SHA-256 of each deterministic output, keyed "NAME FILE".
func exampleHashes(t *testing.T, opt Options, keep func(name string) bool) map[string]string {
	got := map[string]string{}
	for _, name := range examples.Names() {
		path := filepath.Join("..", "examples", name)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s, err := scenario.Parse(data, path, filepath.Dir(path))
		if err != nil {
			// compare and sweep files are other commands' scenarios: their own tests cover them.
			if strings.Contains(err.Error(), "unknown key") {
				continue
			}
			t.Fatalf("%s: %v", name, err)
		}
		if keep != nil && !keep(name) {
			continue
		}
		r, _, err := Run(s, opt)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// Every counter a fabric reports is declared, so comparisons combine it as declared.
		for k := range r.Counters {
			if _, ok := result.Counter(k); !ok {
				t.Errorf("%s: counter %q is not declared in result/counters.go", name, k)
			}
		}
		sum := r.Summary()
		for _, out := range []struct {
			file  string
			write func(*bytes.Buffer) error
		}{
			{"summary.json", func(b *bytes.Buffer) error { return sum.WriteJSON(b) }},
			{"flows.csv", func(b *bytes.Buffer) error { return r.WriteFlowsCSV(b) }},
			{"ports.csv", func(b *bytes.Buffer) error { return r.WritePortsCSV(b) }},
		} {
			var b bytes.Buffer
			if err := out.write(&b); err != nil {
				t.Fatal(err)
			}
			got[name+" "+out.file] = fmt.Sprintf("%x", sha256.Sum256(b.Bytes()))
			if out.file == "summary.json" {
				t.Logf("%s summary.json:\n%s", name, b.String())
			}
		}
	}
	return got
}

// goldenHashes reads testdata/examples.sha256.
func goldenHashes(t *testing.T) map[string]string {
	f, err := os.Open(goldenFile)
	if err != nil {
		t.Fatalf("%v (create it with go test ./runner -run ExamplesGolden -update)", err)
	}
	defer f.Close()
	want := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 3 {
			want[fs[0]+" "+fs[1]] = fs[2]
		}
	}
	return want
}
