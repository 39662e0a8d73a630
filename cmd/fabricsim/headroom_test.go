package main

import (
	"strings"
	"testing"
)

// [mlx5-headroom]: the mlx5 formula at 400G, 7 m, MTU 4200 gives about 138 KB (137,872 B).
func TestHeadroomCommand(t *testing.T) {
	code, out := run(t, "headroom", "--rate", "400G", "--cable", "7m", "--mtu", "4200")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	for _, want := range []string{"137872 B  (137.9 KB)", "301 x 400 Gb/s", "2.16 x 7 m x 400 Gb/s", "2.72 x 4200 B MTU", "cable round trip", "the PAUSE frame itself"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out = run(t, "headroom", "--rate", "400G", "--cable", "100m", "--mtu", "4096", "--switch-latency", "300ns", "--buffer", "64MiB", "--ports", "64")
	if code != 0 || !strings.Contains(out, "64 ports x 1 classes") {
		t.Fatalf("exit %d: %s", code, out)
	}
	for _, bad := range [][]string{{"--rate", "fast"}, {"--cable", "long"}, {"--mtu", "10"}, {"--buffer", "lots"}} {
		if code, out := run(t, append([]string{"headroom"}, bad...)...); code != exitUsage {
			t.Errorf("%v: exit %d: %s", bad, code, out)
		}
	}
}
