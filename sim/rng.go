package sim

import (
	"hash/fnv"
	"math/rand/v2"
)

// RNG returns a deterministic random stream for one component, derived from the run's seed and
// the component's name, so that adding randomness to one component never shifts another's.
func RNG(seed uint64, name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

// Mix64 is a fast, well-distributed 64-bit mixer (SplitMix64's finalizer) for hashing flow keys.
func Mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
