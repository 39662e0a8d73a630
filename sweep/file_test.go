package sweep

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestStepAndFactorRanges(t *testing.T) {
	tests := []struct {
		from, to, by string
		factor       bool
		want         string
		err          string
	}{
		{from: "1", to: "5", by: "2", want: "1 3 5"},
		{from: "1", to: "6", by: "2", want: "1 3 5"},
		{from: "10", to: "1", by: "-4", want: "10 6 2"},
		{from: "0.1", to: "0.5", by: "0.1", want: "0.1 0.2 0.3 0.4 0.5"},
		{from: "0", to: "1", by: "0.25", want: "0 0.25 0.5 0.75 1"},
		{from: "100Gbps", to: "400Gbps", by: "100Gbps", want: "100Gbps 200Gbps 300Gbps 400Gbps"},
		{from: "1.5us", to: "2.5us", by: "0.5", want: "1.5us 2us 2.5us"},
		{from: "1MB", to: "16MB", by: "2", factor: true, want: "1MB 2MB 4MB 8MB 16MB"},
		{from: "64", to: "1000", by: "4", factor: true, want: "64 256"},
		{from: "1", to: "0.01", by: "0.1", factor: true, want: "1 0.1 0.01"},
		{from: "0.5", to: "2", by: "1.5", factor: true, want: "0.5 0.75 1.125 1.6875"},
		{from: "3", to: "3", by: "0.5", factor: true, want: "3"},
		{from: "1", to: "5", by: "0", err: "step must not be 0"},
		{from: "5", to: "1", by: "1", err: "from 5 to 1 with step 1 gives no values (the step must point from 'from' towards 'to')"},
		{from: "1MB", to: "4KB", by: "1", err: `from 1MB and to 4KB have different units ("MB", "KB"); write both in the same unit`},
		{from: "1MB", to: "4MB", by: "1KB", err: `step 1KB has unit "KB" but from has "MB"`},
		{from: "1", to: "4", by: "2x", factor: true, err: "factor 2x must be a plain number"},
		{from: "1", to: "4", by: "x2", factor: true, err: `factor: "x2" is not a number with an optional unit (e.g. 4, 0.5, 100Gbps, 1.5us)`},
		{from: "1", to: "4", by: "2MB", factor: true, err: "factor 2MB must be a plain number"},
		{from: "0", to: "4", by: "2", factor: true, err: "a range with a factor needs from and to above 0"},
		{from: "1", to: "8", by: "0.5", factor: true, err: "from 1 to 8 with factor 0.5 gives no values (the factor must be above 1 to grow, between 0 and 1 to shrink)"},
		{from: "0", to: "1e9", by: "1", err: "gives 1000000001 values; an axis may have at most 10000"},
		{from: "abc", to: "1", by: "1", err: `from: "abc" is not a number with an optional unit (e.g. 4, 0.5, 100Gbps, 1.5us)`},
	}
	for _, tc := range tests {
		var got []string
		var err error
		if tc.factor {
			got, err = factorRange(tc.from, tc.to, tc.by)
		} else {
			got, err = stepRange(tc.from, tc.to, tc.by)
		}
		name := tc.from + ".." + tc.to + " by " + tc.by
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s: error %v, want %q", name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%s = %q, want %q", name, strings.Join(got, " "), tc.want)
		}
	}
}

func TestFieldPathParse(t *testing.T) {
	good := map[string]string{
		"topology.link.rate":    "topology.link.rate",
		"traffic.flows[2].size": "traffic.flows[2].size",
		"a[0][1].b-c_d":         "a[0][1].b-c_d",
	}
	for in, want := range good {
		p, err := ParseFieldPath(in)
		if err != nil || p.String() != want {
			t.Errorf("ParseFieldPath(%q) = %v, %v; want %s", in, p, err, want)
		}
	}
	bad := map[string]string{
		"":            "empty field path",
		"a..b":        `field path "a..b": empty key (write keys joined by dots, e.g. topology.link.rate)`,
		"[0].a":       `field path "[0].a": empty key (write keys joined by dots, e.g. topology.link.rate)`,
		"a[x]":        `field path "a[x]": list index "x" is not a number from 0 to 1048576`,
		"a[1":         `field path "a[1": missing ']'`,
		"a[1]b":       `field path "a[1]b": unexpected "b" after index (write list indexes as name[2])`,
		"a b":         `field path "a b": key "a b" has ' ' (keys use letters, digits, '_' and '-')`,
		"a[-1]":       `field path "a[-1]": list index "-1" is not a number from 0 to 1048576`,
		"a[99999999]": `field path "a[99999999]": list index "99999999" is not a number from 0 to 1048576`,
	}
	for in, want := range bad {
		if _, err := ParseFieldPath(in); err == nil || err.Error() != want {
			t.Errorf("ParseFieldPath(%q) error %v, want %q", in, err, want)
		}
	}
}

func TestFieldPathSet(t *testing.T) {
	const base = `traffic:
  flows:
    - {src: 0, dst: 1, size: 1MB}
    - {src: 2, dst: 3, size: 1MB}
    - {src: 4, dst: 5, size: 1MB}
fabric:
  ecn:
topology: 3
`
	tests := []struct {
		path, value, want, err string
	}{
		{path: "traffic.flows[2].size", value: "8MB", want: "traffic.flows[2].size: 8MB"},
		{path: "fabric.ecn.kmin", value: "100KB", want: "fabric.ecn.kmin: 100KB"},
		{path: "fabric.pfc.headroom.bytes", value: "4", want: "fabric.pfc.headroom.bytes: 4"},
		{path: "traffic.flows[1]", value: "{src: 9, dst: 8}", want: "traffic.flows[1].src: 9"},
		{path: "traffic.flows[3].size", value: "1", err: "traffic.flows (line 3) has 3 items; index 3 is out of range"},
		{path: "topology.link.rate", value: "1", err: `topology (line 8) is the scalar "3", not a mapping with key "link"`},
		{path: "traffic.flows.size", value: "1", err: `traffic.flows (line 3) is a list, not a mapping with key "size"`},
		{path: "workload.jobs[0].size", value: "1", err: `workload (line 0) has no list "jobs" to index`},
		{path: "traffic[0]", value: "1", err: "traffic (line 2) is a mapping, not a list"},
	}
	for _, tc := range tests {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(base), &doc); err != nil {
			t.Fatal(err)
		}
		root := doc.Content[0]
		var val yaml.Node
		if err := yaml.Unmarshal([]byte(tc.value), &val); err != nil {
			t.Fatal(err)
		}
		p, err := ParseFieldPath(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		err = p.Set(root, val.Content[0])
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("Set(%s) error %v, want %q", tc.path, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Set(%s): %v", tc.path, err)
			continue
		}
		// Read the value back through a plain decode.
		var m any
		b, _ := encodeNode(root)
		if err := yaml.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		wantPath, wantVal, _ := strings.Cut(tc.want, ": ")
		got := dig(t, m, wantPath)
		if got != wantVal {
			t.Errorf("after Set(%s): %s = %q, want %q\n%s", tc.path, wantPath, got, wantVal, b)
		}
	}
}

// dig follows a field path through decoded YAML and formats the scalar there.
func dig(t *testing.T, v any, path string) string {
	t.Helper()
	p, err := ParseFieldPath(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range p {
		if st.Key != "" {
			m, ok := v.(map[string]any)
			if !ok {
				return "<not a mapping>"
			}
			v = m[st.Key]
		} else {
			l, ok := v.([]any)
			if !ok || st.Index >= len(l) {
				return "<not a list>"
			}
			v = l[st.Index]
		}
	}
	b, _ := yaml.Marshal(v)
	return strings.TrimSpace(string(b))
}

func TestExpandProductZipAndSeeds(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"base.yaml": baseScenario, "s.yaml": `
base_file: base.yaml
axes:
  - field: fabric.ecn.kmin
    values: [10KB, 20KB, 40KB]
  - field: topology.link.rate
    values: [100Gbps, 400Gbps]
  - field: fabric.ecn.kmax
    values: [100KB, 200KB, 400KB]
zip:
  - [fabric.ecn.kmin, fabric.ecn.kmax]
seeds: [3, 1]
`})
	s, err := Load(filepath.Join(dir, "s.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	runs, err := s.Expand()
	if err != nil {
		t.Fatal(err)
	}
	// (kmin,kmax) zipped: 3 points x 2 rates x 2 seeds.
	if len(runs) != 12 {
		t.Fatalf("%d runs, want 12", len(runs))
	}
	byIndex := make([]Run, len(runs))
	for _, r := range runs {
		byIndex[r.Index] = r
	}
	var got []string
	for _, r := range byIndex {
		got = append(got, strings.Join(r.Labels, "/")+"/s"+itoa(r.Seed))
	}
	want := []string{
		"10KB/100Gbps/100KB/s3", "10KB/100Gbps/100KB/s1", "10KB/400Gbps/100KB/s3", "10KB/400Gbps/100KB/s1",
		"20KB/100Gbps/200KB/s3", "20KB/100Gbps/200KB/s1", "20KB/400Gbps/200KB/s3", "20KB/400Gbps/200KB/s1",
		"40KB/100Gbps/400KB/s3", "40KB/100Gbps/400KB/s1", "40KB/400Gbps/400KB/s3", "40KB/400Gbps/400KB/s1",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("expansion order:\n got %q\nwant %q", got, want)
	}
	for i := 1; i < len(runs); i++ {
		if runs[i-1].ID >= runs[i].ID {
			t.Errorf("runs not sorted by id: %s then %s", runs[i-1].ID, runs[i].ID)
		}
	}
	// The resolved scenario carries the values, the new ecn mapping and the seed.
	r := byIndex[5]
	want5 := `name: perm
seed: 1
topology:
  kind: fat-tree
  k: 8
  link:
    rate: 100Gbps
    latency: 1us
fabric:
  kind: ethernet
  mtu: 4096
  ecn:
    kmin: 20KB
    kmax: 200KB
traffic:
  kind: permutation
  size: 2MB
`
	if string(r.Scenario) != want5 {
		t.Errorf("run 5 scenario:\n%s\nwant:\n%s", r.Scenario, want5)
	}
	// Replicates share the id prefix.
	if byIndex[4].ID[:12] != byIndex[5].ID[:12] || byIndex[4].ID[12:] != "-s3" || byIndex[5].ID[12:] != "-s1" {
		t.Errorf("replicate ids %s and %s should share a prefix", byIndex[4].ID, byIndex[5].ID)
	}
}

func itoa(i int64) string { return strconv.FormatInt(i, 10) }

// TestIDsIgnorePresentation: comments, quoting of plain strings, flow or block style and an
// inline versus a separate base do not change run ids; a value does.
func TestIDsIgnorePresentation(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"base.yaml": baseScenario,
		"a.yaml": `base_file: base.yaml
axes:
  - {field: traffic.size, values: [1MB, 2MB]}
`,
		"b.yaml": `# the same sweep, written differently
base:
  name: "perm"   # quoted
  seed: 7
  topology: {kind: fat-tree, k: 8, link: {rate: 100Gbps, latency: 1us}}
  fabric:
    kind: ethernet
    mtu: 4096
  traffic:
    kind: 'permutation'
    size: 2MB
axes:
  - field: traffic.size
    values:
      - 1MB   # small
      - "2MB"
`,
		"c.yaml": `base_file: base.yaml
axes:
  - {field: traffic.size, values: [1MB, 3MB]}
`,
	})
	ids := func(name string) []string {
		s, err := Load(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		runs, err := s.Expand()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range runs {
			out = append(out, r.ID)
		}
		return out
	}
	a, b, c := ids("a.yaml"), ids("b.yaml"), ids("c.yaml")
	if !reflect.DeepEqual(a, b) {
		t.Errorf("ids differ for the same sweep written differently: %v vs %v", a, b)
	}
	shared := 0
	for _, x := range a {
		for _, y := range c {
			if x == y {
				shared++
			}
		}
	}
	if shared != 1 {
		t.Errorf("a and c share %d runs (1MB), want 1: %v %v", shared, a, c)
	}
}

func TestParseSeedsAndMetrics(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"base.yaml": baseScenario, "noseed.yaml": "name: x\n"})
	tests := []struct {
		file, want string
	}{
		{"base_file: base.yaml\n", "seeds [7] metrics [fct_ns.p50 fct_ns.p99 drops sim_time_ns events]"},
		{"base_file: base.yaml\nseeds: 3\nmetrics: [drops]\n", "seeds [7 8 9] metrics [drops]"},
		{"base_file: noseed.yaml\nseeds: 2\n", "seeds [1 2] metrics [fct_ns.p50 fct_ns.p99 drops sim_time_ns events]"},
		{"base_file: base.yaml\nseeds: [5, 0x10]\n", "seeds [5 16] metrics [fct_ns.p50 fct_ns.p99 drops sim_time_ns events]"},
	}
	for _, tc := range tests {
		s, err := Parse([]byte(tc.file), filepath.Join(dir, "s.yaml"))
		if err != nil {
			t.Errorf("%q: %v", tc.file, err)
			continue
		}
		got := fmt.Sprintf("seeds %v metrics %v", s.Seeds, s.Metrics)
		if got != tc.want {
			t.Errorf("%q: %s, want %s", tc.file, got, tc.want)
		}
	}
}
