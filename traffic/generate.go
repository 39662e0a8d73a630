package traffic

import (
	"fmt"
	"math/rand/v2"

	"github.com/fabricsim/fabricsim/units"
)

// Permutation returns a uniformly random derangement of 0..hosts-1: p[i] is the host that host i
// sends to; every host sends to exactly one other host and receives from exactly one, never
// itself. It draws random permutations until one has no fixed point (about e = 2.718 tries on
// average, since the fraction of permutations that are derangements tends to 1/e), which keeps
// every derangement equally likely. Deterministic for a given rng state. Returns nil when
// hosts < 2 (no derangement exists).
func Permutation(hosts int, rng *rand.Rand) []int {
	if hosts < 2 {
		return nil
	}
	for {
		p := rng.Perm(hosts)
		fixed := false
		for i, d := range p {
			if i == d {
				fixed = true
				break
			}
		}
		if !fixed {
			return p
		}
	}
}

// PermutationFlows returns one flow per host along a random derangement (see Permutation).
func PermutationFlows(hosts int, size units.Size, start units.Time, rng *rand.Rand) ([]Flow, error) {
	if hosts < 2 {
		return nil, fmt.Errorf("permutation traffic over %d hosts: need at least 2", hosts)
	}
	if err := check(size, start); err != nil {
		return nil, err
	}
	p := Permutation(hosts, rng)
	flows := make([]Flow, hosts)
	for i, d := range p {
		flows[i] = Flow{ID: i, Src: i, Dst: d, Size: size, Start: start}
	}
	return flows, nil
}

// Shift returns flows from every host i to host (i+offset) mod hosts: a deterministic
// permutation that, with offset = hosts/2, sends every flow across the bisection of a tree.
func Shift(hosts, offset int, size units.Size, start units.Time) ([]Flow, error) {
	if hosts < 2 {
		return nil, fmt.Errorf("shift traffic over %d hosts: need at least 2", hosts)
	}
	off := ((offset % hosts) + hosts) % hosts
	if off == 0 {
		return nil, fmt.Errorf("shift offset %d is a multiple of the %d hosts: every host would send to itself; use 1..%d", offset, hosts, hosts-1)
	}
	if err := check(size, start); err != nil {
		return nil, err
	}
	flows := make([]Flow, hosts)
	for i := range flows {
		flows[i] = Flow{ID: i, Src: i, Dst: (i + off) % hosts, Size: size, Start: start}
	}
	return flows, nil
}

// Incast returns one flow from each sender to receiver, all starting together: the many-to-one
// pattern behind PFC pause storms and DCQCN's convergence tests.
func Incast(senders []int, receiver int, size units.Size, start units.Time) ([]Flow, error) {
	if len(senders) == 0 {
		return nil, fmt.Errorf("incast to host %d: no senders", receiver)
	}
	if receiver < 0 {
		return nil, fmt.Errorf("incast receiver %d: host indices start at 0", receiver)
	}
	if err := check(size, start); err != nil {
		return nil, err
	}
	flows := make([]Flow, len(senders))
	for i, s := range senders {
		if s < 0 {
			return nil, fmt.Errorf("incast sender %d: host indices start at 0", s)
		}
		if s == receiver {
			return nil, fmt.Errorf("incast sender %d is the receiver", s)
		}
		flows[i] = Flow{ID: i, Src: s, Dst: receiver, Size: size, Start: start}
	}
	return flows, nil
}

// AllToAll returns a flow between every ordered pair of distinct hosts in hosts (n*(n-1) flows,
// source-major), as in the all-to-all exchange of expert-parallel (MoE) layers.
func AllToAll(hosts []int, size units.Size, start units.Time) ([]Flow, error) {
	if len(hosts) < 2 {
		return nil, fmt.Errorf("all-to-all over %d hosts: need at least 2", len(hosts))
	}
	if err := check(size, start); err != nil {
		return nil, err
	}
	if n := float64(len(hosts)); n*(n-1) > maxFlows {
		return nil, fmt.Errorf("all-to-all over %d hosts: %.0f flows exceed the limit of %d", len(hosts), n*(n-1), maxFlows)
	}
	seen := make(map[int]bool, len(hosts))
	for _, h := range hosts {
		if h < 0 {
			return nil, fmt.Errorf("all-to-all host %d: host indices start at 0", h)
		}
		if seen[h] {
			return nil, fmt.Errorf("all-to-all lists host %d twice", h)
		}
		seen[h] = true
	}
	flows := make([]Flow, 0, len(hosts)*(len(hosts)-1))
	for _, s := range hosts {
		for _, d := range hosts {
			if s != d {
				flows = append(flows, Flow{ID: len(flows), Src: s, Dst: d, Size: size, Start: start})
			}
		}
	}
	return flows, nil
}

// maxFlows bounds the flows one generator or file may produce (memory, not physics).
const maxFlows = 1 << 28

func check(size units.Size, start units.Time) error {
	if err := checkSize(size); err != nil {
		return err
	}
	return checkStart(start)
}
