package flow

import (
	"fmt"
	"github.com/fabricsim/fabricsim/fabric"
	"math"

	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/result"
	"github.com/fabricsim/fabricsim/units"
)

// collect builds the run's result in the schema every backend fills.
func (e *engine) collect() *result.Run {
	res := &result.Run{Backend: "flow", Seed: e.cfg.Seed, EndTime: e.now, Events: uint64(e.steps + e.jumps),
		DropsByCause: map[string]int64{}, Counters: map[string]float64{}}
	res.Messages = make([]result.Message, len(e.mg.Msgs))
	for i := range e.mg.Msgs {
		m := &e.mg.Msgs[i]
		rm := result.Message{ID: int32(i), Src: m.Src, Dst: m.Dst, Bytes: int64(m.Bytes), Prio: m.Prio, Tag: m.Tag,
			Start: e.started[i], Finish: e.finish[i]}
		if e.finish[i] > res.SimTime {
			res.SimTime = e.finish[i]
		}
		if m.Bytes > 0 {
			rm.IdealFCT = e.idealOf(int32(i))
			res.BytesSent += int64(m.Bytes)
		}
		res.Messages[i] = rm
	}
	res.EndTime = max(res.EndTime, res.SimTime)
	res.BytesDelivered = e.stats.payloadDelivered
	c := res.Counters
	if l := e.loss; l != nil {
		res.Drops = int64(math.Round(l.drops))
		res.DropsByCause["buffer"] = int64(math.Round(l.bufferDrops))
		res.DropsByCause["random_loss"] = int64(math.Round(l.randomDrops))
		res.NAKs = l.naks
		res.Timeouts = l.timeouts
		res.BytesRetransmitted = int64(l.retransmitted / e.ideal.maxWire * float64(e.cfg.MTU))
	}
	e.faults.report(res)
	c["flow_steps"] = float64(e.steps)
	c["flow_jumps"] = float64(e.jumps)
	var maxBuf float64
	for _, b := range e.net.bufs {
		maxBuf = max(maxBuf, b.maxUse)
	}
	c["max_switch_buffer_bytes"] = math.Round(maxBuf)
	var marks float64
	for r := range e.net.res {
		marks += e.net.res[r].marks
	}
	fc := e.fc
	switch fc.kind {
	case bpPFC:
		var frames, resumes int64
		var paused float64
		for idx := range fc.pauseFrames {
			frames += fc.pauseFrames[idx]
			resumes += fc.resumes[idx]
			paused += fc.stalled[idx]
		}
		c["pfc_pause_frames_sent"] = float64(frames)
		c["pfc_resume_frames_sent"] = float64(resumes)
		c["pfc_paused_time_ns"] = paused * 1e9
		c["pfc_max_headroom_used_bytes"] = math.Round(max(0, fc.maxOver))
		c["pfc_headroom_drops"] = 0
		e.portCounters(res)
	case bpCredits:
		var stall float64
		byVL := map[uint8]float64{}
		for idx, s := range fc.stalled {
			stall += s
			if s > 0 {
				byVL[e.classes[idx%e.nc]] += s
			}
		}
		c["ib_credit_stall_ns"] = stall * 1e9
		for vl, s := range byVL {
			c[fmt.Sprintf("ib_credit_stall_ns.vl%d", vl)] = s * 1e9
		}
	}
	if e.cfg.Kind == fabric.KindRoCE && e.cfg.RoCE.ECN {
		c["ecn_marks"] = math.Round(marks)
	}
	if e.cc != nil {
		e.cc.report(c)
	}
	// Random numbers are drawn by lossy runs and by DCQCN's marks, which only bytes joining a
	// queue with a marking probability make (dcqcnModel.enqueued adds to marks whenever it could
	// have drawn).
	_, dcqcn := e.cc.(*dcqcnModel)
	res.NoDraws = e.loss == nil && !(dcqcn && marks > 0)
	res.NoQueues = maxBuf == 0
	return res
}

// portCounters lists, per link and priority, the PFC pauses and ECN marks the run counted, in
// port order (a bundle's counts go to its first link).
func (e *engine) portCounters(res *result.Run) {
	fc := e.fc
	nch := int(e.net.chanBase[len(e.g.Nodes)])
	type acc struct {
		frames, resumes int64
		stalled, marks  float64
	}
	per := make(map[int]*acc)
	for idx := range fc.pauseFrames {
		if fc.pauseFrames[idx] == 0 && fc.stalled[idx] == 0 {
			continue
		}
		r := idx / e.nc
		ch := e.firstChannel(int32(r))
		a := per[ch*e.nc+idx%e.nc]
		if a == nil {
			a = &acc{}
			per[ch*e.nc+idx%e.nc] = a
		}
		a.frames += fc.pauseFrames[idx]
		a.resumes += fc.resumes[idx]
		a.stalled += fc.stalled[idx]
	}
	for ch := 0; ch < nch; ch++ {
		for c := 0; c < e.nc; c++ {
			a := per[ch*e.nc+c]
			if a == nil {
				continue
			}
			// The paused port is the upstream end of the link: the channel's own name.
			res.Ports = append(res.Ports, result.PortCounters{Port: e.net.name(int32(ch)), Prio: int(e.classes[c]),
				PausesReceived: a.frames, PausedNs: a.stalled * 1e9})
		}
	}
}

// firstChannel is r itself for a channel, a bundle's first link otherwise.
func (e *engine) firstChannel(r int32) int { return int(e.net.res[r].first) }

// idealOf is message i's completion time alone on the network, along the path the packet
// backend's ideal takes (the first minimum-hop next hop, or the forwarding tables).
func (e *engine) idealOf(i int32) units.Time {
	m := &e.mg.Msgs[i]
	k := idealKey{m.Src, m.Dst, int64(m.Bytes)}
	if t, ok := e.idealMemo[k]; ok {
		return t // a collective's chunks repeat their ends and sizes
	}
	t := e.idealPath(m)
	if e.idealMemo == nil || len(e.idealMemo) >= maxCachedPaths {
		e.idealMemo = map[idealKey]units.Time{}
	}
	e.idealMemo[k] = t
	return t
}

// idealKey names what idealOf depends on.
type idealKey struct {
	src, dst int32
	bytes    int64
}

func (e *engine) idealPath(m *msggraph.Message) units.Time {
	p, err := e.rt.firstPath(m.Src, m.Dst, e.pathBuf[:0])
	if err != nil {
		return 0
	}
	e.pathBuf = p
	return e.ideal.fct(e.net, p, int64(m.Bytes))
}
