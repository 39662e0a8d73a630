package scenario

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

// Error is a scenario error: file, position, the dotted field path and what is wrong.
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

// decoder decodes a YAML node tree into Go structs strictly: every key must name a field (the
// error lists the valid ones), every scalar must parse as its field's type, and units are parsed
// with the units package. It records where each field path was written and which were present,
// so that defaults fill only what the user left out and validation errors point at the line.
type decoder struct {
	file    string
	pos     map[string]Pos
	present map[string]bool
}

var (
	rateType = reflect.TypeOf(units.Rate(0))
	sizeType = reflect.TypeOf(units.Size(0))
	timeType = reflect.TypeOf(units.Time(0))
)

func (d *decoder) errAt(n *yaml.Node, path, format string, args ...any) error {
	return &Error{File: d.file, Pos: Pos{n.Line, n.Column}, Field: path, Msg: fmt.Sprintf(format, args...)}
}

func join(path, key string) string {
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

func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		n = n.Content[0]
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	d.pos[path] = Pos{n.Line, n.Column}
	d.present[path] = true
	if n.Tag == "!!null" && v.Kind() != reflect.Pointer {
		return d.errAt(n, path, "has no value")
	}
	switch v.Type() {
	case rateType, sizeType, timeType:
		if n.Kind != yaml.ScalarNode {
			return d.errAt(n, path, "want a single value, got a %s", kindName(n))
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
			return d.errAt(n, path, "%v", err)
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
		return d.decode(n, v.Elem(), path)
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return d.errAt(n, path, "want a mapping of keys, got a %s", kindName(n))
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
				return d.errAt(k, join(path, k.Value), "unknown key (valid keys here: %s)", strings.Join(names, ", "))
			}
			if seen[k.Value] {
				return d.errAt(k, join(path, k.Value), "key given twice")
			}
			seen[k.Value] = true
			if err := d.decode(val, v.FieldByIndex(idx), join(path, k.Value)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return d.errAt(n, path, "want a list, got a %s", kindName(n))
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			if err := d.decode(c, s.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		return d.errAt(n, path, "want a single value, got a %s", kindName(n))
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(n.Value)
	case reflect.Bool:
		b, err := strconv.ParseBool(n.Value)
		if err != nil {
			return d.errAt(n, path, "%q is not true or false", n.Value)
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int32, reflect.Int64:
		x, err := strconv.ParseInt(n.Value, 0, 64)
		if err != nil || v.OverflowInt(x) {
			return d.errAt(n, path, "%q is not a whole number", n.Value)
		}
		v.SetInt(x)
	case reflect.Uint, reflect.Uint8, reflect.Uint32, reflect.Uint64:
		x, err := strconv.ParseUint(n.Value, 0, 64)
		if err != nil || v.OverflowUint(x) {
			return d.errAt(n, path, "%q is not a whole number >= 0 (or is too large)", n.Value)
		}
		v.SetUint(x)
	case reflect.Float64:
		x, err := strconv.ParseFloat(n.Value, 64)
		if err != nil {
			return d.errAt(n, path, "%q is not a number", n.Value)
		}
		v.SetFloat(x)
	default:
		return d.errAt(n, path, "unsupported field type %s", v.Type())
	}
	return nil
}

// collectFields maps YAML keys to field index paths, descending into `yaml:",inline"` structs so
// that a fabric's own parameters can live in their own type and file.
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

func kindName(n *yaml.Node) string {
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
