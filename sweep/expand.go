package sweep

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// A Run is one resolved scenario of a sweep.
type Run struct {
	// ID is stable: the first 12 hex digits of the SHA-256 of the canonical resolved scenario
	// without its seed, then "-s" and the seed. Replicates of one point share the prefix.
	ID string
	// Index is the run's place in expansion order (first axis slowest, seeds fastest).
	Index int
	Seed  int64
	// Labels are the axis values as table text, one per axis.
	Labels []string
	// Scenario is the canonical resolved scenario YAML handed to the Engine.
	Scenario []byte

	picks []int // value index per axis
}

// Expand resolves every run of the sweep, sorted by ID. Errors name the axis that cannot be
// applied to the base scenario.
func (s *Sweep) Expand() ([]Run, error) {
	dims := s.dims()
	picks := make([]int, len(s.Axes))
	var runs []Run
	var rec func(d int) error
	rec = func(d int) error {
		if d == len(dims) {
			for _, seed := range s.Seeds {
				r := Run{Index: len(runs), Seed: seed, picks: append([]int(nil), picks...)}
				id, scen, err := s.resolve(picks, nil, seed)
				if err != nil {
					return err
				}
				r.ID, r.Scenario = id, scen
				for a, p := range picks {
					r.Labels = append(r.Labels, s.Axes[a].Labels[p])
				}
				runs = append(runs, r)
			}
			return nil
		}
		for v := range s.Axes[dims[d][0]].Values {
			for _, a := range dims[d] {
				picks[a] = v
			}
			if err := rec(d + 1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := rec(0); err != nil {
		return nil, err
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].ID < runs[j].ID })
	for i := 1; i < len(runs); i++ {
		if runs[i].ID == runs[i-1].ID {
			a, b := runs[i-1], runs[i]
			if a.Index > b.Index {
				a, b = b, a
			}
			return nil, errorf(s.Path, s.axesLine, "runs %s and %s resolve to the same scenario (id %s); an axis value repeats the base or another value", s.describe(a), s.describe(b), a.ID)
		}
	}
	return runs, nil
}

// resolve builds the scenario with the axes in picks applied (all of them when only is nil,
// else those with only[a] true) and the seed set. It returns the run ID and the scenario.
func (s *Sweep) resolve(picks []int, only []bool, seed int64) (string, []byte, error) {
	budget := maxNodes
	tree, err := copyNode(s.Base, &budget)
	if err != nil {
		return "", nil, errorf(s.BaseFile, s.Base.Line, "%v", err)
	}
	for a, p := range picks {
		if only != nil && !only[a] {
			continue
		}
		ax := s.Axes[a]
		budget := maxNodes
		v, err := copyNode(ax.Values[p], &budget)
		if err != nil {
			return "", nil, errorf(s.Path, ax.ValueLines[p], "%v", err)
		}
		if err := ax.Field.Set(tree, v); err != nil {
			return "", nil, errorf(s.Path, ax.Line, "axis %s: cannot set it in the base scenario (%s): %v", ax.Field, s.BaseFile, err)
		}
	}
	canonicalize(tree)
	// The ID hashes the scenario without its seed so that replicates share a prefix.
	noSeed := *tree
	noSeed.Content = nil
	for i := 0; i+1 < len(tree.Content); i += 2 {
		if tree.Content[i].Value != "seed" {
			noSeed.Content = append(noSeed.Content, tree.Content[i], tree.Content[i+1])
		}
	}
	body, err := encodeNode(&noSeed)
	if err != nil {
		return "", nil, errorf(s.BaseFile, 0, "cannot encode the resolved scenario: %v", err)
	}
	sum := sha256.Sum256(body)
	id := hex.EncodeToString(sum[:6]) + "-s" + strconv.FormatInt(seed, 10)
	setSeed(tree, seed)
	scen, err := encodeNode(tree)
	if err != nil {
		return "", nil, errorf(s.BaseFile, 0, "cannot encode the resolved scenario: %v", err)
	}
	return id, scen, nil
}

// setSeed sets the scenario's seed key, adding it after name (or first) when absent.
func setSeed(m *yaml.Node, seed int64) {
	v := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(seed, 10)}
	if _, old := mappingGet(m, "seed"); old != nil {
		*old = *v
		return
	}
	at := 0
	if k, _ := mappingGet(m, "name"); k != nil {
		for i := 0; i < len(m.Content); i += 2 {
			if m.Content[i] == k {
				at = i + 2
			}
		}
	}
	k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "seed"}
	m.Content = append(m.Content[:at], append([]*yaml.Node{k, v}, m.Content[at:]...)...)
}

// describe names a run by its axis values and seed, for messages.
func (s *Sweep) describe(r Run) string {
	var parts []string
	for a, p := range r.picks {
		parts = append(parts, s.Axes[a].Column+"="+s.Axes[a].Labels[p])
	}
	parts = append(parts, "seed="+strconv.FormatInt(r.Seed, 10))
	return "(" + strings.Join(parts, ", ") + ")"
}

// Digest identifies a sweep's set of runs: the first 16 hex digits of the SHA-256 of the
// sorted run IDs. Shards check it so that no shard runs a sweep file edited since submission.
func Digest(runs []Run) string {
	h := sha256.New()
	for _, r := range runs {
		h.Write([]byte(r.ID))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// A Shard selects every Count-th run, starting at Index, of the runs sorted by ID.
type Shard struct {
	Index, Count int
}

// ParseShard reads "i/N" with 0 <= i < N.
func ParseShard(s string) (Shard, error) {
	is, ns, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(is)
	n, err2 := strconv.Atoi(ns)
	if !ok || err1 != nil || err2 != nil {
		return Shard{}, &Error{Msg: fmt.Sprintf("--shard %q: write it as i/N, e.g. 0/4 (shard i of N, counting from 0)", s)}
	}
	if n < 1 {
		return Shard{}, &Error{Msg: fmt.Sprintf("--shard %s: the shard count must be at least 1", s)}
	}
	if i < 0 || i >= n {
		return Shard{}, &Error{Msg: fmt.Sprintf("--shard %s: shard index %d must be from 0 to %d (shards count from 0)", s, i, n-1)}
	}
	return Shard{Index: i, Count: n}, nil
}

func (sh Shard) String() string { return fmt.Sprintf("%d/%d", sh.Index, sh.Count) }

// Select returns the shard's runs from runs sorted by ID.
func (sh Shard) Select(runs []Run) []Run {
	if sh.Count <= 1 {
		return runs
	}
	var out []Run
	for i, r := range runs {
		if i%sh.Count == sh.Index {
			out = append(out, r)
		}
	}
	return out
}
