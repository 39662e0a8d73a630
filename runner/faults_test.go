package runner

import (
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/scenario"
)

// A fault that begins after the run ended (no duration: the run ends when the last message is
// done) is a scenario error at the fault's at key, exit 2, not a fault silently never applied.
func TestFaultAfterRunEnds(t *testing.T) {
	src := `name: f
topology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 2}
fabric: {kind: infiniband, generation: edr}
traffic: {kind: permutation, size: 64KB}
faults:
  - {kind: link_down, link: leaf0-spine0, at: 1s}
`
	s, err := scenario.Parse([]byte(src), "f.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = Run(s, Options{Check: true})
	want := "f.yaml:6:47: faults[0].at: 1s is after the run ended at"
	if err == nil || !strings.Contains(err.Error(), want) || !scenario.IsUserError(err) {
		t.Fatalf("got %v, want a user error containing %q", err, want)
	}
}
