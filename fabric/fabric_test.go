package fabric

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// line builds host0 - sw1 - ... - swN - host1: a path of n switches (n+1 links).
func line(n int, rate units.Rate, lat units.Time) *topo.Graph {
	g := &topo.Graph{Name: "line"}
	h0 := g.AddNode(topo.Host, "host0", 0)
	prev := h0
	for i := 0; i < n; i++ {
		sw := g.AddNode(topo.Switch, fmt.Sprintf("sw%d", i), 1)
		g.Connect(prev, sw, rate, lat)
		prev = sw
	}
	h1 := g.AddNode(topo.Host, "host1", 0)
	g.Connect(prev, h1, rate, lat)
	return g
}

func runOne(t *testing.T, g *topo.Graph, cfg Config, mg *msggraph.Graph) *Network {
	t.Helper()
	n := newNet(t, g, cfg)
	res, err := n.Run(mg, units.MaxTime)
	if err != nil {
		t.Fatal(err)
	}
	n.lastRun = res
	return n
}

// closedForm is the FCT of one flow alone on a path of `links` equal links ([IEEE 802.3] framing):
// every packet's wire bytes at line rate, plus one store-and-forward of the largest packet at each
// of the links-1 later hops, plus propagation on every link and the latency of every switch.
func closedForm(bytes int64, mtu, header, l1, minFrame int, links int, rate units.Rate, prop, swLat units.Time) units.Time {
	var wireTotal, wireMax int64
	for sent := int64(0); sent < bytes; {
		p := bytes - sent
		if p > int64(mtu) {
			p = int64(mtu)
		}
		sent += p
		f := p + int64(header)
		if f < int64(minFrame) {
			f = int64(minFrame)
		}
		w := f + int64(l1)
		wireTotal += w
		if w > wireMax {
			wireMax = w
		}
	}
	bitsPerPs := float64(rate) / 1e12
	t := float64(wireTotal*8)/bitsPerPs + float64(int64(links-1)*wireMax*8)/bitsPerPs
	return units.Time(t) + units.Time(links)*prop + units.Time(links-1)*swLat
}

func TestSingleFlowMatchesClosedForm(t *testing.T) {
	for _, rate := range []units.Rate{100 * units.Gbps, 400 * units.Gbps, 25 * units.Gbps} {
		for _, switches := range []int{1, 3, 5} {
			for _, mtu := range []units.Size{1024, 4096} {
				for _, size := range []units.Size{1, 1000, 4096, 4097, 2 * units.MB, 10*units.MB + 3} {
					cfg := DefaultEthernet()
					cfg.MTU = mtu
					cfg.SwitchLatency = 300 * units.Nanosecond
					g := line(switches, rate, 1500*units.Nanosecond)
					mg := &msggraph.Graph{Endpoints: 2}
					mg.Add(msggraph.Message{Src: 0, Dst: 1, Bytes: size, Start: 7 * units.Microsecond})
					n := runOne(t, g, cfg, mg)
					m := n.lastRun.Messages[0]
					want := closedForm(int64(size), int(mtu), cfg.HeaderBytes, cfg.L1Overhead, cfg.MinFrame, switches+1, rate, 1500*units.Nanosecond, cfg.SwitchLatency)
					diff := m.FCT() - want
					if diff < -units.Nanosecond || diff > units.Nanosecond {
						t.Errorf("rate %v, %d switches, mtu %d, %d B: FCT %v, closed form %v", rate, switches, mtu, size, m.FCT(), want)
					}
					if m.IdealFCT != m.FCT() {
						t.Errorf("ideal FCT %v != simulated alone %v", m.IdealFCT, m.FCT())
					}
					if m.Start != 7*units.Microsecond {
						t.Errorf("start %v, want 7us", m.Start)
					}
				}
			}
		}
	}
}

func TestFatTreePathsAndConservation(t *testing.T) {
	g, err := topo.FatTree(4, topo.LinkSpec{Rate: 100 * units.Gbps, Latency: units.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultEthernet()
	// Host 0 to host 1 (same edge: 2 links), host 2 (same pod: 4 links), host 15 (other pod: 6).
	for dst, links := range map[int32]int{1: 2, 2: 4, 15: 6} {
		mg := &msggraph.Graph{Endpoints: len(g.Hosts)}
		mg.Add(msggraph.Message{Src: 0, Dst: dst, Bytes: units.MB})
		n := runOne(t, g, cfg, mg)
		m := n.lastRun.Messages[0]
		want := closedForm(int64(units.MB), 4096, 62, 20, 64, links, 100*units.Gbps, units.Microsecond, cfg.SwitchLatency)
		if d := m.FCT() - want; d < -units.Nanosecond || d > units.Nanosecond {
			t.Errorf("host0->host%d (%d links): FCT %v, closed form %v", dst, links, m.FCT(), want)
		}
	}
}

func TestDependenciesAndDelays(t *testing.T) {
	g := line(1, 100*units.Gbps, units.Microsecond)
	cfg := DefaultEthernet()
	mg := &msggraph.Graph{Endpoints: 2}
	a := mg.Add(msggraph.Message{Src: 0, Dst: 1, Bytes: 4096})
	c := mg.Add(msggraph.Message{Src: 1, Dst: 1, Delay: 5 * units.Microsecond, Deps: []msggraph.ID{a}}) // compute
	mg.Add(msggraph.Message{Src: 1, Dst: 0, Bytes: 4096, Deps: []msggraph.ID{c}})
	n := runOne(t, g, cfg, mg)
	ms := n.lastRun.Messages
	if ms[1].Start != ms[0].Finish || ms[1].Finish != ms[0].Finish+5*units.Microsecond {
		t.Errorf("compute node ran %v..%v, want %v..+5us", ms[1].Start, ms[1].Finish, ms[0].Finish)
	}
	if ms[2].Start != ms[1].Finish {
		t.Errorf("reply started %v, want %v", ms[2].Start, ms[1].Finish)
	}
	if ms[2].FCT() != ms[0].FCT() {
		t.Errorf("reply FCT %v, request %v: symmetric path should match", ms[2].FCT(), ms[0].FCT())
	}
}

// The packet is touched at every hop of every packet: it must stay within one 64-byte size
// class (one cache line when aligned), or the per-hop path takes an extra cache miss.
func TestPacketFitsACacheLine(t *testing.T) {
	if s := unsafe.Sizeof(Packet{}); s > 64 {
		t.Fatalf("Packet is %d bytes; keep it within 64", s)
	}
	var p Packet
	for i := 0; i < 8; i++ {
		p.SetCtrlWord(i, uint16(0x1111*(i+1)))
	}
	for i := 0; i < 8; i++ {
		if got := p.CtrlWord(i); got != uint16(0x1111*(i+1)) {
			t.Fatalf("control word %d = %#x, want %#x", i, got, 0x1111*(i+1))
		}
	}
}

// TestPortLayout pins Port's layout: the ports lie in one array, so a port's size must be whole
// cache lines for its first line (what every packet through it reads) to stay one line.
func TestPortLayout(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("layout is pinned for 64-bit platforms")
	}
	if s := unsafe.Sizeof(Port{}); s%64 != 0 {
		t.Errorf("Port is %d bytes, not a whole number of 64-byte lines: adjust its padding", s)
	}
	// The per-packet fields fill the first two lines; the first queue starts the third.
	if off := unsafe.Offsetof(Port{}.SL2VL); off+8 != 64 {
		t.Errorf("Port's first line ends at byte %d, want 64", off+8)
	}
	if off := unsafe.Offsetof(Port{}.peer); off != 64 {
		t.Errorf("Port.peer at byte %d, want 64 (the second line)", off)
	}
	if off := unsafe.Offsetof(Port{}.peerEnt); off+4 > 128 {
		t.Errorf("Port.peerEnt at byte %d, want it in the second line", off)
	}
	if off := unsafe.Offsetof(Port{}.q); off != 128 {
		t.Errorf("Port.q at byte %d, want 128 (the third line)", off)
	}
}

// TestSwitchLayout pins Switch's layout: what every packet's arrival and departure reads or
// writes (the network, the ports, their base, PFC's shared pool, the buffer's use) in the first
// line; 128 bytes in all, Go's size class of that size, whose objects start on 128-byte
// boundaries (checked on a fat tree's switches), so that the first line is one line. And base,
// through which the per-port state is found, is the gidx of the switch's port 0.
func TestSwitchLayout(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("layout is pinned for 64-bit platforms")
	}
	if s := unsafe.Sizeof(Switch{}); s != 128 {
		t.Errorf("Switch is %d bytes, want 128: adjust its padding", s)
	}
	for _, off := range []uintptr{unsafe.Offsetof(Switch{}.Ports) + 24, unsafe.Offsetof(Switch{}.pool) + unsafe.Sizeof(pfcNode{}), unsafe.Offsetof(Switch{}.bufUsed) + 8, unsafe.Offsetof(Switch{}.MaxBufUsed) + 8} {
		if off > 64 {
			t.Errorf("a per-packet field of Switch ends at byte %d, beyond the first line", off)
		}
	}
	n := newNet(t, fatTreeK(t, 4, 100*units.Gbps, units.Microsecond), DefaultRoCE())
	for _, sw := range n.Switches {
		if sw == nil {
			continue
		}
		if a := uintptr(unsafe.Pointer(sw)); a%128 != 0 {
			t.Errorf("switch %s at %#x, not on a 128-byte boundary", sw.Name, a)
		}
		for i, p := range sw.Ports {
			if p != &n.ports[sw.base+int32(i)] {
				t.Fatalf("switch %s: Ports[%d] is not Network.ports[base+%d]", sw.Name, i, i)
			}
		}
	}
}

// TestFlowLayout pins Flow's layout: what the source NIC's round robin reads for every flow it
// visits (identity, pacing deadline, the sender's flags, size and next byte) in the first line,
// the receiver on a line of its own, the whole struct in whole lines (a size class of whole lines
// keeps each flow's lines its own).
func TestFlowLayout(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("layout is pinned for 64-bit platforms")
	}
	// rc.Sender: done, armed, then size, next byte, highest byte sent: 32 bytes.
	if off := unsafe.Offsetof(Flow{}.snd); off+32 != 64 {
		t.Errorf("the sender's first 32 bytes end at byte %d of Flow, want 64", off+32)
	}
	if off := unsafe.Offsetof(Flow{}.rcv); off != 128 {
		t.Errorf("Flow.rcv at byte %d, want 128 (the third line)", off)
	}
	if s := unsafe.Sizeof(Flow{}); s%64 != 0 || unsafe.Sizeof(Flow{}.rcv) > 64 {
		t.Errorf("Flow is %d bytes, its receiver %d: want whole 64-byte lines, the receiver within one", s, unsafe.Sizeof(Flow{}.rcv))
	}
}
