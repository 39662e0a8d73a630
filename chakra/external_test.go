package chakra

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExternalTraces checks the decoder and the encoder against ET files written by other
// tools, which the repository does not ship: set CHAKRA_ET_DIR to a directory tree holding
// .et files (e.g. astra-sim's examples/workload, or the trace in mlcommons/chakra's
// tests/data/feeder_tests_trace.tar.gz) and every file must decode and re-encode to the same
// bytes. Skipped without the variable.
func TestExternalTraces(t *testing.T) {
	dir := os.Getenv("CHAKRA_ET_DIR")
	if dir == "" {
		t.Skip("CHAKRA_ET_DIR not set")
	}
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".et") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		tr, err := Parse(data, path)
		if err != nil {
			t.Error(err)
			return nil
		}
		n++
		if bytes.HasPrefix(data, gzipMagic) {
			return nil
		}
		if got := Encode(tr); !bytes.Equal(got, data) {
			t.Errorf("%s: re-encoded %d bytes differ from the file's %d", path, len(got), len(data))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d files decoded and re-encoded byte for byte", n)
}
