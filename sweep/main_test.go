package sweep

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"

	"github.com/fabricsim/fabricsim/sweep/internal/fakeengine"
)

// helperEnv makes the test binary act as `fabricsim sweep` on the fake engine (configured by
// the FAKESIM_* variables) with the arguments in helperArgs (JSON), so that tests can run a
// sweep in a subprocess and kill it.
const (
	helperEnv  = "SWEEP_TEST_HELPER"
	helperArgs = "SWEEP_TEST_ARGS"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		// Arguments come from helperArgs, or from the command line when a job script runs the
		// test binary as if it were fabricsim.
		args := os.Args[1:]
		if a := os.Getenv(helperArgs); a != "" {
			if err := json.Unmarshal([]byte(a), &args); err != nil {
				os.Stderr.WriteString("bad " + helperArgs + ": " + err.Error() + "\n")
				os.Exit(2)
			}
		}
		root := newRoot(func() Engine { return fakeengine.FromEnv() })
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// newRoot mounts the sweep command under a root, as the fabricsim binary does.
func newRoot(newEngine func() Engine) *cobra.Command {
	root := &cobra.Command{Use: "fabricsim", SilenceUsage: true}
	root.AddCommand(NewCommand(newEngine))
	return root
}

// runCommand runs `fabricsim ARGS...` in-process and returns stdout, stderr and the error.
func runCommand(t testing.TB, eng func() Engine, args ...string) (string, string, error) {
	t.Helper()
	root := newRoot(eng)
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), errb.String(), err
}

// writeFiles writes name -> content under dir.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// baseScenario is a valid scenario for the fake engine.
const baseScenario = `name: perm
seed: 7
topology:
  kind: fat-tree
  k: 8
  link: {rate: 100Gbps, latency: 1us}
fabric:
  kind: ethernet
  mtu: 4096
traffic:
  kind: permutation
  size: 2MB
`

// sweep24 expands to 3 rates x 4 sizes x 2 seeds = 24 runs.
const sweep24 = `name: rate vs size
base_file: base.yaml
axes:
  - field: topology.link.rate
    values: [100Gbps, 200Gbps, 400Gbps]
  - field: traffic.size
    from: 1MB
    to: 8MB
    factor: 2
seeds: 2
`

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
