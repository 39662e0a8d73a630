package sweep

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/fabricsim/fabricsim/sweep/internal/fakeengine"
)

// runIDs in engine messages are hashes; the table below writes them as ID.
var runIDPattern = regexp.MustCompile(`[0-9a-f]{12}-s[0-9]+`)

// TestBadSweepFiles: every bad sweep file or flag is rejected before anything runs, with a
// message naming the file, line and field, and nothing is written.
func TestBadSweepFiles(t *testing.T) {
	tests := []struct {
		name  string
		sweep string
		args  []string
		want  string
	}{
		{
			name: "unknown field path",
			sweep: `base_file: base.yaml
axes:
  - field: traffic.size
    values: [1MB, 2MB]
  - field: topology.link.rat
    values: [100Gbps, 200Gbps]
`,
			want: `s.yaml:5: axis topology.link.rat: the scenario rejects every value of this axis; with "100Gbps": s.yaml#ID:9: unknown field "rat" in topology.link (valid: latency, rate)`,
		},
		{
			name: "value of the wrong unit",
			sweep: `base_file: base.yaml
axes:
  - field: topology.link.rate
    values:
      - 100Gbps
      - 200GB
  - field: traffic.size
    values: [1MB, 2MB]
`,
			want: `s.yaml:6: axis topology.link.rate value "200GB": the scenario rejects it: s.yaml#ID:7: topology.link.rate: "200GB" is not a rate (e.g. 100Gbps, 400Gbps) (run ID (topology.link.rate=200GB, traffic.size=1MB, seed=7))`,
		},
		{
			name: "empty axis",
			sweep: `base_file: base.yaml
axes:
  - field: topology.link.rate
    values: []
`,
			want: `s.yaml:4: axes[0] (topology.link.rate).values: the axis is empty; list at least one value`,
		},
		{
			name: "empty range",
			sweep: `base_file: base.yaml
axes:
  - field: fabric.mtu
    from: 9000
    to: 1500
    step: 500
`,
			want: `s.yaml:6: axes[0] (fabric.mtu): from 9000 to 1500 with step 500 gives no values (the step must point from 'from' towards 'to')`,
		},
		{
			name: "unknown key in the sweep file",
			sweep: `base_file: base.yaml
axis:
  - field: topology.link.rate
`,
			want: `s.yaml:2:1: axis: unknown key (valid keys here: axes, base, base_file, description, metrics, name, seeds, zip)`,
		},
		{
			name: "unknown key in an axis",
			sweep: `base_file: base.yaml
axes:
  - field: topology.link.rate
    value: [1Gbps]
`,
			want: `s.yaml:4:5: axes[0].value: unknown key (valid keys here: factor, field, from, name, step, to, values)`,
		},
		{
			name: "shard index not below the count",
			sweep: `base_file: base.yaml
seeds: 4
`,
			args: []string{"--shard", "4/4"},
			want: `--shard 4/4: shard index 4 must be from 0 to 3 (shards count from 0)`,
		},
		{
			name:  "malformed shard",
			sweep: "base_file: base.yaml\n",
			args:  []string{"--shard", "1"},
			want:  `--shard "1": write it as i/N, e.g. 0/4 (shard i of N, counting from 0)`,
		},
		{
			name: "invalid inline base, located in the sweep file",
			sweep: `name: inline
axes:
  - field: traffic.size
    values: [1MB]
base:
  topology:
    link:
      rate: 100Gbps
      latncy: 1us
`,
			want: `s.yaml:5: base: the base scenario is invalid: s.yaml:9: unknown field "latncy" in topology.link (valid: latency, rate)`,
		},
		{
			name: "list index out of range",
			sweep: `base_file: base.yaml
axes:
  - field: traffic.flows[0].size
    values: [1MB]
`,
			want: `s.yaml:3: axis traffic.flows[0].size: cannot set it in the base scenario (base.yaml): traffic (line 11) has no list "flows" to index`,
		},
		{
			name: "zipped axes of different lengths",
			sweep: `base_file: base.yaml
axes:
  - {field: fabric.ecn.kmin, values: [10KB, 20KB]}
  - {field: fabric.ecn.kmax, values: [100KB, 200KB, 400KB]}
zip:
  - [fabric.ecn.kmin, fabric.ecn.kmax]
`,
			want: `s.yaml:6: zip[0]: axis fabric.ecn.kmax has 3 values (line 4) but fabric.ecn.kmin has 2 (line 3); zipped axes need equal lengths`,
		},
		{
			name: "zip names no axis",
			sweep: `base_file: base.yaml
axes:
  - {field: fabric.ecn.kmin, values: [10KB, 20KB]}
  - {field: fabric.ecn.kmax, values: [100KB, 200KB]}
zip: [[fabric.ecn.kmin, fabric.ecn.kmx]]
`,
			want: `s.yaml:5: zip[0]: "fabric.ecn.kmx" is not an axis (axes: fabric.ecn.kmax, fabric.ecn.kmin)`,
		},
		{
			name: "value listed twice",
			sweep: `base_file: base.yaml
axes:
  - field: traffic.size
    values: [1MB, 2MB, 1MB]
`,
			want: `s.yaml:4: axes[0] (traffic.size).values: 1MB is listed twice (first at line 4)`,
		},
		{
			name: "overlapping axes",
			sweep: `base_file: base.yaml
axes:
  - {field: fabric.ecn, values: [{kmin: 1KB}]}
  - {field: fabric.ecn.kmax, values: [1KB]}
`,
			want: `s.yaml:4: axes[1]: field fabric.ecn.kmax overlaps axes[0] field fabric.ecn (line 3); one axis per field`,
		},
		{
			name:  "seed as an axis",
			sweep: "base_file: base.yaml\naxes:\n  - {field: seed, values: [1, 2]}\n",
			want:  `s.yaml:3: axes[0]: the seed is not an axis; list replicate seeds under seeds:`,
		},
		{
			name:  "bad seeds",
			sweep: "base_file: base.yaml\nseeds: [1, -2]\n",
			want:  `s.yaml:2: seeds: the scalar "-2" is not an integer from 0 to 9223372036854775807`,
		},
		{
			name:  "both bases",
			sweep: "base_file: base.yaml\nbase: {name: x}\n",
			want:  `s.yaml:2: give either base or base_file, not both`,
		},
		{
			name:  "missing base file",
			sweep: "base_file: nope.yaml\n",
			want:  `s.yaml:1: base_file nope.yaml: no such file or directory`,
		},
		{
			name:  "YAML syntax error",
			sweep: "base_file: base.yaml\naxes: [\n",
			want:  `s.yaml:2: invalid YAML: did not find expected node content`,
		},
		{
			name:  "metric named like a built-in column",
			sweep: "base_file: base.yaml\nmetrics: [drops, status]\n",
			want:  `s.yaml: metrics: "status" is already a built-in column`,
		},
		{
			name:  "slurm and k8s together",
			sweep: "base_file: base.yaml\n",
			args:  []string{"--slurm", "--k8s-manifest", "job.yaml"},
			want:  `--k8s-manifest and --slurm cannot be combined; give one`,
		},
		{
			name:  "resume without a sweep",
			sweep: "base_file: base.yaml\n",
			args:  []string{"--resume"},
			want:  `--resume: DIR/out holds no sweep (no sweep.json); run without --resume to start one`,
		},
		{
			name:  "slurm flag without slurm",
			sweep: "base_file: base.yaml\n",
			args:  []string{"--partition", "gpu"},
			want:  `--partition only applies with --slurm`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{"base.yaml": baseScenario, "s.yaml": tc.sweep})
			out := filepath.Join(dir, "out")
			wd, _ := os.Getwd()
			if err := os.Chdir(dir); err != nil {
				t.Fatal(err)
			}
			defer os.Chdir(wd)
			args := append([]string{"sweep", "s.yaml", "--out", out}, tc.args...)
			_, _, err := runCommand(t, func() Engine { return &fakeengine.Engine{} }, args...)
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			got := runIDPattern.ReplaceAllString(err.Error(), "ID")
			got = replaceAll(got, dir, "DIR")
			if got != tc.want {
				t.Errorf("error:\n got %s\nwant %s", got, tc.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s was created (%v); nothing may be written before validation passes", out, err)
			}
		})
	}
}

func replaceAll(s, old, new string) string {
	return regexp.MustCompile(regexp.QuoteMeta(old)).ReplaceAllLiteralString(s, new)
}
