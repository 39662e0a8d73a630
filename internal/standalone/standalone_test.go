package standalone

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// outside are references to files that are not in the repository: the design notes and domain
// reference the project started from. (Spelled in pieces so that this file does not match.)
var outside = []string{"DOMAIN" + ".md", "ARCHITECTURE" + ".md", "../" + "shared", "shared" + "/docs"}

// root is the module root: the nearest directory above with a go.mod.
func root(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = up
	}
}

// files lists the tracked files (git ls-files), or, without git, every file under the root but
// .git.
func files(t *testing.T, dir string) []string {
	t.Helper()
	if out, err := exec.Command("git", "-C", dir, "ls-files", "-z").Output(); err == nil && len(out) > 0 {
		return strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	}
	var list []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			list = append(list, filepath.ToSlash(rel))
		}
		return nil
	})
	return list
}

// TestNoReferenceOutsideRepo: no tracked file outside .ci/ (the CI machinery) mentions the
// domain reference or design notes the project started from, or a path into the shared
// directory beside the repository: the repository must stand alone, citing primary sources as
// docs/references.md lists them.
func TestNoReferenceOutsideRepo(t *testing.T) {
	dir := root(t)
	list := files(t, dir)
	if len(list) < 50 {
		t.Fatalf("only %d files found under %s", len(list), dir)
	}
	for _, f := range list {
		if strings.HasPrefix(f, ".ci/") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			continue // deleted in the work tree, or not a regular file
		}
		for _, bad := range outside {
			if i := bytes.Index(data, []byte(bad)); i >= 0 {
				line := 1 + bytes.Count(data[:i], []byte("\n"))
				t.Errorf("%s:%d mentions %s, a file outside the repository: cite the primary source (docs/references.md)", f, line, bad)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "docs", "references.md")); err != nil {
		t.Errorf("docs/references.md: %v", err)
	}
}
