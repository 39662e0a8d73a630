// Package yamlstrict decodes YAML node trees into Go structs strictly, for every file format
// fabricsim reads (scenarios, compare scenarios, training workloads, cost catalogues, sweeps):
// every key must name a field (the error lists the valid ones), a key may not appear twice, every
// scalar must parse as its field's type, and rates, sizes and durations are parsed with the units
// package. The decoder records the node each field path was written at and which paths were
// present, so that defaults fill only what the user left out and later validation can point at
// the line and column.
//
// Struct fields take their key from the `yaml` tag (the lower-cased field name without one);
// `yaml:"-"` skips a field; `yaml:",inline"` on a struct field merges its keys into the
// parent's, so a section's kind-specific keys can live in their own type; `yaml:"key,partial"`
// on an array lets a list give only its first entries (the rest keep their values). A type
// decodes itself when it implements Unmarshaler (any node) or encoding.TextUnmarshaler (a
// scalar: the way modes such as a routing policy are parsed at the edge, with an error that
// lists the valid values). A *yaml.Node field keeps the node as written, for sections another
// decoder reads later.
//
// Validate methods report a bad value as a FieldError naming the key path relative to the
// value they check; Decoder.Place puts it at the line and column where that key was written.
package yamlstrict

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

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
	switch {
	case e.File != "" && e.Pos.Line > 0:
		fmt.Fprintf(&b, "%s:%d:%d: ", e.File, e.Pos.Line, e.Pos.Col)
	case e.File != "":
		b.WriteString(e.File + ": ")
	case e.Pos.Line > 0:
		fmt.Fprintf(&b, "line %d:%d: ", e.Pos.Line, e.Pos.Col)
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// FieldError is a bad value found by a Validate method: Key is the YAML key path of the value
// relative to what was validated ("pfc_xoff", "ib_cc.ccti_min", "weights[3]").
type FieldError struct {
	Key string
	Msg string
}

func (e *FieldError) Error() string { return e.Key + ": " + e.Msg }

// Errorf returns a FieldError for key.
func Errorf(key, format string, args ...any) *FieldError {
	return &FieldError{Key: key, Msg: fmt.Sprintf(format, args...)}
}

// Within prefixes the key of a FieldError with the key of the section it sits in (a nested
// type's Validate reports keys relative to itself); other errors pass unchanged.
func Within(section string, err error) error {
	var fe *FieldError
	if errors.As(err, &fe) {
		return &FieldError{Key: Join(section, fe.Key), Msg: fe.Msg}
	}
	return err
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

// Unmarshaler is implemented by types that decode themselves from a node (a list written as a
// bit set, a preset name or a mapping). path is the node's field path, for d.ErrAt and for
// decoding parts with d.Decode.
type Unmarshaler interface {
	DecodeYAML(d *Decoder, n *yaml.Node, path string) error
}

var (
	rateType        = reflect.TypeOf(units.Rate(0))
	sizeType        = reflect.TypeOf(units.Size(0))
	timeType        = reflect.TypeOf(units.Time(0))
	nodeType        = reflect.TypeOf(yaml.Node{})
	unmarshalerType = reflect.TypeOf((*Unmarshaler)(nil)).Elem()
	textType        = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()
)

// Parse reads a YAML document. An empty document is an Error saying the file is empty and what
// it should hold (want); a syntax error is one with the line yaml reports.
func Parse(data []byte, file, want string) (*yaml.Node, error) {
	var root yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&root); err != nil {
		if errors.Is(err, io.EOF) || len(bytes.TrimSpace(data)) == 0 {
			return nil, &Error{File: file, Msg: "file is empty (want " + want + ")"}
		}
		return nil, &Error{File: file, Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if len(root.Content) == 0 {
		return nil, &Error{File: file, Msg: "file is empty (want " + want + ")"}
	}
	return &root, nil
}

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

// Place turns a FieldError from validating the value at field path section into an Error at
// the line and column of its key; other errors become an Error at section.
func (d *Decoder) Place(section string, err error) error {
	if err == nil {
		return nil
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		return d.At(Join(section, fe.Key), "%s", fe.Msg)
	}
	return d.At(section, "%v", err)
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

// Join appends key to a dotted field path; an index ("[2]") is appended without a dot.
func Join(path, key string) string {
	if path == "" {
		return key
	}
	if key == "" {
		return path
	}
	if key[0] == '[' {
		return path + key
	}
	return path + "." + key
}

// Field is one YAML key of a struct type: its key, the Go field (Index into the struct, through
// inline structs) and the field's tag.
type Field struct {
	Key   string
	Index []int
	reflect.StructField
	// Partial: a list may give only an array's first entries.
	Partial bool
}

// Fields lists the YAML keys of struct type t in declaration order, descending into
// `yaml:",inline"` fields. Two fields with the same key are a programming error (panic).
func Fields(t reflect.Type) []Field {
	var out []Field
	seen := map[string]bool{}
	var walk func(t reflect.Type, prefix []int)
	walk = func(t reflect.Type, prefix []int) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			idx := append(append([]int(nil), prefix...), i)
			tag := f.Tag.Get("yaml")
			name, opts, _ := strings.Cut(tag, ",")
			if strings.Contains(","+opts+",", ",inline,") && f.Type.Kind() == reflect.Struct {
				walk(f.Type, idx)
				continue
			}
			if tag == "-" {
				continue
			}
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			if seen[name] {
				panic(fmt.Sprintf("yamlstrict: key %q given to two fields of %s", name, t))
			}
			seen[name] = true
			out = append(out, Field{Key: name, Index: idx, StructField: f, Partial: strings.Contains(","+opts+",", ",partial,")})
		}
	}
	walk(t, nil)
	return out
}

// fieldCache holds Fields by type: a scenario decodes the same types many times (sweeps).
var fieldCache sync.Map // reflect.Type -> []Field

func cachedFields(t reflect.Type) []Field {
	if f, ok := fieldCache.Load(t); ok {
		return f.([]Field)
	}
	f := Fields(t)
	fieldCache.Store(t, f)
	return f
}

// Decode decodes n into v (a settable value, e.g. reflect.ValueOf(&x).Elem()) at field path.
// Fields the document leaves out keep the values v already holds, so a caller may fill v with
// defaults first.
func (d *Decoder) Decode(n *yaml.Node, v reflect.Value, path string) error {
	return d.decode(n, v, path, false)
}

func (d *Decoder) decode(n *yaml.Node, v reflect.Value, path string, partial bool) error {
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
	if v.Type() == nodeType {
		v.Set(reflect.ValueOf(*n))
		return nil
	}
	if v.Kind() == reflect.Pointer && v.Type().Elem() == nodeType {
		v.Set(reflect.ValueOf(n))
		return nil
	}
	if n.Tag == "!!null" && v.Kind() != reflect.Pointer {
		return d.ErrAt(n, path, "has no value")
	}
	if v.CanAddr() {
		switch p := v.Addr().Interface().(type) {
		case Unmarshaler:
			return p.DecodeYAML(d, n, path)
		case encoding.TextUnmarshaler:
			if n.Kind != yaml.ScalarNode {
				return d.ErrAt(n, path, "want a single value, got a %s", KindName(n))
			}
			if err := p.UnmarshalText([]byte(n.Value)); err != nil {
				return d.ErrAt(n, path, "%v", err)
			}
			return nil
		}
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
		return d.decode(n, v.Elem(), path, false)
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return d.ErrAt(n, path, "want a mapping of keys, got a %s", KindName(n))
		}
		fields := cachedFields(v.Type())
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			var f *Field
			for j := range fields {
				if fields[j].Key == k.Value {
					f = &fields[j]
					break
				}
			}
			if f == nil {
				names := make([]string, len(fields))
				for j := range fields {
					names[j] = fields[j].Key
				}
				sort.Strings(names)
				return d.ErrAt(k, Join(path, k.Value), "unknown key (valid keys here: %s)", strings.Join(names, ", "))
			}
			if seen[k.Value] {
				return d.ErrAt(k, Join(path, k.Value), "key given twice")
			}
			seen[k.Value] = true
			if err := d.decode(val, v.FieldByIndex(f.Index), Join(path, k.Value), f.Partial); err != nil {
				return err
			}
		}
		return nil
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			return d.ErrAt(n, path, "unsupported field type %s", v.Type())
		}
		if n.Kind != yaml.MappingNode {
			return d.ErrAt(n, path, "want a mapping, got a %s", KindName(n))
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if seen[k.Value] {
				return d.ErrAt(k, Join(path, k.Value), "key given twice")
			}
			seen[k.Value] = true
			key := reflect.ValueOf(k.Value).Convert(v.Type().Key())
			// An entry already there is decoded over a copy (a file overriding some fields of
			// a built-in entry); a pointer entry is copied one level deep.
			e := reflect.New(v.Type().Elem()).Elem()
			if old := v.MapIndex(key); old.IsValid() {
				if old.Kind() == reflect.Pointer && !old.IsNil() {
					c := reflect.New(old.Type().Elem())
					c.Elem().Set(old.Elem())
					e.Set(c)
				} else {
					e.Set(old)
				}
			}
			if err := d.decode(val, e, Join(path, k.Value), false); err != nil {
				return err
			}
			v.SetMapIndex(key, e)
		}
		return nil
	case reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return d.ErrAt(n, path, "want a list, got a %s", KindName(n))
		}
		switch {
		case partial && len(n.Content) > v.Len():
			return d.ErrAt(n, path, "%d entries; at most %d", len(n.Content), v.Len())
		case !partial && len(n.Content) != v.Len():
			return d.ErrAt(n, path, "want %d entries, got %d", v.Len(), len(n.Content))
		}
		for i, c := range n.Content {
			if err := d.decode(c, v.Index(i), fmt.Sprintf("%s[%d]", path, i), false); err != nil {
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
			if err := d.decode(c, s.Index(i), fmt.Sprintf("%s[%d]", path, i), false); err != nil {
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
		b, ok := ParseBool(n.Value)
		if !ok {
			return d.ErrAt(n, path, "%q is not true or false", n.Value)
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		x, err := parseInt(n.Value)
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return d.ErrAt(n, path, "%s is out of range", n.Value)
			}
			return d.ErrAt(n, path, "%q is not a whole number", n.Value)
		}
		if v.OverflowInt(x) {
			bits := v.Type().Bits()
			return d.ErrAt(n, path, "%d outside %d..%d", x, int64(-1)<<(bits-1), int64(1)<<(bits-1)-1)
		}
		v.SetInt(x)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		x, err := strconv.ParseUint(strings.ReplaceAll(n.Value, "_", ""), 10, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			var i int64
			if i, err = parseInt(n.Value); err == nil {
				if i < 0 {
					if v.Type().Bits() == 64 {
						return d.ErrAt(n, path, "%q is not a whole number >= 0", n.Value)
					}
					return d.ErrAt(n, path, "%d outside 0..%d", i, uint64(1)<<v.Type().Bits()-1)
				}
				x = uint64(i)
			}
		}
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return d.ErrAt(n, path, "%s is out of range", n.Value)
			}
			return d.ErrAt(n, path, "%q is not a whole number", n.Value)
		}
		if v.OverflowUint(x) {
			return d.ErrAt(n, path, "%d outside 0..%d", x, uint64(1)<<v.Type().Bits()-1)
		}
		v.SetUint(x)
	case reflect.Float32, reflect.Float64:
		x, err := strconv.ParseFloat(n.Value, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return d.ErrAt(n, path, "%q is not a number", n.Value)
		}
		v.SetFloat(x)
	default:
		return d.ErrAt(n, path, "unsupported field type %s", v.Type())
	}
	return nil
}

// Text writes a value the way a file would (the inverse of Decode): rates, sizes, durations
// and other types with a String method by it, lists as "[a, b]", structs as "{key: value}" by
// their YAML keys, numbers in their shortest exact form.
func Text(v reflect.Value) string {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "null"
		}
		v = v.Elem()
	}
	if v.CanInterface() {
		if s, ok := v.Interface().(fmt.Stringer); ok {
			return s.String()
		}
	}
	switch v.Kind() {
	case reflect.String:
		if v.Len() == 0 {
			return `""`
		}
		return v.String()
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case reflect.Slice, reflect.Array:
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = Text(v.Index(i))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case reflect.Struct:
		var parts []string
		for _, f := range cachedFields(v.Type()) {
			parts = append(parts, f.Key+": "+Text(v.FieldByIndex(f.Index)))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v.Interface())
}

// parseInt reads a whole number as users write it: decimal digits, "_" between them allowed
// ("8_030_000_000"), or a whole number in exponent notation ("8.03e9").
func parseInt(s string) (int64, error) {
	t := strings.ReplaceAll(s, "_", "")
	x, err := strconv.ParseInt(t, 10, 64)
	if err == nil || errors.Is(err, strconv.ErrRange) {
		return x, err
	}
	if f, ferr := strconv.ParseFloat(t, 64); ferr == nil && f == math.Trunc(f) && math.Abs(f) < 1<<63 {
		return int64(f), nil
	}
	return 0, err
}

// Lookup returns the value of key in mapping n, or nil (also when n is not a mapping): for a
// type's DecodeYAML that needs one key before the rest (a preset named by "base").
func Lookup(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
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

// ParseBool reads a boolean as users write it: true/false, yes/no, on/off (YAML 1.1), in any
// case, or 1/0; ok is false for anything else.
func ParseBool(s string) (v, ok bool) {
	switch strings.ToLower(s) {
	case "true", "yes", "on", "1":
		return true, true
	case "false", "no", "off", "0":
		return false, true
	}
	return false, false
}
