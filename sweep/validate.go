package sweep

import (
	"fmt"
	"strconv"
	"strings"
)

// maxReported bounds how many distinct invalid-run errors Validate lists.
const maxReported = 10

// RunName is the name a run's scenario carries in the Engine's messages.
func (s *Sweep) RunName(r Run) string { return s.Path + "#" + r.ID }

// Validate checks every run with the Engine before anything runs. When runs are invalid it
// works out which part of the sweep file is to blame, so that each error names a line of the
// sweep file: a value of one axis (a neighbouring run that differs only there is valid), a
// whole axis (every value of it is rejected, as for a misspelt field path), the base scenario,
// or a combination of values.
func (s *Sweep) Validate(eng Engine, runs []Run) error {
	valid := map[string]bool{}
	var bad []int
	errs := map[int]error{}
	for i, r := range runs {
		if err := eng.Validate(r.Scenario, s.RunName(r), s.Dir); err != nil {
			bad = append(bad, i)
			errs[i] = err
			continue
		}
		valid[pickKey(r.picks, r.Seed)] = true
	}
	if len(bad) == 0 {
		return nil
	}
	// Report in expansion order, which follows the sweep file.
	for i := 1; i < len(bad); i++ {
		for j := i; j > 0 && runs[bad[j]].Index < runs[bad[j-1]].Index; j-- {
			bad[j], bad[j-1] = bad[j-1], bad[j]
		}
	}
	d := diagnoser{s: s, eng: eng, valid: valid, probes: map[string]error{}}
	var list ErrorList
	blamed := map[string]bool{}
	more := 0
	for _, i := range bad {
		key, err := d.diagnose(runs[i], errs[i])
		if blamed[key] {
			continue
		}
		blamed[key] = true
		if len(list) == maxReported {
			more++
			continue
		}
		list = append(list, err)
	}
	if more > 0 {
		list = append(list, &Error{File: s.Path, Msg: fmt.Sprintf("... and %d more invalid values or combinations", more)})
	}
	if len(list) == 1 {
		return list[0]
	}
	return list
}

func pickKey(picks []int, seed int64) string {
	var b strings.Builder
	for _, p := range picks {
		b.WriteString(strconv.Itoa(p))
		b.WriteByte(',')
	}
	b.WriteString(strconv.FormatInt(seed, 10))
	return b.String()
}

type diagnoser struct {
	s      *Sweep
	eng    Engine
	valid  map[string]bool
	probes map[string]error
}

// probe validates the base with the axes in only applied (at r's values) and r's seed.
func (d *diagnoser) probe(r Run, only []bool) error {
	var b strings.Builder
	for _, o := range only {
		if o {
			b.WriteByte('1')
		} else {
			b.WriteByte('0')
		}
	}
	key := b.String() + ":" + pickKey(r.picks, r.Seed)
	if err, ok := d.probes[key]; ok {
		return err
	}
	_, scen, err := d.s.resolve(r.picks, only, r.Seed)
	if err == nil {
		err = d.eng.Validate(scen, d.s.Path+"#"+r.ID, d.s.Dir)
	}
	d.probes[key] = err
	return err
}

// diagnose returns what to blame for r being invalid (a key, to report each culprit once)
// and the error to show.
func (d *diagnoser) diagnose(r Run, runErr error) (string, error) {
	s := d.s
	// A neighbour that differs only in one dimension is valid: that dimension's value is bad.
	for di, dim := range s.dims() {
		n := len(s.Axes[dim[0]].Values)
		picks := append([]int(nil), r.picks...)
		for v := 0; v < n; v++ {
			if v == r.picks[dim[0]] {
				continue
			}
			for _, a := range dim {
				picks[a] = v
			}
			if d.valid[pickKey(picks, r.Seed)] {
				return fmt.Sprintf("dim %d value %d", di, r.picks[dim[0]]), d.valueError(dim, r, runErr)
			}
		}
	}
	none := make([]bool, len(s.Axes))
	if d.probe(r, none) == nil {
		// The base is valid: find the axis that breaks it on its own.
		for a := range s.Axes {
			only := make([]bool, len(s.Axes))
			only[a] = true
			err := d.probe(r, only)
			if err == nil {
				continue
			}
			every := true
			for v := range s.Axes[a].Values {
				rr := r
				rr.picks = append([]int(nil), r.picks...)
				rr.picks[a] = v
				if d.probe(rr, only) == nil {
					every = false
					break
				}
			}
			ax := s.Axes[a]
			if every {
				return fmt.Sprintf("axis %d", a), errorf(s.Path, ax.Line, "axis %s: the scenario rejects every value of this axis; with %s: %v", ax.Column, quoteLabel(ax.Labels[r.picks[a]]), err)
			}
			return fmt.Sprintf("axis %d value %d", a, r.picks[a]), d.valueError([]int{a}, r, err)
		}
		return "run " + r.ID, errorf(s.Path, s.axesLine, "axes: the combination %s is rejected: %v", s.describe(r), runErr)
	}
	// The base alone is invalid, perhaps on purpose (an axis supplies a required field): an axis
	// whose removal makes the run valid is to blame.
	for a := range s.Axes {
		only := make([]bool, len(s.Axes))
		for b := range only {
			only[b] = b != a
		}
		if d.probe(r, only) == nil {
			ax := s.Axes[a]
			return fmt.Sprintf("axis %d", a), errorf(s.Path, ax.Line, "axis %s: the scenario rejects it; with %s: %v", ax.Column, quoteLabel(ax.Labels[r.picks[a]]), runErr)
		}
	}
	if s.baseRaw != nil {
		if err := d.eng.Validate(s.baseRaw, s.BaseFile, s.Dir); err != nil {
			return "base", errorf(s.Path, s.baseLine, "%s: the base scenario is invalid: %v", s.baseKey, err)
		}
	}
	return "run " + r.ID, errorf(s.Path, s.baseLine, "%s: run %s %s is rejected: %v", s.baseKey, r.ID, s.describe(r), runErr)
}

// valueError blames the values that r takes in the axes of one dimension.
func (d *diagnoser) valueError(dim []int, r Run, err error) error {
	s := d.s
	var parts []string
	for _, a := range dim {
		parts = append(parts, fmt.Sprintf("axis %s value %s", s.Axes[a].Column, quoteLabel(s.Axes[a].Labels[r.picks[a]])))
	}
	first := s.Axes[dim[0]]
	return errorf(s.Path, first.ValueLines[r.picks[dim[0]]], "%s: the scenario rejects it: %v (run %s %s)", strings.Join(parts, ", "), err, r.ID, s.describe(r))
}

func quoteLabel(l string) string { return strconv.Quote(l) }
