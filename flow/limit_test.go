package flow

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/ibsm"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/units"
)

// A run planned above the memory limit is refused before anything is built, with the estimate
// and the limit in the message; the planned figure is linear in the messages.
func TestMemoryLimit(t *testing.T) {
	g, r := fatTree(t, 4, 100*units.Gbps)
	mg := &msggraph.Graph{Endpoints: len(g.Hosts)}
	for i := 0; i < 1000; i++ {
		mg.Add(msggraph.Message{Src: int32(i % 16), Dst: int32((i + 1) % 16), Bytes: units.KB})
	}
	base := PlannedMemory(g, 0)
	if got, want := PlannedMemory(g, 1000)-base, int64(1000*bytesPerMessage); got != want {
		t.Errorf("1,000 messages plan %d B above the network's, want %d", got, want)
	}
	if got, want := PlannedMemory(g, 2000)-base, 2*(PlannedMemory(g, 1000)-base); got != want {
		t.Errorf("2,000 messages plan %d B, want twice 1,000's: %d", got, want)
	}
	limit := PlannedMemory(g, 1000) - 1
	_, err := Run(g, r, fabrics(t)["roce"], mg, Options{MemoryLimit: limit})
	var le *LimitError
	if !errors.As(err, &le) || le.Messages != 1000 || le.Limit != limit {
		t.Fatalf("run above the limit: %v, want a LimitError for 1000 messages and limit %d", err, limit)
	}
	if !strings.Contains(err.Error(), "above the memory limit") {
		t.Errorf("message %q does not say what is wrong", err)
	}
	if _, err := Run(g, r, fabrics(t)["roce"], mg, Options{MemoryLimit: limit + 1}); err != nil {
		t.Errorf("run at the limit: %v", err)
	}
	// A flat ring of 131,072 ranks (2 x 131,071 x 131,072 messages per channel) is refused from its
	// message count, before its graph is compiled.
	if err := CheckPlanned(g, 2*131071*131072, 0); !errors.As(err, &le) {
		t.Errorf("a 131,072-rank ring: %v, want a LimitError", err)
	}
	if err := CheckPlanned(g, 1000, 0); err != nil {
		t.Errorf("1,000 messages: %v", err)
	}
}

// The per-channel planning figure is what a new engine keeps on the heap per port (measured: the
// live heap after newEngine, less before, on a RoCE k=16 fat tree with LeafRoutes built first),
// within 10 % below it: an estimate short of it would let a run past the memory limit, one far
// above it would refuse runs that fit.
func TestChannelBytes(t *testing.T) {
	// Two collections before the first reading: one moves the sync.Pools' contents (the
	// standard library's buffers) to their victim caches, where they are still live, the second
	// frees them; with one, the engine's second collection freed them between the readings and
	// the figure came out low (412 B once, in a full `go test ./...`, against 485-498 B). Three
	// measurements, each on a network of its own, the largest kept.
	per, ports := 0.0, 0
	for range 3 {
		g, _ := fatTree(t, 16, 400*units.Gbps)
		lr, err := NewLeafRoutes(g)
		if err != nil {
			t.Fatal(err)
		}
		mg := &msggraph.Graph{Endpoints: len(g.Hosts)}
		mg.Add(msggraph.Message{Src: 0, Dst: 1, Bytes: units.KB})
		ports = 0
		for i := range g.Nodes {
			ports += len(g.Nodes[i].Ports)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&before)
		e, err := newEngine(g, lr, fabrics(t)["roce"], mg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(e)
		one := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(ports)
		per = max(per, one)
	}
	t.Logf("%d ports: %.1f B per port kept by a new engine, planned %d B", ports, per, bytesPerChannel)
	if per > bytesPerChannel || per < 0.9*bytesPerChannel {
		t.Errorf("a new engine keeps %.1f B per port, planned bytesPerChannel = %d B: want the plan at most 10 %% above it", per, bytesPerChannel)
	}
}

// The subnet manager's tables are planned at what ibsm.Compute keeps on the heap (measured as
// TestChannelBytes measures channels, on an InfiniBand k=16 fat tree): stored, switches x hosts
// entries, the plan not below the measurement and at most 10 % above it; computed on demand
// (ibsm.StoredEntries lowered to 0 to force that form at this size), linear in the hosts and
// planned not below the measurement (52-88 B per host here across runs, 85 B at k=32: this
// form's heap varies more with what the process has cached, and it is small).
func TestSubnetTableBytes(t *testing.T) {
	g, _ := fatTree(t, 16, 400*units.Gbps)
	switches := int64(g.NumSwitches())
	heap := func() float64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.GC() // the sync.Pools' victims freed before the reading (TestChannelBytes)
		runtime.ReadMemStats(&before)
		tb, err := ibsm.Compute(g, ibsm.MinHop)
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(tb)
		return float64(int64(after.HeapAlloc) - int64(before.HeapAlloc))
	}
	stored, plan := heap(), subnetBytes(g, switches, ibsm.MinHop)
	t.Logf("%d switches x %d hosts: stored tables %.0f B (%.2f B per entry), planned %.0f B", switches, len(g.Hosts), stored, stored/float64(switches)/float64(len(g.Hosts)), plan)
	if plan < stored || plan > 1.1*stored {
		t.Errorf("stored tables keep %.0f B, planned %.0f B: want the plan at most 10 %% above it", stored, plan)
	}
	saved := ibsm.StoredEntries
	ibsm.StoredEntries = 0
	defer func() { ibsm.StoredEntries = saved }()
	onDemand, plan := heap(), subnetBytes(g, switches, ibsm.MinHop)
	t.Logf("on demand: %.0f B (%.1f B per host), planned %.0f B", onDemand, onDemand/float64(len(g.Hosts)), plan)
	if plan < onDemand || plan != float64(len(g.Hosts))*bytesPerOnDemandHost {
		t.Errorf("tables on demand keep %.0f B, planned %.0f B: want %d B per host, not below the measurement", onDemand, plan, bytesPerOnDemandHost)
	}
	// An Ethernet run plans no tables: the InfiniBand estimate is the RoCE one plus the tables.
	if got, want := estimate(g, 0, false, ibsm.UpDown)-estimate(g, 0, false, ""), int64(plan); got != want {
		t.Errorf("InfiniBand plans %d B more than Ethernet, want the tables' %d B", got, want)
	}
}
