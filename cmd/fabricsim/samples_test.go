package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/sweep"
)

var updateSamples = flag.Bool("update", false, "rewrite the sample outputs in README.md and docs/*.md from the program's")

// A sample is a fenced block in README.md or docs/*.md right after a marker line
//
//	<!-- sample: ARGS [| head N] [| lines A-B] -->
//
// whose first line is the prompt ("$ go run ./cmd/fabricsim ARGS" or "$ fabricsim ARGS") and the
// rest what `fabricsim ARGS` prints on stdout: all of it, its first N lines and a "  ..." line
// (head), or its lines A to B (lines, 1-based).
var sampleMarker = regexp.MustCompile(`^<!-- sample: (.+?) -->$`)

// sampleMasks blank out what differs from run to run (wall time and its rate), in the doc and
// in the output alike; everything else must match to the byte.
var sampleMasks = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`in [0-9.]+ s \([0-9.]+ M events/s\)`), "in X s (X M events/s)"},
	{regexp.MustCompile(`\([0-9.]+ s\)$`), "(X s)"},
}

func maskSample(lines []string) string {
	out := make([]string, len(lines))
	for i, l := range lines {
		for _, m := range sampleMasks {
			l = m.re.ReplaceAllString(l, m.with)
		}
		out[i] = l
	}
	return strings.Join(out, "\n")
}

type sample struct {
	file       string
	line       int // of the marker
	args       []string
	head       int
	from, to   int
	start, end int // the block's content lines (prompt included), [start, end)
}

func parseSamples(t *testing.T, file string, lines []string) []sample {
	t.Helper()
	var out []sample
	for i, l := range lines {
		m := sampleMarker.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		parts := strings.Split(m[1], "|")
		s := sample{file: file, line: i + 1, args: strings.Fields(parts[0])}
		for _, opt := range parts[1:] {
			f := strings.Fields(opt)
			switch {
			case len(f) == 2 && f[0] == "head":
				s.head, _ = strconv.Atoi(f[1])
			case len(f) == 2 && f[0] == "lines":
				a, b, _ := strings.Cut(f[1], "-")
				s.from, _ = strconv.Atoi(a)
				s.to, _ = strconv.Atoi(b)
			default:
				t.Fatalf("%s:%d: unknown sample option %q", file, i+1, opt)
			}
		}
		if i+2 >= len(lines) || lines[i+1] != "```" {
			t.Fatalf("%s:%d: a sample marker must be followed by a fenced block", file, i+1)
		}
		s.start = i + 2
		for s.end = s.start; s.end < len(lines) && lines[s.end] != "```"; s.end++ {
		}
		if s.end == len(lines) {
			t.Fatalf("%s:%d: the sample's block is not closed", file, i+1)
		}
		prompt := lines[s.start]
		if !strings.HasPrefix(prompt, "$ ") || !strings.HasSuffix(prompt, " "+strings.Join(s.args, " ")) {
			t.Fatalf("%s:%d: the block's first line %q is not the prompt of `fabricsim %s`", file, s.start+1, prompt, strings.Join(s.args, " "))
		}
		out = append(out, s)
	}
	return out
}

// TestDocSamples runs every sample command of README.md and docs/*.md (each distinct command
// once: the default compare, some 15 s at packet level, serves the README and docs/compare.md)
// in a scratch directory and compares its output with the doc's block, masking only the wall
// time. With -update it rewrites the blocks instead.
func TestDocSamples(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the default compare at packet level")
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	docs, _ := filepath.Glob(filepath.Join(repo, "docs", "*.md"))
	docs = append([]string{filepath.Join(repo, "README.md")}, docs...)
	scratch := t.TempDir()
	// examples/compare-chakra-dp16.yaml reads its traces from ../chakra/testdata.
	for _, dir := range []string{"examples", "chakra"} {
		if err := os.Symlink(filepath.Join(repo, dir), filepath.Join(scratch, dir)); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(scratch)
	outputs := map[string][]string{}
	total := 0
	for _, doc := range docs {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		samples := parseSamples(t, doc, lines)
		total += len(samples)
		for k := len(samples) - 1; k >= 0; k-- { // from the end, so that rewriting keeps line numbers
			s := samples[k]
			key := strings.Join(s.args, " ")
			got, ok := outputs[key]
			if !ok {
				root := newRoot()
				var stdout, stderr bytes.Buffer
				root.SetOut(&stdout)
				root.SetErr(&stderr)
				root.SetArgs(append(append([]string(nil), s.args...), "--quiet"))
				if err := root.Execute(); err != nil {
					t.Fatalf("%s:%d: fabricsim %s: %v\n%s", s.file, s.line, key, err, stderr.String())
				}
				got = strings.Split(strings.TrimRight(stdout.String(), "\n"), "\n")
				outputs[key] = got
			}
			switch {
			case s.head > 0:
				got = append(append([]string(nil), got[:min(s.head, len(got))]...), "  ...")
			case s.from > 0:
				if s.to > len(got) || s.from > s.to {
					t.Fatalf("%s:%d: lines %d-%d of %d", s.file, s.line, s.from, s.to, len(got))
				}
				got = got[s.from-1 : s.to]
			}
			want := lines[s.start+1 : s.end]
			if *updateSamples {
				// A line that differs only where masked keeps the doc's text (its wall time).
				for i := range got {
					if i < len(want) && maskSample(want[i:i+1]) == maskSample(got[i:i+1]) {
						got[i] = want[i]
					}
				}
				lines = append(lines[:s.start+1], append(append([]string(nil), got...), lines[s.end:]...)...)
				continue
			}
			if maskSample(want) != maskSample(got) {
				t.Errorf("%s:%d: the sample of `fabricsim %s` differs from the program's output (go test ./cmd/fabricsim -run DocSamples -update rewrites it):\n--- doc\n%s\n--- program\n%s",
					filepath.Base(s.file), s.line, key, strings.Join(want, "\n"), strings.Join(got, "\n"))
			}
		}
		if *updateSamples {
			if err := os.WriteFile(doc, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if total < 4 {
		t.Errorf("%d samples found; README.md and docs/ mark at least 4", total)
	}
}

// TestReadmeSweepExample: the README's line on examples/sweep-small.yaml says what the sweep
// expands to: its number of runs, every axis (by its column name) and the number of seeds.
func TestReadmeSweepExample(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(l, "- `sweep-small.yaml`") {
			line = l
		}
	}
	if line == "" {
		t.Fatal("README.md does not describe examples/sweep-small.yaml")
	}
	s, err := sweep.Load("../../examples/sweep-small.yaml")
	if err != nil {
		t.Fatal(err)
	}
	runs, err := s.Expand()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{fmt.Sprintf("%d-run", len(runs)), fmt.Sprintf("%d seeds", len(s.Seeds))}
	for _, a := range s.Axes {
		want = append(want, a.Column)
	}
	for _, w := range want {
		if !strings.Contains(line, w) {
			t.Errorf("README's sweep-small line lacks %q: %s", w, line)
		}
	}
}
