package flow

import (
	"testing"
	"unsafe"
)

// TestHotLayout holds the memory layout a congested step relies on (BenchmarkPipelineClass: a
// step of 4,096 congested flows is bound by cache misses): the fields read for every active
// resource and every hop of a hot flow sit in the first 64 bytes of their structs, and the
// structs' sizes are multiples of 64, so that those bytes are one aligned cache line; and what a
// step reads of a hot flow once (inject, DCQCN's afterStep, settle) is in its second line.
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
	for _, x := range []struct {
		name     string
		off, end uintptr
	}{
		{"msg", unsafe.Offsetof(f.msg), unsafe.Offsetof(f.msg) + unsafe.Sizeof(f.msg)},
		{"hidx", unsafe.Offsetof(f.hidx), unsafe.Offsetof(f.hidx) + unsafe.Sizeof(f.hidx)},
		{"tInj", unsafe.Offsetof(f.tInj), unsafe.Offsetof(f.tInj) + unsafe.Sizeof(f.tInj)},
		{"prevRate", unsafe.Offsetof(f.prevRate), unsafe.Offsetof(f.prevRate) + unsafe.Sizeof(f.prevRate)},
		{"lat", unsafe.Offsetof(f.lat), unsafe.Offsetof(f.lat) + unsafe.Sizeof(f.lat)},
		{"from", unsafe.Offsetof(f.from), unsafe.Offsetof(f.from) + unsafe.Sizeof(f.from)},
		{"rng", unsafe.Offsetof(f.rng), unsafe.Offsetof(f.rng) + unsafe.Sizeof(f.rng)},
	} {
		if x.off < 64 || x.end > 128 {
			t.Errorf("flowState.%s at bytes %d-%d, outside the second cache line", x.name, x.off, x.end)
		}
	}
}
