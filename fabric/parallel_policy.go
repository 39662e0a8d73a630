package fabric

// The policies a parallel run gives each partition a copy of (parallel.go). A policy keeps its
// per-port and per-flow state in arrays indexed by global port or flow ID, which each partition
// writes only for its own ports and flows, so the copies share them; what a copy must have of
// its own is the network it reads the clock from and schedules on (its partition's) and its
// scalar counters, which mergePolicies adds up after the run. A policy that is not listed here
// keeps the run sequential (sequentialReason).

// partitionPolicies gives partition network c copies of n's policies, or returns false if one of
// them cannot be copied.
func (n *Network) partitionPolicies(c *Network) bool {
	var r *roce // the partition's copy of the RoCE settings' holder, shared by its policies
	rc := func(o *roce) *roce {
		if r == nil {
			r = &roce{n: c, cfg: o.cfg}
		}
		return r
	}
	switch fc := n.fc.(type) {
	case nil:
	case *ibCredits:
		f := *fc
		f.n = c
		f.fcSent, f.maxUsed, f.out, f.touched, f.handed, f.exchangeTime = 0, 0, [2][][]fcHanded{}, nil, 0, 0
		c.SetLinkFlowControl(&f)
	case *pfc:
		f := *fc
		f.roce = rc(fc.roce)
		f.maxHdr, f.wdTrigger = 0, 0
		c.SetLinkFlowControl(&f)
	default:
		return false
	}
	copyECN := func(m any) (*ecnRED, bool) {
		e, ok := m.(*ecnRED)
		if !ok {
			return nil, false
		}
		e2 := *e
		e2.roce = rc(e.roce)
		e2.total = 0
		return &e2, true
	}
	if n.marker != nil {
		e, ok := copyECN(n.marker)
		if !ok {
			return false
		}
		c.SetMarker(e) // also the direct-call pointer of the per-hop path (hooks.go)
	}
	if n.deqMarker != nil {
		e, ok := copyECN(n.deqMarker)
		if !ok {
			return false
		}
		c.deqMarker = e
	}
	switch cc := n.cc.(type) {
	case nil:
	case *dcqcnCC:
		cc.grow() // its per-flow arrays are sized once, before the partitions share them
		d := *cc
		d.roce = rc(cc.roce)
		d.cnpsSent, d.cnpsRcvd, d.decreases = 0, 0, 0
		c.cc = &d
	default:
		return false
	}
	switch s := n.sched.(type) {
	case nil:
	case *ibArbiter:
		a := *s
		a.fc = c.ibfc
		c.SetScheduler(&a)
	case *dwrr:
		d := *s
		d.roce = rc(s.roce)
		c.SetScheduler(&d)
	default:
		return false
	}
	switch r := n.router.(type) {
	case nil:
	case *ibRouter:
		r2 := *r
		r2.n, r2.fc = c, c.ibfc
		r2.decisions, r2.deviations = 0, 0
		c.SetRouter(&r2)
	default:
		return false
	}
	return n.acker == nil && n.ints == nil
}

// mergePolicies adds the partitions' policy counters into n's policies.
func (n *Network) mergePolicies() {
	for _, c := range n.par.nets {
		if f := c.ibfc; f != nil {
			m := n.ibfc
			m.fcSent += f.fcSent
			m.maxUsed = max(m.maxUsed, f.maxUsed)
			f.fcSent, f.maxUsed = 0, 0
		}
		if r := c.ibRouter; r != nil {
			n.ibRouter.decisions += r.decisions
			n.ibRouter.deviations += r.deviations
			r.decisions, r.deviations = 0, 0
		}
		if f, ok := c.fc.(*pfc); ok {
			m := n.fc.(*pfc)
			m.maxHdr = max(m.maxHdr, f.maxHdr)
			m.wdTrigger += f.wdTrigger
			f.maxHdr, f.wdTrigger = 0, 0
		}
		for _, pair := range [][2]any{{n.marker, c.marker}, {n.deqMarker, c.deqMarker}} {
			if e, ok := pair[1].(*ecnRED); ok {
				pair[0].(*ecnRED).total += e.total
				e.total = 0
			}
		}
		if d, ok := c.cc.(*dcqcnCC); ok {
			m := n.cc.(*dcqcnCC)
			m.cnpsSent += d.cnpsSent
			m.cnpsRcvd += d.cnpsRcvd
			m.decreases += d.decreases
			d.cnpsSent, d.cnpsRcvd, d.decreases = 0, 0, 0
		}
	}
}
