// Package collective compiles NCCL-style collectives (all-reduce, all-gather, reduce-scatter,
// all-to-all, broadcast, reduce, send/recv) into message graphs (package msggraph) that any
// backend runs.
//
// The algorithms follow NCCL's: rings whose data is split over channels (each channel its own
// connection, so its own queue pair) and cut into chunks that are pipelined through the ring's
// steps; NCCL 2.4's double binary tree for all-reduce; a hierarchical, rail-aligned variant
// (intra-server ring over NVLink, inter-server ring per rail); and direct pairwise exchange for
// all-to-all and send/recv.
//
// Dependencies are per chunk: a rank forwards chunk k at step s+1 as soon as chunk k of step s
// has arrived from its predecessor, not when the whole step is over. Messages on one channel
// between one pair of ranks share a connection, so a backend that serves a connection in order
// (as a queue pair does) sends them back to back.
//
// Reduction arithmetic is modelled as free unless Spec.ReduceBandwidth is set; then every
// message whose payload the sender has just reduced carries Delay = bytes / ReduceBandwidth,
// and the final reduction at a rank (reduce-scatter, reduce) is a zero-byte delay node.
package collective

import (
	"fmt"

	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/units"
)

// Spec describes one collective call.
type Spec struct {
	Op   Op
	Algo Algo
	// Ranks is the endpoint (host index in the topology) of each rank, in rank order. Every rank
	// needs its own endpoint (in fabricsim a host is one NIC port, i.e. one GPU's NIC).
	Ranks []int32
	// Bytes is nccl-tests' S, the size it prints in its first column and divides by the time to
	// get algbw:
	//   AllReduce:     each rank's buffer (input and output are both S).
	//   AllGather:     each rank's output buffer, i.e. n x the per-rank input (S/n per rank).
	//   ReduceScatter: each rank's input buffer, i.e. n x the per-rank output (S/n per rank).
	//   AllToAll:      each rank's send buffer: n blocks of S/n, one per rank (its own stays put).
	//   Broadcast, Reduce: the buffer at the root / at every rank.
	//   SendRecv:      what each rank sends to its successor (rank r to r+1 mod n, as
	//                  nccl-tests' sendrecv_perf does; with n = 2 that is one pair exchanging).
	// With these definitions each rank sends 2(n-1)/n x S (AllReduce ring), (n-1)/n x S
	// (AllGather, ReduceScatter, AllToAll) or S (SendRecv).
	Bytes units.Size
	// Channels splits the data over parallel rings/trees, each on its own connection (NCCL's
	// channels). 0 means 1.
	Channels int
	// ChunkBytes is the pipelining unit (NCCL's chunk/slice): the size of one message of a ring
	// step, of a tree hop or of a chain hop. 0 means no pipelining: one message per step.
	ChunkBytes units.Size
	// Root is the root rank of Broadcast and Reduce.
	Root int
	// ServerOf gives the server of each rank, for Hierarchical. Every server must hold the same
	// number of ranks.
	ServerOf func(rank int) int
	// Start is the earliest time any message of the collective may begin.
	Start units.Time
	// After lists messages that must complete before the collective starts.
	After []msggraph.ID
	// ConnBase offsets the connection ids: the collective uses ConnBase+1 .. ConnBase+Conns().
	ConnBase int32
	// Tag prefixes every message's tag; empty means the op's name.
	Tag string
	// ReduceBandwidth is the rate at which a rank reduces data (bits per second); 0 models
	// reduction as free.
	ReduceBandwidth units.Rate
	// Fold, when > 0, compiles a ring all-reduce, all-gather or reduce-scatter folded by its
	// symmetry: only the first Fold positions of the ring, position Fold-1 sending to the rank
	// at position Fold, and position 0 waiting where the full ring waits for position n-1 on
	// position Fold-1. The caller asserts that the ring is periodic with period Fold: a backend
	// sees rank p+k*Fold's messages as it sees rank p's (same latencies, bandwidths and, rank by
	// rank, no resource shared with another rank's copy); then the folded messages complete
	// exactly when their counterparts in the full ring do, and a ring over n ranks costs
	// O(Fold x steps) messages instead of O(n x steps). Foldable says when the ring itself
	// allows it (every block of every step the same size). Compile's done nodes of ranks at or
	// beyond Fold are those of their representative, rank r mod Fold.
	Fold int
}

// Foldable reports whether the collective can be compiled with Spec.Fold = p: a flat ring
// all-reduce, all-gather or reduce-scatter over a multiple of p ranks whose blocks are all the
// same size in every channel and pipelining loop (so that rank p+k*Fold sends exactly what
// rank p sends).
func (s Spec) Foldable(p int) bool {
	algo, err := s.Algo.resolve(s.Op)
	n := len(s.Ranks)
	if err != nil || algo != Ring || p < 1 || n < 2 || n%p != 0 || s.Bytes <= 0 {
		return false
	}
	switch s.Op {
	case AllReduce, AllGather, ReduceScatter:
	default:
		return false
	}
	for _, d := range Split(int64(s.Bytes), s.channels()) {
		c := int64(s.ChunkBytes) * int64(n)
		if c <= 0 || d <= c {
			if d%int64(n) != 0 {
				return false
			}
			continue
		}
		if c%int64(n) != 0 || (d%c)%int64(n) != 0 {
			return false
		}
	}
	return true
}

// maxMessages bounds the size of one compiled collective, so that a tiny ChunkBytes on a huge
// buffer is an error rather than an out-of-memory.
const maxMessages = 1 << 25

// Conns is how many connection ids the collective uses (ConnBase+1 .. ConnBase+Conns()).
func (s Spec) Conns() int {
	c := s.channels()
	if a, err := s.Algo.resolve(s.Op); err == nil && a == Tree {
		return 2 * c
	}
	return c
}

func (s Spec) channels() int {
	if s.Channels <= 0 {
		return 1
	}
	return s.Channels
}

func (s Spec) tag() string {
	if s.Tag != "" {
		return s.Tag
	}
	return s.Op.String()
}

func (s Spec) validate(g *msggraph.Graph) (Algo, error) {
	algo, err := s.Algo.resolve(s.Op)
	if err != nil {
		return 0, err
	}
	n := len(s.Ranks)
	if n == 0 {
		return 0, fmt.Errorf("%s: no ranks", s.Op)
	}
	if s.Bytes < 0 {
		return 0, fmt.Errorf("%s: negative size %d", s.Op, s.Bytes)
	}
	if s.Channels < 0 {
		return 0, fmt.Errorf("%s: negative channel count %d", s.Op, s.Channels)
	}
	if s.ChunkBytes < 0 {
		return 0, fmt.Errorf("%s: negative chunk size %d", s.Op, s.ChunkBytes)
	}
	if s.ReduceBandwidth < 0 {
		return 0, fmt.Errorf("%s: negative reduce bandwidth %d", s.Op, s.ReduceBandwidth)
	}
	if s.Start < 0 {
		return 0, fmt.Errorf("%s: negative start time %d", s.Op, s.Start)
	}
	if (s.Op == Broadcast || s.Op == Reduce) && (s.Root < 0 || s.Root >= n) {
		return 0, fmt.Errorf("%s: root %d outside ranks 0..%d", s.Op, s.Root, n-1)
	}
	seen := make(map[int32]int, n)
	for r, ep := range s.Ranks {
		if ep < 0 || int(ep) >= g.Endpoints {
			return 0, fmt.Errorf("%s: rank %d on endpoint %d, outside the graph's endpoints 0..%d", s.Op, r, ep, g.Endpoints-1)
		}
		if prev, dup := seen[ep]; dup {
			return 0, fmt.Errorf("%s: ranks %d and %d are both on endpoint %d (each rank needs its own endpoint)", s.Op, prev, r, ep)
		}
		seen[ep] = r
	}
	for _, d := range s.After {
		if d < 0 || int(d) >= len(g.Msgs) {
			return 0, fmt.Errorf("%s: After names message %d, not in the graph (0..%d)", s.Op, d, len(g.Msgs)-1)
		}
	}
	if algo == Hierarchical && s.ServerOf == nil {
		return 0, fmt.Errorf("%s: hierarchical algorithm needs ServerOf", s.Op)
	}
	if s.Fold < 0 || (s.Fold > 0 && !s.Foldable(s.Fold)) {
		return 0, fmt.Errorf("%s %s on %d ranks of %d bytes cannot be folded by %d (a flat ring over a multiple of the fold, every block the same size)", s.Op, algo, n, s.Bytes, s.Fold)
	}
	return algo, nil
}

// RingBlocks is the size of the block each position of a flat ring sends per step, in each
// pipelining loop of one channel of s (Channels is taken as 1: the caller splits channels): the
// largest of the loop's blocks when they differ by a byte.
func RingBlocks(s Spec) []int64 {
	n := len(s.Ranks)
	if n < 2 || s.Bytes <= 0 {
		return nil
	}
	c := int64(s.ChunkBytes) * int64(n)
	d := int64(s.Bytes)
	var out []int64
	if c <= 0 || d <= c {
		return []int64{(d + int64(n) - 1) / int64(n)}
	}
	for ; d > 0; d -= c {
		l := min(c, d)
		out = append(out, (l+int64(n)-1)/int64(n))
	}
	return out
}
