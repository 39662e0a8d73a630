package roceconf

import (
	"math"
	"path"
	"strconv"
	"strings"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/units"
)

// ConnectX: the host side as a shell script. `mlnx_qos` (MLNX_OFED) sets trust, PFC and the
// DSCP-to-priority map; DCQCN is enabled per priority under /sys/class/net/IF/ecn/roce_np and
// roce_rp (MLNX_OFED), and its parameters are the mlx5 debugfs cc_params files of the upstream
// kernel ([ConnectX-DCQCN]: drivers/infiniband/hw/mlx5/cong.c; every field a u32,
// include/linux/mlx5/mlx5_ifc.h, [mlx5-ifc]). Units ([ConnectX-DCQCN]): rates in Mb/s, times in
// microseconds, rp_byte_reset in bytes, rp_min_dec_fac in percent, rp_dce_tcp_g and
// rp_initial_alpha_value in 1/1024 (g = (1024 - rp_dce_tcp_g)/1024, alpha = value/1024), rp_gd
// the log2 divisor of the 1/1024 alpha (11: a cut by alpha/2, fabricsim's). The import also
// takes the MLNX_OFED sysfs names (rpg_ai_rate, dce_tcp_g, min_time_between_cnps, ...) and
// `grep -H . .../cc_params/*` output (path:value).

// cxKnob is one cc_params file: its name, what fabricsim key it carries, and the conversions.
type cxKnob struct {
	name string
	key  string // fabric key; "" = no fabricsim setting (its default value is written)
	// get reads the value from the configuration (export); set applies a value read (import),
	// returning an error message for a value fabricsim cannot take.
	get func(x *exporter, c *fabric.Config) int64
	set func(c *fabric.Config, v int64) string
	// def is the value the export writes for a knob without a fabricsim key, and the value the
	// import accepts without a note.
	def int64
}

func usKnob(name, key string, field func(c *fabric.Config) *units.Time) cxKnob {
	return cxKnob{name: name, key: key,
		get: func(x *exporter, c *fabric.Config) int64 {
			return x.whole(key, *field(c), units.Microsecond, "us", 0, math.MaxUint32, "ConnectX "+name)
		},
		set: func(c *fabric.Config, v int64) string { *field(c) = units.Time(v) * units.Microsecond; return "" },
	}
}

func mbpsKnob(name, key string, field func(c *fabric.Config) *units.Rate) cxKnob {
	return cxKnob{name: name, key: key,
		get: func(x *exporter, c *fabric.Config) int64 { return x.wholeMbps(key, *field(c), "ConnectX "+name) },
		set: func(c *fabric.Config, v int64) string { *field(c) = units.Rate(v) * units.Mbps; return "" },
	}
}

// cxKnobs are the cc_params the export writes, in the kernel's order (cong.c).
var cxKnobs = []cxKnob{
	{name: "rp_clamp_tgt_rate", key: "dcqcn_clamp_target",
		get: func(_ *exporter, c *fabric.Config) int64 { return b2i(c.RoCE.DCQCNParams.ClampTarget) },
		set: func(c *fabric.Config, v int64) string {
			if v > 1 {
				return "want 0 or 1"
			}
			c.RoCE.DCQCNParams.ClampTarget = v == 1
			return ""
		}},
	{name: "rp_clamp_tgt_rate_ati", def: 1},
	usKnob("rp_time_reset", "dcqcn_increase_timer", func(c *fabric.Config) *units.Time { return &c.RoCE.DCQCNParams.IncreaseTimer }),
	{name: "rp_byte_reset", key: "dcqcn_byte_counter",
		get: func(x *exporter, c *fabric.Config) int64 {
			v := int64(c.RoCE.DCQCNParams.ByteCounter)
			if v > math.MaxUint32 {
				x.fail("dcqcn_byte_counter", "%v above ConnectX rp_byte_reset's %d B", c.RoCE.DCQCNParams.ByteCounter, uint32(math.MaxUint32))
			}
			return v
		},
		set: func(c *fabric.Config, v int64) string { c.RoCE.DCQCNParams.ByteCounter = units.Size(v); return "" }},
	{name: "rp_threshold", key: "dcqcn_f",
		get: func(_ *exporter, c *fabric.Config) int64 { return int64(c.RoCE.DCQCNParams.F) },
		set: func(c *fabric.Config, v int64) string { c.RoCE.DCQCNParams.F = int(v); return "" }},
	mbpsKnob("rp_ai_rate", "dcqcn_rate_ai", func(c *fabric.Config) *units.Rate { return &c.RoCE.DCQCNParams.AI }),
	{name: "rp_max_rate", def: 0},
	mbpsKnob("rp_hai_rate", "dcqcn_rate_hai", func(c *fabric.Config) *units.Rate { return &c.RoCE.DCQCNParams.HAI }),
	{name: "rp_min_dec_fac", key: "dcqcn_min_dec_factor",
		get: func(x *exporter, c *fabric.Config) int64 {
			return int64(x.percent("dcqcn_min_dec_factor", c.RoCE.DCQCNParams.MinDecFactor, 0, 99, "ConnectX rp_min_dec_fac"))
		},
		set: func(c *fabric.Config, v int64) string {
			if v > 99 {
				return "fabricsim's dcqcn_min_dec_factor is below 1 (0..99 %)"
			}
			c.RoCE.DCQCNParams.MinDecFactor = float64(v) / 100
			return ""
		}},
	mbpsKnob("rp_min_rate", "dcqcn_min_rate", func(c *fabric.Config) *units.Rate { return &c.RoCE.DCQCNParams.MinRate }),
	{name: "rp_rate_to_set_on_first_cnp", def: 0},
	{name: "rp_dce_tcp_g", key: "dcqcn_g",
		get: func(x *exporter, c *fabric.Config) int64 {
			g := c.RoCE.DCQCNParams.G
			v := int64(math.Round(1024 - g*1024))
			if v < 0 || v > 1023 {
				x.fail("dcqcn_g", "%g is (1024 - %d)/1024, outside ConnectX rp_dce_tcp_g's 0..1023", g, v)
			} else if math.Abs(1024-g*1024-float64(v)) > 1e-9 {
				x.round("dcqcn_g", "%g written as rp_dce_tcp_g %d (g = %d/1024)", g, v, 1024-v)
			}
			return v
		},
		set: func(c *fabric.Config, v int64) string {
			if v > 1023 {
				return "g = (1024 - rp_dce_tcp_g)/1024 must be positive: want 0..1023"
			}
			c.RoCE.DCQCNParams.G = float64(1024-v) / 1024
			return ""
		}},
	usKnob("rp_dce_tcp_rtt", "dcqcn_alpha_timer", func(c *fabric.Config) *units.Time { return &c.RoCE.DCQCNParams.AlphaTimer }),
	usKnob("rp_rate_reduce_monitor_period", "dcqcn_decrease_period", func(c *fabric.Config) *units.Time { return &c.RoCE.DCQCNParams.DecreasePeriod }),
	{name: "rp_initial_alpha_value", key: "dcqcn_alpha_init",
		get: func(x *exporter, c *fabric.Config) int64 {
			a := c.RoCE.DCQCNParams.AlphaInit
			v := int64(math.Round(a * 1024))
			if math.Abs(a*1024-float64(v)) > 1e-9 {
				x.round("dcqcn_alpha_init", "%g written as rp_initial_alpha_value %d (alpha = %d/1024)", a, v, v)
			}
			return v
		},
		set: func(c *fabric.Config, v int64) string {
			if v > 1024 {
				return "alpha = rp_initial_alpha_value/1024 is at most 1: want 0..1024"
			}
			c.RoCE.DCQCNParams.AlphaInit = float64(v) / 1024
			return ""
		}},
	{name: "rp_gd", def: 11},
	usKnob("np_min_time_between_cnps", "dcqcn_cnp_interval", func(c *fabric.Config) *units.Time { return &c.RoCE.DCQCNParams.CNPInterval }),
	{name: "np_cnp_dscp", def: DSCPCNP},
	{name: "np_cnp_prio", key: "cnp_priority",
		get: func(_ *exporter, c *fabric.Config) int64 { return int64(c.CNPPriority) },
		set: func(c *fabric.Config, v int64) string {
			if v > 7 {
				return "want a priority 0..7"
			}
			c.CNPPriority = uint8(v)
			return ""
		}},
}

// cxWhy says why a knob without a fabricsim key is noted when it differs from its default.
var cxWhy = map[string]string{
	"rp_clamp_tgt_rate_ati":       "clamp_tgt_rate_after_time_inc is modelled by dcqcn_model: connectx only (dcqcn_clamp_after_timer)",
	"rp_max_rate":                 "fabricsim's senders start and recover to line rate (rp_max_rate 0)",
	"rp_rate_to_set_on_first_cnp": "the paper model's first cut is alpha/2 like any other (rp_rate_to_set_on_first_cnp 0); dcqcn_model: connectx takes dcqcn_rate_on_first_cnp as a fraction of the rate",
	"rp_gd":                       "fabricsim cuts by alpha/2 (rp_gd 11 with alpha in 1/1024)",
	"np_cnp_dscp":                 "fabricsim classifies by priority; the CNP priority is np_cnp_prio",
	"np_cnp_prio_mode":            "fabricsim sends CNPs on np_cnp_prio",
}

// cxAlias maps MLNX_OFED's sysfs names (/sys/class/net/IF/ecn/roce_rp/..., roce_np/...) to the
// debugfs names.
var cxAlias = map[string]string{
	"clamp_tgt_rate": "rp_clamp_tgt_rate", "clamp_tgt_rate_after_time_inc": "rp_clamp_tgt_rate_ati",
	"rpg_time_reset": "rp_time_reset", "rpg_byte_reset": "rp_byte_reset", "rpg_threshold": "rp_threshold",
	"rpg_ai_rate": "rp_ai_rate", "rpg_max_rate": "rp_max_rate", "rpg_hai_rate": "rp_hai_rate",
	"rpg_min_dec_fac": "rp_min_dec_fac", "rpg_min_rate": "rp_min_rate",
	"rate_to_set_on_first_cnp": "rp_rate_to_set_on_first_cnp", "dce_tcp_g": "rp_dce_tcp_g",
	"dce_tcp_rtt": "rp_dce_tcp_rtt", "rate_reduce_monitor_period": "rp_rate_reduce_monitor_period",
	"initial_alpha_value": "rp_initial_alpha_value", "rpg_gd": "rp_gd",
	"min_time_between_cnps": "np_min_time_between_cnps", "cnp_dscp": "np_cnp_dscp",
	"cnp_802p_prio": "np_cnp_prio", "cnp_prio_mode": "np_cnp_prio_mode",
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// ncclQPs is NCCL's environment variable for QPs per connection ([NCCL]).
const ncclQPs = "NCCL_IB_QPS_PER_CONNECTION"

func exportConnectX(x *exporter, c *fabric.Config, t Target) {
	r := &c.RoCE
	x.line("#!/bin/sh")
	header(x, "#", c, t)
	ports := t.ports(ConnectX)
	if len(ports) > 1 {
		x.round("", "the script configures one interface, %s (IF overrides it); run it once per interface", ports[0])
	}
	x.line("# Run as root on every host. IF is the RoCE netdev, PCI its mlx5 device (debugfs mounted).")
	x.line("set -e")
	x.line("IF=${IF:-%s}", ports[0])
	x.line("PCI=${PCI:-0000:08:00.0}")
	x.line("CC=/sys/kernel/debug/mlx5/$PCI/cc_params")
	x.line(`ip link set dev "$IF" mtu %d`, r.NetdevMTU)
	pfc := make([]string, 8)
	for p := range 8 {
		pfc[p] = strconv.FormatInt(b2i(r.PFC && r.Lossless.Has(uint8(p))), 10)
	}
	x.line(`mlnx_qos -i "$IF" --trust dscp`)
	x.line(`mlnx_qos -i "$IF" --pfc %s`, strings.Join(pfc, ","))
	x.line(`mlnx_qos -i "$IF" --dscp2prio set,%d,%d`, DSCPData, c.DataPriority)
	on := b2i(r.DCQCN)
	x.line("echo %d > /sys/class/net/$IF/ecn/roce_np/enable/%d", on, c.DataPriority)
	x.line("echo %d > /sys/class/net/$IF/ecn/roce_rp/enable/%d", on, c.DataPriority)
	if r.DCQCN {
		for _, k := range cxKnobs {
			v := k.def
			if k.get != nil {
				v = k.get(x, c)
			}
			x.line("echo %d > $CC/%s", v, k.name)
		}
	} else {
		// Only the CNP priority matters without DCQCN (none are sent then).
		x.line("echo %d > $CC/np_cnp_prio", c.CNPPriority)
	}
	x.line("# NCCL: QPs per connection (set in the training job's environment)")
	x.line("export %s=%d", ncclQPs, c.QPsPerConn)
}

// cxState collects a host file's settings.
type cxState struct {
	fi       *fileImport
	rp, np   *bool
	rpP, npP Pos
}

func importConnectX(fi *fileImport, data []byte) error {
	st := &cxState{fi: fi}
	for i, raw := range strings.Split(string(data), "\n") {
		l := strings.TrimSpace(raw)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		p := Pos{File: fi.file, Line: i + 1, Key: l}
		if err := st.line(p, l); err != nil {
			return err
		}
	}
	switch {
	case st.rp != nil && st.np != nil:
		on, pos := *st.rp && *st.np, st.rpP
		if *st.rp != *st.np {
			fi.note(st.npP, "DCQCN's notification and reaction points differ: fabricsim runs both or neither (off)")
		}
		fi.set("dcqcn", pos, func(c *fabric.Config) { c.RoCE.DCQCN = on })
	case st.rp != nil || st.np != nil:
		p, v := st.rpP, st.rp
		if v == nil {
			p, v = st.npP, st.np
		}
		on := *v
		fi.set("dcqcn", p, func(c *fabric.Config) { c.RoCE.DCQCN = on })
	}
	return nil
}

func (st *cxState) line(p Pos, l string) error {
	fi := st.fi
	w := strings.Fields(l)
	bad := func(format string, args ...any) error { return errAt(p, format, args...) }
	switch {
	case w[0] == "set" || strings.HasPrefix(l, "#!") || isAssignment(w[0]) && len(w) == 1:
		return nil
	case w[0] == "mlnx_qos":
		return st.mlnxQoS(p, w[1:])
	case w[0] == "ip" && len(w) >= 6 && w[1] == "link" && w[2] == "set":
		for i := 3; i+1 < len(w); i++ {
			if w[i] == "mtu" {
				n, err := strconv.Atoi(w[i+1])
				if err != nil || n < 352 || n > 65535 {
					return bad("mtu %q: want a netdev MTU 352..65535", w[i+1])
				}
				fi.set("netdev_mtu", p, func(c *fabric.Config) { c.RoCE.NetdevMTU = n })
				return nil
			}
		}
		fi.note(p, "not a setting fabricsim models")
		return nil
	case w[0] == "export" && len(w) == 2:
		name, v, _ := strings.Cut(w[1], "=")
		if name != ncclQPs {
			fi.note(p, "not a setting fabricsim models")
			return nil
		}
		n, err := strconv.Atoi(strings.Trim(v, `"'`))
		if err != nil || n < 1 || n > 1024 {
			return bad("%s=%s: want 1..1024", name, v)
		}
		fi.set("qps_per_conn", p, func(c *fabric.Config) { c.QPsPerConn = n })
		return nil
	}
	// A knob: `echo V > PATH` or `PATH:V` (grep -H output).
	var file, val string
	switch {
	case w[0] == "echo" && len(w) == 4 && w[2] == ">":
		val, file = strings.Trim(w[1], `"'`), strings.Trim(w[3], `"'`)
	case len(w) == 1 && strings.Contains(l, "/") && strings.Contains(l, ":"):
		i := strings.LastIndex(l, ":")
		file, val = l[:i], l[i+1:]
	default:
		fi.note(p, "not a setting fabricsim models")
		return nil
	}
	dir, name := path.Split(file)
	v, err := strconv.ParseInt(strings.TrimSpace(val), 0, 64)
	if err != nil || v < 0 || v > math.MaxUint32 {
		return errAt(Pos{File: p.File, Line: p.Line, Key: name}, "%q is not a value 0..%d", val, uint32(math.MaxUint32))
	}
	kp := Pos{File: p.File, Line: p.Line, Key: name}
	if strings.HasSuffix(dir, "/enable/") {
		prio, err := strconv.Atoi(name)
		if err != nil || prio > 7 {
			return errAt(kp, "enable/%s: want a priority 0..7", name)
		}
		on := v != 0
		if prio != int(st.fi.cfg.DataPriority) {
			fi.note(kp, "DCQCN on priority %d: fabricsim's DCQCN runs on the data priority (%d)", prio, st.fi.cfg.DataPriority)
			return nil
		}
		switch {
		case strings.HasSuffix(dir, "roce_np/enable/"):
			st.np, st.npP = &on, kp
		case strings.HasSuffix(dir, "roce_rp/enable/"):
			st.rp, st.rpP = &on, kp
		default:
			fi.note(kp, "not a setting fabricsim models")
		}
		return nil
	}
	if a, ok := cxAlias[name]; ok {
		name = a
	}
	for _, k := range cxKnobs {
		if k.name != name {
			continue
		}
		if k.key == "" {
			if v != k.def {
				fi.note(kp, "%d: %s", v, cxWhy[name])
			}
			return nil
		}
		var msg string
		fi.set(k.key, kp, func(c *fabric.Config) { msg = k.set(c, v) })
		if msg != "" {
			return errAt(kp, "%d: %s", v, msg)
		}
		return nil
	}
	if why, ok := cxWhy[name]; ok {
		fi.note(kp, "%s", why)
		return nil
	}
	fi.note(kp, "not a DCQCN parameter fabricsim models")
	return nil
}

// cxKnobLine reports whether l writes a DCQCN parameter by its name (`echo V > $CC/rp_ai_rate`).
func cxKnobLine(l string) bool {
	w := strings.Fields(l)
	if len(w) != 4 || w[0] != "echo" || w[2] != ">" {
		return false
	}
	name := path.Base(strings.Trim(w[3], `"'`))
	if _, ok := cxAlias[name]; ok {
		return true
	}
	for _, k := range cxKnobs {
		if k.name == name {
			return true
		}
	}
	return false
}

func isAssignment(s string) bool {
	name, _, ok := strings.Cut(s, "=")
	return ok && name != "" && !strings.ContainsAny(name, "/$")
}

// mlnxQoS reads an mlnx_qos command line: --trust, --pfc/-f, --dscp2prio set,D,P.
func (st *cxState) mlnxQoS(p Pos, args []string) error {
	fi := st.fi
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(a, "=")
		next := func() (string, error) {
			if hasVal {
				return val, nil
			}
			if i+1 >= len(args) {
				return "", errAt(p, "%s has no value", name)
			}
			i++
			return args[i], nil
		}
		switch name {
		case "-i", "--interface":
			if _, err := next(); err != nil {
				return err
			}
		case "--trust":
			v, err := next()
			if err != nil {
				return err
			}
			if v != "dscp" {
				fi.note(p, "trust %s: fabricsim classifies RoCE by DSCP %d (data) and %d (CNP)", v, DSCPData, DSCPCNP)
			}
		case "-f", "--pfc":
			v, err := next()
			if err != nil {
				return err
			}
			bits := strings.Split(v, ",")
			if len(bits) != 8 {
				return errAt(p, "--pfc %s: want 8 comma-separated 0/1 flags, one per priority", v)
			}
			var s fabric.PrioritySet
			for prio, b := range bits {
				switch b {
				case "1":
					s |= 1 << prio
				case "0":
				default:
					return errAt(p, "--pfc %s: want 8 comma-separated 0/1 flags, one per priority", v)
				}
			}
			fi.set("pfc", p, func(c *fabric.Config) { c.RoCE.PFC = s != 0 })
			if s != 0 {
				fi.set("pfc_priorities", p, func(c *fabric.Config) { c.RoCE.Lossless = s })
			}
		case "--dscp2prio":
			v, err := next()
			if err != nil {
				return err
			}
			f := strings.Split(v, ",")
			if len(f) != 3 || f[0] != "set" && f[0] != "del" {
				return errAt(p, "--dscp2prio %s: want set,DSCP,PRIORITY", v)
			}
			d, err1 := strconv.Atoi(f[1])
			prio, err2 := strconv.Atoi(f[2])
			if err1 != nil || err2 != nil || d < 0 || d > 63 || prio < 0 || prio > 7 {
				return errAt(p, "--dscp2prio %s: want set,DSCP 0..63,PRIORITY 0..7", v)
			}
			if f[0] == "set" && d == DSCPData {
				fi.set("data_priority", p, func(c *fabric.Config) { c.DataPriority = uint8(prio) })
			} else {
				fi.note(p, "--dscp2prio %s: fabricsim reads only DSCP %d (RoCE data)", v, DSCPData)
			}
		default:
			if strings.HasPrefix(name, "-") {
				if !hasVal && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
					i++
				}
				fi.note(p, "mlnx_qos %s: not a setting fabricsim models", name)
				continue
			}
			return errAt(p, "mlnx_qos: %q is not an option", a)
		}
	}
	return nil
}
