package scenario

import (
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/yamlstrict"
)

// docRow is one key of the fabric tables of docs/scenario.md.
type docRow struct {
	kind, def string
	line      int
}

// fabricDocRows reads the key tables of docs/scenario.md's fabric section: the generic table,
// then one per kind (### `kind: roce` ...). A row may name several keys ("`a`, `b`") with one
// default each or one for all.
func fabricDocRows(t *testing.T) map[string]docRow {
	t.Helper()
	data, err := os.ReadFile("../docs/scenario.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]docRow{}
	kind, in := "", false
	keyRe := regexp.MustCompile("`([a-z0-9_.]+)`")
	for i, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			in, kind = line == "## fabric", ""
			continue
		case strings.HasPrefix(line, "### `kind: "):
			kind = strings.TrimSuffix(strings.TrimPrefix(line, "### `kind: "), "`")
			continue
		case !in || !strings.HasPrefix(line, "| `"):
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 5 {
			t.Fatalf("docs/scenario.md:%d: want | key | type | default | meaning |", i+1)
		}
		var keys []string
		for _, m := range keyRe.FindAllStringSubmatch(cells[1], -1) {
			keys = append(keys, m[1])
		}
		def := strings.TrimSpace(cells[3])
		if i := strings.Index(def, " ("); i > 0 {
			def = def[:i]
		}
		defs := strings.Split(def, "`, `")
		for j, k := range keys {
			d := defs[0]
			if len(defs) == len(keys) {
				d = defs[j]
			}
			if _, dup := rows[k]; dup {
				t.Errorf("docs/scenario.md:%d: %s documented twice", i+1, k)
			}
			rows[k] = docRow{kind: kind, def: d, line: i + 1}
		}
	}
	return rows
}

// docValue is a default cell as a YAML value: a backticked value, or a bare number or bool; an
// explanation after " = " is dropped and a fraction "5/1024" computed. ok is false for prose
// ("empty", "linear", "2 full frames").
func docValue(cell string) (string, bool) {
	s := strings.TrimSpace(cell)
	if i := strings.Index(s, " = "); i > 0 {
		s = s[:i]
	}
	if v, ok := strings.CutPrefix(s, "`"); ok {
		v = strings.TrimSuffix(v, "`")
		return v, !strings.Contains(v, "`")
	}
	if a, b, ok := strings.Cut(s, "/"); ok {
		x, err1 := strconv.ParseFloat(a, 64)
		y, err2 := strconv.ParseFloat(b, 64)
		if err1 != nil || err2 != nil {
			return "", false
		}
		return strconv.FormatFloat(x/y, 'g', -1, 64), true
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil || s == "true" || s == "false" {
		return s, true
	}
	return "", false
}

// TestDocsListEveryKey: docs/scenario.md's fabric tables list exactly the keys the types declare,
// each under its kind, and every default the table writes as a value is the one Defaults and
// Derive give. Adding a setting without its doc line, or changing a default without the docs,
// fails here.
func TestDocsListEveryKey(t *testing.T) {
	rows := fabricDocRows(t)
	keys := FabricKeys()
	compared := 0
	want := map[string]bool{}
	for _, k := range keys {
		want[k.Name] = true
		r, ok := rows[k.Name]
		if !ok {
			t.Errorf("fabric key %s (kind %q) is not in docs/scenario.md", k.Name, k.Kind)
			continue
		}
		kind := k.Kind
		if kind == "" {
			kind = "ethernet"
		}
		if r.kind != string(kind) && !(k.Kind == "" && r.kind == "") {
			t.Errorf("docs/scenario.md:%d: %s is documented under kind %q, it belongs to %q", r.line, k.Name, r.kind, kind)
		}
		if k.Index == nil {
			continue // a scenario-only key (hpcc_config): no default
		}
		text, ok := docValue(r.def)
		if !ok {
			continue
		}
		def := fabric.Defaults(kind, "", "")
		def.Derive(func(string) bool { return false })
		got := reflect.ValueOf(def).FieldByIndex(k.Index)
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(text), &n); err != nil {
			t.Errorf("docs/scenario.md:%d: %s default %q: %v", r.line, k.Name, text, err)
			continue
		}
		doc := reflect.New(got.Type())
		if err := yamlstrict.NewDecoder("docs").Decode(&n, doc.Elem(), k.Name); err != nil {
			t.Errorf("docs/scenario.md:%d: %s default %q: %v", r.line, k.Name, text, err)
			continue
		}
		compared++
		if !reflect.DeepEqual(doc.Elem().Interface(), got.Interface()) {
			t.Errorf("docs/scenario.md:%d: %s default is %v in the docs, %v in the code", r.line, k.Name, doc.Elem().Interface(), got.Interface())
		}
	}
	// 72 of the 84 keys write their default as a value (the rest in words: "derived", "empty").
	if compared < 70 {
		t.Errorf("only %d documented defaults compared: does the table still read `key` | type | default | meaning?", compared)
	}
	for k, r := range rows {
		if !want[k] {
			t.Errorf("docs/scenario.md:%d: %s is not a fabric key", r.line, k)
		}
	}
}

// TestSettingDiffApplies: the diff that docs/architecture.md shows under "Adding a RoCE setting"
// (a new scenario key end to end, in at most three files) still applies to the tree as it is
// (`git apply --check`), so what the docs show is still the whole change. When it no longer
// applies, make the change again on a scratch checkout and paste its `git diff`.
func TestSettingDiffApplies(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git not found")
		}
		t.Skip("git not found")
	}
	data, err := os.ReadFile("../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n### Adding a RoCE setting\n")
	if !ok {
		t.Fatal(`docs/architecture.md has no section "### Adding a RoCE setting"`)
	}
	_, diff, ok := strings.Cut(section, "\n```diff\n")
	if ok {
		diff, _, ok = strings.Cut(diff, "\n```\n")
	}
	if !ok {
		t.Fatal("the section has no ```diff block")
	}
	diff += "\n"
	if n := strings.Count(diff, "\ndiff --git ") + 1; n > 3 {
		t.Errorf("the diff touches %d files, want at most 3", n)
	}
	cmd := exec.Command(git, "apply", "--check", "-")
	cmd.Dir = ".."
	cmd.Stdin = strings.NewReader(diff)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("git apply --check: %v\n%s", err, out)
	}
}
