package flow

import (
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/traffic"
	"github.com/fabricsim/fabricsim/units"
)

// packetOn runs mg on the packet backend over routes r: the reference the flow backend's tests
// compare with.
func packetOn(t testing.TB, g *topo.Graph, r *topo.Routes, cfg fabric.Config, mg *msggraph.Graph) *result.Run {
	t.Helper()
	net, err := fabric.New(g, r, cfg)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := net.Run(mg, units.MaxTime)
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

func fatTree(t testing.TB, k int, rate units.Rate) (*topo.Graph, *topo.Routes) {
	t.Helper()
	g, err := topo.FatTree(k, topo.LinkSpec{Rate: rate, Latency: units.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	r, err := topo.ComputeRoutes(g)
	if err != nil {
		t.Fatal(err)
	}
	return g, r
}

func fabrics(t testing.TB) map[string]fabric.Config {
	t.Helper()
	ib, err := fabric.DefaultInfiniBand("ndr")
	if err != nil {
		t.Fatal(err)
	}
	return map[string]fabric.Config{"ethernet": fabric.DefaultEthernet(), "roce": fabric.DefaultRoCE(), "infiniband": ib}
}

// A flow alone on the network finishes when the packet backend's store-and-forward closed form
// says (its ideal FCT), on every fabric, one and three switches away, for sizes from one packet
// to many.
func TestSingleFlowMatchesPacketBackend(t *testing.T) {
	g, r := fatTree(t, 4, 400*units.Gbps)
	for name, cfg := range fabrics(t) {
		for _, dst := range []int32{1, 15} {
			for _, size := range []units.Size{1, 4096, 100_000, 3 * units.MB} {
				mg := &msggraph.Graph{Endpoints: len(g.Hosts)}
				mg.Add(msggraph.Message{Src: 0, Dst: dst, Bytes: size, Start: 5 * units.Microsecond})
				fr, err := Run(g, r, cfg, mg, Options{Check: true})
				if err != nil {
					t.Fatal(err)
				}
				pr := packetOn(t, g, r, cfg, mg)
				// InfiniBand's credit updates for the ACKs share the data's links (6 B per ACK,
				// 0.15 % of a 4 KiB packet), which the flow model counts but does not take from
				// the data: 2 ns and 0.2 % of the FCT.
				got, want := fr.Messages[0].FCT(), pr.Messages[0].FCT()
				tol := 2*units.Nanosecond + want/500
				if d := got - want; d < -tol || d > tol {
					t.Errorf("%s, host 0 -> %d, %v: flow FCT %v, packet %v", name, dst, size, got, want)
				}
				if fr.Messages[0].IdealFCT != pr.Messages[0].IdealFCT {
					t.Errorf("%s, %v: ideal FCT %v, packet backend's %v", name, size, fr.Messages[0].IdealFCT, pr.Messages[0].IdealFCT)
				}
			}
		}
	}
}

// LeafRoutes holds topo.Routes' next hops, set for set and in the same order. (It used to be
// smaller than topo.Routes' switches x hosts table too; topo.Routes is now linear itself for
// these trees, so only the next hops are compared.)
func TestLeafRoutesMatchRoutes(t *testing.T) {
	ft, _ := fatTree(t, 8, 100*units.Gbps)
	ls, err := topo.LeafSpine(topo.LeafSpineSpec{Leaves: 6, Spines: 3, HostsPerLeaf: 6,
		Host: topo.LinkSpec{Rate: 100 * units.Gbps}, Oversubscription: 1})
	if err != nil {
		t.Fatal(err)
	}
	rail, err := topo.RailOptimized(topo.RailSpec{Servers: 40, NICsPerServer: 4, NIC: topo.LinkSpec{Rate: 400 * units.Gbps}, Radix: 16, Oversubscription: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []*topo.Graph{ft, ls, rail} {
		want, err := topo.ComputeRoutes(g)
		if err != nil {
			t.Fatal(err)
		}
		got, err := NewLeafRoutes(g)
		if err != nil {
			t.Fatal(err)
		}
		for n := range g.Nodes {
			if g.Nodes[n].Kind != topo.Switch {
				continue
			}
			for d := range g.Hosts {
				if a, b := got.NextHops(topo.NodeID(n), d), want.NextHops(topo.NodeID(n), d); !slices.Equal(a, b) {
					t.Fatalf("%s: %s to host %d: %v, topo.Routes %v", g.Name, g.Nodes[n].Name, d, a, b)
				}
			}
		}
	}
}

// Flows and their ACKs take the packet backend's paths: on a random permutation every link
// carries, in the flow model, the bytes the packet backend's port sent over it, within 1 % (the
// flow model sends no CNP and counts InfiniBand credit updates without coalescing them); a flow
// on another path would move 2 MB.
func TestPathsMatchPacketBackend(t *testing.T) {
	g, r := fatTree(t, 8, 100*units.Gbps)
	for _, name := range []string{"ethernet", "roce", "infiniband"} {
		cfg := fabrics(t)[name]
		cfg.Seed = 7
		cfg.QPsPerConn = 2
		cfg.RoCE.DCQCN, cfg.RoCE.ECN = false, false // no CNPs: routing alone
		flows, err := traffic.PermutationFlows(len(g.Hosts), 2*units.MB, 0, traffic.NewRand(3))
		if err != nil {
			t.Fatal(err)
		}
		mg := traffic.ToGraph(flows, len(g.Hosts))
		e, err := newEngine(g, r, cfg, mg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		e.initGraph()
		if err := e.run(); err != nil {
			t.Fatal(err)
		}
		net, err := fabric.New(g, r, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := net.Run(mg, units.MaxTime); err != nil {
			t.Fatal(err)
		}
		for n := range g.Nodes {
			for p, port := range net.Ports(int32(n)) {
				got := e.net.res[e.net.channel(topo.NodeID(n), int32(p))].txBytes
				want := float64(port.TxBytes)
				if math.Abs(got-want) > 0.01*want+1000 {
					t.Fatalf("%s: %s port %d sent %.0f B in the flow model, %.0f B in the packet backend", name, g.Nodes[n].Name, p, got, want)
				}
			}
		}
	}
}

// Same inputs, same outputs, byte for byte.
func TestDeterministic(t *testing.T) {
	g, r := fatTree(t, 8, 100*units.Gbps)
	cfg := fabric.DefaultRoCE()
	cfg.Seed = 11
	cfg.RoCE.Kmin, cfg.RoCE.Kmax = 20*units.KB, 200*units.KB
	flows, err := traffic.PermutationFlows(len(g.Hosts), units.MB, 0, traffic.NewRand(5))
	if err != nil {
		t.Fatal(err)
	}
	mg := traffic.ToGraph(flows, len(g.Hosts))
	a, err := Run(g, r, cfg, mg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(g, r, cfg, mg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	a.WallSeconds, b.WallSeconds = 0, 0
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two runs of the same scenario differ")
	}
	if a.Counters["cnps_sent"] == 0 {
		t.Fatal("no CNP sent: the test does not exercise DCQCN's random marking")
	}
}

func TestWaterFill(t *testing.T) {
	for _, c := range []struct {
		cap  float64
		in   []float64
		want []float64
	}{
		{10, []float64{1, 2, 3}, []float64{1, 2, 3}},
		{6, []float64{1, 5, 5}, []float64{1, 2.5, 2.5}},
		{3, []float64{4, 4, 4}, []float64{1, 1, 1}},
		{7, []float64{1, 2, 9, 9}, []float64{1, 2, 2, 2}},
	} {
		d := make([]fill, len(c.in))
		for i, x := range c.in {
			d[i] = fill{d: x, i: int32(i)}
		}
		waterFill(c.cap, d)
		got := make([]float64, len(d))
		for _, x := range d {
			got[x.i] = x.d
		}
		for i := range got {
			if math.Abs(got[i]-c.want[i]) > 1e-12 {
				t.Errorf("waterFill(%v, %v) = %v, want %v", c.cap, c.in, got, c.want)
				break
			}
		}
	}
}
