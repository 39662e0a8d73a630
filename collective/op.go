package collective

import (
	"fmt"
	"strings"

	"github.com/fabricsim/fabricsim/units"
)

// Op is a collective operation.
type Op uint8

// The collectives fabricsim compiles. The names follow NCCL's API (ncclAllReduce, ...).
const (
	AllReduce Op = iota
	AllGather
	ReduceScatter
	AllToAll
	Broadcast
	Reduce
	SendRecv
	numOps
)

var opNames = [numOps]string{"AllReduce", "AllGather", "ReduceScatter", "AllToAll", "Broadcast", "Reduce", "SendRecv"}

// Ops lists every Op in declaration order.
func Ops() []Op {
	return []Op{AllReduce, AllGather, ReduceScatter, AllToAll, Broadcast, Reduce, SendRecv}
}

func (o Op) String() string {
	if o < numOps {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// normalize lower-cases s and drops '-', '_' and spaces so that "all-reduce", "all_reduce",
// "AllReduce" and "allreduce" compare equal.
func normalize(s string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(strings.TrimSpace(s)) {
		if c == '-' || c == '_' || c == ' ' {
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

// ParseOp parses a collective name: "allreduce", "all-reduce", "all_reduce", "AllReduce",
// "allgather", "reducescatter", "alltoall" (or "all-to-all", "a2a"), "broadcast" (or "bcast"),
// "reduce", "sendrecv" (or "send-recv", "p2p").
func ParseOp(s string) (Op, error) {
	switch normalize(s) {
	case "allreduce":
		return AllReduce, nil
	case "allgather":
		return AllGather, nil
	case "reducescatter":
		return ReduceScatter, nil
	case "alltoall", "a2a":
		return AllToAll, nil
	case "broadcast", "bcast":
		return Broadcast, nil
	case "reduce":
		return Reduce, nil
	case "sendrecv", "p2p":
		return SendRecv, nil
	}
	return 0, fmt.Errorf("unknown collective %q (want one of allreduce, allgather, reducescatter, alltoall, broadcast, reduce, sendrecv)", s)
}

// Algo is the algorithm a collective is compiled with.
type Algo uint8

const (
	// Default picks the usual algorithm for the op: Ring for AllReduce, AllGather,
	// ReduceScatter, Broadcast and Reduce; Direct for AllToAll and SendRecv.
	Default Algo = iota
	// Ring is NCCL's ring: reduce-scatter then all-gather for AllReduce, a pipelined chain for
	// Broadcast and Reduce.
	Ring
	// Tree is NCCL's double binary tree (NCCL 2.4+), AllReduce only: two complementary binary
	// trees each carry half the data, reduce up then broadcast down, pipelined by chunks.
	Tree
	// Hierarchical runs an intra-server ring (NVLink) and an inter-server ring per rail (the
	// ranks with the same local index on every server), as NCCL's rail-aligned/PXN paths do.
	// AllReduce, AllGather and ReduceScatter; needs Spec.ServerOf.
	Hierarchical
	// Direct sends every block straight to its destination (pairwise): AllToAll, SendRecv.
	Direct
	numAlgos
)

var algoNames = [numAlgos]string{"default", "ring", "tree", "hierarchical", "direct"}

func (a Algo) String() string {
	if a < numAlgos {
		return algoNames[a]
	}
	return fmt.Sprintf("Algo(%d)", uint8(a))
}

// ParseAlgo parses "ring", "tree" (or "doublebinarytree", "dbt"), "hierarchical" (or "hier",
// "rail", "pxn"), "direct" (or "pairwise") and "default" (or "auto", or the empty string).
func ParseAlgo(s string) (Algo, error) {
	switch normalize(s) {
	case "", "default", "auto":
		return Default, nil
	case "ring":
		return Ring, nil
	case "tree", "doublebinarytree", "dbt":
		return Tree, nil
	case "hierarchical", "hier", "rail", "pxn":
		return Hierarchical, nil
	case "direct", "pairwise":
		return Direct, nil
	}
	return 0, fmt.Errorf("unknown collective algorithm %q (want one of ring, tree, hierarchical, direct, default)", s)
}

// resolve returns the algorithm actually used for op, or an error if op has no such algorithm.
func (a Algo) resolve(op Op) (Algo, error) {
	if a == Default {
		switch op {
		case AllToAll, SendRecv:
			return Direct, nil
		default:
			return Ring, nil
		}
	}
	ok := false
	switch a {
	case Ring:
		ok = op == AllReduce || op == AllGather || op == ReduceScatter || op == Broadcast || op == Reduce
	case Tree:
		ok = op == AllReduce
	case Hierarchical:
		ok = op == AllReduce || op == AllGather || op == ReduceScatter
	case Direct:
		ok = op == AllToAll || op == SendRecv
	}
	if !ok {
		return 0, fmt.Errorf("collective %s has no %s algorithm (%s)", op, a, supported(op))
	}
	return a, nil
}

func supported(op Op) string {
	switch op {
	case AllReduce:
		return "use ring, tree or hierarchical"
	case AllGather, ReduceScatter:
		return "use ring or hierarchical"
	case Broadcast, Reduce:
		return "use ring"
	default:
		return "use direct"
	}
}

// BusBWFactor is nccl-tests' ratio of bus bandwidth to algorithm bandwidth for op on n ranks
// (nccl-tests doc/PERFORMANCE.md and the *GetBw functions in src/*.cu): 2(n-1)/n for
// AllReduce; (n-1)/n for ReduceScatter, AllGather and AllToAll; 1 for Broadcast, Reduce and
// SendRecv. It is the fraction of S each rank must move over its busiest link, so busbw can be
// compared with the hardware's link bandwidth whatever n is.
func BusBWFactor(op Op, n int) float64 {
	if n <= 0 {
		return 0
	}
	switch op {
	case AllReduce:
		return 2 * float64(n-1) / float64(n)
	case ReduceScatter, AllGather, AllToAll:
		return float64(n-1) / float64(n)
	default:
		return 1
	}
}

// AlgBW is nccl-tests' algorithm bandwidth S/t in GB/s (10^9 bytes per second), where S is the
// size nccl-tests prints in its first column (see Spec.Bytes). It is 0 when t is not positive.
func AlgBW(s units.Size, t units.Time) float64 {
	if t <= 0 {
		return 0
	}
	return float64(s) / 1e9 / t.Seconds()
}

// BusBW is AlgBW(s, t) x BusBWFactor(op, n), in GB/s.
func BusBW(op Op, n int, s units.Size, t units.Time) float64 {
	return AlgBW(s, t) * BusBWFactor(op, n)
}
