package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersionFlag: `fabricsim --version` prints what `fabricsim version` prints.
func TestVersionFlag(t *testing.T) {
	c1, v1 := run(t, "version")
	c2, v2 := run(t, "--version")
	if c1 != 0 || c2 != 0 || v1 != v2 || v1 != "fabricsim "+version+"\n" {
		t.Errorf("version: %d %q; --version: %d %q", c1, v1, c2, v2)
	}
}

// TestFlagErrorPrefix: execute prefixes every error with "fabricsim: ", so a flag error must not
// carry the command path again ("fabricsim: fabricsim run: unknown flag").
func TestFlagErrorPrefix(t *testing.T) {
	_, out := run(t, "run", "--bogus")
	if want := "ERR unknown flag: --bogus (see 'fabricsim run --help')"; !strings.Contains(out, want) {
		t.Errorf("got %q, want %q", out, want)
	}
}

// TestMissingFileWording: every command says the same of a file it cannot read:
// "PATH: cannot read WHAT: no such file or directory", and exits 2.
func TestMissingFileWording(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.yaml")
	for _, args := range [][]string{
		{"run", missing},
		{"validate", missing},
		{"compare", missing, "--out", ""},
		{"compare", "--prices", missing, "--out", ""},
		{"sweep", missing, "--out", filepath.Join(dir, "out")},
		{"nccl-tests", "all_reduce_perf", "--cluster", missing},
		{"pcap-check", missing},
	} {
		code, out := run(t, args...)
		if code != exitUsage || !strings.Contains(out, missing+": cannot read ") || !strings.Contains(out, ": no such file or directory") {
			t.Errorf("%v: exit %d, %q; want 2 and %q", args, code, out, missing+": cannot read ...: no such file or directory")
		}
	}
}

// TestZeroCountsRejected: values that were silently ignored or taken as "default" when given
// explicitly are refused with exit 2 and the flag named.
func TestZeroCountsRejected(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"compare", "--steps", "0", "--out", ""}, "--steps 0: valid: 1..100"},
		{[]string{"sweep", filepath.Join("..", "..", "examples", "sweep-small.yaml"), "--out", t.TempDir(), "--jobs", "0"}, "--jobs 0: must be at least 1"},
		{[]string{"nccl-tests"}, "nccl-tests needs a binary name"},
	} {
		code, out := run(t, tc.args...)
		if code != exitUsage || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args, code, out, tc.want)
		}
	}
	if code, out := run(t, "nccl-tests", "--help"); code != 0 || !strings.Contains(out, "Usage: fabricsim nccl-tests BINARY") {
		t.Errorf("nccl-tests --help: exit %d, %q", code, out)
	}
}

// TestCompareSeedAndPrices: --seed replaces the scenario's seed (echoed in compare.json) and
// --prices merges a catalogue over the built-in one: a dearer InfiniBand switch raises the
// ib-ndr variant's network cost. A bad price file exits 2 with file:line before simulating.
func TestCompareSeedAndPrices(t *testing.T) {
	dir := t.TempDir()
	prices := filepath.Join(dir, "prices.yaml")
	os.WriteFile(prices, []byte("items:\n  ib-ndr-switch-64x400g:\n    price_usd: 90000\n    range_usd: [90000, 90000]\n"), 0o644)
	network := func(extra ...string) (uint64, float64) {
		out := filepath.Join(dir, "out")
		args := append([]string{"compare", "--backend", "analytic", "--steps", "1", "--variants", "ib-ndr", "--out", out}, extra...)
		if code, msg := run(t, args...); code != 0 {
			t.Fatalf("%v: exit %d:\n%s", args, code, msg)
		}
		data, _ := os.ReadFile(filepath.Join(out, "compare.json"))
		var res struct {
			Scenario struct {
				Seed uint64 `json:"seed"`
			} `json:"scenario"`
			Variants []struct {
				Network float64 `json:"network_usd"`
			} `json:"variants"`
		}
		if err := json.Unmarshal(data, &res); err != nil || len(res.Variants) != 1 {
			t.Fatalf("compare.json: %v", err)
		}
		return res.Scenario.Seed, res.Variants[0].Network
	}
	seed0, base := network()
	seed7, dear := network("--seed", "7", "--prices", prices)
	if seed0 != 1 || seed7 != 7 {
		t.Errorf("seed %d by default and %d with --seed 7; want 1 and 7", seed0, seed7)
	}
	if !(dear > base) {
		t.Errorf("network $%.0f with a 90k switch, $%.0f with the built-in 30k one; want more", dear, base)
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("items:\n  ib-ndr-switch-64x400g:\n    price_usd: lots\n"), 0o644)
	if code, out := run(t, "compare", "--backend", "analytic", "--prices", bad, "--out", ""); code != exitUsage || !strings.Contains(out, "bad.yaml:3") || strings.Contains(out, "exposed") {
		t.Errorf("bad --prices: exit %d, %q; want 2, bad.yaml:3 and nothing simulated", code, out)
	}
}

// TestOutputFileModes: every file fabricsim writes is 0644 (readable by all), not the 0600 of a
// temporary file renamed into place.
func TestOutputFileModes(t *testing.T) {
	dir := t.TempDir()
	scen := filepath.Join(dir, "s.yaml")
	os.WriteFile(scen, []byte("name: small\ntopology: {kind: fat-tree, k: 4}\nfabric: {kind: roce}\ntraffic: {kind: permutation, size: 100KB}\n"), 0o644)
	out := filepath.Join(dir, "out")
	if code, msg := run(t, "run", scen, "--out", out, "--hpcc-fct", filepath.Join(dir, "fct.txt"), "--series", filepath.Join(dir, "series.csv")); code != 0 {
		t.Fatalf("run: exit %d: %s", code, msg)
	}
	cmpOut := filepath.Join(dir, "cmp")
	if code, msg := run(t, "compare", "--backend", "analytic", "--steps", "1", "--variants", "ib-ndr", "--out", cmpOut); code != 0 {
		t.Fatalf("compare: exit %d: %s", code, msg)
	}
	files := []string{filepath.Join(dir, "fct.txt"), filepath.Join(dir, "series.csv")}
	for _, d := range []string{out, cmpOut} {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			files = append(files, filepath.Join(d, e.Name()))
		}
	}
	if len(files) < 8 {
		t.Fatalf("only %d files written: %v", len(files), files)
	}
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil || st.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v (%v), want 0644", f, st.Mode().Perm(), err)
		}
	}
}
