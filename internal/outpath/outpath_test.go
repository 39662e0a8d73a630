package outpath

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Unwritable places are found without running anything, and the message names the flag. (Tests
// run as root too, where permissions do not stop a write: a regular file standing where a
// directory should be does.)
func TestDirAndFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"new directory", Dir("--out", filepath.Join(dir, "a", "b")), ""},
		{"existing directory", Dir("--out", dir), ""},
		{"directory under a file", Dir("--out", filepath.Join(file, "x")), "--out " + filepath.Join(file, "x") + ": cannot create the directory: not a directory"},
		{"directory that is a file", Dir("--out", file), "cannot create the directory"},
		{"file in a directory", File("--hpcc-fct", filepath.Join(dir, "fct.txt")), ""},
		{"file that is a directory", File("--hpcc-fct", dir), "--hpcc-fct " + dir + ": is a directory"},
		{"file under a file", File("--series", filepath.Join(file, "s.csv")), "--series " + filepath.Join(file, "s.csv") + ": " + file + " is not a directory"},
		{"file in a missing directory", File("--series", filepath.Join(dir, "none", "s.csv")), "no such file or directory"},
	} {
		switch {
		case tc.want == "" && tc.err != nil:
			t.Errorf("%s: %v", tc.name, tc.err)
		case tc.want != "" && (tc.err == nil || !strings.Contains(tc.err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.name, tc.err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "a", "b")); err != nil {
		t.Errorf("Dir did not create the directory: %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".fabricsim-probe-*"))
	if len(left) != 0 {
		t.Errorf("probe files left behind: %v", left)
	}
}
