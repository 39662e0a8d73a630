package cluster

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

var update = flag.Bool("update", false, "rewrite the rail-optimized topology files under examples/")

// TestExampleRailTopologies: the HPCC topology files the gpu-*.yaml examples use are exactly
// what topo.RailOptimized builds for them (regenerate with go test ./cluster -run Example -update).
func TestExampleRailTopologies(t *testing.T) {
	for _, tc := range []struct {
		file    string
		servers int
	}{
		{"gpu-rail-2x8.topology.txt", 2},
		{"gpu-rail-16x8.topology.txt", 16},
	} {
		g, err := topo.RailOptimized(topo.RailSpec{Servers: tc.servers, NIC: topo.LinkSpec{Rate: 400 * units.Gbps, Latency: 500 * units.Nanosecond}})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := topo.WriteHPCCTopology(&b, g); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("..", "examples", tc.file)
		if *update {
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(want, b.Bytes()) {
			t.Errorf("%s differs from topo.RailOptimized(%d servers); run go test ./cluster -run Example -update", path, tc.servers)
		}
	}
}
