// Package yamlstrict decodes YAML node trees into Go structs strictly, for every file format
// fabricsim reads (scenarios, compare scenarios): every key must name a field (the error lists
// the valid ones), a key may not appear twice, every scalar must parse as its field's type, and
// rates, sizes and durations are parsed with the units package. The decoder records the node
// each field path was written at and which paths were present, so that defaults fill only what
// the user left out and later validation can point at the line and column.
//
// Struct fields take their key from the `yaml` tag (the lower-cased field name without one);
// `yaml:"-"` skips a field; `yaml:",inline"` on a struct field merges its keys into the
// parent's, so a section's kind-specific keys can live in their own type.
package yamlstrict

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fabricsim/fabricsim/units"
)

// Pos is a position in a source file.
type Pos struct {
	Line, Col int
}

// Error is an input error: file, position, the dotted field path and what is wrong.
type Error struct {
	File  string
	Pos   Pos
	Field string
	Msg   string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Pos.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Pos.Line, e.Pos.Col)
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Decoder decodes one file.
type Decoder struct {
	File    string
	nodes   map[string]*yaml.Node
	present map[string]bool
}

// NewDecoder returns a decoder whose errors name file.
func NewDecoder(file string) *Decoder {
	return &Decoder{File: file, nodes: map[string]*yaml.Node{}, present: map[string]bool{}}
}

var (
	rateType = reflect.TypeOf(units.Rate(0))
	sizeType = reflect.TypeOf(units.Size(0))
	timeType = reflect.TypeOf(units.Time(0))
)

// ErrAt returns an error at node n (no position when n is nil) for field path.
func (d *Decoder) ErrAt(n *yaml.Node, path, format string, args ...any) *Error {
	e := &Error{File: d.File, Field: path, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Pos = Pos{n.Line, n.Column}
	}
	return e
}

// At returns an error placed where field path was written, or at its nearest written parent
// (a defaulted field is reported at the section that left it out).
func (d *Decoder) At(path, format string, args ...any) *Error {
	for p := path; ; {
		if n, ok := d.nodes[p]; ok {
			return d.ErrAt(n, path, format, args...)
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			return d.ErrAt(d.nodes[""], path, format, args...)
		}
		p = p[:i]
	}
}

// Has reports whether the file wrote field path.
func (d *Decoder) Has(path string) bool { return d.present[path] }

// Node returns the node field path was written at, or nil.
func (d *Decoder) Node(path string) *yaml.Node { return d.nodes[path] }

// Record marks path as written at n (for sections a caller decodes by other means).
func (d *Decoder) Record(path string, n *yaml.Node) {
	d.nodes[path] = n
	d.present[path] = true
}

// Join appends key to a dotted field path.
func Join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func yamlName(f reflect.StructField) string {
	tag := f.Tag.Get("yaml")
	if tag == "-" {
		return ""
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		name = strings.ToLower(f.Name)
	}
	return name
}

// collectFields maps YAML keys to field index paths, descending into `yaml:",inline"` structs.
func collectFields(t reflect.Type, prefix []int, fields map[string][]int, names *[]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		idx := append(append([]int(nil), prefix...), i)
		if strings.Contains(f.Tag.Get("yaml"), ",inline") && f.Type.Kind() == reflect.Struct {
			collectFields(f.Type, idx, fields, names)
			continue
		}
		if name := yamlName(f); name != "" {
			fields[name] = idx
			*names = append(*names, name)
		}
	}
}

// Decode decodes n into v (a settable value, e.g. reflect.ValueOf(&x).Elem()) at field path.
func (d *Decoder) Decode(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		n = n.Content[0]
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	d.Record(path, n)
	if n.Tag == "!!null" && v.Kind() != reflect.Pointer {
		return d.ErrAt(n, path, "has no value")
	}
	switch v.Type() {
	case rateType, sizeType, timeType:
		if n.Kind != yaml.ScalarNode {
			return d.ErrAt(n, path, "want a single value, got a %s", KindName(n))
		}
		var x int64
		var err error
		switch v.Type() {
		case rateType:
			var r units.Rate
			r, err = units.ParseRate(n.Value)
			x = int64(r)
		case sizeType:
			var s units.Size
			s, err = units.ParseSize(n.Value)
			x = int64(s)
		default:
			var t units.Time
			t, err = units.ParseTime(n.Value)
			x = int64(t)
		}
		if err != nil {
			return d.ErrAt(n, path, "%v", err)
		}
		v.SetInt(x)
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer:
		if n.Tag == "!!null" {
			return nil
		}
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return d.Decode(n, v.Elem(), path)
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return d.ErrAt(n, path, "want a mapping of keys, got a %s", KindName(n))
		}
		fields := map[string][]int{}
		var names []string
		collectFields(v.Type(), nil, fields, &names)
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			idx, ok := fields[k.Value]
			if !ok {
				sort.Strings(names)
				return d.ErrAt(k, Join(path, k.Value), "unknown key (valid keys here: %s)", strings.Join(names, ", "))
			}
			if seen[k.Value] {
				return d.ErrAt(k, Join(path, k.Value), "key given twice")
			}
			seen[k.Value] = true
			if err := d.Decode(val, v.FieldByIndex(idx), Join(path, k.Value)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Slice:
		if n.Kind == yaml.ScalarNode && v.Type().Elem().Kind() == reflect.String {
			// A list of names may also be written "a,b" or as a single name.
			parts := strings.Split(n.Value, ",")
			s := reflect.MakeSlice(v.Type(), 0, len(parts))
			for _, p := range parts {
				s = reflect.Append(s, reflect.ValueOf(strings.TrimSpace(p)).Convert(v.Type().Elem()))
			}
			v.Set(s)
			return nil
		}
		if n.Kind != yaml.SequenceNode {
			return d.ErrAt(n, path, "want a list, got a %s", KindName(n))
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			if err := d.Decode(c, s.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		return d.ErrAt(n, path, "want a single value, got a %s", KindName(n))
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(n.Value)
	case reflect.Bool:
		b, err := strconv.ParseBool(n.Value)
		if err != nil {
			return d.ErrAt(n, path, "%q is not true or false", n.Value)
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		x, err := strconv.ParseInt(n.Value, 0, 64)
		if err != nil || v.OverflowInt(x) {
			return d.ErrAt(n, path, "%q is not a whole number (or is out of range)", n.Value)
		}
		v.SetInt(x)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		x, err := strconv.ParseUint(n.Value, 0, 64)
		if err != nil || v.OverflowUint(x) {
			return d.ErrAt(n, path, "%q is not a whole number >= 0 (or is too large)", n.Value)
		}
		v.SetUint(x)
	case reflect.Float32, reflect.Float64:
		x, err := strconv.ParseFloat(n.Value, 64)
		if err != nil {
			return d.ErrAt(n, path, "%q is not a number", n.Value)
		}
		v.SetFloat(x)
	default:
		return d.ErrAt(n, path, "unsupported field type %s", v.Type())
	}
	return nil
}

// KindName describes a node for messages: "mapping", "list" or the scalar's value.
func KindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return fmt.Sprintf("value %q", n.Value)
	}
	return "node"
}

// Describe names a node for messages about what a field got: "a mapping", "a list", "an
// alias", the quoted value of a scalar, or "nothing".
func Describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return strconv.Quote(n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "nothing"
}

// ParseBool reads a YAML 1.1 boolean as users write it (true/false, yes/no, on/off, any case);
// ok is false for anything else.
func ParseBool(s string) (v, ok bool) {
	switch strings.ToLower(s) {
	case "true", "yes", "on":
		return true, true
	case "false", "no", "off":
		return false, true
	}
	return false, false
}

// Errf reports a problem with the value of field at node n, in its caller's error format. The
// node readers below take one, so that decoders that walk nodes by hand (the cost catalogue,
// training workloads) share the reading and keep their own messages' frame.
type Errf func(n *yaml.Node, field, format string, args ...any) error

// Scalar returns n's value, or an error if n is a mapping or a list.
func Scalar(n *yaml.Node, field string, errf Errf) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", errf(n, field, "want a single value, got %s", Describe(n))
	}
	return n.Value, nil
}

// Bool reads a boolean scalar (ParseBool's spellings).
func Bool(n *yaml.Node, field string, errf Errf) (bool, error) {
	s, err := Scalar(n, field, errf)
	if err != nil {
		return false, err
	}
	if v, ok := ParseBool(s); ok {
		return v, nil
	}
	return false, errf(n, field, "want true or false, got %q", s)
}

// Parsed reads a scalar with parse (units.ParseSize, units.ParseRate ...), reporting parse's
// error at the node.
func Parsed[T any](n *yaml.Node, field string, errf Errf, parse func(string) (T, error)) (T, error) {
	var zero T
	s, err := Scalar(n, field, errf)
	if err != nil {
		return zero, err
	}
	v, err := parse(s)
	if err != nil {
		return zero, errf(n, field, "%v", err)
	}
	return v, nil
}
