package sweep

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fabricsim/fabricsim/yamlstrict"
)

// Limits on what one sweep file may ask for; they keep a typo from exhausting memory.
const (
	maxRuns  = 100000
	maxSeeds = 10000
)

// A Sweep is a parsed sweep file: a base scenario and the axes that vary it.
type Sweep struct {
	// Path is the sweep file as given; messages name it.
	Path string
	// Name is the sweep's name (the name key, else the file name without extension).
	Name string
	// Base is the base scenario, a mapping, with aliases expanded.
	Base *yaml.Node
	// BaseFile names the file Base's lines refer to: the base_file, or Path for an inline base.
	BaseFile string
	// Dir resolves relative paths inside the scenario: the directory of the base file.
	Dir string
	// Axes vary the base, in file order.
	Axes []Axis
	// Zips are groups of axes (indexes into Axes) that advance together.
	Zips []Zip
	// Seeds are the replicate seeds; every run sets the scenario's seed key to one of them.
	Seeds []int64
	// Metrics are the summary metrics that become table columns.
	Metrics []string

	baseLine  int    // line of the base or base_file key
	baseKey   string // "base" or "base_file"
	baseRaw   []byte // bytes whose line numbers match BaseFile, for validating the bare base
	axesLine  int
	seedsLine int
	seedCount int // seeds: N asks for N replicates from the base seed on
}

// An Axis is one varied field.
type Axis struct {
	// Field is the field path the axis sets.
	Field FieldPath
	// Column is the results-table column (the name key, else the field path).
	Column string
	// Values are the values in order; each keeps its YAML text (and so its units).
	Values []*yaml.Node
	// Labels are the values as shown in the table.
	Labels []string
	// Line is the line of the axis in the sweep file; ValueLines that of each value.
	Line       int
	ValueLines []int
}

// A Zip is a group of axes of equal length that advance together.
type Zip struct {
	Axes []int
	Line int
}

// reservedColumns may not name an axis or a metric.
var reservedColumns = []string{"run_id", "seed", "wall_seconds", "status", "error"}

// Load reads and parses a sweep file.
func Load(path string) (*Sweep, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{File: path, Msg: fmt.Sprintf("cannot read sweep file: %v", unwrapPathError(err))}
	}
	return Parse(data, path)
}

func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// file is a sweep file as written; yamlstrict decodes it (unknown or repeated keys, wrong kinds
// of value), Parse checks and resolves it. The base scenario, the seeds (a list or a count) and
// each axis's values stay YAML nodes.
type file struct {
	Name        string     `yaml:"name"`
	Description string     `yaml:"description"`
	Base        *yaml.Node `yaml:"base"`
	BaseFile    string     `yaml:"base_file"`
	Axes        []axisSpec `yaml:"axes"`
	Zip         [][]string `yaml:"zip"`
	Seeds       *yaml.Node `yaml:"seeds"`
	Metrics     []string   `yaml:"metrics"`
}

// axisSpec is one entry of axes: a field and its values, or a range of them.
type axisSpec struct {
	Field  string     `yaml:"field"`
	Name   string     `yaml:"name"`
	Values *yaml.Node `yaml:"values"`
	From   string     `yaml:"from"`
	To     string     `yaml:"to"`
	Step   string     `yaml:"step"`
	Factor string     `yaml:"factor"`
}

// Parse parses the bytes of a sweep file; path names it in messages and locates base_file.
func Parse(data []byte, path string) (*Sweep, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, yamlError(path, err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, errorf(path, 0, "empty sweep file: it needs base (or base_file) and axes")
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil, errorf(path, top.Line, "a sweep file is a mapping with keys %s; found %s", strings.Join(sweepKeys, ", "), kindName(top))
	}
	var f file
	d := yamlstrict.NewDecoder(path)
	if err := d.Decode(top, reflect.ValueOf(&f).Elem(), ""); err != nil {
		return nil, fromStrict(err)
	}
	s := &Sweep{Path: path, Name: f.Name}
	p := parser{file: path, d: d}
	at := func(key string) int { return p.line(key) }
	if s.Name == "" {
		s.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	if d.Has("seeds") {
		s.seedsLine = at("seeds")
		if s.Seeds, s.seedCount = p.seeds(d.Node("seeds")); p.err != nil {
			return nil, p.err
		}
	}
	if d.Has("metrics") {
		if s.Metrics = p.metrics(f.Metrics); p.err != nil {
			return nil, p.err
		}
	}
	s.axesLine = at("axes")
	// The line of the key after base, where an inline base's text ends.
	nextKeyLine := 0
	for i := 0; i+1 < len(top.Content); i += 2 {
		if k := top.Content[i].Value; k == "base" || k == "base_file" {
			s.baseLine, s.baseKey = top.Content[i].Line, k
			if i+2 < len(top.Content) {
				nextKeyLine = top.Content[i+2].Line
			}
		}
	}
	switch {
	case d.Has("base") && d.Has("base_file"):
		return nil, errorf(path, s.baseLine, "give either base or base_file, not both")
	case !d.Has("base") && !d.Has("base_file"):
		return nil, errorf(path, top.Line, "no base scenario: add base: (a scenario inline) or base_file: PATH")
	case d.Has("base"):
		if err := s.inlineBase(data, d.Node("base"), nextKeyLine); err != nil {
			return nil, err
		}
	default:
		if err := s.loadBaseFile(f.BaseFile, at("base_file")); err != nil {
			return nil, err
		}
	}
	if err := s.baseSeeds(); err != nil {
		return nil, err
	}
	for i, a := range f.Axes {
		s.Axes = append(s.Axes, p.axis(i, a))
		if p.err != nil {
			return nil, p.err
		}
	}
	if err := s.checkColumns(); err != nil {
		return nil, err
	}
	if d.Has("zip") {
		if s.Zips = p.zips(f.Zip, s.Axes); p.err != nil {
			return nil, p.err
		}
	}
	if s.Metrics == nil {
		s.Metrics = append([]string(nil), DefaultMetrics...)
	}
	n, _ := s.countRuns()
	if n > maxRuns {
		return nil, errorf(path, s.axesLine, "the sweep expands to %d runs; at most %d are allowed (split it into several sweeps)", n, maxRuns)
	}
	size := s.runSize()
	if size > maxNodes {
		return nil, errorf(path, s.baseLine, "a run's scenario would have %d YAML nodes (aliases expanded); at most %d are allowed", size, maxNodes)
	}
	if n*size > maxWork {
		return nil, errorf(path, s.axesLine, "the sweep is too large: %d runs of %d YAML nodes each; split it into several sweeps", n, size)
	}
	return s, nil
}

// fromStrict turns a decoding error into an Error at the line and column of the bad key or
// value.
func fromStrict(err error) error {
	var e *yamlstrict.Error
	if errors.As(err, &e) {
		msg := e.Msg
		if e.Field != "" {
			msg = e.Field + ": " + msg
		}
		return &Error{File: e.File, Line: e.Pos.Line, Col: e.Pos.Col, Msg: msg}
	}
	return err
}

var sweepKeys = []string{"name", "description", "base", "base_file", "axes", "zip", "seeds", "metrics"}

// inlineBase takes the base scenario from the sweep file. For validating the bare base it also
// cuts the base's own text out of the file, padded with empty lines, so that the simulator's
// line numbers are the sweep file's; if the cut does not re-parse to the same tree the bare base
// is validated from its encoding instead.
func (s *Sweep) inlineBase(data []byte, base *yaml.Node, endLine int) error {
	if base.Kind != yaml.MappingNode {
		return errorf(s.Path, base.Line, "base: must be a scenario mapping; found %s", kindName(base))
	}
	budget := maxNodes
	c, err := copyNode(base, &budget)
	if err != nil {
		return errorf(s.Path, base.Line, "base: %v", err)
	}
	s.Base, s.BaseFile, s.Dir = c, s.Path, filepath.Dir(s.Path)
	lines := strings.Split(string(data), "\n")
	if endLine == 0 || endLine > len(lines)+1 {
		endLine = len(lines) + 1
	}
	if base.Line < 1 || base.Line > len(lines) || base.Column < 1 {
		return nil
	}
	var b strings.Builder
	b.WriteString(strings.Repeat("\n", base.Line-1))
	for i := base.Line - 1; i < endLine-1; i++ {
		line := lines[i]
		if i == base.Line-1 {
			if base.Column-1 > len(line) {
				return nil
			}
			line = line[base.Column-1:]
		} else {
			n := 0
			for n < len(line) && n < base.Column-1 && line[n] == ' ' {
				n++
			}
			line = line[n:]
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	var again yaml.Node
	if yaml.Unmarshal([]byte(b.String()), &again) != nil || len(again.Content) == 0 || !sameTree(again.Content[0], base) {
		return nil
	}
	s.baseRaw = []byte(b.String())
	return nil
}

func (s *Sweep) loadBaseFile(rel string, line int) error {
	if rel == "" {
		return errorf(s.Path, line, "base_file: empty path")
	}
	path := rel
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(s.Path), rel)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return errorf(s.Path, line, "base_file %s: %v", rel, unwrapPathError(err))
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return yamlError(path, err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		found := "nothing"
		if len(doc.Content) > 0 {
			found = kindName(doc.Content[0])
		}
		return errorf(path, 0, "a base scenario is a mapping (name, topology, fabric, traffic, ...); found %s", found)
	}
	budget := maxNodes
	c, err := copyNode(doc.Content[0], &budget)
	if err != nil {
		return errorf(path, 0, "%v", err)
	}
	s.Base, s.BaseFile, s.Dir, s.baseRaw = c, path, filepath.Dir(path), data
	return nil
}

// baseSeeds reads the base's own seed, which starts the replicate seeds.
func (s *Sweep) baseSeeds() error {
	first := int64(1)
	if _, v := mappingGet(s.Base, "seed"); v != nil {
		var seed int64
		if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" || v.Decode(&seed) != nil || seed < 0 {
			return errorf(s.BaseFile, v.Line, "seed: must be an integer from 0 to %d; found %s", int64(math.MaxInt64), kindName(v))
		}
		first = seed
	}
	switch {
	case s.seedCount > 0:
		s.Seeds = make([]int64, s.seedCount)
		for i := range s.Seeds {
			if first > math.MaxInt64-int64(i) {
				return errorf(s.Path, s.seedsLine, "seeds: %d replicates from base seed %d overflow", s.seedCount, first)
			}
			s.Seeds[i] = first + int64(i)
		}
	case s.Seeds == nil:
		s.Seeds = []int64{first}
	}
	return nil
}

func (s *Sweep) checkColumns() error {
	cols := map[string]string{}
	for _, r := range reservedColumns {
		cols[r] = "a built-in column"
	}
	for _, m := range s.Metrics {
		if what, dup := cols[m]; dup {
			return errorf(s.Path, 0, "metrics: %q is already %s", m, what)
		}
		cols[m] = "a metric"
	}
	for i, a := range s.Axes {
		if len(a.Field) == 1 && a.Field[0].Key == "seed" {
			return errorf(s.Path, a.Line, "axes[%d]: the seed is not an axis; list replicate seeds under seeds:", i)
		}
		if what, dup := cols[a.Column]; dup {
			return errorf(s.Path, a.Line, "axes[%d]: column %q is already %s; give the axis another name (name: ...)", i, a.Column, what)
		}
		cols[a.Column] = fmt.Sprintf("axes[%d]'s column", i)
		for j, b := range s.Axes[:i] {
			if b.Field.contains(a.Field) || a.Field.contains(b.Field) {
				return errorf(s.Path, a.Line, "axes[%d]: field %s overlaps axes[%d] field %s (line %d); one axis per field", i, a.Field, j, b.Field, b.Line)
			}
		}
	}
	return nil
}

// dims lists the sweep's dimensions: each is one axis or one zip group, in the order of each
// dimension's first axis.
func (s *Sweep) dims() [][]int {
	inZip := map[int]int{}
	for zi, z := range s.Zips {
		for _, a := range z.Axes {
			inZip[a] = zi
		}
	}
	var out [][]int
	done := map[int]bool{}
	for a := range s.Axes {
		zi, ok := inZip[a]
		switch {
		case !ok:
			out = append(out, []int{a})
		case !done[zi]:
			done[zi] = true
			out = append(out, s.Zips[zi].Axes)
		}
	}
	return out
}

// runSize bounds the YAML nodes of one resolved scenario: the base plus each axis's largest
// value.
func (s *Sweep) runSize() int {
	n := countNodes(s.Base)
	for _, a := range s.Axes {
		m := 0
		for _, v := range a.Values {
			m = max(m, countNodes(v))
		}
		n += m
	}
	return n
}

func (s *Sweep) countRuns() (int, error) {
	n := len(s.Seeds)
	for _, d := range s.dims() {
		k := len(s.Axes[d[0]].Values)
		if n > maxRuns || k > maxRuns || n*k > maxRuns {
			return maxRuns + 1, nil
		}
		n *= k
	}
	return n, nil
}

// parser checks the sweep file's decoded parts, keeping the first error; d holds where each
// part was written.
type parser struct {
	file string
	d    *yamlstrict.Decoder
	err  error
}

func (p *parser) fail(line int, format string, args ...any) {
	if p.err == nil {
		p.err = errorf(p.file, line, format, args...)
	}
}

// line is the line field path was written at (or its nearest written parent's).
func (p *parser) line(path string) int {
	for q := path; q != ""; {
		if n := p.d.Node(q); n != nil {
			return n.Line
		}
		i := strings.LastIndexAny(q, ".[")
		if i < 0 {
			break
		}
		q = q[:i]
	}
	return 0
}

// seeds reads a list of seeds or a count of replicates.
func (p *parser) seeds(n *yaml.Node) (list []int64, count int) {
	readInt := func(v *yaml.Node) (int64, bool) {
		var i int64
		if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" || v.Decode(&i) != nil || i < 0 {
			p.fail(v.Line, "seeds: %s is not an integer from 0 to %d", kindName(v), int64(math.MaxInt64))
			return 0, false
		}
		return i, true
	}
	switch n.Kind {
	case yaml.ScalarNode:
		c, ok := readInt(n)
		if !ok {
			return nil, 0
		}
		if c < 1 || c > maxSeeds {
			p.fail(n.Line, "seeds: a count of replicates must be from 1 to %d; found %d", maxSeeds, c)
			return nil, 0
		}
		return nil, int(c)
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			p.fail(n.Line, "seeds: the list is empty; give seeds (e.g. [1, 2, 3]) or a count (e.g. 3)")
			return nil, 0
		}
		if len(n.Content) > maxSeeds {
			p.fail(n.Line, "seeds: %d seeds; at most %d are allowed", len(n.Content), maxSeeds)
			return nil, 0
		}
		var out []int64
		at := map[int64]int{}
		for _, v := range n.Content {
			i, ok := readInt(v)
			if !ok {
				return nil, 0
			}
			if prev, dup := at[i]; dup {
				p.fail(v.Line, "seeds: %d is listed twice (first at line %d)", i, prev)
				return nil, 0
			}
			at[i] = v.Line
			out = append(out, i)
		}
		return out, 0
	}
	p.fail(n.Line, "seeds: give a list of seeds (e.g. [1, 2, 3]) or a count (e.g. 3); found %s", kindName(n))
	return nil, 0
}

func (p *parser) metrics(list []string) []string {
	if len(list) == 0 {
		p.fail(p.line("metrics"), "metrics: give a non-empty list of metric names (e.g. [fct_ns.p99, drops])")
		return nil
	}
	at := map[string]int{}
	for i, m := range list {
		line := p.line(fmt.Sprintf("metrics[%d]", i))
		if !columnName(m) {
			p.fail(line, "metrics: %q is not a metric name (letters, digits, '_', '-', '.', '[', ']')", m)
			return nil
		}
		if prev, dup := at[m]; dup {
			p.fail(line, "metrics: %q is listed twice (first at line %d)", m, prev)
			return nil
		}
		at[m] = line
	}
	return list
}

// columnName reports whether s may name a table column: it must survive CSV headers, Parquet
// schemas and struct tags unchanged.
func columnName(s string) bool {
	if s == "" || len(s) > 200 {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r == '.' || r == '[' || r == ']' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

func (p *parser) axis(i int, spec axisSpec) Axis {
	path := fmt.Sprintf("axes[%d]", i)
	a := Axis{Line: p.line(path)}
	has := func(k string) bool { return p.d.Has(path + "." + k) }
	if !has("field") {
		p.fail(a.Line, "axes[%d]: missing field: (the scenario field to vary, e.g. topology.link.rate)", i)
		return a
	}
	fp, err := ParseFieldPath(spec.Field)
	if err != nil {
		p.fail(p.line(path+".field"), "axes[%d].field: %v", i, err)
		return a
	}
	a.Field, a.Column = fp, fp.String()
	desc := fmt.Sprintf("axes[%d] (%s)", i, a.Column)
	if has("name") {
		a.Column = spec.Name
		if !columnName(a.Column) {
			p.fail(p.line(path+".name"), "%s.name: %q is not a column name (letters, digits, '_', '-', '.', '[', ']')", desc, a.Column)
			return a
		}
	}
	isRange := has("from") || has("to") || has("step") || has("factor")
	switch {
	case has("values") && isRange:
		p.fail(a.Line, "%s: give either values: or a range (from, to, step or factor), not both", desc)
	case has("values"):
		p.values(&a, desc, p.d.Node(path+".values"))
	case isRange:
		p.rangeValues(&a, desc, path, spec)
	default:
		p.fail(a.Line, "%s: no values: give values: [...] or a range {from, to, step} / {from, to, factor}", desc)
	}
	return a
}

func (p *parser) values(a *Axis, desc string, vn *yaml.Node) {
	if vn.Kind != yaml.SequenceNode {
		p.fail(vn.Line, "%s.values: must be a list (e.g. [100Gbps, 400Gbps]); found %s", desc, kindName(vn))
		return
	}
	if len(vn.Content) == 0 {
		p.fail(vn.Line, "%s.values: the axis is empty; list at least one value", desc)
		return
	}
	if len(vn.Content) > maxAxisValues {
		p.fail(vn.Line, "%s.values: %d values; an axis may have at most %d", desc, len(vn.Content), maxAxisValues)
		return
	}
	at := map[string]int{}
	for _, v := range vn.Content {
		budget := maxNodes
		c, err := copyNode(v, &budget)
		if err != nil {
			p.fail(v.Line, "%s.values: %v", desc, err)
			return
		}
		key := canonicalText(c)
		if prev, dup := at[key]; dup {
			p.fail(v.Line, "%s.values: %s is listed twice (first at line %d)", desc, strings.TrimSpace(key), prev)
			return
		}
		at[key] = v.Line
		a.Values = append(a.Values, c)
		a.Labels = append(a.Labels, label(c))
		a.ValueLines = append(a.ValueLines, v.Line)
	}
}

func (p *parser) rangeValues(a *Axis, desc, path string, spec axisSpec) {
	has := func(k string) bool { return p.d.Has(path + "." + k) }
	line := p.line(path)
	var texts []string
	var err error
	errLine := line
	switch {
	case !has("from") || !has("to"):
		p.fail(line, "%s: a range needs from: and to:", desc)
		return
	case has("step") && has("factor"):
		p.fail(line, "%s: give step: (add) or factor: (multiply), not both", desc)
		return
	case has("step"):
		texts, err = stepRange(spec.From, spec.To, spec.Step)
		errLine = p.line(path + ".step")
	case has("factor"):
		texts, err = factorRange(spec.From, spec.To, spec.Factor)
		errLine = p.line(path + ".factor")
	default:
		p.fail(line, "%s: a range needs step: (e.g. 1) or factor: (e.g. 2)", desc)
		return
	}
	if err != nil {
		p.fail(errLine, "%s: %v", desc, err)
		return
	}
	fromLine := p.line(path + ".from")
	for _, t := range texts {
		v := &yaml.Node{Kind: yaml.ScalarNode, Value: t, Line: fromLine}
		v.Tag = v.ShortTag()
		a.Values = append(a.Values, v)
		a.Labels = append(a.Labels, t)
		a.ValueLines = append(a.ValueLines, fromLine)
	}
}

func (p *parser) zips(groups [][]string, axes []Axis) []Zip {
	byName := map[string]int{}
	var names []string
	for i, a := range axes {
		byName[a.Field.String()] = i
		byName[a.Column] = i
		names = append(names, a.Column)
	}
	sort.Strings(names)
	inGroup := map[int]int{}
	var out []Zip
	for gi, g := range groups {
		gline := p.line(fmt.Sprintf("zip[%d]", gi))
		if len(g) < 2 {
			p.fail(gline, "zip[%d]: a group is a list of at least two axes (by field or name); this one has %d", gi, len(g))
			return nil
		}
		z := Zip{Line: gline}
		for ni, name := range g {
			line := p.line(fmt.Sprintf("zip[%d][%d]", gi, ni))
			ai, ok := byName[name]
			if !ok {
				p.fail(line, "zip[%d]: %q is not an axis (axes: %s)", gi, name, strings.Join(names, ", "))
				return nil
			}
			if prev, dup := inGroup[ai]; dup {
				p.fail(line, "zip[%d]: axis %q is already zipped (line %d); an axis belongs to one group", gi, name, prev)
				return nil
			}
			inGroup[ai] = line
			if len(axes[ai].Values) != len(axes[z.first(ai)].Values) {
				first := axes[z.first(ai)]
				p.fail(line, "zip[%d]: axis %s has %d values (line %d) but %s has %d (line %d); zipped axes need equal lengths", gi, axes[ai].Column, len(axes[ai].Values), axes[ai].Line, first.Column, len(first.Values), first.Line)
				return nil
			}
			z.Axes = append(z.Axes, ai)
		}
		sort.Ints(z.Axes)
		out = append(out, z)
	}
	return out
}

// first is the group's first axis so far, or a when the group is empty.
func (z Zip) first(a int) int {
	if len(z.Axes) == 0 {
		return a
	}
	return z.Axes[0]
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
