package datapath

import (
	"context"
	"math"
	"testing"

	"github.com/fabricsim/fabricsim/cluster"
	"github.com/fabricsim/fabricsim/collective"
	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/gpu"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/nccl"
	"github.com/fabricsim/fabricsim/units"
)

func buildCluster(t *testing.T, servers int, srv gpu.Server, cfg fabric.Config) *cluster.Cluster {
	t.Helper()
	c, err := cluster.Build(cluster.Spec{Servers: servers, Server: srv, Framing: cluster.Framing{MTU: cfg.MTU, Header: cfg.HeaderBytes, L1: cfg.L1Overhead}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestDataPathOrder: two H100 servers (one GPU and NIC each) exchange S both ways (nccl-tests'
// sendrecv_perf on 2 ranks). At 1 MiB and 1 GiB gpudirect beats rdma-host beats host-staged, and
// at 1 GiB each time is what its bottleneck predicts (gpu.Presets["h100"], docs/gpu.md):
//
//	gpudirect    S / 47.84 GB/s: the GPU's PCIe port at 0.92 x 52 GB/s (P2P DMA), below the
//	             NIC's 49.0 GB/s
//	rdma-host    2S / 52 GB/s: each direction of the PCIe switch's uplink carries this GPU's
//	             device-to-host copy and the NIC's writes of what it receives (or the NIC's reads
//	             and the host-to-device copy): two streams of S on 52 GB/s
//	host-staged  2S / 20 GB/s plus 5 us per 512 KiB message: the GPU's proxy thread copies S
//	             out and S in, one message at a time
func TestDataPathOrder(t *testing.T) {
	cfg := fabric.DefaultEthernet()
	srv := gpu.Presets["h100"]
	srv.GPUs, srv.NICs, srv.Sockets = 1, 1, 1
	c := buildCluster(t, 2, srv, cfg)
	gb := func(x units.Rate) float64 { return float64(x) / 8 }
	srv = c.Server
	predict := map[Mode]float64{
		GPUDirect:  1 / gb(srv.P2PRate()),
		RDMAHost:   2 / gb(srv.PCIe.Rate),
		HostStaged: 2/gb(srv.CPUCopy) + 2*srv.CPUCopyLatency.Seconds()/float64(nccl.DefaultChunk),
	}
	for _, size := range []units.Size{units.MiB, units.GiB} {
		g, err := nccl.Compile(c, collective.SendRecv, size, nccl.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var times [3]float64
		for _, m := range []Mode{GPUDirect, RDMAHost, HostStaged} {
			dg, err := Apply(g, c, m)
			if err != nil {
				t.Fatal(err)
			}
			res, err := c.Run(context.Background(), dg, cluster.RunOptions{Fabric: cfg, PacketScale: cluster.PacketScaleAuto})
			if err != nil {
				t.Fatal(m, err)
			}
			times[m] = res.SimTime.Seconds()
			want := predict[m] * float64(size)
			t.Logf("%v %v: %v (%.2f GB/s per direction; bottleneck predicts %.1f us)", size, m, res.SimTime, float64(size)/times[m]/1e9, want*1e6)
			if size == units.GiB && math.Abs(times[m]-want)/want > 0.05 {
				t.Errorf("%v %v: %.1f us, more than 5%% off the bottleneck's %.1f us", size, m, times[m]*1e6, want*1e6)
			}
		}
		if !(times[GPUDirect] < times[RDMAHost] && times[RDMAHost] < times[HostStaged]) {
			t.Errorf("%v: gpudirect %.1f us, rdma-host %.1f us, host-staged %.1f us: want increasing", size, times[0]*1e6, times[1]*1e6, times[2]*1e6)
		}
	}
}

// TestGPUDirectAcrossSockets: on a PCIe-only server whose one NIC sits on socket 0, GPUDirect
// from the GPU on socket 1 crosses the inter-socket link at 11/23 of the PCIe rate (perftest
// ~11 vs ~23 GB/s, [perftest]) and so takes about twice as long as from the GPU beside the NIC.
func TestGPUDirectAcrossSockets(t *testing.T) {
	cfg := fabric.DefaultEthernet()
	srv := gpu.Presets["pcie"]
	srv.GPUs, srv.NICs, srv.Sockets = 2, 1, 2
	srv.PCIe.Rate = 52 * gpu.GBps
	srv.InterSocket.Rate = srv.PCIe.Rate * 11 / 23
	c := buildCluster(t, 2, srv, cfg)
	const S = 256 * units.MiB
	run := func(local int) float64 {
		g := &msggraph.Graph{Endpoints: c.Endpoints()}
		g.Add(msggraph.Message{Src: c.DMA(c.GPUHost(0, local)), Dst: c.DMA(c.GPUHost(1, local)), Bytes: S})
		res, err := c.Run(context.Background(), g, cluster.RunOptions{Fabric: cfg, PacketScale: cluster.PacketScaleAuto})
		if err != nil {
			t.Fatal(err)
		}
		return float64(S) / res.SimTime.Seconds() / 1e9
	}
	same, cross := run(0), run(1)
	t.Logf("GPUDirect 256 MiB: %.2f GB/s from the NIC's socket, %.2f GB/s across sockets (ratio %.2f; perftest 11/23 = %.2f)", same, cross, cross/same, 11.0/23)
	if want := float64(srv.InterSocket.Rate) / 8 / 1e9; math.Abs(cross-want)/want > 0.03 {
		t.Errorf("across sockets %.2f GB/s, want the inter-socket link's %.2f", cross, want)
	}
	if cross/same > 0.6 || cross/same < 0.4 {
		t.Errorf("across/same socket %.2f, want about half", cross/same)
	}
}

// TestApplyShape: the chains have the documented messages, dependencies move to the chain's
// end, and messages inside a server stay.
func TestApplyShape(t *testing.T) {
	cfg := fabric.DefaultEthernet()
	c := buildCluster(t, 2, gpu.Presets["h100"], cfg)
	g := &msggraph.Graph{Endpoints: c.Endpoints()}
	a := g.Add(msggraph.Message{Src: c.DMA(0), Dst: c.DMA(8), Bytes: 1000, Conn: 1, Tag: "x"})
	g.Add(msggraph.Message{Src: 0, Dst: 1, Bytes: 10, Deps: []msggraph.ID{a}, Tag: "nv"})
	for _, tc := range []struct {
		m    Mode
		tags []string
	}{
		{GPUDirect, []string{"x", "nv"}},
		{RDMAHost, []string{"x/d2h", "x/net", "x/h2d", "nv"}},
		{HostStaged, []string{"x/d2h", "x/cpu-copy-tx", "x/net", "x/cpu-copy-rx", "x/h2d", "nv"}},
	} {
		out, err := Apply(g, c, tc.m)
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Msgs) != len(tc.tags) {
			t.Fatalf("%v: %d messages, want %d", tc.m, len(out.Msgs), len(tc.tags))
		}
		for i, tag := range tc.tags {
			if out.Msgs[i].Tag != tag {
				t.Errorf("%v: message %d is %q, want %q", tc.m, i, out.Msgs[i].Tag, tag)
			}
		}
		last := out.Msgs[len(out.Msgs)-1]
		if d := last.Deps; len(d) != 1 || int(d[0]) != len(out.Msgs)-2 {
			t.Errorf("%v: NVLink message depends on %v, want the chain's end", tc.m, d)
		}
		if tc.m == HostStaged {
			cp := out.Msgs[1]
			if want := c.Server.CPUCopyLatency + c.Server.CPUCopy.TransmitTime(1000); cp.Delay != want || cp.Bytes != 0 {
				t.Errorf("cpu copy: delay %v bytes %d, want %v and a delay node", cp.Delay, cp.Bytes, want)
			}
		}
	}
	for _, s := range []string{"gpudirect", "rdma-host", "host-staged"} {
		if m, err := Parse(s); err != nil || m.String() != s {
			t.Errorf("Parse(%q) = %v, %v", s, m, err)
		}
	}
	if _, err := Parse("nvme"); err == nil {
		t.Error("Parse accepted nvme")
	}
}
