package headroom

import (
	"math"
	"testing"

	"github.com/fabricsim/fabricsim/units"
)

// [mlx5-headroom]: mlx5 at 400G, 7 m, MTU 4200 -> about 138 KB:
// (301 + 2.16 x 7) x 400 + 2.72 x 4200 = 126,448 + 11,424 = 137,872 B.
func TestMLX5At400G7m(t *testing.T) {
	got := MLX5(400*units.Gbps, 7, 4200)
	if math.Abs(got-137872) > 0.5 {
		t.Fatalf("mlx5 headroom %g B, want 137872", got)
	}
	if got < 137000 || got > 139000 {
		t.Fatalf("not about 138 KB: %g", got)
	}
}

// The IEEE-style breakdown, by hand: 100G = 12.5 B/ns, 100 m: 2 x 500 ns x 12.5 = 12,500 B;
// response 2 x 500 ns x 12.5 = 12,500 B; two 4096 B frames; 84 B pause frame.
func TestIEEEBreakdown(t *testing.T) {
	r := Headroom(Input{Rate: 100 * units.Gbps, CableMetres: 100, MTU: 4096, Response: 500 * units.Nanosecond})
	want := 12500.0 + 12500 + 2*4096 + 84
	if math.Abs(r.IEEE-want) > 1e-6 {
		t.Fatalf("IEEE headroom %g, want %g (%+v)", r.IEEE, want, r.IEEETerms)
	}
	if len(r.MLX5Terms) != 3 || len(r.IEEETerms) != 5 {
		t.Fatalf("terms: %d mlx5, %d ieee", len(r.MLX5Terms), len(r.IEEETerms))
	}
}
