// Package examples embeds the example scenarios shipped in this directory, so that the binary
// can run them with no files around (`fabricsim run` with no argument runs Default).
package examples

import (
	"embed"
	"io/fs"
	"sort"
	"strings"
)

//go:embed *.yaml
var files embed.FS

// Default is the scenario `fabricsim run` runs when given none.
const Default = "permutation-k8.yaml"

// Read returns an embedded example by file name.
func Read(name string) ([]byte, error) { return files.ReadFile(name) }

// Names lists the embedded scenario files.
func Names() []string {
	var out []string
	entries, _ := fs.ReadDir(files, ".")
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".yaml") {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}
