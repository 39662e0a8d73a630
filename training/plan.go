package training

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/fabricsim/fabricsim/units"
)

// OpKind is what an Op does.
type OpKind uint8

// Op kinds.
const (
	Compute OpKind = iota
	AllReduce
	AllGather
	ReduceScatter
	AllToAll
	SendRecv
	// Broadcast and Reduce (from the root, Ranks[0]) come only from imported traces (package
	// chakra); Build never emits them.
	Broadcast
	Reduce
)

var opKindNames = [...]string{"compute", "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "send-recv", "broadcast", "reduce"}

func (k OpKind) String() string {
	if int(k) < len(opKindNames) {
		return opKindNames[k]
	}
	return fmt.Sprintf("OpKind(%d)", k)
}

// MarshalText writes the kind's name in JSON.
func (k OpKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Op is one step of a GPU's work or one collective among GPUs.
//
// Bytes follows the nccl-tests "size" convention ([nccl-tests] doc/PERFORMANCE.md): all-reduce, the buffer
// each rank holds (S); all-gather, the gathered output each rank ends with (n shards);
// reduce-scatter, the input each rank starts with (n shards); all-to-all, the whole send
// buffer of each rank (n pieces, its own included); send-recv, the message from Ranks[0] to
// Ranks[1]; broadcast and reduce, the buffer (root Ranks[0]). An op with Repeat n > 1 stands for n such collectives back to back on the same
// ranks (the collectives of the layers a block groups), each of Bytes.
type Op struct {
	ID    int    `json:"id"`
	Kind  OpKind `json:"kind"`
	Ranks []int  `json:"ranks"` // global GPU ranks taking part; Compute: the one GPU
	// Bytes per collective (nccl-tests convention above); 0 for Compute.
	Bytes  units.Size `json:"bytes,omitempty"`
	Repeat int        `json:"repeat,omitempty"`
	// Duration of a Compute op at the configured efficiency.
	Duration units.Time `json:"duration,omitempty"`
	// Deps must all complete before the op starts (IDs of earlier ops).
	Deps  []int  `json:"deps,omitempty"`
	Phase string `json:"phase"` // fwd, bwd, optimizer
	// Dim is the parallel dimension of a collective: tp, pp, dp, ep, or edp (the data-parallel
	// group of an expert's replicas); empty for Compute.
	Dim string `json:"dim,omitempty"`
	// Layer is the first layer an op covers and Layers how many (-1 and 0 outside layers).
	Layer      int    `json:"layer"`
	Layers     int    `json:"layers,omitempty"`
	Microbatch int    `json:"microbatch"` // -1 outside the pipeline
	Stage      int    `json:"stage"`      // pipeline stage
	Tag        string `json:"tag"`
}

// Plan is every operation of one training step on every GPU.
//
// Ranks are laid out in Megatron-LM's order, tensor parallel fastest, then data parallel, then
// pipeline: rank = (pp x DP + dp) x TP + tp. A TP group is TP consecutive ranks, so it sits in
// one server when TP divides GPUsPerServer (Validate insists); an EP group is EP consecutive
// data-parallel replicas.
type Plan struct {
	Ops            []Op   `json:"ops"`
	GPUs           int    `json:"gpus"`
	GPUsPerServer  int    `json:"gpus_per_server"`
	TP             int    `json:"tp"`
	PP             int    `json:"pp"`
	DP             int    `json:"dp"`
	EP             int    `json:"ep"`
	ZeRO           int    `json:"zero"`
	MicroBatches   int    `json:"micro_batches"` // per data-parallel replica
	LayersPerBlock int    `json:"layers_per_block"`
	BlocksPerStage int    `json:"blocks_per_stage"`
	Model          Model  `json:"model"`
	GPU            GPU    `json:"gpu"`
	Memory         Memory `json:"memory"`
	// StepFLOPs is the model FLOPs of the step over the global batch; HardwareFLOPs adds
	// recomputation. Both count all GPUs together.
	StepFLOPs     float64 `json:"step_flops"`
	HardwareFLOPs float64 `json:"hardware_flops"`
	TokensPerStep int64   `json:"tokens_per_step"`
	// ComputeTime is the busiest GPU's compute time alone (no communication, no bubbles).
	ComputeTime units.Time `json:"compute_time"`
}

// Rank is the global rank of data-parallel replica dp, pipeline stage pp, tensor rank tp.
func (p *Plan) Rank(dp, pp, tp int) int { return (pp*p.DP+dp)*p.TP + tp }

// Coords inverts Rank.
func (p *Plan) Coords(rank int) (dp, pp, tp int) {
	tp = rank % p.TP
	rest := rank / p.TP
	return rest % p.DP, rest / p.DP, tp
}

// Count is the number of ops of each kind.
func (p *Plan) Count() map[OpKind]int {
	out := map[OpKind]int{}
	for i := range p.Ops {
		out[p.Ops[i].Kind]++
	}
	return out
}

// Summary is a digest for reports: the op count in all and by kind.
func (p *Plan) Summary() string {
	n := p.Count()
	var parts []string
	for k := Compute; int(k) < len(opKindNames); k++ {
		if n[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[k], k))
		}
	}
	return fmt.Sprintf("%d ops (%s)", len(p.Ops), strings.Join(parts, ", "))
}

// Validate checks the plan's invariants: dense IDs, dependencies on earlier ops only, ranks in
// range, one GPU per compute op, distinct ranks and positive sizes for collectives.
func (p *Plan) Validate() error {
	for i := range p.Ops {
		o := &p.Ops[i]
		if o.ID != i {
			return fmt.Errorf("op %d has ID %d", i, o.ID)
		}
		for _, d := range o.Deps {
			if d < 0 || d >= i {
				return fmt.Errorf("op %d (%s): dependency %d does not precede it", i, o.Tag, d)
			}
		}
		seen := map[int]bool{}
		for _, r := range o.Ranks {
			if r < 0 || r >= p.GPUs {
				return fmt.Errorf("op %d (%s): rank %d outside 0..%d", i, o.Tag, r, p.GPUs-1)
			}
			if seen[r] {
				return fmt.Errorf("op %d (%s): rank %d twice", i, o.Tag, r)
			}
			seen[r] = true
		}
		switch o.Kind {
		case Compute:
			if len(o.Ranks) != 1 || o.Bytes != 0 || o.Duration < 0 {
				return fmt.Errorf("op %d (%s): compute needs one rank, no bytes, a duration", i, o.Tag)
			}
		case SendRecv:
			if len(o.Ranks) != 2 || o.Bytes <= 0 {
				return fmt.Errorf("op %d (%s): send-recv needs two ranks and bytes", i, o.Tag)
			}
		default:
			if len(o.Ranks) < 2 || o.Bytes <= 0 || o.Repeat < 1 {
				return fmt.Errorf("op %d (%s): %s needs two or more ranks, bytes and repeat >= 1", i, o.Tag, o.Kind)
			}
		}
	}
	return nil
}

// MaxComputeOps bounds a plan's size (about 200 B per op): an explicit plan of every GPU is
// what the packet backend needs, but a 100k-GPU step at one op per layer would not fit in memory.
const MaxComputeOps = 20_000_000

// Build validates the config (after applying defaults to a copy) and produces the plan.
func Build(cfg *Config) (*Plan, error) { return BuildContext(context.Background(), cfg) }

// BuildContext is Build stopped by ctx: a cancelled ctx ends the build between two items of the
// pipeline schedule (each a few thousand ops at 16,384 GPUs) and returns ctx's error. A
// 16,384-GPU mixture of experts takes seconds to build on one core, minutes on a loaded machine,
// and compare's Ctrl-C must not wait for it.
func BuildContext(ctx context.Context, cfg *Config) (*Plan, error) {
	c := *cfg
	c.Defaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	m, _ := c.ResolveModel()
	g, _ := c.ResolveGPU()
	blocks := (m.Layers/c.PP + c.LayersPerBlock - 1) / c.LayersPerBlock
	if n := 2 * int64(c.GPUs) * int64(c.MicroBatches()) * int64(blocks); n > MaxComputeOps {
		return nil, c.errAt("layers_per_block", "the plan would hold %d compute ops (2 passes x %d GPUs x %d micro-batches x %d blocks per stage), over the limit of %d: raise layers_per_block (now %d) or shrink the step",
			n, c.GPUs, c.MicroBatches(), blocks, MaxComputeOps, c.LayersPerBlock)
	}
	b := newBuilder(&c, m, g)
	b.ctx = ctx
	b.pipeline()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b.optimizer()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	busy := make([]units.Time, c.GPUs)
	for i := range b.p.Ops {
		if o := &b.p.Ops[i]; o.Kind == Compute {
			busy[o.Ranks[0]] += o.Duration
		}
	}
	for _, t := range busy {
		b.p.ComputeTime = max(b.p.ComputeTime, t)
	}
	if err := b.p.Validate(); err != nil {
		panic("training: built an invalid plan: " + err.Error())
	}
	return b.p, nil
}

type builder struct {
	ctx  context.Context // pipeline stops emitting once it is cancelled (BuildContext)
	c    *Config
	m    Model
	g    GPU
	p    *Plan
	M    int // micro-batches per replica
	lps  int // layers per stage
	nb   int // blocks per stage
	edp  int // size of an expert's data-parallel group
	rate float64

	tail []int    // per rank: the op its next compute waits for
	hist [][2]int // per rank: last two compute ops, most recent first

	zLast  map[[3]int]int // last ZeRO-3 all-gather per group
	gLast  map[[3]int]int // last gradient collective per group
	gSizes map[[3]int][]units.Size

	denseClose  [][][]units.Size // [stage][block] gradient buckets (bytes) that close there
	expertClose [][][]units.Size
	recvF       [][]int // [stage][mb*DP*TP + dp*TP + tp]: send-recv feeding F(stage, mb)
	recvB       [][]int
}

func newBuilder(c *Config, m Model, g GPU) *builder {
	b := &builder{c: c, m: m, g: g, M: c.MicroBatches(), lps: m.Layers / c.PP, edp: c.DP / c.EP,
		rate:  g.PeakFLOPS * c.Efficiency,
		zLast: map[[3]int]int{}, gLast: map[[3]int]int{}, gSizes: map[[3]int][]units.Size{}}
	b.nb = (b.lps + c.LayersPerBlock - 1) / c.LayersPerBlock
	b.p = &Plan{GPUs: c.GPUs, GPUsPerServer: c.GPUsPerServer, TP: c.TP, PP: c.PP, DP: c.DP, EP: c.EP,
		ZeRO: c.ZeRO, MicroBatches: b.M, LayersPerBlock: c.LayersPerBlock, BlocksPerStage: b.nb,
		Model: m, GPU: g, Memory: EstimateMemory(c, m, g),
		StepFLOPs:     m.StepFLOPs(c.GlobalBatch, c.SeqLen),
		HardwareFLOPs: m.HardwareFLOPs(c.GlobalBatch, c.SeqLen, c.Recompute),
		TokensPerStep: int64(c.GlobalBatch) * int64(c.SeqLen)}
	b.tail = make([]int, c.GPUs)
	b.hist = make([][2]int, c.GPUs)
	for r := range b.tail {
		b.tail[r] = -1
		b.hist[r] = [2]int{-1, -1}
	}
	n := b.M * c.DP * c.TP
	b.recvF, b.recvB = make([][]int, c.PP), make([][]int, c.PP)
	for s := range c.PP {
		b.recvF[s], b.recvB[s] = make([]int, n), make([]int, n)
		for i := range n {
			b.recvF[s][i], b.recvB[s][i] = -1, -1
		}
		var dense, experts []units.Size
		for j := range b.nb {
			d, e := b.blockParams(s, j)
			dense = append(dense, units.Size(gradBytes*d))
			experts = append(experts, units.Size(gradBytes*e))
		}
		b.denseClose = append(b.denseClose, bucketize(dense, c.BucketSize))
		b.expertClose = append(b.expertClose, bucketize(experts, c.BucketSize))
	}
	return b
}

// bucketize walks blocks from last to first (the order backward produces gradients) and cuts
// the bytes into buckets of size bucket; a bucket closes at the block whose gradients fill it,
// the remainder at block 0.
func bucketize(sizes []units.Size, bucket units.Size) [][]units.Size {
	out := make([][]units.Size, len(sizes))
	var acc units.Size
	for j := len(sizes) - 1; j >= 0; j-- {
		acc += sizes[j]
		for acc >= bucket {
			out[j] = append(out[j], bucket)
			acc -= bucket
		}
	}
	if acc > 0 && len(sizes) > 0 {
		out[0] = append(out[0], acc)
	}
	return out
}

// blockLayers is the first layer (within the stage) and the number of layers of block j.
func (b *builder) blockLayers(j int) (first, n int) {
	first = j * b.c.LayersPerBlock
	return first, min(b.c.LayersPerBlock, b.lps-first)
}

// blockParams is one GPU's parameters in block j of stage s: dense (split by TP) and experts
// (split by TP x EP). The embedding sits in the first block of stage 0, the final norm and
// output head in the last block of the last stage.
func (b *builder) blockParams(s, j int) (dense, experts int64) {
	pc := b.m.ParamCount()
	_, k := b.blockLayers(j)
	d := int64(k) * pc.LayerDense
	var e int64
	if b.m.MoE() {
		e = int64(k) * pc.LayerExperts / int64(b.c.TP*b.c.EP)
	} else {
		d += int64(k) * pc.LayerExperts
	}
	if s == 0 && j == 0 {
		d += pc.Embedding
	}
	if s == b.c.PP-1 && j == b.nb-1 {
		d += pc.Output
	}
	return d / int64(b.c.TP), e
}

func (b *builder) seconds(flops float64) units.Time {
	return units.Time(math.Round(flops / float64(b.c.TP) / b.rate * float64(units.Second)))
}

// blockTime is the duration of block j of stage s for one micro-batch.
func (b *builder) blockTime(s, j int, bwd bool) units.Time {
	_, k := b.blockLayers(j)
	mb, seq := b.c.MicroBatch, b.c.SeqLen
	layer := b.m.LayerForwardFLOPs(mb, seq)
	f := float64(k) * layer
	if s == b.c.PP-1 && j == b.nb-1 {
		f += b.m.LogitFLOPs(mb, seq)
	}
	if !bwd {
		return b.seconds(f)
	}
	f *= 2
	switch b.c.Recompute {
	case RecomputeFull:
		f += float64(k) * layer
	case RecomputeSelective:
		f += float64(k) * b.m.AttentionCoreFLOPs(mb, seq)
	}
	return b.seconds(f)
}

func (b *builder) add(o Op) int {
	o.ID = len(b.p.Ops)
	if o.Repeat == 0 && o.Kind != Compute {
		o.Repeat = 1
	}
	b.p.Ops = append(b.p.Ops, o)
	return o.ID
}

func deps(ids ...int) []int {
	var out []int
	for _, d := range ids {
		if d >= 0 {
			out = append(out, d)
		}
	}
	return out
}

type item struct {
	bwd bool
	mb  int
}

// schedule1F1B is stage s's order of forward and backward passes under PipeDream-Flush /
// Megatron 1F1B (Narayanan et al. 2021, §2.2.1): min(PP-s-1, M) warm-up forwards, then one
// forward and one backward alternately, then the remaining backwards.
func schedule1F1B(pp, s, m int) []item {
	w := min(pp-s-1, m)
	out := make([]item, 0, 2*m)
	for i := range w {
		out = append(out, item{mb: i})
	}
	for i := range m - w {
		out = append(out, item{mb: w + i}, item{bwd: true, mb: i})
	}
	for i := m - w; i < m; i++ {
		out = append(out, item{bwd: true, mb: i})
	}
	return out
}

// pipeline emits every stage's schedule, an item as soon as the item it waits for on the
// neighbouring stage has been emitted, so dependencies always point backwards.
func (b *builder) pipeline() {
	c := b.c
	sched := make([][]item, c.PP)
	next := make([]int, c.PP)
	fDone := make([][]bool, c.PP)
	bDone := make([][]bool, c.PP)
	for s := range c.PP {
		sched[s] = schedule1F1B(c.PP, s, b.M)
		fDone[s], bDone[s] = make([]bool, b.M), make([]bool, b.M)
	}
	for progress := true; progress; {
		progress = false
		for s := range c.PP {
			for next[s] < len(sched[s]) {
				if b.ctx != nil && b.ctx.Err() != nil {
					return // BuildContext returns the context's error
				}
				it := sched[s][next[s]]
				if !it.bwd && s > 0 && !fDone[s-1][it.mb] || it.bwd && s < c.PP-1 && !bDone[s+1][it.mb] {
					break
				}
				b.emit(s, it)
				if it.bwd {
					bDone[s][it.mb] = true
				} else {
					fDone[s][it.mb] = true
				}
				next[s]++
				progress = true
			}
		}
	}
	for s := range c.PP {
		if next[s] != len(sched[s]) {
			panic(fmt.Sprintf("training: 1F1B schedule stuck at stage %d item %d", s, next[s]))
		}
	}
}

func (b *builder) group(s, tp int, dps []int) []int {
	out := make([]int, len(dps))
	for i, d := range dps {
		out[i] = b.p.Rank(d, s, tp)
	}
	return out
}

func seq(from, n, step int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = from + i*step
	}
	return out
}

// emit produces one pass (forward or backward of one micro-batch) of stage s on every
// data-parallel replica and tensor rank.
func (b *builder) emit(s int, it item) {
	c, p := b.c, b.p
	phase := "fwd"
	if it.bwd {
		phase = "bwd"
	}
	act := units.Size(2 * c.MicroBatch * c.SeqLen * b.m.Hidden) // bf16 activations of one micro-batch
	tokens := c.MicroBatch * c.SeqLen
	if c.SequenceParallel {
		tokens /= c.TP
	}
	a2a := units.Size(2 * tokens * b.m.TopK * b.m.Hidden)
	lastMB := it.bwd && it.mb == b.M-1
	allDP := seq(0, c.DP, 1)

	order := seq(0, b.nb, 1)
	if it.bwd {
		order = seq(b.nb-1, b.nb, -1)
	}
	for idx, j := range order {
		first, k := b.blockLayers(j)
		layer := s*b.lps + first
		label := fmt.Sprintf("%s mb%d L%d-%d", phase, it.mb, layer, layer+k-1)
		dense, experts := b.blockParams(s, j)

		// ZeRO-3: gather the block's parameters first, one block ahead of use (prefetch).
		zDense := make([]int, c.TP)
		zExpert := make([]int, c.TP*c.EP)
		for i := range zDense {
			zDense[i] = -1
		}
		for i := range zExpert {
			zExpert[i] = -1
		}
		if c.ZeRO == 3 {
			for tp := range c.TP {
				if c.DP > 1 {
					zDense[tp] = b.gather(s, tp, -1, allDP, dense, phase, it.mb, layer, k, label)
				}
				if experts > 0 && b.edp > 1 {
					for e := range c.EP {
						zExpert[tp*c.EP+e] = b.gather(s, tp, e, seq(e, b.edp, c.EP), experts, phase, it.mb, layer, k, label)
					}
				}
			}
		}

		dur := b.blockTime(s, j, it.bwd)
		for dp := range c.DP {
			for tp := range c.TP {
				r := p.Rank(dp, s, tp)
				var recv int = -1
				if idx == 0 {
					i := (it.mb*c.DP+dp)*c.TP + tp
					if it.bwd {
						recv = b.recvB[s][i]
					} else {
						recv = b.recvF[s][i]
					}
				}
				id := b.add(Op{Kind: Compute, Ranks: []int{r}, Duration: dur, Phase: phase, Layer: layer, Layers: k,
					Microbatch: it.mb, Stage: s, Tag: label,
					Deps: deps(b.tail[r], zDense[tp], zExpert[tp*c.EP+dp%c.EP], recv)})
				b.hist[r] = [2]int{id, b.hist[r][0]}
				b.tail[r] = id
			}
		}

		// Tensor parallel: 2 all-reduces per layer and pass (Megatron's f and g operators,
		// Shoeybi et al. 2019), or with sequence parallelism 2 all-gathers and 2 reduce-scatters.
		if c.TP > 1 {
			for dp := range c.DP {
				ranks := seq(p.Rank(dp, s, 0), c.TP, 1)
				if c.SequenceParallel {
					ag := b.add(Op{Kind: AllGather, Ranks: ranks, Bytes: act, Repeat: 2 * k, Phase: phase, Dim: "tp",
						Layer: layer, Layers: k, Microbatch: it.mb, Stage: s, Tag: label + " tp-ag", Deps: b.tails(ranks)})
					rs := b.add(Op{Kind: ReduceScatter, Ranks: ranks, Bytes: act, Repeat: 2 * k, Phase: phase, Dim: "tp",
						Layer: layer, Layers: k, Microbatch: it.mb, Stage: s, Tag: label + " tp-rs", Deps: []int{ag}})
					b.setTails(ranks, rs)
				} else {
					ar := b.add(Op{Kind: AllReduce, Ranks: ranks, Bytes: act, Repeat: 2 * k, Phase: phase, Dim: "tp",
						Layer: layer, Layers: k, Microbatch: it.mb, Stage: s, Tag: label + " tp-ar", Deps: b.tails(ranks)})
					b.setTails(ranks, ar)
				}
			}
		}

		// Expert parallel: dispatch and combine all-to-all around each MoE layer.
		if b.m.MoE() && c.EP > 1 {
			for g := range c.DP / c.EP {
				for tp := range c.TP {
					ranks := b.group(s, tp, seq(g*c.EP, c.EP, 1))
					id := b.add(Op{Kind: AllToAll, Ranks: ranks, Bytes: a2a, Repeat: 2 * k, Phase: phase, Dim: "ep",
						Layer: layer, Layers: k, Microbatch: it.mb, Stage: s, Tag: label + " ep-a2a", Deps: b.tails(ranks)})
					b.setTails(ranks, id)
				}
			}
		}

		// Data parallel: gradient buckets, overlapped with the rest of the last backward.
		if lastMB && c.DP > 1 {
			kind := AllReduce
			if c.ZeRO >= 1 {
				kind = ReduceScatter
			}
			for tp := range c.TP {
				b.buckets(kind, s, tp, -1, allDP, b.denseClose[s][j], layer, k)
				if b.m.MoE() && b.edp > 1 {
					for e := range c.EP {
						b.buckets(kind, s, tp, e, seq(e, b.edp, c.EP), b.expertClose[s][j], layer, k)
					}
				}
			}
		}
	}

	// Pipeline: activations forward to the next stage, gradients back to the previous one.
	ppBytes := act
	if c.SequenceParallel {
		ppBytes /= units.Size(c.TP)
	}
	to := s + 1
	if it.bwd {
		to = s - 1
	}
	if to < 0 || to >= c.PP {
		return
	}
	for dp := range c.DP {
		for tp := range c.TP {
			src, dst := p.Rank(dp, s, tp), p.Rank(dp, to, tp)
			id := b.add(Op{Kind: SendRecv, Ranks: []int{src, dst}, Bytes: ppBytes, Phase: phase, Dim: "pp", Layer: -1,
				Microbatch: it.mb, Stage: s, Tag: fmt.Sprintf("%s mb%d stage %d->%d", phase, it.mb, s, to), Deps: deps(b.tail[src])})
			i := (it.mb*c.DP+dp)*c.TP + tp
			if it.bwd {
				b.recvB[to][i] = id
			} else {
				b.recvF[to][i] = id
			}
		}
	}
}

func (b *builder) tails(ranks []int) []int {
	var out []int
	for _, r := range ranks {
		if t := b.tail[r]; t >= 0 && (len(out) == 0 || out[len(out)-1] != t) {
			out = append(out, t)
		}
	}
	return out
}

func (b *builder) setTails(ranks []int, id int) {
	for _, r := range ranks {
		b.tail[r] = id
	}
}

// gather emits a ZeRO-3 parameter all-gather of one block over a data-parallel group
// (e = -1: the dense group; e >= 0: the group of expert shard e). It may start once each member
// has finished the compute before its current one, i.e. one block of prefetch.
func (b *builder) gather(s, tp, e int, dps []int, params int64, phase string, mb, layer, k int, label string) int {
	key := [3]int{s, tp, e}
	ranks := b.group(s, tp, dps)
	var d []int
	if last, ok := b.zLast[key]; ok {
		d = append(d, last)
	}
	for _, r := range ranks {
		if h := b.hist[r][1]; h >= 0 {
			d = append(d, h)
		}
	}
	dim := "dp"
	if e >= 0 {
		dim = "edp"
	}
	id := b.add(Op{Kind: AllGather, Ranks: ranks, Bytes: units.Size(weightBytes * params), Phase: phase, Dim: dim,
		Layer: layer, Layers: k, Microbatch: mb, Stage: s, Tag: label + " zero3-ag", Deps: d})
	b.zLast[key] = id
	return id
}

// buckets emits the gradient collectives of the buckets that close at the current block.
func (b *builder) buckets(kind OpKind, s, tp, e int, dps []int, sizes []units.Size, layer, k int) {
	key := [3]int{s, tp, e}
	ranks := b.group(s, tp, dps)
	dim := "dp"
	if e >= 0 {
		dim = "edp"
	}
	for _, size := range sizes {
		var d []int
		if last, ok := b.gLast[key]; ok {
			d = append(d, last)
		}
		for _, r := range ranks {
			d = append(d, b.hist[r][0]) // the backward compute that produced the gradients
		}
		id := b.add(Op{Kind: kind, Ranks: ranks, Bytes: size, Phase: "bwd", Dim: dim, Layer: layer, Layers: k,
			Microbatch: b.M - 1, Stage: s, Tag: fmt.Sprintf("grad bucket %d stage %d tp %d %s", len(b.gSizes[key]), s, tp, dim), Deps: d})
		b.gLast[key] = id
		b.gSizes[key] = append(b.gSizes[key], size)
	}
}

// optimizer emits each GPU's Adam step (memory-bound: OptimizerBytesPerParam per parameter it
// updates, at HBM bandwidth) after its gradients are reduced, then, for ZeRO-1/2, the
// all-gather of the updated bf16 parameters bucket by bucket.
func (b *builder) optimizer() {
	c, p := b.c, b.p
	opt := make([]int, c.GPUs)
	for s := range c.PP {
		var dense, experts int64
		for j := range b.nb {
			d, e := b.blockParams(s, j)
			dense, experts = dense+d, experts+e
		}
		upd := float64(dense + experts)
		if c.ZeRO >= 1 {
			upd = float64(dense)/float64(c.DP) + float64(experts)/float64(b.edp)
		}
		dur := units.Time(math.Round(upd * c.OptimizerBytesPerParam / b.g.HBMBytesPerSec * float64(units.Second)))
		for dp := range c.DP {
			for tp := range c.TP {
				r := p.Rank(dp, s, tp)
				d := deps(b.tail[r])
				if id, ok := b.gLast[[3]int{s, tp, -1}]; ok {
					d = append(d, id)
				}
				if id, ok := b.gLast[[3]int{s, tp, dp % c.EP}]; ok && b.m.MoE() {
					d = append(d, id)
				}
				opt[r] = b.add(Op{Kind: Compute, Ranks: []int{r}, Duration: dur, Phase: "optimizer", Layer: -1,
					Microbatch: -1, Stage: s, Tag: "adam", Deps: d})
				b.tail[r] = opt[r]
			}
		}
	}
	if c.ZeRO != 1 && c.ZeRO != 2 {
		return
	}
	for s := range c.PP {
		for tp := range c.TP {
			groups := [][2]int{{-1, c.DP}}
			if b.m.MoE() {
				for e := range c.EP {
					groups = append(groups, [2]int{e, b.edp})
				}
			}
			for _, g := range groups {
				e := g[0]
				dps := seq(0, c.DP, 1)
				dim := "dp"
				if e >= 0 {
					dps, dim = seq(e, b.edp, c.EP), "edp"
				}
				sizes := b.gSizes[[3]int{s, tp, e}]
				if len(sizes) == 0 {
					continue
				}
				ranks := b.group(s, tp, dps)
				last := -1
				for i, size := range sizes {
					d := deps(last)
					for _, r := range ranks {
						d = append(d, opt[r])
					}
					last = b.add(Op{Kind: AllGather, Ranks: ranks, Bytes: size, Phase: "optimizer", Dim: dim, Layer: -1,
						Microbatch: -1, Stage: s, Tag: fmt.Sprintf("param bucket %d stage %d tp %d %s", i, s, tp, dim), Deps: d})
				}
				b.setTails(ranks, last)
			}
		}
	}
}
