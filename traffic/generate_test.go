package traffic

import (
	"slices"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/units"
)

func TestPermutationIsDerangement(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		n := 2 + int(seed%50)
		p := Permutation(n, NewRand(seed))
		if len(p) != n {
			t.Fatalf("seed %d: len %d, want %d", seed, len(p), n)
		}
		recv := make([]int, n)
		for i, d := range p {
			if d == i {
				t.Fatalf("seed %d: host %d sends to itself", seed, i)
			}
			recv[d]++
		}
		for h, c := range recv {
			if c != 1 {
				t.Fatalf("seed %d: host %d receives %d flows, want 1", seed, h, c)
			}
		}
	}
	if Permutation(1, NewRand(1)) != nil || Permutation(0, NewRand(1)) != nil {
		t.Fatal("a derangement of fewer than 2 hosts must be nil")
	}
}

func TestPermutationDeterministicAndUniform(t *testing.T) {
	a, b := Permutation(1000, NewRand(42)), Permutation(1000, NewRand(42))
	if !slices.Equal(a, b) {
		t.Fatal("same seed, different permutation")
	}
	if slices.Equal(a, Permutation(1000, NewRand(43))) {
		t.Fatal("different seeds gave the same permutation of 1000 hosts")
	}
	// 4 hosts have !4 = 9 derangements; 9,000 draws give each about 1,000 times. Binomial
	// sd = sqrt(9000*(1/9)*(8/9)) = 29.8, so +-150 is 5 sd.
	rng := NewRand(7)
	counts := map[[4]int]int{}
	for range 9000 {
		p := Permutation(4, rng)
		counts[[4]int(p)]++
	}
	if len(counts) != 9 {
		t.Fatalf("%d distinct derangements of 4, want 9", len(counts))
	}
	for p, c := range counts {
		if c < 850 || c > 1150 {
			t.Errorf("derangement %v drawn %d times, want 1000 +- 150", p, c)
		}
	}
}

func TestGenerators(t *testing.T) {
	const size = 2 * units.MiB
	start := 5 * units.Microsecond
	perm, err := PermutationFlows(16, size, start, NewRand(1))
	if err != nil || len(perm) != 16 {
		t.Fatalf("PermutationFlows: %d flows, %v", len(perm), err)
	}
	shift, err := Shift(8, 3, size, start)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range shift {
		if f.ID != i || f.Src != i || f.Dst != (i+3)%8 || f.Size != size || f.Start != start {
			t.Fatalf("shift flow %d: %+v", i, f)
		}
	}
	if neg, _ := Shift(8, -1, size, start); neg[0].Dst != 7 {
		t.Fatalf("shift -1: host 0 -> %d, want 7", neg[0].Dst)
	}
	inc, err := Incast([]int{1, 2, 3, 4}, 0, size, start)
	if err != nil || len(inc) != 4 || inc[3].Src != 4 || inc[3].Dst != 0 {
		t.Fatalf("Incast: %+v %v", inc, err)
	}
	a2a, err := AllToAll([]int{0, 2, 5, 7, 9}, size, start)
	if err != nil || len(a2a) != 5*4 {
		t.Fatalf("AllToAll: %d flows (want n(n-1) = 20), %v", len(a2a), err)
	}
	pairs := map[[2]int]bool{}
	for _, f := range a2a {
		if f.Src == f.Dst || pairs[[2]int{f.Src, f.Dst}] {
			t.Fatalf("all-to-all flow %+v repeated or to itself", f)
		}
		pairs[[2]int{f.Src, f.Dst}] = true
	}
	g := ToGraph(a2a, 10)
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	if g.Msgs[19].Tag != "flow19" || g.Msgs[19].Bytes != size || g.Msgs[19].Start != start || len(g.Msgs[19].Deps) != 0 {
		t.Fatalf("message 19: %+v", g.Msgs[19])
	}
}

func TestGeneratorErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"perm 1 host", second(PermutationFlows(1, 1, 0, NewRand(1))), "need at least 2"},
		{"perm size 0", second(PermutationFlows(4, 0, 0, NewRand(1))), "flow size 0 B: must be at least 1 byte"},
		{"shift multiple", second(Shift(8, 16, 1, 0)), "multiple of the 8 hosts"},
		{"shift negative start", second(Shift(8, 1, 1, -1)), "must not be negative"},
		{"incast self", second(Incast([]int{1, 0}, 0, 1, 0)), "sender 0 is the receiver"},
		{"incast none", second(Incast(nil, 0, 1, 0)), "no senders"},
		{"a2a dup", second(AllToAll([]int{1, 2, 1}, 1, 0)), "lists host 1 twice"},
		{"a2a huge", second(AllToAll(make([]int, 20000), 1, 0)), "exceed the limit"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, c.err, c.want)
		}
	}
}

func second(_ []Flow, err error) error { return err }

func TestParseScaled(t *testing.T) {
	for _, c := range []struct {
		in    string
		scale int
		want  int64
		err   string
	}{
		{"2", 12, 2000000000000, ""},
		{"2.000000001", 12, 2000000001000, ""},
		{"0.000000000001", 12, 1, ""},
		{"1.5e-3", 12, 1500000000, ""},
		{"1E2", 0, 100, ""},
		{".5", 12, 500000000000, ""},
		{"5.", 12, 5000000000000, ""},
		{"007.100", 3, 7100, ""},
		{"0", 12, 0, ""},
		{"-0", 12, 0, ""},
		{"9223372", 12, 9223372000000000000, ""},
		{"9223373", 12, 0, "too large"},
		{"0.0000000000001", 12, 0, "more decimal places"},
		{"1.5", 0, 0, "more decimal places"},
		{"-1", 12, 0, "must not be negative"},
		{"1e", 12, 0, "not a decimal number"},
		{"", 12, 0, "not a decimal number"},
		{".", 12, 0, "not a decimal number"},
		{"1.2.3", 12, 0, "not a decimal number"},
		{"nan", 12, 0, "not a decimal number"},
		{"1e999999", 0, 0, "not a decimal number"},
		{"0e999", 0, 0, ""},
	} {
		got, err := parseScaled(c.in, c.scale)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("parseScaled(%q, %d) = %d, %v; want error %q", c.in, c.scale, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("parseScaled(%q, %d) = %d, %v; want %d", c.in, c.scale, got, err, c.want)
		}
	}
	for _, v := range []int64{0, 1, 999, 1000000000000, 2000000001000, 123456789012345} {
		s := formatScaled(v, 12)
		if back, err := parseScaled(s, 12); err != nil || back != v {
			t.Errorf("formatScaled(%d) = %q, parses back to %d, %v", v, s, back, err)
		}
	}
	if s := formatScaled(2000000001000, 12); s != "2.000000001" {
		t.Errorf("formatScaled = %q, want 2.000000001", s)
	}
}
