package fabric

// Out-of-order-tolerant receiver (Config.Transport "ooo"): adaptive routing sends one QP's
// packets over different paths, so they may arrive out of order on a lossless fabric; NVIDIA
// HCAs place such packets in memory and do not treat the gap as loss ([NCCL] enables AR on IB for that reason). The
// receiver keeps a bitmap of the packets it holds beyond the cumulative acknowledgement,
// acknowledges the contiguous prefix, counts every packet that arrived ahead of a gap as
// reordered, and never NAKs; the sender is unchanged (go-back-N on timeout, which a lossless
// fabric does not reach). Packet numbers are byte offsets / MTU: every packet but a QP's last
// is full.

func (c *NIC) receiveOOO(f *Flow, pkt *Packet) {
	n := c.net
	mtu := int64(n.cfg.MTU)
	if f.oooBits == nil { // once per flow: one bit per packet of the QP
		f.oooBits = make([]uint64, ((f.size+mtu-1)/mtu+63)/64)
	}
	seq := pkt.Seq
	idx := seq / mtu
	has := func(i int64) bool { return f.oooBits[i>>6]>>(i&63)&1 != 0 }
	switch {
	case f.received || seq < f.rcvNxt || has(idx):
		n.stats.Duplicates++
		c.sendControl(f, Ack, f.rcvNxt)
	case seq == f.rcvNxt:
		c.acceptInOrder(f, pkt, mtu, has)
	default:
		f.oooBits[idx>>6] |= 1 << (idx & 63)
		n.stats.OutOfOrder++
	}
}
