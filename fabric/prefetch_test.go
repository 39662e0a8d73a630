package fabric

import (
	"reflect"
	"testing"

	"github.com/fabricsim/fabricsim/sim"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// TestPrefetchChangesNothing: reading ahead (the kernel's bucket touch and the Prefetch methods
// of switches, ports and the InfiniBand credit state) may only change speed. The k=8
// permutation gives identical results with it on and off on Ethernet, RoCEv2 with DCQCN, and
// InfiniBand with static and adaptive routing.
func TestPrefetchChangesNothing(t *testing.T) {
	ib, err := DefaultInfiniBand("edr")
	if err != nil {
		t.Fatal(err)
	}
	ibAR := ib
	ibAR.IB.Adaptive = true
	for _, c := range []struct {
		name string
		cfg  Config
	}{{"ethernet", DefaultEthernet()}, {"roce", DefaultRoCE()}, {"infiniband", ib}, {"infiniband-adaptive", ibAR}} {
		t.Run(c.name, func(t *testing.T) {
			g, err := topo.FatTree(8, topo.LinkSpec{Rate: 100 * units.Gbps, Latency: units.Microsecond})
			if err != nil {
				t.Fatal(err)
			}
			mg := permutationGraph(128, 256*units.KB, 7)
			on := newNet(t, g, c.cfg)
			resOn, err := on.Run(mg, units.MaxTime)
			if err != nil {
				t.Fatal(err)
			}
			off := newNet(t, g, c.cfg)
			off.sim.SetPrefetch(false)
			resOff, err := off.Run(mg, units.MaxTime)
			if err != nil {
				t.Fatal(err)
			}
			resOn.WallSeconds, resOff.WallSeconds = 0, 0
			if resOn.Events == 0 || !reflect.DeepEqual(resOn, resOff) {
				t.Fatalf("results differ with prefetching off: %d vs %d events, end %v vs %v", resOn.Events, resOff.Events, resOn.EndTime, resOff.EndTime)
			}
		})
	}
}

// TestPrefetchDispatch: the fabric's prefetch dispatch lists a handler type as reading nothing
// ahead; it may not implement sim.Prefetcher (its Prefetch would never be called), and the
// types it dispatches to must.
func TestPrefetchDispatch(t *testing.T) {
	for _, h := range []sim.Handler{(*NIC)(nil)} {
		if _, ok := h.(sim.Prefetcher); ok {
			t.Errorf("%T implements sim.Prefetcher, but prefetch lists it as reading nothing", h)
		}
	}
	for _, h := range []sim.Handler{(*Port)(nil), (*Switch)(nil), (*ibCredits)(nil)} {
		if _, ok := h.(sim.Prefetcher); !ok {
			t.Errorf("%T does not implement sim.Prefetcher", h)
		}
	}
}
