package nccl

import (
	"context"
	"testing"

	"github.com/fabricsim/fabricsim/backend"
	"github.com/fabricsim/fabricsim/cluster"
	"github.com/fabricsim/fabricsim/collective"
	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/gpu"
	"github.com/fabricsim/fabricsim/units"
)

// TestAllToAll128RoCEvsIB: all-to-all on 128 GPUs (16 HGX H100 servers, rail-optimized, 64-port
// leaves, 1:1), RoCEv2 with per-flow ECMP against InfiniBand with adaptive routing. 7/8 of
// each GPU's traffic goes to other rails (GPUDirect from the GPU's own NIC, so up to a spine and
// down the destination's rail): on RoCE the ECMP hash pins every message to one leaf uplink and
// some uplinks draw more messages than others, so the busiest ones finish last; adaptive routing
// spreads each message's packets over the least-loaded uplinks and finishes near the NICs' rate.
// Both stay below the fabric's bound (the analytic backend: every NIC at its payload rate).
func TestAllToAll128RoCEvsIB(t *testing.T) {
	if testing.Short() {
		t.Skip("128-GPU packet runs")
	}
	roce := fabric.DefaultRoCE()
	ib, err := fabric.DefaultInfiniBand("ndr")
	if err != nil {
		t.Skipf("InfiniBand fabric not available: %v", err)
	}
	ib.IB.Adaptive = true
	const S = 4 * units.MiB
	busbw := map[fabric.Kind]float64{}
	for _, cfg := range []fabric.Config{roce, ib} {
		c := build(t, 16, gpu.Presets["h100"], cfg)
		g, err := Compile(c, collective.AllToAll, S, Options{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Run(context.Background(), g, cluster.RunOptions{Fabric: cfg, PacketScale: 1})
		if err != nil {
			t.Fatalf("%s: %v", cfg.Kind, err)
		}
		bound, err := c.Run(context.Background(), g, cluster.RunOptions{Fabric: cfg, Backend: backend.Analytic})
		if err != nil {
			t.Fatal(err)
		}
		bb := collective.BusBW(collective.AllToAll, 128, S, res.SimTime)
		limit := collective.BusBW(collective.AllToAll, 128, S, bound.SimTime)
		busbw[cfg.Kind] = bb
		t.Logf("%s (routing %s, adaptive %v): all-to-all %v on 128 GPUs: %v, busbw %.1f GB/s (uncongested bound %.1f GB/s; %d drops)",
			cfg.Kind, cfg.Routing, cfg.IB.Adaptive, S, res.SimTime, bb, limit, res.Drops)
		if bb > limit*1.01 {
			t.Errorf("%s: busbw %.1f above the fabric's bound %.1f", cfg.Kind, bb, limit)
		}
	}
	if busbw["infiniband"] <= busbw["roce"] {
		t.Errorf("InfiniBand with adaptive routing %.1f GB/s, RoCE with ECMP %.1f GB/s: want IB ahead", busbw["infiniband"], busbw["roce"])
	}
}
