// Package outpath checks, before a long simulation, that the places a command will write its
// results to can be written, so that a bad --out is reported at once (naming the flag) instead
// of after the whole run.
package outpath

import (
	"fmt"
	"os"
	"path/filepath"
)

// Dir creates dir (and its parents) if needed and proves it writable by creating and removing a
// file in it. flag names the option the user gave it with, e.g. "--out".
func Dir(flag, dir string) error {
	if dir == "" {
		return fmt.Errorf("%s: empty directory name", flag)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%s %s: cannot create the directory: %v", flag, dir, reason(err))
	}
	return probe(flag, dir, dir)
}

// File checks that path can be written: it is not a directory and its directory exists and is
// writable. Nothing is created but a probe file that is removed at once.
func File(flag, path string) error {
	if path == "" {
		return fmt.Errorf("%s: empty file name", flag)
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s %s: is a directory; give a file name", flag, path)
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%s %s: directory %s: %v", flag, path, dir, reason(err))
	}
	if !st.IsDir() {
		return fmt.Errorf("%s %s: %s is not a directory", flag, path, dir)
	}
	return probe(flag, path, dir)
}

func probe(flag, what, dir string) error {
	f, err := os.CreateTemp(dir, ".fabricsim-probe-*")
	if err != nil {
		return fmt.Errorf("%s %s: cannot write there: %v", flag, what, reason(err))
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// reason drops the operation and path that *PathError repeats ("mkdir a/b: not a directory"
// becomes "not a directory"), as the message already names them.
func reason(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
