package fabric

import (
	"math/rand/v2"
	"testing"

	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// permutationGraph is a random derangement of hosts with size-byte flows (the benchmark's own, so
// that the fabric benchmark does not depend on the traffic package).
func permutationGraph(hosts int, size units.Size, seed uint64) *msggraph.Graph {
	rng := rand.New(rand.NewPCG(seed, 0))
	var p []int
	for {
		p = rng.Perm(hosts)
		ok := true
		for i, d := range p {
			if i == d {
				ok = false
				break
			}
		}
		if ok {
			break
		}
	}
	mg := &msggraph.Graph{Endpoints: hosts}
	for i, d := range p {
		mg.Add(msggraph.Message{Src: int32(i), Dst: int32(d), Bytes: size})
	}
	return mg
}

// BenchmarkFatTreePermutation is the foundation's reference run: k=16 fat tree (1,024 hosts),
// 100 Gb/s, 1 us links, 4096 B MTU, random permutation of 2 MB flows. Target: at most 3 s per
// run on one core and at most 100 MB resident.
func BenchmarkFatTreePermutation(b *testing.B) {
	benchPermutation(b, 16)
}

// BenchmarkFatTreePermutationK8 is the same on k=8 (128 hosts), quick enough for routine runs.
func BenchmarkFatTreePermutationK8(b *testing.B) {
	benchPermutation(b, 8)
}

func benchPermutation(b *testing.B, k int) {
	benchFatTree(b, k, DefaultEthernet(), nil)
}

// benchFatTree runs the reference permutation (k-ary fat tree, 100 Gb/s, 1 us links, 2 MB flows)
// on cfg, reporting events/s, packet-hops/s and events per run; check, when set, inspects each
// run's result (and may report further metrics from them at the end through b).
func benchFatTree(b *testing.B, k int, cfg Config, check func(*result.Run)) {
	g, err := topo.FatTree(k, topo.LinkSpec{Rate: 100 * units.Gbps, Latency: units.Microsecond})
	if err != nil {
		b.Fatal(err)
	}
	r, err := topo.ComputeRoutes(g)
	if err != nil {
		b.Fatal(err)
	}
	mg := permutationGraph(len(g.Hosts), 2*units.MB, 1)
	b.ReportAllocs()
	var events, hops uint64
	for i := 0; i < b.N; i++ {
		n, err := New(g, r, cfg)
		if err != nil {
			b.Fatal(err)
		}
		res, err := n.Run(mg, units.MaxTime)
		if err != nil {
			b.Fatal(err)
		}
		events += res.Events
		hops += res.PacketHops
		if check != nil {
			check(res)
		}
	}
	s := b.Elapsed().Seconds()
	b.ReportMetric(float64(events)/s, "events/s")
	b.ReportMetric(float64(hops)/s, "packet-hops/s")
	b.ReportMetric(float64(events)/float64(b.N), "events/run")
}
