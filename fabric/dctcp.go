package fabric

import (
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/transport/cc/dctcp"
)

// DCTCP-style windows on RoCE (`dctcp: true`, [DCTCP]): the switches mark at a step threshold
// (set ecn_kmin = ecn_kmax = K, ecn_pmax 1), the receiver echoes each marked packet's CE on the
// ACK it causes (as `cnp: ack-flag` does, whatever `cnp` says), and the sender's DCTCP state
// machine (transport/cc/dctcp) bounds the flow's bytes in flight by its window. Flows are not
// paced: they send at line rate while the window allows, as a TCP sender does.

// dctcpCC runs a DCTCP sender per QP; ACKs reach it through Acked (ackObserver).
type dctcpCC struct {
	*roce
	p    dctcp.Params
	snd  []dctcp.Sender
	last []int64 // the cumulative ACK each flow's sender last saw
	cuts int64
}

func newDCTCP(r *roce) *dctcpCC { return &dctcpCC{roce: r, p: r.cfg.DCTCPParams} }

// Start gives f the window of one base round trip at its NIC's line rate (an RDMA sender starts
// at line rate; [DCTCP]'s TCP would slow-start) and one MTU of payload as its segment.
func (d *dctcpCC) Start(f *Flow) {
	if nf := len(d.n.flows); len(d.snd) < nf {
		d.snd = append(d.snd, make([]dctcp.Sender, nf-len(d.snd))...)
		d.last = append(d.last, make([]int64, nf-len(d.last))...)
	}
	bdp := int64(d.n.NICs[f.src].Port.Rate.BytesIn(d.n.baseRTT()))
	d.snd[f.id].Init(&d.p, bdp, int64(d.n.cfg.MTU))
	d.last[f.id] = 0
	f.Rate = 0
}

// Sent marks f's data ECN-capable, so that the switches mark it ([DCTCP] §3.1).
func (d *dctcpCC) Sent(f *Flow, pkt *Packet) { pkt.ECN = ECNECT0 }

func (d *dctcpCC) Received(rx *NIC, f *Flow, pkt *Packet) {}
func (d *dctcpCC) Notified(f *Flow, pkt *Packet)          {}

// window is the flow's congestion window ([DCTCP] eq. 2).
func (d *dctcpCC) window(f *Flow) int64 { return d.snd[f.id].Window() }

// Acked feeds an ACK to f's sender: the bytes it newly acknowledges and its ECN echo.
func (d *dctcpCC) Acked(f *Flow, pkt *Packet) {
	if f.snd.Done() {
		return
	}
	acked := max(pkt.Seq-d.last[f.id], 0)
	d.last[f.id] = max(d.last[f.id], pkt.Seq)
	if d.snd[f.id].OnAck(pkt.Seq, acked, pkt.ECN == ECNCE, f.snd.NextNew()) {
		d.cuts++
	}
}

func (d *dctcpCC) Report(res *result.Run) {
	res.Counters["dctcp_window_cuts"] = float64(d.cuts)
}
