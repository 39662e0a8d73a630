package flow

import "fmt"

// check verifies the fluid network's invariants after a step (Options.Check): no backlog or
// ingress counter negative, every flow's bytes conserved (injected = queued + delivered), switch
// buffers within their size, lossless classes never above their bound by more than the headroom,
// the count of quiet members the resources' (engine.quietMembers).
func (e *engine) check() error {
	const tol = 1e-6
	for fid := range e.flows {
		f := &e.flows[fid]
		if f.done || !f.hot {
			continue // a quiet flow's bytes are brought up to date lazily
		}
		var q float64
		for h := int32(0); h < f.hops; h++ {
			// The hand-off reads a hop's resource from its slot record, not from the path.
			r := e.path[f.off+h]
			if o := e.owner[f.off+h]; o.res != r || o.flow != int32(fid) || o.hop != h {
				return fmt.Errorf("invariant violated at %v: message %d's path slot %d holds resource %d of flow %d hop %d, not %d of %d hop %d", e.now, f.msg, f.off+h, o.res, o.flow, o.hop, r, fid, h)
			}
			b := e.owner[f.off+h].back
			if b < -tol {
				return fmt.Errorf("invariant violated at %v: flow of message %d holds %g B at hop %d", e.now, f.msg, b, h)
			}
			q += b
		}
		if e.ar.family(int32(fid)) != nil {
			continue // a family's bytes move between its members (arflows.go): checkFamilies
		}
		if e.loss != nil && e.loss.state(int32(fid)).hadLoss {
			continue // dropped and discarded bytes are not conserved per flow
		}
		if d := (f.total - f.rem) - (q + f.deliv); d > tol*f.total+1e-3 || d < -tol*f.total-1e-3 {
			return fmt.Errorf("invariant violated at %v: message %d injected %g B, holds %g B, delivered %g B", e.now, f.msg, f.total-f.rem, q, f.deliv)
		}
		if f.rem < 0 || f.deliv > f.total*(1+tol)+1e-3 {
			return fmt.Errorf("invariant violated at %v: message %d has %g B left to send and %g of %g B delivered", e.now, f.msg, f.rem, f.deliv, f.total)
		}
	}
	if err := e.checkFamilies(); err != nil {
		return err
	}
	for i := range e.rc {
		if x := e.rc[i].ing; x < -1e-3 {
			return fmt.Errorf("invariant violated at %v: ingress counter of %s went negative (%g B)", e.now, e.net.name(int32(i/e.nc)), x)
		}
	}
	quiet := 0
	for _, n := range e.quietN { // (a resource made since growState has no members yet)
		quiet += int(n)
	}
	if quiet != e.quietMembers {
		return fmt.Errorf("invariant violated at %v: the resources count %d quiet members, the engine %d", e.now, quiet, e.quietMembers)
	}
	for i := range e.net.bufs {
		b := &e.net.bufs[i]
		if b.size > 0 && b.used > b.size*(1+tol) {
			return fmt.Errorf("invariant violated at %v: switch %s holds %g B, above its %g B buffer", e.now, e.g.Nodes[i].Name, b.used, b.size)
		}
	}
	return nil
}
