package compare

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/flow"
	"github.com/fabricsim/fabricsim/msggraph"
)

// BenchmarkCompare16k runs the two 16,384-GPU examples (a Llama-3-70B-class dense model and
// Mixtral 8x7B on a three-tier rail-optimized Clos of 2,048 H100 servers) with their default
// variants on the analytic backend, parse to result (the targets: 30 s and 2 GB each):
// go test ./compare -run '^$' -bench Compare16k -benchtime 1x; docs/architecture.md quotes
// the figures with peak memory.
func BenchmarkCompare16k(b *testing.B) {
	for _, c := range []struct{ name, file string }{
		{"70b", "../examples/compare-70b-16k.yaml"},
		{"moe", "../examples/compare-moe-16k.yaml"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s, err := Load(c.file)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := Run(context.Background(), s, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCompare16kFlow runs the same two 16,384-GPU examples on the flow backend with four
// variants (ib-ndr, roce-default, roce-tuned, roce-pfc-only; the target: 60 s and 4 GB
// on two cores), and a 131,072-GPU Llama-3-70B step (TP 8, PP 8, DP 2048 on 16,384 servers,
// eight rail planes of three-tier radix-64 Clos, one step, roce-default; the target: 10 minutes
// and 16 GB): go test ./compare -run '^$' -bench Compare16kFlow -benchtime 1x. docs/flow.md
// ("Figures") quotes them with the same runs from the command line.
func BenchmarkCompare16kFlow(b *testing.B) {
	const four = "\nvariants: [ib-ndr, roce-default, roce-tuned, roce-pfc-only]\n"
	for _, c := range []struct{ name, file, extra string }{
		{"70b-16k", "../examples/compare-70b-16k.yaml", four},
		{"moe-16k", "../examples/compare-moe-16k.yaml", four},
		{"70b-131k", "", step131k},
	} {
		b.Run(c.name, func(b *testing.B) {
			src := []byte(c.extra)
			if c.file != "" {
				data, err := os.ReadFile(c.file)
				if err != nil {
					b.Fatal(err)
				}
				src = append(data, src...)
			}
			b.ReportAllocs()
			for b.Loop() {
				s, err := Parse(src, c.name+".yaml", "../examples")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := Run(context.Background(), s, Options{Backend: backend.Flow}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// step131k is a Llama-3-70B training step on 131,072 H100 GPUs (16,384 servers, a plane per
// rail), one variant, one step.
const step131k = `name: llama3-70b-131kxh100
seed: 1
steps: 1
tokens: 15T
cluster: {servers: 16384, gpus_per_server: 8, link_rate: 400Gbps, radix: 64, tiers: 3, rail_planes: true}
workload: {kind: training, model: llama3-70b, gpu: h100, tp: 8, pp: 8, dp: 2048, zero: 1, micro_batch: 1, global_batch: 16384, seq_len: 8192}
variants: [roce-default]
`

// BenchmarkClassCopies16k counts what the flow backend's symmetry reduction finds in each class
// graph of the 16,384-GPU 70B compare (ring prefixes and scaled-down sends as compare builds
// them; network seed 1), without running: messages, and messages that are copies of another
// component's (flow.Copies), per class in the log and in all as metrics.
// go test ./compare -run '^$' -bench ClassCopies16k -benchtime 1x -v; docs/flow.md ("Figures").
func BenchmarkClassCopies16k(b *testing.B) {
	for _, variant := range []string{"ib-ndr", "roce-default"} {
		b.Run(variant, func(b *testing.B) {
			data, err := os.ReadFile("../examples/compare-70b-16k.yaml")
			if err != nil {
				b.Fatal(err)
			}
			s, err := Parse(append(data, "\nvariants: ["+variant+"]\n"...), "70b-16k.yaml", "../examples")
			if err != nil {
				b.Fatal(err)
			}
			plan, err := s.Plan()
			if err != nil {
				b.Fatal(err)
			}
			v := s.Variants[0]
			g, err := s.simTopology(s.simRate(v.Fabric))
			if err != nil {
				b.Fatal(err)
			}
			net := backend.NewNetwork(g, nil)
			cfg := v.Fabric
			cfg.Seed = s.Seed
			var nh flow.NextHopper
			if cfg.Kind != fabric.KindInfiniBand {
				if nh, err = net.Routes(); err != nil {
					b.Fatal(err)
				}
			}
			cls, _, _ := s.classes(plan)
			for b.Loop() {
				var msgs, copies int
				for _, c := range cls {
					mg := &msggraph.Graph{Endpoints: plan.GPUs}
					for gi, o := range c.example {
						tag := fmt.Sprintf("%s g%d", c.Key, gi)
						x, err := s.compileExtrap(mg, o, tag, 0)
						if err == nil && x == nil {
							_, err = s.compileOp(mg, o, nil, tag, false)
						}
						if err != nil {
							b.Fatal(err)
						}
					}
					n, err := flow.Copies(g, nh, cfg, mg)
					if err != nil {
						b.Fatal(err)
					}
					b.Logf("%s: %d groups, %d messages, %d copies", c.Key, len(c.Groups), len(mg.Msgs), n)
					msgs += len(mg.Msgs)
					copies += n
				}
				b.ReportMetric(float64(msgs), "messages")
				b.ReportMetric(float64(copies), "copies")
			}
		})
	}
}
