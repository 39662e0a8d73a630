package roceconf

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/units"
)

// NVUE: NVIDIA Cumulus Linux's `nv set qos ...` commands ([NVUE-QoS], [NVIDIA-RoCE]). Thresholds
// and buffers are in bytes, probability and bandwidth in whole percent, the PFC watchdog a
// polling interval in ms (100..5000) times a robustness count (1..1000), the shared-buffer
// alpha one of alpha_1_128 .. alpha_64 (powers of two).

// nvueAlphas are the shared-alpha values NVUE accepts between 1/128 and 64, by log2.
func nvueAlpha(n int) string {
	switch {
	case n < 0:
		return fmt.Sprintf("alpha_1_%d", 1<<-n)
	default:
		return fmt.Sprintf("alpha_%d", 1<<n)
	}
}

func parseNVUEAlpha(s string) (float64, bool) {
	switch {
	case strings.HasPrefix(s, "alpha_1_"):
		d, err := strconv.Atoi(strings.TrimPrefix(s, "alpha_1_"))
		if err != nil || d < 2 || d > 128 || d&(d-1) != 0 {
			return 0, false
		}
		return 1 / float64(d), true
	case strings.HasPrefix(s, "alpha_"):
		d, err := strconv.Atoi(strings.TrimPrefix(s, "alpha_"))
		if err != nil || d < 1 || d > 64 || d&(d-1) != 0 {
			return 0, false
		}
		return float64(d), true
	}
	return 0, false
}

func exportNVUE(x *exporter, c *fabric.Config, t Target) {
	r := &c.RoCE
	header(x, "#", c, t)
	const g = "default-global"
	x.line("nv set qos mapping %s trust l3", g)
	x.line("nv set qos mapping %s dscp %d switch-priority %d", g, DSCPData, c.DataPriority)
	x.line("nv set qos mapping %s dscp %d switch-priority %d", g, DSCPCNP, c.CNPPriority)
	if r.PFC {
		x.line("nv set qos pfc %s switch-priority %s", g, joinInts(r.Lossless.List(), ","))
		x.line("nv set qos pfc %s tx enable", g)
		x.line("nv set qos pfc %s rx enable", g)
		x.line("nv set qos pfc %s cable-length %d", g, t.CableMetres())
		x.line("nv set qos pfc %s port-buffer %d", g, int64(r.Headroom))
		switch r.PFCThreshold {
		case fabric.PFCStatic:
			x.line("nv set qos pfc %s xoff-threshold %d", g, int64(r.XOFF))
			x.line("nv set qos pfc %s xon-threshold %d", g, int64(r.XON))
		default:
			n, exact := alphaLog2(r.PFCAlpha)
			if n < -7 || n > 6 {
				x.fail("pfc_alpha", "%g outside NVUE's shared-alpha alpha_1_128..alpha_64", r.PFCAlpha)
			} else if !exact {
				x.round("pfc_alpha", "%g written as %s (NVUE's shared-alpha is a power of two)", r.PFCAlpha, nvueAlpha(n))
			}
			x.line("nv set qos advance-buffer-config %s ingress-lossless-buffer shared-alpha %s", g, nvueAlpha(n))
		}
	} else {
		x.line("nv set qos pfc %s tx disable", g)
	}
	tc := c.DataPriority
	if r.ECN {
		p := x.percent("ecn_pmax", r.Pmax, 1, 100, "NVUE probability")
		x.line("nv set qos congestion-control %s traffic-class %d ecn enable", g, tc)
		x.line("nv set qos congestion-control %s traffic-class %d min-threshold %d", g, tc, int64(r.Kmin))
		x.line("nv set qos congestion-control %s traffic-class %d max-threshold %d", g, tc, int64(r.Kmax))
		x.line("nv set qos congestion-control %s traffic-class %d probability %d", g, tc, p)
	} else {
		x.line("nv set qos congestion-control %s traffic-class %d ecn disable", g, tc)
	}
	shares := x.schedShares(c)
	for p := range 8 {
		if r.Strict.Has(uint8(p)) {
			x.line("nv set qos egress-scheduler %s traffic-class %d mode strict", g, p)
		} else {
			x.line("nv set qos egress-scheduler %s traffic-class %d mode dwrr", g, p)
			x.line("nv set qos egress-scheduler %s traffic-class %d bw-percent %d", g, p, shares[p])
		}
	}
	if r.PFC && r.Watchdog > 0 {
		poll, robust := nvueWatchdog(x, r.Watchdog)
		x.line("nv set qos pfc-watchdog polling-interval %d", poll)
		x.line("nv set qos pfc-watchdog robustness %d", robust)
		for _, p := range t.ports(NVUE) {
			x.line("nv set interface %s qos pfc-watchdog state enable", p)
		}
	}
	x.line("nv config apply")
}

// nvueWatchdog splits the watchdog time into NVUE's polling interval (100..5000 ms) and
// robustness (1..1000 intervals): the fewest intervals that divide it exactly.
func nvueWatchdog(x *exporter, wd units.Time) (pollMs, robustness int64) {
	ms := x.whole("pfc_watchdog", wd, units.Millisecond, "ms", 100, 5000*1000, "NVUE pfc-watchdog polling-interval x robustness")
	for r := int64(1); r <= 1000; r++ {
		if ms%r == 0 && ms/r >= 100 && ms/r <= 5000 {
			return ms / r, r
		}
	}
	// No exact split: the nearest with the fewest intervals.
	r := (ms + 4999) / 5000
	p := int64(math.Round(float64(ms) / float64(r)))
	x.round("pfc_watchdog", "%v written as %d ms x %d (NVUE polling-interval x robustness)", wd, p, r)
	return p, r
}

func joinInts(v []int, sep string) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, sep)
}

// parseList reads NVUE's and SONiC's lists of small numbers: "3", "3,4", "0-2,5".
func parseList(s string, lo, hi int) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		a, b, isRange := strings.Cut(part, "-")
		x, err := strconv.Atoi(strings.TrimSpace(a))
		if err != nil {
			return nil, fmt.Errorf("%q is not a list of numbers %d..%d (e.g. 3 or 3,4 or 0-2)", s, lo, hi)
		}
		y := x
		if isRange {
			if y, err = strconv.Atoi(strings.TrimSpace(b)); err != nil {
				return nil, fmt.Errorf("%q is not a list of numbers %d..%d (e.g. 3 or 3,4 or 0-2)", s, lo, hi)
			}
		}
		if x < lo || y > hi || x > y {
			return nil, fmt.Errorf("%q: numbers must be %d..%d", s, lo, hi)
		}
		for v := x; v <= y; v++ {
			out = append(out, v)
		}
	}
	return out, nil
}

// spPos is a switch priority and where it was read.
type spPos struct {
	sp  int
	pos Pos
}

// ecnClass is one traffic class's ECN settings as a file gives them.
type ecnClass struct {
	enable          *bool
	min, max        *units.Size
	prob            *int
	pos             Pos
	enP, minP, maxP Pos
	probP           Pos
}

func (e *ecnClass) setMin(v units.Size, p Pos) { e.min, e.minP = &v, p }
func (e *ecnClass) setMax(v units.Size, p Pos) { e.max, e.maxP = &v, p }

// schedState collects the scheduler settings of a file.
type schedState struct {
	mode    map[int]string // "strict" or "dwrr"
	share   map[int]int
	modeP   Pos
	shareP  Pos
	touched bool
}

func newSched() *schedState { return &schedState{mode: map[int]string{}, share: map[int]int{}} }

// apply sets strict_priorities and weights from the modes and shares read.
func (s *schedState) apply(fi *fileImport) {
	if !s.touched {
		return
	}
	// Only the classes the file names change; the others keep their settings.
	if len(s.mode) > 0 {
		strict := fi.cfg.RoCE.Strict
		for p, m := range s.mode {
			strict &^= 1 << p
			if m == "strict" {
				strict |= 1 << p
			}
		}
		fi.set("strict_priorities", s.modeP, func(c *fabric.Config) { c.RoCE.Strict = strict })
	}
	if len(s.share) > 0 {
		strict := fi.cfg.RoCE.Strict
		shares := map[int]int{}
		for p := range 8 {
			v, ok := s.share[p]
			if strict.Has(uint8(p)) || !ok && s.mode[p] != "dwrr" {
				continue
			}
			if v == 0 {
				fi.note(s.shareP, "traffic class %d has no bandwidth share (the switch gives it none): fabricsim's smallest weight 1 taken", p)
			}
			shares[p] = v
		}
		w := reduceWeights(shares)
		fi.set("weights", s.shareP, func(c *fabric.Config) {
			for p, v := range w {
				c.RoCE.Weights[p] = v
			}
		})
	}
}

// watchdogState collects PFC watchdog settings.
type watchdogState struct {
	enabled         bool
	detect, restore *units.Time
	pos             Pos
}

// nvueState is an NVUE file as read so far.
type nvueState struct {
	fi        *fileImport
	dscp      map[int]spPos
	ecn       map[int]*ecnClass
	sched     *schedState
	pfcPrio   *fabric.PrioritySet
	pfcPos    Pos
	tx        *bool
	txPos     Pos
	xoff, xon *units.Size
	xoffPos   Pos
	xonPos    Pos
	alpha     *float64
	alphaPos  Pos
	portBuf   *units.Size
	portPos   Pos
	poll      int64
	robust    int64
	wdOn      bool
	wdPos     Pos
}

func importNVUE(fi *fileImport, data []byte) error {
	st := &nvueState{fi: fi, ecn: map[int]*ecnClass{}, sched: newSched(), poll: 100, robust: 3}
	st.dscp = map[int]spPos{}
	for i, raw := range strings.Split(string(data), "\n") {
		l := strings.TrimSpace(raw)
		// A command pasted with its prompt ("cumulus@leaf01:mgmt:~$ nv set ...").
		if j := strings.Index(l, "$ nv "); j >= 0 && !strings.HasPrefix(l, "nv ") {
			l = l[j+2:]
		}
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		p := Pos{File: fi.file, Line: i + 1, Key: l}
		if err := st.line(p, strings.Fields(l)); err != nil {
			return err
		}
	}
	return st.finish()
}

func (st *nvueState) line(p Pos, w []string) error {
	fi := st.fi
	if len(w) < 2 || w[0] != "nv" {
		fi.note(p, "not an NVUE command")
		return nil
	}
	switch {
	case w[1] == "config" || w[1] == "show" || w[1] == "unset" && !(len(w) >= 4 && w[2] == "qos" && w[3] == "roce"):
		if w[1] == "unset" {
			fi.note(p, "nv unset: the defaults it restores are not read")
		}
		return nil
	case w[1] == "unset":
		fi.note(p, "nv unset qos roce: RoCE profile removed (nothing imported)")
		return nil
	case w[1] != "set" || len(w) < 3:
		fi.note(p, "not an nv set command")
		return nil
	}
	a := w[2:] // after "nv set"
	bad := func(format string, args ...any) error { return errAt(p, format, args...) }
	size := func(s string) (units.Size, error) {
		v, err := units.ParseSize(s)
		if err != nil {
			return 0, bad("%v", err)
		}
		return v, nil
	}
	num := func(s string, lo, hi int) (int, error) {
		v, err := strconv.Atoi(s)
		if err != nil || v < lo || v > hi {
			return 0, bad("%q is not a whole number %d..%d", s, lo, hi)
		}
		return v, nil
	}
	if a[0] == "interface" && len(a) >= 4 && a[2] == "qos" && a[3] == "pfc-watchdog" {
		// `nv set interface swp1 qos pfc-watchdog` or `... pfc-watchdog state enable|disable`.
		switch {
		case len(a) == 4:
			st.wdOn = true
		case len(a) == 6 && a[4] == "state":
			st.wdOn = a[5] == "enable" || a[5] == "enabled"
		default:
			return bad("want `nv set interface <if> qos pfc-watchdog [state enable|disable]`")
		}
		st.wdPos = p
		return nil
	}
	if a[0] != "qos" || len(a) < 2 {
		fi.note(p, "not a QoS setting")
		return nil
	}
	q := a[1:]
	switch {
	case q[0] == "roce":
		mode := "lossless"
		if len(q) >= 3 && q[1] == "mode" {
			mode = q[2]
		}
		return st.roceProfile(p, mode)
	case q[0] == "mapping" && len(q) >= 4:
		st.profile(p, q[1])
		switch q[2] {
		case "trust":
			if v := q[3]; v != "l3" && v != "both" && !strings.Contains(v, "dscp") {
				fi.note(p, "trust %s: fabricsim classifies RoCE by DSCP %d (data) and %d (CNP)", v, DSCPData, DSCPCNP)
			}
			return nil
		case "dscp":
			if len(q) < 6 || q[4] != "switch-priority" {
				return bad("want `dscp <list> switch-priority <0-7>`")
			}
			list, err := parseList(q[3], 0, 63)
			if err != nil {
				return bad("%v", err)
			}
			sp, err := num(q[5], 0, 7)
			if err != nil {
				return err
			}
			for _, d := range list {
				if d == DSCPData || d == DSCPCNP {
					st.dscp[d] = spPos{sp, p}
				} else {
					fi.note(p, "DSCP %d: fabricsim reads only DSCP %d (RoCE data) and %d (CNP)", d, DSCPData, DSCPCNP)
				}
			}
			return nil
		}
		fi.note(p, "mapping %s: not a setting fabricsim models", q[2])
		return nil
	case q[0] == "pfc" && len(q) >= 4:
		st.profile(p, q[1])
		v := q[3]
		switch q[2] {
		case "switch-priority":
			list, err := parseList(v, 0, 7)
			if err != nil {
				return bad("%v", err)
			}
			var s fabric.PrioritySet
			for _, x := range list {
				s |= 1 << x
			}
			st.pfcPrio, st.pfcPos = &s, p
		case "tx":
			on := v == "enable" || v == "on"
			st.tx, st.txPos = &on, p
		case "rx":
			if v != "enable" && v != "on" {
				fi.note(p, "rx %s: fabricsim's switches always honour PAUSE", v)
			}
		case "xoff-threshold":
			s, err := size(v)
			if err != nil {
				return err
			}
			st.xoff, st.xoffPos = &s, p
		case "xon-threshold":
			s, err := size(v)
			if err != nil {
				return err
			}
			st.xon, st.xonPos = &s, p
		case "port-buffer":
			s, err := size(v)
			if err != nil {
				return err
			}
			st.portBuf, st.portPos = &s, p
		case "cable-length":
			m, err := num(v, 1, 100000)
			if err != nil {
				return err
			}
			fi.note(p, "cable-length %d m: fabricsim takes each cable from its link's latency (5 ns/m: %v); port-buffer gives the headroom", m, units.Time(m)*5*units.Nanosecond)
		default:
			fi.note(p, "pfc %s: not a setting fabricsim models", q[2])
		}
		return nil
	case q[0] == "advance-buffer-config" && len(q) >= 5 && q[2] == "ingress-lossless-buffer" && q[3] == "shared-alpha":
		st.profile(p, q[1])
		v, ok := parseNVUEAlpha(q[4])
		if !ok {
			return bad("%q is not a shared-alpha (valid: alpha_1_128, alpha_1_64, ..., alpha_1_2, alpha_1, alpha_2, ..., alpha_64)", q[4])
		}
		st.alpha, st.alphaPos = &v, p
		return nil
	case q[0] == "congestion-control" && len(q) >= 6 && q[2] == "traffic-class":
		st.profile(p, q[1])
		list, err := parseList(q[3], 0, 7)
		if err != nil {
			return bad("%v", err)
		}
		for _, tc := range list {
			e := st.ecn[tc]
			if e == nil {
				e = &ecnClass{}
				st.ecn[tc] = e
			}
			e.pos = p
			switch v := q[5]; q[4] {
			case "ecn":
				on := v == "enable" || v == "enabled" || v == "on"
				e.enable, e.enP = &on, p
			case "min-threshold":
				s, err := size(v)
				if err != nil {
					return err
				}
				e.setMin(s, p)
			case "max-threshold":
				s, err := size(v)
				if err != nil {
					return err
				}
				e.setMax(s, p)
			case "probability":
				n, err := num(v, 1, 100)
				if err != nil {
					return err
				}
				e.prob, e.probP = &n, p
			case "red":
				if v == "enable" {
					fi.note(p, "red enable: fabricsim marks ECN-capable packets and never drops early")
				}
			default:
				fi.note(p, "congestion-control %s: not a setting fabricsim models", q[4])
			}
		}
		return nil
	case q[0] == "egress-scheduler" && len(q) >= 6 && q[2] == "traffic-class":
		st.profile(p, q[1])
		list, err := parseList(q[3], 0, 7)
		if err != nil {
			return bad("%v", err)
		}
		for _, tc := range list {
			switch q[4] {
			case "mode":
				if q[5] != "strict" && q[5] != "dwrr" {
					return bad("mode %q (valid: strict, dwrr)", q[5])
				}
				st.sched.mode[tc], st.sched.modeP, st.sched.touched = q[5], p, true
			case "bw-percent":
				n, err := num(q[5], 0, 100)
				if err != nil {
					return err
				}
				st.sched.share[tc], st.sched.shareP, st.sched.touched = n, p, true
			default:
				fi.note(p, "egress-scheduler %s: not a setting fabricsim models", q[4])
			}
		}
		return nil
	case q[0] == "egress-queue-mapping" && len(q) >= 6 && q[2] == "switch-priority" && q[4] == "traffic-class":
		if q[3] != q[5] {
			fi.note(p, "switch priority %s to traffic class %s: fabricsim queues each priority in its own class", q[3], q[5])
		}
		return nil
	case q[0] == "pfc-watchdog" && len(q) >= 3:
		switch q[1] {
		case "polling-interval":
			n, err := num(q[2], 100, 5000)
			if err != nil {
				return err
			}
			st.poll = int64(n)
		case "robustness":
			n, err := num(q[2], 1, 1000)
			if err != nil {
				return err
			}
			st.robust = int64(n)
		default:
			fi.note(p, "pfc-watchdog %s: not a setting fabricsim models", q[1])
		}
		st.wdPos = p
		return nil
	}
	fi.note(p, "not a setting fabricsim models")
	return nil
}

// profile notes a profile other than the fabric-wide default-global: fabricsim has one setting
// for every port.
func (st *nvueState) profile(p Pos, name string) {
	if name != "default-global" {
		st.fi.note(p, "profile %s read as the fabric-wide setting (fabricsim has one setting for every port)", name)
	}
}

// roceProfile applies `nv set qos roce [mode M]`: NVIDIA's RoCE defaults ([NVIDIA-RoCE]): DSCP
// 26 -> priority 3, DSCP 48 -> priority 6; ETS: traffic class 6 strict, 3 and 0 DWRR 50 % each;
// ECN on traffic classes 0 and 3 from 150,000 B to 1,500,000 B with probability 100; lossless
// modes PFC on priority 3.
func (st *nvueState) roceProfile(p Pos, mode string) error {
	switch mode {
	case "lossless", "lossless-single-ipool", "lossy":
	default:
		return errAt(p, "RoCE mode %q (valid: lossless, lossy, lossless-single-ipool)", mode)
	}
	st.dscp[DSCPData] = spPos{3, p}
	st.dscp[DSCPCNP] = spPos{6, p}
	for _, tc := range []int{0, 3} {
		on, prob := true, 100
		e := &ecnClass{enable: &on, prob: &prob, pos: p, enP: p, probP: p}
		e.setMin(150000, p)
		e.setMax(1500000, p)
		st.ecn[tc] = e
	}
	// Traffic class 0's 50 % is shared by six priorities; with a queue per priority the same
	// split is weight 6 for the data priority against 1 for each of the six.
	st.sched.mode, st.sched.share = map[int]string{}, map[int]int{}
	for sp := range 8 {
		switch sp {
		case 6:
			st.sched.mode[sp] = "strict"
		case 3:
			st.sched.mode[sp], st.sched.share[sp] = "dwrr", 6
		default:
			st.sched.mode[sp], st.sched.share[sp] = "dwrr", 1
		}
	}
	st.sched.modeP, st.sched.shareP, st.sched.touched = p, p, true
	st.fi.note(p, "RoCE profile: switch priorities 0-2, 4, 5 and 7 share traffic class 0 (50 %%) on the switch; fabricsim gives each its own queue: weight 1 each against 6 for priority 3")
	s := fabric.PrioritySet(1 << 3)
	on := mode != "lossy"
	st.pfcPrio, st.pfcPos = &s, p
	st.tx, st.txPos = &on, p
	return nil
}

func (st *nvueState) finish() error {
	fi := st.fi
	if d, ok := st.dscp[DSCPData]; ok {
		fi.set("data_priority", d.pos, func(c *fabric.Config) { c.DataPriority = uint8(d.sp) })
	}
	if d, ok := st.dscp[DSCPCNP]; ok {
		fi.set("cnp_priority", d.pos, func(c *fabric.Config) { c.CNPPriority = uint8(d.sp) })
	}
	// PFC.
	if st.pfcPrio != nil {
		s := *st.pfcPrio
		fi.set("pfc_priorities", st.pfcPos, func(c *fabric.Config) { c.RoCE.Lossless = s })
		on := st.tx == nil || *st.tx
		pos := st.pfcPos
		if st.tx != nil {
			pos = st.txPos
		}
		fi.set("pfc", pos, func(c *fabric.Config) { c.RoCE.PFC = on && s != 0 })
	} else if st.tx != nil {
		on := *st.tx
		fi.set("pfc", st.txPos, func(c *fabric.Config) { c.RoCE.PFC = on })
	}
	switch {
	case st.xoff != nil:
		xoff := *st.xoff
		fi.set("pfc_threshold", st.xoffPos, func(c *fabric.Config) { c.RoCE.PFCThreshold = fabric.PFCStatic })
		fi.set("pfc_xoff", st.xoffPos, func(c *fabric.Config) { c.RoCE.XOFF = xoff })
		if st.alpha != nil {
			fi.note(st.alphaPos, "shared-alpha ignored: xoff-threshold sets a static XOFF")
		}
	case st.alpha != nil:
		a := *st.alpha
		fi.set("pfc_threshold", st.alphaPos, func(c *fabric.Config) { c.RoCE.PFCThreshold = fabric.PFCDynamic })
		fi.set("pfc_alpha", st.alphaPos, func(c *fabric.Config) { c.RoCE.PFCAlpha = a })
	}
	if st.xon != nil {
		xon := *st.xon
		if st.xoff == nil {
			fi.note(st.xonPos, "xon-threshold without xoff-threshold: fabricsim's XON applies with a static XOFF")
		}
		fi.set("pfc_xon", st.xonPos, func(c *fabric.Config) { c.RoCE.XON = xon })
	}
	if st.portBuf != nil {
		h := *st.portBuf
		fi.set("pfc_headroom", st.portPos, func(c *fabric.Config) { c.RoCE.Headroom = h })
	}
	// ECN on the data priority's traffic class.
	tc := int(fi.cfg.DataPriority)
	if e, ok := st.ecn[tc]; ok {
		if err := applyECN(fi, e, tc); err != nil {
			return err
		}
	}
	var others []int
	for k := range st.ecn {
		if k != tc {
			others = append(others, k)
		}
	}
	sort.Ints(others)
	for _, k := range others {
		fi.note(st.ecn[k].pos, "ECN on traffic class %d: fabricsim marks by one setting, the data priority's (%d)", k, tc)
	}
	st.sched.apply(fi)
	if st.wdOn {
		d := units.Time(st.poll*st.robust) * units.Millisecond
		fi.set("pfc_watchdog", st.wdPos, func(c *fabric.Config) { c.RoCE.Watchdog = d })
	}
	return nil
}

// applyECN sets ecn and its thresholds from one traffic class's settings.
func applyECN(fi *fileImport, e *ecnClass, tc int) error {
	if e.enable != nil {
		on := *e.enable
		fi.set("ecn", e.enP, func(c *fabric.Config) { c.RoCE.ECN = on })
	}
	switch {
	case e.min != nil && e.max != nil:
		kmin, kmax := *e.min, *e.max
		fi.set("ecn_kmin", e.minP, func(c *fabric.Config) { c.RoCE.Kmin = kmin })
		fi.set("ecn_kmax", e.maxP, func(c *fabric.Config) { c.RoCE.Kmax = kmax })
	case e.min != nil:
		return errAt(e.minP, "traffic class %d has a minimum threshold but no maximum: give both", tc)
	case e.max != nil:
		return errAt(e.maxP, "traffic class %d has a maximum threshold but no minimum: give both", tc)
	}
	if e.prob != nil {
		pm := float64(*e.prob) / 100
		fi.set("ecn_pmax", e.probP, func(c *fabric.Config) { c.RoCE.Pmax = pm })
	}
	return nil
}
