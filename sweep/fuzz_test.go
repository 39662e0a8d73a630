package sweep

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary sweep files to the loader: it must never panic, every error must
// be an input Error naming the sweep file or the base file, and a sweep that loads must
// expand into exactly the counted runs with distinct, sorted ids.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		sweep24,
		"base: {name: x, seed: 3}\naxes:\n  - {field: a.b[0], values: [1]}\n",
		"base: {name: x}\naxes:\n  - {field: fabric.ecn.kmin, values: [1KB, 2KB]}\n  - {field: fabric.ecn.kmax, from: 1, to: 2, step: 1}\nzip: [[fabric.ecn.kmin, fabric.ecn.kmax]]\nseeds: 2\n",
		"base: &a {x: *a}\n",
		"base: {t: {l: 1}}\naxes:\n  - {field: t.l.m, values: [{p: 1}, [1, 2]]}\nmetrics: [a, b]\n",
		"base:\n  k: v\naxes:\n  - field: k\n    from: 0.1\n    to: 1e3\n    factor: 10\n",
		"base_file: base.yaml\naxes: [\n",
	} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir()
	writeFiles(f, dir, map[string]string{"base.yaml": baseScenario})
	path := filepath.Join(dir, "s.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data, path)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || (e.File != path && e.File != filepath.Join(dir, "base.yaml") && !strings.HasPrefix(e.File, dir)) {
				t.Fatalf("error %q (%T) does not name the sweep or base file", err, err)
			}
			return
		}
		n, _ := s.countRuns()
		if n > 500 || n*s.runSize() > 100000 {
			return // expanding is correct but slow; keep the fuzzer fast
		}
		runs, err := s.Expand()
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("expand error %q is not an input Error", err)
			}
			return
		}
		if len(runs) != n {
			t.Fatalf("%d runs, counted %d", len(runs), n)
		}
		for i := 1; i < len(runs); i++ {
			if runs[i-1].ID >= runs[i].ID {
				t.Fatalf("ids not distinct and sorted: %s, %s", runs[i-1].ID, runs[i].ID)
			}
		}
	})
}
