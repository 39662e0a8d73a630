// Package fakeengine is a deterministic stand-in for the simulator, used to test sweeps: it
// validates scenarios strictly against a small schema shaped like fabricsim's (unknown keys
// and wrong units are errors naming the line) and "runs" them by hashing the scenario into
// metrics, optionally sleeping, burning CPU or failing on request.
package fakeengine

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Engine implements sweep.Engine.
type Engine struct {
	// SleepMin and SleepMax bound how long a run takes; each run sleeps a duration between
	// them chosen by its scenario's hash.
	SleepMin, SleepMax time.Duration
	// Spin is how many SHA-256 blocks a run hashes, to make it CPU-bound.
	Spin int
	// FailOnce ("field.path=value") makes a run whose scenario has that value fail the first
	// time: it fails while the marker file MarkerDir/failed-once-<value> is absent, creating it.
	FailOnce  string
	MarkerDir string
	// FailAlways ("field.path=value") makes matching runs always fail.
	FailAlways string
	// Log, when set, gets a line "start NAME" appended for every run.
	Log string
}

// FromEnv configures an Engine from FAKESIM_SLEEP_MS ("20-50"), FAKESIM_SPIN,
// FAKESIM_FAIL_ONCE, FAKESIM_MARKER_DIR, FAKESIM_FAIL_ALWAYS and FAKESIM_LOG.
func FromEnv() *Engine {
	e := &Engine{
		FailOnce:   os.Getenv("FAKESIM_FAIL_ONCE"),
		MarkerDir:  os.Getenv("FAKESIM_MARKER_DIR"),
		FailAlways: os.Getenv("FAKESIM_FAIL_ALWAYS"),
		Log:        os.Getenv("FAKESIM_LOG"),
	}
	if lo, hi, ok := strings.Cut(os.Getenv("FAKESIM_SLEEP_MS"), "-"); ok {
		a, _ := strconv.Atoi(lo)
		b, _ := strconv.Atoi(hi)
		e.SleepMin, e.SleepMax = time.Duration(a)*time.Millisecond, time.Duration(b)*time.Millisecond
	}
	e.Spin, _ = strconv.Atoi(os.Getenv("FAKESIM_SPIN"))
	return e
}

type kind int

const (
	kMap kind = iota
	kList
	kString
	kInt
	kFloat
	kBool
	kRate
	kSize
	kDuration
)

type field struct {
	kind   kind
	fields map[string]*field // kMap; for kList the element's fields
	enum   []string
}

func m(fs map[string]*field) *field { return &field{kind: kMap, fields: fs} }
func leaf(k kind) *field            { return &field{kind: k} }
func enum(vals ...string) *field    { return &field{kind: kString, enum: vals} }

var schema = m(map[string]*field{
	"name":        leaf(kString),
	"description": leaf(kString),
	"seed":        leaf(kInt),
	"topology": m(map[string]*field{
		"kind": enum("fat-tree", "leaf-spine"),
		"k":    leaf(kInt),
		"link": m(map[string]*field{"rate": leaf(kRate), "latency": leaf(kDuration)}),
	}),
	"fabric": m(map[string]*field{
		"kind": enum("ethernet", "infiniband"),
		"mtu":  leaf(kInt),
		"pfc":  leaf(kBool),
		"ecn":  m(map[string]*field{"kmin": leaf(kSize), "kmax": leaf(kSize), "pmax": leaf(kFloat)}),
	}),
	"traffic": m(map[string]*field{
		"kind":  enum("permutation", "incast", "all-to-all"),
		"size":  leaf(kSize),
		"load":  leaf(kFloat),
		"flows": {kind: kList, fields: map[string]*field{"src": leaf(kInt), "dst": leaf(kInt), "size": leaf(kSize)}},
	}),
})

var (
	rateRE     = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(bps|Kbps|Mbps|Gbps|Tbps)$`)
	sizeRE     = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(B|KB|MB|GB|KiB|MiB|GiB)$`)
	durationRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(ps|ns|us|ms|s)$`)
)

// Validate checks the scenario against the schema.
func (e *Engine) Validate(data []byte, name, dir string) error {
	_, err := parse(data, name)
	return err
}

func parse(data []byte, name string) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s: empty scenario", name)
	}
	if err := check(doc.Content[0], schema, "", name); err != nil {
		return nil, err
	}
	return doc.Content[0], nil
}

func check(n *yaml.Node, f *field, path, name string) error {
	at := func(format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", name, n.Line, fmt.Sprintf(format, args...))
	}
	where := path
	if where == "" {
		where = "the scenario"
	}
	switch f.kind {
	case kMap:
		if n.Kind != yaml.MappingNode {
			return at("%s must be a mapping", where)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			sub, ok := f.fields[k.Value]
			if !ok {
				var valid []string
				for key := range f.fields {
					valid = append(valid, key)
				}
				sort.Strings(valid)
				return fmt.Errorf("%s:%d: unknown field %q in %s (valid: %s)", name, k.Line, k.Value, where, strings.Join(valid, ", "))
			}
			if err := check(v, sub, join(path, k.Value), name); err != nil {
				return err
			}
		}
		return nil
	case kList:
		if n.Kind != yaml.SequenceNode {
			return at("%s must be a list", where)
		}
		for i, c := range n.Content {
			if err := check(c, m(f.fields), fmt.Sprintf("%s[%d]", path, i), name); err != nil {
				return err
			}
		}
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		return at("%s must be a single value", where)
	}
	v, tag := n.Value, n.ShortTag()
	switch f.kind {
	case kString:
		if len(f.enum) > 0 && !contains(f.enum, v) {
			return at("%s: %q is not one of %s", where, v, strings.Join(f.enum, ", "))
		}
	case kInt:
		if tag != "!!int" {
			return at("%s: %q is not an integer", where, v)
		}
	case kFloat:
		if tag != "!!int" && tag != "!!float" {
			return at("%s: %q is not a number", where, v)
		}
	case kBool:
		if tag != "!!bool" {
			return at("%s: %q is not true or false", where, v)
		}
	case kRate:
		if !rateRE.MatchString(v) {
			return at("%s: %q is not a rate (e.g. 100Gbps, 400Gbps)", where, v)
		}
	case kSize:
		if !sizeRE.MatchString(v) {
			return at("%s: %q is not a size (e.g. 4KB, 2MiB)", where, v)
		}
	case kDuration:
		if !durationRE.MatchString(v) {
			return at("%s: %q is not a duration (e.g. 1us, 500ns)", where, v)
		}
	}
	return nil
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// lookup returns the scalar at a dotted path, or "".
func lookup(n *yaml.Node, path string) string {
	for _, key := range strings.Split(path, ".") {
		if n.Kind != yaml.MappingNode {
			return ""
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				next = n.Content[i+1]
			}
		}
		if next == nil {
			return ""
		}
		n = next
	}
	return n.Value
}

func matches(n *yaml.Node, cond string) (string, bool) {
	path, want, ok := strings.Cut(cond, "=")
	if !ok {
		return "", false
	}
	return want, lookup(n, path) == want
}

// Run validates the scenario and derives its metrics from its SHA-256.
func (e *Engine) Run(ctx context.Context, data []byte, name, dir string) (map[string]float64, error) {
	root, err := parse(data, name)
	if err != nil {
		return nil, err
	}
	if e.Log != "" {
		f, err := os.OpenFile(e.Log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(f, "start %s\n", name)
		f.Close()
	}
	sum := sha256.Sum256(data)
	u := func(i int) uint64 { return binary.BigEndian.Uint64(sum[i : i+8]) }
	if e.SleepMax > 0 {
		d := e.SleepMin
		if span := e.SleepMax - e.SleepMin; span > 0 {
			d += time.Duration(u(0) % uint64(span))
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
	h := sum
	for i := 0; i < e.Spin; i++ {
		if i%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		h = sha256.Sum256(h[:])
	}
	if want, ok := matches(root, e.FailAlways); ok {
		return nil, fmt.Errorf("fake failure for %s", want)
	}
	if want, ok := matches(root, e.FailOnce); ok && e.MarkerDir != "" {
		marker := filepath.Join(e.MarkerDir, "failed-once-"+want)
		if f, err := os.OpenFile(marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); err == nil {
			f.Close()
			return nil, fmt.Errorf("fake failure (once) for %s", want)
		}
	}
	p50 := float64(u(0)%1000000)/8 + 1000
	return map[string]float64{
		"fct_ns.p50":   p50,
		"fct_ns.p99":   p50*3.25 + float64(u(8)%1000)/16,
		"drops":        float64(u(16) % 7),
		"sim_time_ns":  float64(u(24)%100000000) + 1e6,
		"events":       float64(u(8) % 50000000),
		"goodput_gbps": float64(u(16)%40000) / 100,
	}, nil
}
