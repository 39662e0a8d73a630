package training

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/units"
)

// tiny is a 4-layer model small enough to count its plan by hand.
// Per layer: attention 4 x 256^2 = 262,144, MLP 3 x 256 x 1024 = 786,432, norms 512:
// 1,049,088. Embedding 1000 x 256 = 256,000; output head 256,000 + final norm 256.
func tinyModel() *Model {
	return &Model{Name: "tiny", Layers: 4, Hidden: 256, FFN: 1024, Heads: 8, Vocab: 1000, SeqLen: 128,
		GatedMLP: true, Norm: RMSNorm}
}

// tiny: 8 GPUs = TP 2 x PP 2 x DP 2, 2 micro-batches per replica, one layer per block (2 blocks
// per stage), one gradient bucket per group.
func tiny() *Config {
	return &Config{Model: ModelSpec{Shape: tinyModel()}, TP: 2, PP: 2, DP: 2, ZeRO: 1, MicroBatch: 1,
		GlobalBatch: 4, LayersPerBlock: 1, BucketSize: units.GiB}
}

func mustBuild(t *testing.T, c *Config) *Plan {
	t.Helper()
	p, err := Build(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestOpCountsByHand(t *testing.T) {
	// Counted by hand for tiny (8 GPUs, M = 2 micro-batches, 2 blocks per stage):
	//   compute         8 GPUs x 2 mb x 2 blocks x 2 passes          = 64, + 8 optimizer steps
	//   TP all-reduce   (DP x PP = 4 TP groups) x 2 mb x 2 blocks x 2  = 32 (Repeat 2 each: 2 per layer)
	//   PP send-recv    (DP x TP = 4 pipelines) x 2 mb x (fwd + bwd)   = 16
	//   DP buckets      (PP x TP = 4 DP groups) x 1 bucket             = 4
	//   ZeRO-1/2 param all-gather after the optimizer, one per bucket  = 4
	for _, c := range []struct {
		name string
		edit func(*Config)
		want map[OpKind]int
	}{
		{"zero1", func(*Config) {}, map[OpKind]int{Compute: 72, AllReduce: 32, SendRecv: 16, ReduceScatter: 4, AllGather: 4}},
		{"zero2", func(c *Config) { c.ZeRO = 2 }, map[OpKind]int{Compute: 72, AllReduce: 32, SendRecv: 16, ReduceScatter: 4, AllGather: 4}},
		// ZeRO-0: gradients all-reduced, no parameter all-gather.
		{"zero0", func(c *Config) { c.ZeRO = 0 }, map[OpKind]int{Compute: 72, AllReduce: 32 + 4, SendRecv: 16}},
		// ZeRO-3: an all-gather per block, pass and micro-batch per DP group: 4 x 2 x 2 x 2 = 32,
		// none after the optimizer.
		{"zero3", func(c *Config) { c.ZeRO = 3 }, map[OpKind]int{Compute: 72, AllReduce: 32, SendRecv: 16, ReduceScatter: 4, AllGather: 32}},
		// Sequence parallel: each TP all-reduce becomes an all-gather and a reduce-scatter.
		{"sequence parallel", func(c *Config) { c.SequenceParallel = true }, map[OpKind]int{Compute: 72, AllGather: 32 + 4, ReduceScatter: 32 + 4, SendRecv: 16}},
		// 1 MB buckets: each stage holds 2,354,176 (stage 0) or 2,354,432 (stage 1) gradient
		// bytes per GPU, 3 buckets each: 2 stages x 2 tp x 3 = 12, and 12 parameter all-gathers.
		{"1MB buckets", func(c *Config) { c.BucketSize = units.MB }, map[OpKind]int{Compute: 72, AllReduce: 32, SendRecv: 16, ReduceScatter: 12, AllGather: 12}},
		// Two layers per block: half the blocks, so half the per-block ops; Repeat doubles.
		{"2 layers per block", func(c *Config) { c.LayersPerBlock = 2 }, map[OpKind]int{Compute: 40, AllReduce: 16, SendRecv: 16, ReduceScatter: 4, AllGather: 4}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := tiny()
			c.edit(cfg)
			p := mustBuild(t, cfg)
			if got := p.Count(); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("counts %v, want %v", got, c.want)
			}
		})
	}
}

func TestTinyOpDetails(t *testing.T) {
	p := mustBuild(t, tiny())
	act := units.Size(2 * 1 * 128 * 256) // bf16 micro x seq x hidden
	for _, o := range p.Ops {
		switch o.Kind {
		case AllReduce:
			if o.Dim != "tp" || o.Bytes != act || o.Repeat != 2 || len(o.Ranks) != 2 || o.Ranks[1] != o.Ranks[0]+1 {
				t.Fatalf("TP all-reduce %+v", o)
			}
		case SendRecv:
			if o.Bytes != act || o.Dim != "pp" {
				t.Fatalf("send-recv %+v", o)
			}
			dp0, s0, tp0 := p.Coords(o.Ranks[0])
			dp1, s1, tp1 := p.Coords(o.Ranks[1])
			if dp0 != dp1 || tp0 != tp1 || (o.Phase == "fwd" && s1 != s0+1) || (o.Phase == "bwd" && s1 != s0-1) {
				t.Fatalf("send-recv between %d and %d (%s)", o.Ranks[0], o.Ranks[1], o.Phase)
			}
		case ReduceScatter:
			// One bucket holds the whole stage's gradients of one GPU (bf16): stage 0 has
			// 2 layers + embedding = 2,354,176 parameters over TP 2 -> 2,354,176 bytes.
			want := units.Size(2 * (2*1_049_088 + 256_000) / 2)
			if o.Stage == 1 {
				want = units.Size(2 * (2*1_049_088 + 256_000 + 256) / 2)
			}
			if o.Bytes != want || o.Dim != "dp" || len(o.Ranks) != 2 {
				t.Fatalf("gradient bucket %+v, want %d bytes", o, want)
			}
			// It waits for the last micro-batch's backward of block 0 on both replicas.
			for _, d := range o.Deps {
				if dep := p.Ops[d]; dep.Kind != Compute || dep.Phase != "bwd" || dep.Microbatch != 1 || dep.Layer != o.Stage*2 {
					t.Fatalf("bucket dep %+v", dep)
				}
			}
		}
	}
	// Stage 1's first forward compute waits for the activations from stage 0.
	for _, o := range p.Ops {
		if o.Kind == Compute && o.Stage == 1 && o.Phase == "fwd" && o.Layer == 2 {
			found := false
			for _, d := range o.Deps {
				found = found || p.Ops[d].Kind == SendRecv
			}
			if !found {
				t.Fatalf("stage 1 forward %+v has no send-recv dependency", o)
			}
			break
		}
	}
	// Rank layout: TP fastest, then DP, then PP.
	if r := p.Rank(1, 1, 1); r != 7 {
		t.Fatalf("Rank(dp 1, pp 1, tp 1) = %d, want (1x2+1)x2+1 = 7", r)
	}
	for r := range 8 {
		if dp, pp, tp := p.Coords(r); p.Rank(dp, pp, tp) != r {
			t.Fatalf("Coords(%d) = %d %d %d", r, dp, pp, tp)
		}
	}
	if !strings.HasPrefix(p.Summary(), "128 ops (72 compute, 32 all-reduce, 4 all-gather, 4 reduce-scatter, 16 send-recv)") {
		t.Fatalf("summary %q", p.Summary())
	}
}

func Test1F1BSchedule(t *testing.T) {
	// PP 4, 8 micro-batches, one layer per stage. Stage 0 warms up with PP-1 = 3 forwards,
	// alternates, and cools down with 3 backwards; the last stage alternates from the start.
	c := &Config{Model: ModelSpec{Shape: tinyModel()}, PP: 4, GlobalBatch: 8, BucketSize: units.GiB}
	p := mustBuild(t, c)
	order := func(stage int) string {
		var s []string
		r := p.Rank(0, stage, 0)
		for _, o := range p.Ops {
			if o.Kind == Compute && o.Ranks[0] == r && o.Phase != "optimizer" {
				s = append(s, fmt.Sprintf("%c%d", strings.ToUpper(o.Phase)[0], o.Microbatch))
			}
		}
		return strings.Join(s, " ")
	}
	for stage, want := range map[int]string{
		0: "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7",
		2: "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7",
		3: "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7",
	} {
		if got := order(stage); got != want {
			t.Errorf("stage %d: %s\nwant      %s", stage, got, want)
		}
	}
	// More stages than micro-batches: stage 0 runs all forwards, then all backwards.
	c.GlobalBatch = 2
	p = mustBuild(t, c)
	if got := order(0); got != "F0 F1 B0 B1" {
		t.Errorf("M < PP: %s", got)
	}
}

func dpGradBytes(p *Plan, rank int) units.Size {
	var sum units.Size
	for _, o := range p.Ops {
		if o.Phase == "bwd" && o.Dim == "dp" && (o.Kind == ReduceScatter || o.Kind == AllReduce) {
			for _, r := range o.Ranks {
				if r == rank {
					sum += o.Bytes * units.Size(o.Repeat)
				}
			}
		}
	}
	return sum
}

func TestDPGradientBytes(t *testing.T) {
	const params = 8_030_261_248 // Llama 3 8B
	// TP 8, PP 1: each rank reduces params x 2 B / TP.
	p := mustBuild(t, &Config{Model: ModelSpec{Name: "llama3-8b"}, TP: 8, DP: 8, ZeRO: 1, GlobalBatch: 64})
	for _, r := range []int{0, 5, 63} {
		if got := dpGradBytes(p, r); got != params*2/8 {
			t.Errorf("rank %d: %d gradient bytes, want %d", r, got, params*2/8)
		}
	}
	// TP 2, PP 4: middle stages hold 8 layers (8 x 218,112,000 x 2 B / 2); the first adds the
	// embedding, the last the head and final norm; over the stages the bytes add up to
	// params x 2 B / TP, i.e. params x 2 / TP / PP per rank on average.
	p = mustBuild(t, &Config{Model: ModelSpec{Name: "llama3-8b"}, TP: 2, PP: 4, DP: 8, ZeRO: 1, GlobalBatch: 64, SequenceParallel: true})
	var sum units.Size
	for s := range 4 {
		got := dpGradBytes(p, p.Rank(3, s, 1))
		sum += got
		if s == 1 || s == 2 {
			if want := units.Size(8 * 218_112_000); got != want {
				t.Errorf("stage %d: %d bytes, want %d", s, got, want)
			}
		}
	}
	if sum != params*2/2 {
		t.Errorf("sum over stages %d, want params x 2 / TP = %d", sum, params)
	}
	if avg := float64(sum) / 4; avg != float64(params)*2/2/4 {
		t.Errorf("average %g, want %g", avg, float64(params)*2/2/4)
	}
}

func TestLlama3_8BOn64GPUs(t *testing.T) {
	// The reference: Llama-3-8B, 64 H100s, TP 8, PP 1, DP 8, ZeRO-1, micro batch 1,
	// global batch 64, seq 8192. With 4 layers per block (8 blocks):
	//   compute   64 GPUs x 8 mb x 8 blocks x 2 passes + 64 optimizer steps = 8,256
	//   TP        8 groups x 8 mb x 8 blocks x 2                             = 1,024
	//   DP        8 groups x ceil(2,007,565,312 B / 25 MiB) = 8 x 77         = 616 reduce-scatters
	//             + 616 parameter all-gathers
	c := &Config{Model: ModelSpec{Name: "llama3-8b"}, GPU: GPUSpec{Name: "h100"}, TP: 8, PP: 1, DP: 8, ZeRO: 1,
		MicroBatch: 1, GlobalBatch: 64, SeqLen: 8192}
	p := mustBuild(t, c)
	want := map[OpKind]int{Compute: 8256, AllReduce: 1024, ReduceScatter: 616, AllGather: 616}
	if got := p.Count(); !reflect.DeepEqual(got, want) || len(p.Ops) != 10512 {
		t.Fatalf("counts %v (%d ops), want %v (10,512)", got, len(p.Ops), want)
	}
	if len(p.Ops) >= 20000 {
		t.Fatalf("%d ops, over the 20k target", len(p.Ops))
	}
	t.Logf("Llama-3-8B on 64 GPUs: %s; busiest GPU computes %s; %s", p.Summary(), p.ComputeTime, p.Memory.Explain())

	// Compute conservation: the compute ops of all GPUs add up to the hardware FLOPs at
	// peak x efficiency (each TP rank does 1/TP of its group's work).
	var sum float64
	for _, o := range p.Ops {
		if o.Kind == Compute && o.Phase != "optimizer" {
			sum += o.Duration.Seconds()
		}
	}
	if got := sum * 989e12 * 0.5; relErr(got, p.HardwareFLOPs) > 1e-9 {
		t.Fatalf("compute ops hold %.6e FLOPs, plan says %.6e", got, p.HardwareFLOPs)
	}
	// The optimizer step: 1,003,782,656 parameters per GPU / DP 8 x 28 B at 3.35 TB/s.
	for _, o := range p.Ops {
		if o.Phase == "optimizer" && o.Kind == Compute {
			want := units.Time(math.Round(1_003_782_656.0 / 8 * 28 / 3.35e12 * 1e12))
			if d := o.Duration - want; d < -1 || d > 1 {
				t.Fatalf("optimizer step %s, want %s", o.Duration, want)
			}
			break
		}
	}
}

func TestMoEPlan(t *testing.T) {
	// 2 MoE layers of 4 experts (top-2), 4 GPUs: TP 1, PP 1, DP 4, EP 2 (two EP groups of 2;
	// each expert shard replicated over an expert-DP group of 2), 1 micro-batch.
	//   compute     4 x 1 mb x 2 blocks x 2 + 4 optimizer = 20
	//   all-to-all  2 EP groups x 2 blocks x 2 passes      = 8 (Repeat 2: dispatch + combine)
	//   buckets     1 dense DP group + 2 expert-DP groups  = 3 reduce-scatters, 3 all-gathers
	m := &Model{Name: "tiny-moe", Layers: 2, Hidden: 256, FFN: 512, Heads: 8, Vocab: 1000, SeqLen: 128,
		GatedMLP: true, Norm: RMSNorm, Experts: 4, TopK: 2}
	c := &Config{Model: ModelSpec{Shape: m}, DP: 4, EP: 2, ZeRO: 1, GlobalBatch: 4, LayersPerBlock: 1, BucketSize: units.GiB}
	p := mustBuild(t, c)
	want := map[OpKind]int{Compute: 20, AllToAll: 8, ReduceScatter: 3, AllGather: 3}
	if got := p.Count(); !reflect.DeepEqual(got, want) {
		t.Fatalf("counts %v, want %v", got, want)
	}
	// Expert gradients per GPU: 2 layers x 4 experts x 3 x 256 x 512 / EP 2 x 2 B.
	for _, o := range p.Ops {
		switch {
		case o.Kind == AllToAll:
			if o.Bytes != 2*128*2*256 || o.Repeat != 2 || o.Ranks[1]-o.Ranks[0] != 1 {
				t.Fatalf("all-to-all %+v: want 128 tokens x top-2 x 256 x 2 B among consecutive replicas", o)
			}
		case o.Kind == ReduceScatter && o.Dim == "edp":
			if o.Bytes != 2*4*3*256*512/2*2 || o.Ranks[1]-o.Ranks[0] != 2 {
				t.Fatalf("expert bucket %+v", o)
			}
		}
	}
}

func TestBuildDeterministic(t *testing.T) {
	a := mustBuild(t, tiny())
	b := mustBuild(t, tiny())
	if !reflect.DeepEqual(a.Ops, b.Ops) {
		t.Fatal("two builds of the same config differ")
	}
}

func TestPlanSizeLimit(t *testing.T) {
	// 16,384 GPUs x 1,000 micro-batches x 8 blocks x 2 passes = 262 M compute ops: refused
	// before anything is allocated, naming the knob.
	c := &Config{Model: ModelSpec{Name: "llama3-8b"}, TP: 8, DP: 2048, GlobalBatch: 2048 * 1000}
	_, err := Build(c)
	if err == nil || !strings.Contains(err.Error(), "workload.layers_per_block: the plan would hold 262144000 compute ops") {
		t.Fatalf("error %v", err)
	}
}

// TestBuildContextCancelled: a cancelled context stops the build with its error and no plan;
// an uncancelled one builds the same plan as Build.
func TestBuildContextCancelled(t *testing.T) {
	cfg := &Config{Model: ModelSpec{Shape: tinyModel()}, TP: 2, PP: 2, DP: 2, ZeRO: 1, GlobalBatch: 8}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if p, err := BuildContext(ctx, cfg); p != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v, %v; want no plan and context.Canceled", p, err)
	}
	a, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := BuildContext(context.Background(), cfg)
	if err != nil || len(a.Ops) != len(b.Ops) || a.ComputeTime != b.ComputeTime {
		t.Fatalf("BuildContext: %d ops, %v (%v); Build: %d ops, %v", len(b.Ops), b.ComputeTime, err, len(a.Ops), a.ComputeTime)
	}
}
