package flow

import (
	"testing"
	"unsafe"
)

// TestHotLayout holds the memory layout a congested step relies on (BenchmarkPipelineClass: a
// step of 4,096 congested flows is bound by cache misses): the fields read for every active
// resource and every hop of a hot flow sit in the first 64 bytes of their structs, and the
// structs' sizes are multiples of 64, so that those bytes are one aligned cache line.
func TestHotLayout(t *testing.T) {
	var r resource
	var f flowState
	for _, c := range []struct {
		name       string
		size, last uintptr // the struct's size; the end of its last hot field
	}{
		{"resource", unsafe.Sizeof(r), unsafe.Offsetof(r.rank) + unsafe.Sizeof(r.rank)},
		{"flowState", unsafe.Sizeof(f), unsafe.Offsetof(f.out) + unsafe.Sizeof(f.out)},
		{"classState", unsafe.Sizeof(classState{}), unsafe.Sizeof(classState{})},
		{"fifo", unsafe.Sizeof(fifo{}), unsafe.Offsetof(fifo{}.markP) + unsafe.Sizeof(fifo{}.markP)},
	} {
		if c.size%64 != 0 && 64%c.size != 0 {
			t.Errorf("%s is %d bytes: not a multiple or divisor of a 64-byte cache line", c.name, c.size)
		}
		if c.last > 64 {
			t.Errorf("%s: the hot fields end at byte %d, beyond the first cache line", c.name, c.last)
		}
	}
}
