package flow

import (
	"fmt"
	"math"
	"testing"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
)

// TestJoinOrder holds the NIC's round-robin order (joinDelay) against the packet backend: eight
// 512 KiB messages offered together by one host of a star, each to its own receiver, so that only
// the sender's NIC is shared. The packet backend's round robin finishes them in the order they
// were offered, one packet time (84 ns at 400 Gb/s) apart, and the last where the NIC's line
// rate allows all eight. The flow backend must finish them in the same order, the last at the
// same time (the waiting flows do not idle the NIC: within 0.1 %), and the first before the last
// by the packet backend's spread within 50 % (the fluid shares equally once all have joined, so
// the first message's lead is the harmonic sum of the joins' delays: 0.86 against 0.59 us; with
// every message starting together the spread was 0).
func TestJoinOrder(t *testing.T) {
	g, r := star(t, 9)
	mg := &msggraph.Graph{Endpoints: 9}
	for j := 1; j <= 8; j++ {
		mg.Add(msggraph.Message{Src: 0, Dst: int32(j), Bytes: 512 * units.KiB})
	}
	cfg := fabric.DefaultRoCE()
	fr, err := Run(g, r, cfg, mg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	pr := packetOn(t, g, r, cfg, mg)
	n := len(mg.Msgs)
	for i := 1; i < n; i++ {
		for _, run := range []struct {
			name string
			a, b units.Time
		}{{"flow", fr.Messages[i-1].Finish, fr.Messages[i].Finish}, {"packet", pr.Messages[i-1].Finish, pr.Messages[i].Finish}} {
			if run.b <= run.a {
				t.Errorf("%s backend: message %d finished at %v, not after message %d (%v)", run.name, i, run.b, i-1, run.a)
			}
		}
	}
	last, lastP := fr.Messages[n-1].Finish.Seconds(), pr.Messages[n-1].Finish.Seconds()
	if rel := math.Abs(last/lastP - 1); rel > 0.001 {
		t.Errorf("last message at %.3f us, packet backend %.3f us (%.2f %% apart, at most 0.1 %%)", last*1e6, lastP*1e6, rel*100)
	}
	spread := (fr.Messages[n-1].Finish - fr.Messages[0].Finish).Seconds()
	spreadP := (pr.Messages[n-1].Finish - pr.Messages[0].Finish).Seconds()
	t.Logf("first to last finish: %.3f us, packet backend %.3f us", spread*1e6, spreadP*1e6)
	if rel := math.Abs(spread/spreadP - 1); rel > 0.5 {
		t.Errorf("first to last finish %.3f us, packet backend %.3f us (%.0f %% apart, at most 50 %%)", spread*1e6, spreadP*1e6, rel*100)
	}
}

// star is hosts hosts on one switch, 400 Gb/s links of 500 ns, with its routes.
func star(t *testing.T, hosts int) (*topo.Graph, *topo.Routes) {
	t.Helper()
	g := &topo.Graph{Name: "star"}
	sw := g.AddNode(topo.Switch, "sw", 1)
	for i := 0; i < hosts; i++ {
		h := g.AddNode(topo.Host, fmt.Sprintf("host%d", i), 0)
		g.Connect(h, sw, 400*units.Gbps, 500*units.Nanosecond)
	}
	r, err := topo.ComputeRoutes(g)
	if err != nil {
		t.Fatal(err)
	}
	return g, r
}
