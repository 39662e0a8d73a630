package roceconf

import (
	"strconv"
	"strings"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/units"
)

// EOS: Arista EOS CLI as Arista's AVD generates it ([EOS-AVD]): a `qos profile` with `qos trust
// dscp`, a `uc-tx-queue` per class (`priority strict` or `no priority` with `bandwidth
// percent`), `random-detect ecn minimum-threshold N U maximum-threshold N U max-mark-probability
// P` on the data queue, `priority-flow-control on` and `priority-flow-control priority P
// no-drop`, and the PFC watchdog (global `priority-flow-control pause watchdog default timeout
// S` and `recovery-time S` in seconds with two decimals, enabled per profile); `qos map dscp D
// to traffic-class T` maps RoCE's DSCPs. EOS sizes PFC thresholds and headroom itself: no knob
// for pfc_xoff, pfc_alpha or pfc_headroom.

const eosProfile = "fabricsim-roce"

// eosSeconds writes a duration as EOS's seconds with up to two decimals (10 ms steps, 0.01..60 s).
func eosSeconds(x *exporter, key string, v units.Time, what string) string {
	cs := x.whole(key, v, 10*units.Millisecond, "x 10 ms", 1, 6000, what)
	return strconv.FormatFloat(float64(cs)/100, 'f', -1, 64)
}

func exportEOS(x *exporter, c *fabric.Config, t Target) {
	r := &c.RoCE
	header(x, "!", c, t)
	x.line("qos map dscp %d to traffic-class %d", DSCPData, c.DataPriority)
	x.line("qos map dscp %d to traffic-class %d", DSCPCNP, c.CNPPriority)
	wd := r.PFC && r.Watchdog > 0
	if wd {
		x.line("!")
		x.line("priority-flow-control pause watchdog default timeout %s", eosSeconds(x, "pfc_watchdog", r.Watchdog, "EOS watchdog timeout"))
		x.line("priority-flow-control pause watchdog default recovery-time %s", eosSeconds(x, "pfc_watchdog_restore", r.WatchdogRestore, "EOS watchdog recovery-time"))
		x.line("priority-flow-control pause watchdog action drop")
	}
	x.line("!")
	x.line("qos profile %s", eosProfile)
	x.line("   qos trust dscp")
	shares := x.schedShares(c)
	for p := range 8 {
		x.line("   !")
		x.line("   uc-tx-queue %d", p)
		if r.Strict.Has(uint8(p)) {
			x.line("      priority strict")
		} else {
			x.line("      no priority")
			x.line("      bandwidth percent %d", shares[p])
		}
		if p == int(c.DataPriority) {
			if r.ECN {
				pm := x.percent("ecn_pmax", r.Pmax, 1, 100, "EOS max-mark-probability")
				x.line("      random-detect ecn minimum-threshold %d bytes maximum-threshold %d bytes max-mark-probability %d", int64(r.Kmin), int64(r.Kmax), pm)
			} else {
				x.line("      no random-detect ecn")
			}
		}
	}
	x.line("   !")
	if r.PFC {
		x.line("   priority-flow-control on")
		for _, p := range r.Lossless.List() {
			x.line("   priority-flow-control priority %d no-drop", p)
		}
		if wd {
			x.line("   priority-flow-control pause watchdog")
			x.line("   priority-flow-control pause watchdog port action drop")
		}
	} else {
		x.line("   no priority-flow-control")
	}
	for _, p := range t.ports(EOS) {
		x.line("!")
		x.line("interface %s", p)
		x.line("   service-profile %s", eosProfile)
	}
	x.line("!")
	x.line("end")
}

// eosLine reports whether a line is EOS configuration fabricsim reads (for Detect).
func eosLine(l string) bool {
	for _, p := range []string{"qos ", "priority-flow-control", "no priority-flow-control", "uc-tx-queue ", "tx-queue ", "random-detect ecn", "service-profile ", "interface Ethernet"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

// eosUnits are the ECN threshold units read, in bytes. kbytes and mbytes are taken as decimal
// (est.: the AVD schema does not define them; exports always write bytes).
var eosUnits = map[string]int64{"bytes": 1, "kbytes": 1000, "mbytes": 1000 * 1000}

// eosQueue is one tx-queue's settings.
type eosQueue struct {
	strict, dwrr bool
	modeP        Pos
	share        *int
	shareP       Pos
	ecn          *ecnClass
}

type eosState struct {
	fi              *fileImport
	dscp            map[int]spPos
	queues          map[int]*eosQueue
	pfc             agreed
	lossless        map[int]bool
	losslessP       Pos
	wdOn            bool
	wdP             Pos
	timeout, recov  agreed
	block           string // "qos profile X", "interface X" or ""
	queue           *eosQueue
	queueIndent     int
	anyQueue        bool
	firstQueueP     Pos
	losslessTouched bool
}

func importEOS(fi *fileImport, data []byte) error {
	st := &eosState{fi: fi, dscp: map[int]spPos{}, queues: map[int]*eosQueue{}, lossless: map[int]bool{}}
	for i, raw := range strings.Split(string(data), "\n") {
		raw = strings.TrimRight(raw, " \t\r")
		l := strings.TrimSpace(raw)
		if l == "" || strings.HasPrefix(l, "!") || l == "end" {
			continue
		}
		indent := len(raw) - len(strings.TrimLeft(raw, " \t"))
		p := Pos{File: fi.file, Line: i + 1, Key: l}
		if indent == 0 {
			st.block, st.queue = "", nil
		} else if st.queue != nil && indent <= st.queueIndent {
			st.queue = nil
		}
		if err := st.line(p, l, indent); err != nil {
			return err
		}
	}
	return st.finish()
}

func (st *eosState) line(p Pos, l string, indent int) error {
	fi := st.fi
	w := strings.Fields(l)
	bad := func(format string, args ...any) error { return errAt(p, format, args...) }
	num := func(s string, lo, hi int) (int, error) {
		v, err := strconv.Atoi(s)
		if err != nil || v < lo || v > hi {
			return 0, bad("%q is not a whole number %d..%d", s, lo, hi)
		}
		return v, nil
	}
	seconds := func(s string) (units.Time, error) {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v < 0.01 || v > 60 {
			return 0, bad("%q is not a time in seconds 0.01..60", s)
		}
		return units.Time(v*100+0.5) * 10 * units.Millisecond, nil
	}
	if st.queue != nil {
		q := st.queue
		switch {
		case l == "priority strict":
			q.strict, q.dwrr, q.modeP = true, false, p
		case l == "no priority":
			q.strict, q.dwrr, q.modeP = false, true, p
		case len(w) == 3 && w[0] == "bandwidth" && w[1] == "percent":
			n, err := num(w[2], 0, 100)
			if err != nil {
				return err
			}
			q.share, q.shareP = &n, p
		case len(w) == 4 && w[0] == "bandwidth" && w[1] == "guaranteed" && w[2] == "percent":
			fi.note(p, "a guaranteed bandwidth is a minimum rate; fabricsim's DWRR shares come from `bandwidth percent`")
		case l == "no random-detect ecn":
			off := false
			q.ecn = &ecnClass{enable: &off, pos: p, enP: p}
		case l == "random-detect ecn count":
		case len(w) >= 8 && w[0] == "random-detect" && w[1] == "ecn" && w[2] == "minimum-threshold" && w[5] == "maximum-threshold":
			return st.randomDetect(p, q, w)
		default:
			fi.note(p, "not a setting fabricsim models")
		}
		return nil
	}
	switch {
	case indent == 0 && len(w) == 3 && w[0] == "qos" && w[1] == "profile":
		st.block = l
	case indent == 0 && len(w) == 2 && w[0] == "interface":
		st.block = l
	case len(w) == 2 && (w[0] == "uc-tx-queue" || w[0] == "tx-queue") && st.block != "":
		n, err := num(w[1], 0, 7)
		if err != nil {
			return err
		}
		q := st.queues[n]
		if q == nil {
			q = &eosQueue{}
			st.queues[n] = q
		}
		st.queue, st.queueIndent = q, indent
		if !st.anyQueue {
			st.anyQueue, st.firstQueueP = true, p
		}
	case len(w) >= 6 && w[0] == "qos" && w[1] == "map" && w[2] == "dscp":
		to := -1
		for i, x := range w {
			if x == "to" {
				to = i
			}
		}
		if to < 4 || to+2 >= len(w) || w[to+1] != "traffic-class" {
			return bad("want `qos map dscp D... to traffic-class T`")
		}
		tc, err := num(w[to+2], 0, 7)
		if err != nil {
			return err
		}
		for _, d := range w[3:to] {
			dv, err := num(d, 0, 63)
			if err != nil {
				return err
			}
			if dv == DSCPData || dv == DSCPCNP {
				st.dscp[dv] = spPos{tc, p}
			} else {
				fi.note(p, "DSCP %d: fabricsim reads only DSCP %d (RoCE data) and %d (CNP)", dv, DSCPData, DSCPCNP)
			}
		}
	case len(w) == 3 && w[0] == "qos" && w[1] == "trust":
		if w[2] != "dscp" {
			fi.note(p, "trust %s: fabricsim classifies RoCE by DSCP %d (data) and %d (CNP)", w[2], DSCPData, DSCPCNP)
		}
	case l == "priority-flow-control on":
		if err := st.pfc.agree("on", p, "priority-flow-control"); err != nil {
			return err
		}
	case l == "no priority-flow-control" || l == "priority-flow-control all off":
		if err := st.pfc.agree("off", p, "priority-flow-control"); err != nil {
			return err
		}
	case len(w) == 4 && w[0] == "priority-flow-control" && w[1] == "priority":
		n, err := num(w[2], 0, 7)
		if err != nil {
			return err
		}
		switch w[3] {
		case "no-drop":
			st.lossless[n] = true
		case "drop":
			st.lossless[n] = false
		default:
			return bad("%q (valid: no-drop, drop)", w[3])
		}
		st.losslessP, st.losslessTouched = p, true
	case strings.HasPrefix(l, "priority-flow-control pause watchdog"):
		rest := strings.Fields(strings.TrimPrefix(l, "priority-flow-control pause watchdog"))
		switch {
		case len(rest) == 0:
			st.wdOn, st.wdP = true, p
		case len(rest) == 3 && rest[0] == "default" && (rest[1] == "timeout" || rest[1] == "recovery-time"):
			v, err := seconds(rest[2])
			if err != nil {
				return err
			}
			a := &st.timeout
			if rest[1] == "recovery-time" {
				a = &st.recov
			}
			if err := a.agree(v.String(), p, "the watchdog "+rest[1]); err != nil {
				return err
			}
		case len(rest) >= 2 && (rest[0] == "action" || rest[0] == "port" && rest[1] == "action"):
			if a := rest[len(rest)-1]; a != "drop" {
				fi.note(p, "action %s: fabricsim's watchdog drops (flushes the queue and ignores PAUSE)", a)
			}
		case len(rest) >= 4 && rest[0] == "port" && rest[1] == "timer":
			for i := 2; i+1 < len(rest); i += 2 {
				switch rest[i] {
				case "timeout", "recovery-time":
					v, err := seconds(rest[i+1])
					if err != nil {
						return err
					}
					a := &st.timeout
					if rest[i] == "recovery-time" {
						a = &st.recov
					}
					if err := a.agree(v.String(), p, "the watchdog "+rest[i]); err != nil {
						return err
					}
				case "polling-interval":
					fi.note(p, "polling-interval: fabricsim checks the pause time continuously")
				}
			}
		default:
			fi.note(p, "not a setting fabricsim models")
		}
	case len(w) == 2 && w[0] == "service-profile":
	default:
		fi.note(p, "not a setting fabricsim models")
	}
	return nil
}

// randomDetect reads `random-detect ecn minimum-threshold N U maximum-threshold N U
// [max-mark-probability P] [weight W]`.
func (st *eosState) randomDetect(p Pos, q *eosQueue, w []string) error {
	size := func(n, u string) (units.Size, error) {
		m, ok := eosUnits[u]
		if !ok {
			if u == "segments" || u == "milliseconds" || u == "microseconds" {
				return 0, errAt(p, "thresholds in %s: fabricsim marks on queue bytes; write them in bytes, kbytes or mbytes (segments depend on the platform's cell size)", u)
			}
			return 0, errAt(p, "%q is not a threshold unit (valid: bytes, kbytes, mbytes)", u)
		}
		v, err := strconv.ParseInt(n, 10, 64)
		if err != nil || v < 1 {
			return 0, errAt(p, "%q is not a threshold (a whole number >= 1)", n)
		}
		return units.Size(v * m), nil
	}
	kmin, err := size(w[3], w[4])
	if err != nil {
		return err
	}
	kmax, err := size(w[6], w[7])
	if err != nil {
		return err
	}
	on := true
	e := &ecnClass{enable: &on, pos: p, enP: p}
	e.setMin(kmin, p)
	e.setMax(kmax, p)
	for i := 8; i+1 < len(w); i += 2 {
		switch w[i] {
		case "max-mark-probability":
			n, err := strconv.Atoi(w[i+1])
			if err != nil || n < 1 || n > 100 {
				return errAt(p, "max-mark-probability %q: want 1..100", w[i+1])
			}
			e.prob, e.probP = &n, p
		case "weight":
			st.fi.note(p, "weight %s: fabricsim marks on the instantaneous queue (no averaging)", w[i+1])
		default:
			return errAt(p, "%q: want max-mark-probability or weight", w[i])
		}
	}
	if (len(w)-8)%2 != 0 {
		return errAt(p, "%q has no value", w[len(w)-1])
	}
	q.ecn = e
	return nil
}

func (st *eosState) finish() error {
	fi := st.fi
	if d, ok := st.dscp[DSCPData]; ok {
		fi.set("data_priority", d.pos, func(c *fabric.Config) { c.DataPriority = uint8(d.sp) })
	}
	if d, ok := st.dscp[DSCPCNP]; ok {
		fi.set("cnp_priority", d.pos, func(c *fabric.Config) { c.CNPPriority = uint8(d.sp) })
	}
	if st.pfc.set {
		on := st.pfc.val == "on"
		fi.set("pfc", st.pfc.pos, func(c *fabric.Config) { c.RoCE.PFC = on })
	}
	if st.losslessTouched {
		var s fabric.PrioritySet
		for p, on := range st.lossless {
			if on {
				s |= 1 << p
			}
		}
		fi.set("pfc_priorities", st.losslessP, func(c *fabric.Config) { c.RoCE.Lossless = s })
	}
	if st.wdOn {
		if !st.timeout.set {
			return errAt(st.wdP, "the watchdog is on but has no timeout: give `priority-flow-control pause watchdog default timeout S` or a port timer")
		}
		v, _ := units.ParseTime(st.timeout.val)
		fi.set("pfc_watchdog", st.timeout.pos, func(c *fabric.Config) { c.RoCE.Watchdog = v })
	}
	if st.recov.set {
		v, _ := units.ParseTime(st.recov.val)
		fi.set("pfc_watchdog_restore", st.recov.pos, func(c *fabric.Config) { c.RoCE.WatchdogRestore = v })
	}
	data := int(fi.cfg.DataPriority)
	if q := st.queues[data]; q != nil && q.ecn != nil {
		if err := applyECN(fi, q.ecn, data); err != nil {
			return err
		}
	}
	for n := range 8 {
		if q := st.queues[n]; q != nil && q.ecn != nil && n != data {
			fi.note(q.ecn.pos, "ECN on tx-queue %d: fabricsim marks by one setting, the data priority's (%d)", n, data)
		}
	}
	if st.anyQueue {
		// EOS serves a tx-queue by strict priority unless it says `no priority`.
		sched := newSched()
		sched.touched, sched.modeP, sched.shareP = true, st.firstQueueP, st.firstQueueP
		for n := range 8 {
			q := st.queues[n]
			if q == nil || !q.dwrr {
				sched.mode[n] = "strict"
				continue
			}
			sched.mode[n] = "dwrr"
			sched.modeP = q.modeP
			if q.share != nil {
				sched.share[n], sched.shareP = *q.share, q.shareP
			} else {
				sched.share[n] = 0
			}
		}
		sched.apply(fi)
	}
	return nil
}
