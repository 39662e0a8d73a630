package roceconf

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/yamlstrict"
)

// File is one configuration file to import.
type File struct {
	Name string
	Data []byte
}

// Pos is where a vendor setting was read: file, line (1-based, 0 = the whole file) and the
// vendor's key ("nv set qos pfc default-global switch-priority", "WRED_PROFILE|AZURE_LOSSLESS|green_min_threshold").
type Pos struct {
	File string
	Line int
	Key  string
}

func (p Pos) String() string {
	loc := p.File
	if p.Line > 0 {
		loc = fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	if p.Key == "" {
		return loc
	}
	return loc + ": " + p.Key
}

// Error is a file that cannot be imported: an unknown dialect, a syntax error, a value outside
// its range, settings that contradict each other. It names file:line and the vendor key.
type Error struct {
	Pos
	Msg string
}

func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

func errAt(p Pos, format string, args ...any) *Error {
	return &Error{Pos: p, Msg: fmt.Sprintf(format, args...)}
}

// Note is a line or key the import did not turn into a fabricsim setting (unknown, or a setting
// fabricsim does not model), with why.
type Note struct {
	Pos
	Msg string
}

func (n Note) String() string { return n.Pos.String() + ": " + n.Msg }

// Imported is what a set of configuration files says in fabricsim's terms: the keys under
// `fabric:` they set, with where each came from, over fabric.DefaultRoCE.
type Imported struct {
	// Config is fabric.DefaultRoCE with the imported keys applied.
	Config fabric.Config
	origin map[string]Pos
	// Notes are the lines and keys not imported, in file order.
	Notes []Note
}

// keyIndex maps each fabric key name to its field.
var keyIndex = func() map[string]fabric.Key {
	m := map[string]fabric.Key{}
	for _, k := range fabric.Keys() {
		m[k.Name] = k
	}
	return m
}()

func newImported() *Imported {
	return &Imported{Config: fabric.DefaultRoCE(), origin: map[string]Pos{}}
}

// Text is the value of a fabric key in the imported configuration, as a scenario writes it.
func (im *Imported) Text(key string) string { return keyText(&im.Config, key) }

func keyText(c *fabric.Config, key string) string {
	k, ok := keyIndex[key]
	if !ok {
		panic("roceconf: no fabric key " + key)
	}
	return yamlstrict.Text(reflect.ValueOf(c).Elem().FieldByIndex(k.Index))
}

// Keys are the fabric keys the files set, in fabric.Keys order.
func (im *Imported) Keys() []string {
	var out []string
	for _, k := range fabric.Keys() {
		if _, ok := im.origin[k.Name]; ok {
			out = append(out, k.Name)
		}
	}
	return out
}

// Origin is where key was set.
func (im *Imported) Origin(key string) (Pos, bool) {
	p, ok := im.origin[key]
	return p, ok
}

// fileImport is one file's settings before they join the result: a file may set a key twice
// (the later line wins, as on the device); two files must agree.
type fileImport struct {
	im     *Imported
	file   string
	cfg    fabric.Config
	origin map[string]Pos
	notes  []Note
}

func (im *Imported) file(name string) *fileImport {
	return &fileImport{im: im, file: name, cfg: im.Config, origin: map[string]Pos{}}
}

// set applies one setting of key, read at p.
func (fi *fileImport) set(key string, p Pos, apply func(c *fabric.Config)) {
	if _, ok := keyIndex[key]; !ok {
		panic("roceconf: no fabric key " + key)
	}
	apply(&fi.cfg)
	fi.origin[key] = p
}

func (fi *fileImport) note(p Pos, format string, args ...any) {
	fi.notes = append(fi.notes, Note{Pos: p, Msg: fmt.Sprintf(format, args...)})
}

// commit adds the file's settings to the result; a key another file set to another value is an
// error naming both places.
func (fi *fileImport) commit() error {
	im := fi.im
	keys := make([]string, 0, len(fi.origin))
	for k := range fi.origin {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if prev, ok := im.origin[k]; ok {
			if a, b := keyText(&im.Config, k), keyText(&fi.cfg, k); a != b {
				return errAt(fi.origin[k], "sets fabric.%s to %s, but %s set it to %s", k, b, prev, a)
			}
		}
	}
	for _, k := range keys {
		field := keyIndex[k].Index
		reflect.ValueOf(&im.Config).Elem().FieldByIndex(field).Set(reflect.ValueOf(&fi.cfg).Elem().FieldByIndex(field))
		im.origin[k] = fi.origin[k]
	}
	im.Notes = append(im.Notes, fi.notes...)
	return nil
}

// Import reads files in format f ("" detects each file's dialect) into fabricsim settings. The
// result's configuration is checked as a scenario would be (fabric.Config.Validate), a bad
// value reported at the vendor setting it came from.
func Import(f Format, files []File) (*Imported, error) {
	im := newImported()
	for _, file := range files {
		ff := f
		if ff == "" {
			var err error
			if ff, err = Detect(file.Name, file.Data); err != nil {
				return nil, err
			}
		} else if d, err := Detect(file.Name, file.Data); err != nil {
			return nil, errAt(Pos{File: file.Name}, "holds no %s configuration: %s", ff, err.(*Error).Msg)
		} else if d != ff {
			return nil, errAt(Pos{File: file.Name}, "reads as %s, not %s: give --format %s, or leave --format out to detect each file's format", d, ff, d)
		}
		fi := im.file(file.Name)
		var err error
		switch ff {
		case NVUE:
			err = importNVUE(fi, file.Data)
		case SONiC:
			err = importSONiC(fi, file.Data)
		case EOS:
			err = importEOS(fi, file.Data)
		case ConnectX:
			err = importConnectX(fi, file.Data)
		default:
			_, err = ParseFormat(string(ff))
		}
		if err != nil {
			return nil, err
		}
		if err := fi.commit(); err != nil {
			return nil, err
		}
	}
	// A switch that does not mark leaves DCQCN nothing to react to; the scenario needs it off
	// unless a host file said otherwise (then Validate reports the contradiction).
	if p, ok := im.origin["ecn"]; ok && !im.Config.RoCE.ECN && im.Config.RoCE.DCQCN {
		if _, ok := im.origin["dcqcn"]; !ok {
			im.Config.RoCE.DCQCN = false
			im.origin["dcqcn"] = p
		}
	}
	if err := im.Config.Validate(); err != nil {
		if fe, ok := err.(*yamlstrict.FieldError); ok {
			top, _, _ := strings.Cut(fe.Key, "[")
			if p, ok := im.origin[top]; ok {
				return nil, errAt(p, "gives fabric.%s: %s", fe.Key, fe.Msg)
			}
			return nil, fmt.Errorf("the imported settings are not valid together: fabric.%s: %s", fe.Key, fe.Msg)
		}
		return nil, fmt.Errorf("the imported settings are not valid together: %v", err)
	}
	return im, nil
}

// Detect tells a file's dialect from its content: a JSON object (SONiC config_db.json), `nv
// set`/`nv unset` lines (NVUE), `mlnx_qos`, cc_params or `ecn/roce_` lines (ConnectX), EOS
// configuration keywords. Anything else is an error saying what each dialect looks like.
func Detect(name string, data []byte) (Format, error) {
	t := bytes.TrimSpace(data)
	if len(t) > 0 && t[0] == '{' {
		return SONiC, nil
	}
	var nvue, cx, eos int
	for _, raw := range strings.Split(string(data), "\n") {
		l := strings.TrimSpace(raw)
		switch {
		case l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "!"):
		case strings.HasPrefix(l, "nv set ") || strings.HasPrefix(l, "nv unset ") || l == "nv config apply":
			nvue++
		case strings.HasPrefix(l, "mlnx_qos ") || strings.Contains(l, "cc_params/") || strings.Contains(l, "/ecn/roce_") ||
			strings.HasPrefix(l, "ip link set ") || strings.HasPrefix(l, "export NCCL_") || cxKnobLine(l):
			cx++
		case eosLine(l):
			eos++
		}
	}
	switch {
	case nvue > 0 && nvue >= cx && nvue >= eos:
		return NVUE, nil
	case cx > 0 && cx >= eos:
		return ConnectX, nil
	case eos > 0:
		return EOS, nil
	}
	return "", errAt(Pos{File: name}, "not a configuration format fabricsim reads (valid: nvue: `nv set qos ...` lines; sonic: a config_db.json object; eos: EOS CLI such as `qos profile`, `priority-flow-control`, `uc-tx-queue`; connectx: `mlnx_qos` and cc_params lines)")
}

// WriteYAML writes the imported keys as a scenario's fabric section, each with where it came
// from as a comment, followed by the notes as comments.
func (im *Imported) WriteYAML(w io.Writer, header []string) error {
	var b bytes.Buffer
	for _, h := range header {
		fmt.Fprintf(&b, "# %s\n", h)
	}
	b.WriteString("fabric:\n  kind: roce\n")
	for _, k := range im.Keys() {
		fmt.Fprintf(&b, "  %s: %s  # %s\n", k, im.Text(k), im.origin[k])
	}
	if len(im.Notes) > 0 {
		b.WriteString("# not imported:\n")
		for _, n := range im.Notes {
			fmt.Fprintf(&b, "#   %s\n", n)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}
