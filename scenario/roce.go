package scenario

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"reflect"
	"strconv"
	"strings"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/transport/cc/dcqcn"
	"github.com/fabricsim/fabricsim/units"
)

// RoCE holds the keys of `fabric: {kind: roce, ...}` (framing, QPs, classes, PFC, ECN, DCQCN,
// loss recovery). docs/scenario.md and docs/roce.md document each one with its unit and default.
type RoCE struct {
	// Framing.
	NetdevMTU int  `yaml:"netdev_mtu"`
	IPv6      bool `yaml:"ipv6"`
	VLAN      bool `yaml:"vlan"`
	// Transport.
	Transport       string     `yaml:"transport"`
	IRNBDPCap       units.Size `yaml:"irn_bdp_cap"`
	IRNRTOLow       units.Time `yaml:"irn_rto_low"`
	IRNRTOHigh      units.Time `yaml:"irn_rto_high"`
	IRNLowThreshold int        `yaml:"irn_low_threshold"`
	QPsPerConn      int        `yaml:"qps_per_conn"`
	QPAwareHash     bool       `yaml:"qp_aware_hash"`
	RandomLoss      float64    `yaml:"random_loss"`
	// Traffic classes and scheduling.
	DataPriority     int   `yaml:"data_priority"`
	CNPPriority      int   `yaml:"cnp_priority"`
	StrictPriorities []int `yaml:"strict_priorities"`
	Weights          []int `yaml:"weights"`
	// PFC.
	PFC                bool       `yaml:"pfc"`
	PFCPriorities      []int      `yaml:"pfc_priorities"`
	PFCThreshold       string     `yaml:"pfc_threshold"`
	PFCAlpha           float64    `yaml:"pfc_alpha"`
	PFCXOFF            units.Size `yaml:"pfc_xoff"`
	PFCXON             units.Size `yaml:"pfc_xon"`
	PFCXONOffset       units.Size `yaml:"pfc_xon_offset"`
	PFCHeadroom        units.Size `yaml:"pfc_headroom"`
	PFCPauseQuanta     int        `yaml:"pfc_pause_quanta"`
	PFCRefresh         units.Time `yaml:"pfc_refresh"`
	PFCWatchdog        units.Time `yaml:"pfc_watchdog"`
	PFCWatchdogRestore units.Time `yaml:"pfc_watchdog_restore"`
	PFCStormHost       int        `yaml:"pfc_storm_host"`
	PFCStormStart      units.Time `yaml:"pfc_storm_start"`
	PFCStormDuration   units.Time `yaml:"pfc_storm_duration"`
	// ECN.
	ECN     bool       `yaml:"ecn"`
	ECNKmin units.Size `yaml:"ecn_kmin"`
	ECNKmax units.Size `yaml:"ecn_kmax"`
	ECNPmax float64    `yaml:"ecn_pmax"`
	// DCQCN.
	DCQCN               bool       `yaml:"dcqcn"`
	DCQCNPreset         string     `yaml:"dcqcn_preset"`
	DCQCNG              float64    `yaml:"dcqcn_g"`
	DCQCNAlphaInit      float64    `yaml:"dcqcn_alpha_init"`
	DCQCNAlphaTimer     units.Time `yaml:"dcqcn_alpha_timer"`
	DCQCNIncreaseTimer  units.Time `yaml:"dcqcn_increase_timer"`
	DCQCNByteCounter    units.Size `yaml:"dcqcn_byte_counter"`
	DCQCNF              int        `yaml:"dcqcn_f"`
	DCQCNRateAI         units.Rate `yaml:"dcqcn_rate_ai"`
	DCQCNRateHAI        units.Rate `yaml:"dcqcn_rate_hai"`
	DCQCNCNPInterval    units.Time `yaml:"dcqcn_cnp_interval"`
	DCQCNDecreasePeriod units.Time `yaml:"dcqcn_decrease_period"`
	DCQCNMinRate        units.Rate `yaml:"dcqcn_min_rate"`
	DCQCNMinDecFactor   float64    `yaml:"dcqcn_min_dec_factor"`
	DCQCNClampTarget    bool       `yaml:"dcqcn_clamp_target"`
	// HPCCConfig reads HPCC ns-3's config.txt (docs/roce.md maps its names); keys written in
	// the scenario win over it.
	HPCCConfig string `yaml:"hpcc_config"`

	// ecnMap holds per-rate ECN thresholds from an HPCC config's KMIN_MAP/KMAX_MAP/PMAX_MAP.
	ecnMap []fabric.ECNThreshold
}

// roceKeys are the fabric keys RoCE owns (for rejecting them under other kinds).
func roceKeys() []string {
	var out []string
	t := reflect.TypeOf(RoCE{})
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); name != "" {
			out = append(out, name)
		}
	}
	return out
}

// defaultsRoCE fills RoCE defaults for kind roce (fabric.DefaultRoCE; sources in docs/references.md).
func (s *Scenario) defaultsRoCE() {
	f := &s.Fabric
	r := &f.RoCE
	d := fabric.DefaultRoCE()
	def := func(key string, set func()) {
		if !s.Has("fabric." + key) {
			set()
		}
	}
	def("vlan", func() { r.VLAN = true })
	def("netdev_mtu", func() { r.NetdevMTU = 4200 })
	def("mtu", func() { f.MTU = units.Size(fabric.RoCEMTU(r.NetdevMTU)) })
	data, ack, _ := fabric.RoCEFraming(r.IPv6, r.VLAN)
	def("header_bytes", func() { f.HeaderBytes = data })
	def("ack_bytes", func() { f.AckBytes = ack })
	def("transport", func() { r.Transport = d.Transport })
	def("irn_rto_low", func() { r.IRNRTOLow = d.IRNRTOLow })
	def("irn_rto_high", func() { r.IRNRTOHigh = d.IRNRTOHigh })
	def("irn_low_threshold", func() { r.IRNLowThreshold = d.IRNLowThreshold })
	def("qps_per_conn", func() { r.QPsPerConn = 1 })
	def("data_priority", func() { r.DataPriority = int(d.DataPriority) })
	def("cnp_priority", func() { r.CNPPriority = int(d.CNPPriority) })
	def("strict_priorities", func() { r.StrictPriorities = bitsList(d.RoCE.Strict) })
	def("weights", func() { r.Weights = append([]int(nil), d.RoCE.Weights[:]...) })
	c := &d.RoCE
	def("pfc", func() { r.PFC = c.PFC })
	def("pfc_priorities", func() { r.PFCPriorities = bitsList(c.Lossless) })
	def("pfc_threshold", func() { r.PFCThreshold = "dynamic" })
	def("pfc_alpha", func() { r.PFCAlpha = c.PFCAlpha })
	def("pfc_xoff", func() { r.PFCXOFF = c.XOFF })
	def("pfc_xon", func() { r.PFCXON = c.XON })
	def("pfc_xon_offset", func() { r.PFCXONOffset = units.Size(2 * (int(f.MTU) + f.HeaderBytes)) })
	def("pfc_pause_quanta", func() { r.PFCPauseQuanta = int(c.PauseQuanta) })
	def("pfc_watchdog_restore", func() { r.PFCWatchdogRestore = 200 * units.Millisecond })
	def("pfc_storm_host", func() { r.PFCStormHost = -1 })
	def("ecn", func() { r.ECN = c.ECN })
	def("ecn_pmax", func() { r.ECNPmax = c.Pmax })
	def("dcqcn", func() { r.DCQCN = c.DCQCN })
	def("dcqcn_preset", func() { r.DCQCNPreset = "connectx" })
	p, err := dcqcn.Preset(r.DCQCNPreset)
	if err != nil {
		return // validateRoCE reports the preset
	}
	def("dcqcn_g", func() { r.DCQCNG = p.G })
	def("dcqcn_alpha_init", func() { r.DCQCNAlphaInit = p.AlphaInit })
	def("dcqcn_alpha_timer", func() { r.DCQCNAlphaTimer = p.AlphaTimer })
	def("dcqcn_increase_timer", func() { r.DCQCNIncreaseTimer = p.IncreaseTimer })
	def("dcqcn_byte_counter", func() { r.DCQCNByteCounter = units.Size(p.ByteCounter) })
	def("dcqcn_f", func() { r.DCQCNF = p.F })
	def("dcqcn_rate_ai", func() { r.DCQCNRateAI = p.AI })
	def("dcqcn_rate_hai", func() { r.DCQCNRateHAI = p.HAI })
	def("dcqcn_cnp_interval", func() { r.DCQCNCNPInterval = p.CNPInterval })
	def("dcqcn_decrease_period", func() { r.DCQCNDecreasePeriod = p.DecreasePeriod })
	def("dcqcn_min_rate", func() { r.DCQCNMinRate = p.MinRate })
	def("dcqcn_min_dec_factor", func() { r.DCQCNMinDecFactor = p.MinDecFactor })
	def("dcqcn_clamp_target", func() { r.DCQCNClampTarget = p.ClampTarget })
}

func bitsList(m uint8) []int {
	var out []int
	for i := 0; i < 8; i++ {
		if m&(1<<i) != 0 {
			out = append(out, i)
		}
	}
	return out
}

// validateRoCE checks RoCE parameters; called for kind roce.
func (s *Scenario) validateRoCE() error {
	f := &s.Fabric
	r := &f.RoCE
	if r.HPCCConfig != "" {
		if err := s.applyHPCCConfig(); err != nil {
			return err
		}
	}
	p := func(k string) string { return "fabric." + k }
	if _, err := dcqcn.Preset(r.DCQCNPreset); err != nil {
		return s.errf(p("dcqcn_preset"), "%q is not a DCQCN preset (valid: paper, connectx)", r.DCQCNPreset)
	}
	if fabric.RoCEMTU(r.NetdevMTU) == 0 {
		return s.errf(p("netdev_mtu"), "%d B leaves no RoCE MTU (the largest IB MTU <= netdev_mtu - 96 must be at least 256: netdev_mtu >= 352)", r.NetdevMTU)
	}
	if s.Has(p("mtu")) && s.Has(p("netdev_mtu")) && int(f.MTU) > fabric.RoCEMTU(r.NetdevMTU) {
		return s.errf(p("mtu"), "%d B does not fit netdev_mtu %d (RoCE MTU = largest IB MTU <= netdev_mtu - 96 = %d)", f.MTU, r.NetdevMTU, fabric.RoCEMTU(r.NetdevMTU))
	}
	if r.Transport != "gbn" && r.Transport != "irn" {
		return s.errf(p("transport"), "%q is not a loss recovery (valid: gbn = go-back-N, irn = selective repeat)", r.Transport)
	}
	if r.IRNRTOLow <= 0 || r.IRNRTOHigh <= 0 {
		return s.errf(p("irn_rto_low"), "IRN timeouts must be positive (defaults 100us and 320us)")
	}
	if r.IRNRTOLow > r.IRNRTOHigh {
		return s.errf(p("irn_rto_low"), "%v above irn_rto_high %v", r.IRNRTOLow, r.IRNRTOHigh)
	}
	if r.IRNBDPCap < 0 || r.IRNLowThreshold < 0 {
		return s.errf(p("irn_bdp_cap"), "must not be negative (0 = one bandwidth-delay product of the topology)")
	}
	if r.QPsPerConn < 1 || r.QPsPerConn > 1024 {
		return s.errf(p("qps_per_conn"), "%d outside 1..1024", r.QPsPerConn)
	}
	if !(r.RandomLoss >= 0 && r.RandomLoss < 1) {
		return s.errf(p("random_loss"), "%g outside [0,1) (a fraction of frames per link)", r.RandomLoss)
	}
	for _, c := range []struct {
		key string
		v   int
	}{{"data_priority", r.DataPriority}, {"cnp_priority", r.CNPPriority}} {
		if c.v < 0 || c.v > 7 {
			return s.errf(p(c.key), "priority %d outside 0..7", c.v)
		}
	}
	for key, list := range map[string][]int{"strict_priorities": r.StrictPriorities, "pfc_priorities": r.PFCPriorities} {
		for i, v := range list {
			if v < 0 || v > 7 {
				return s.errf(indexPath(p(key), i), "priority %d outside 0..7", v)
			}
		}
	}
	if len(r.Weights) != 8 {
		return s.errf(p("weights"), "want 8 weights (one per priority), got %d", len(r.Weights))
	}
	for i, w := range r.Weights {
		if w < 1 || w > 1000 {
			return s.errf(indexPath(p("weights"), i), "weight %d outside 1..1000", w)
		}
	}
	if r.PFC {
		if len(r.PFCPriorities) == 0 {
			return s.errf(p("pfc_priorities"), "PFC needs at least one lossless priority (RoCE uses 3)")
		}
		switch r.PFCThreshold {
		case "static":
			if r.PFCXOFF <= 0 {
				return s.errf(p("pfc_xoff"), "must be positive")
			}
			if r.PFCXON > r.PFCXOFF {
				return s.errf(p("pfc_xon"), "%v above pfc_xoff %v: XON must be at most XOFF", r.PFCXON, r.PFCXOFF)
			}
		case "dynamic":
			if !(r.PFCAlpha > 0 && r.PFCAlpha <= 64) {
				return s.errf(p("pfc_alpha"), "%g outside (0,64] (XOFF = alpha x free shared buffer; 1/8 .. 1 is common)", r.PFCAlpha)
			}
		default:
			return s.errf(p("pfc_threshold"), "%q unknown (valid: static, dynamic)", r.PFCThreshold)
		}
		if r.PFCXONOffset < 0 || r.PFCHeadroom < 0 {
			return s.errf(p("pfc_headroom"), "sizes must not be negative")
		}
		classes := int64(len(r.PFCPriorities))
		if int64(r.PFCHeadroom)*classes >= int64(f.Buffer) {
			return s.errf(p("pfc_headroom"), "%v per port and class x %d lossless classes is larger than the %v switch buffer", r.PFCHeadroom, classes, f.Buffer)
		}
		if r.PFCPauseQuanta < 1 || r.PFCPauseQuanta > 65535 {
			return s.errf(p("pfc_pause_quanta"), "%d outside 1..65535 (quanta of 512 bit times)", r.PFCPauseQuanta)
		}
		if r.PFCRefresh < 0 || r.PFCWatchdog < 0 || r.PFCWatchdogRestore < 0 {
			return s.errf(p("pfc_watchdog"), "durations must not be negative")
		}
		if r.PFCStormHost < -1 {
			return s.errf(p("pfc_storm_host"), "host %d does not exist (-1 = no storm)", r.PFCStormHost)
		}
	} else if r.PFCStormHost >= 0 {
		return s.errf(p("pfc_storm_host"), "a pause storm needs pfc: true")
	}
	if r.ECN {
		if !(r.ECNPmax > 0 && r.ECNPmax <= 1) {
			return s.errf(p("ecn_pmax"), "%g outside (0,1]", r.ECNPmax)
		}
		if s.Has(p("ecn_kmin")) != s.Has(p("ecn_kmax")) {
			return s.errf(p("ecn_kmin"), "give both ecn_kmin and ecn_kmax, or neither (HPCC's 100 KB and 400 KB per 25 Gb/s of each port)")
		}
		if r.ECNKmin > r.ECNKmax {
			return s.errf(p("ecn_kmin"), "%v above ecn_kmax %v: Kmin must be at most Kmax", r.ECNKmin, r.ECNKmax)
		}
	}
	if r.DCQCN {
		if !r.ECN {
			return s.errf(p("dcqcn"), "DCQCN needs ecn: true (its congestion point is ECN marking)")
		}
		pp := s.dcqcnParams()
		if err := pp.Validate(); err != nil {
			key, msg, _ := strings.Cut(err.Error(), ": ")
			if i := strings.Index(key, ","); i > 0 {
				key = key[:i]
			}
			return s.errf(p(key), "%s", msg)
		}
	}
	return nil
}

func (s *Scenario) dcqcnParams() dcqcn.Params {
	r := &s.Fabric.RoCE
	return dcqcn.Params{
		G: r.DCQCNG, AlphaTimer: r.DCQCNAlphaTimer, AlphaInit: r.DCQCNAlphaInit,
		IncreaseTimer: r.DCQCNIncreaseTimer, ByteCounter: int64(r.DCQCNByteCounter), F: r.DCQCNF,
		AI: r.DCQCNRateAI, HAI: r.DCQCNRateHAI, CNPInterval: r.DCQCNCNPInterval, DecreasePeriod: r.DCQCNDecreasePeriod,
		MinRate: r.DCQCNMinRate, MinDecFactor: r.DCQCNMinDecFactor, ClampTarget: r.DCQCNClampTarget,
	}
}

func maskOf(list []int) uint8 {
	var m uint8
	for _, v := range list {
		m |= 1 << v
	}
	return m
}

// roceConfig copies the RoCE parameters into the packet backend's configuration.
func (s *Scenario) roceConfig(c *fabric.Config) {
	f := &s.Fabric
	r := &f.RoCE
	d := fabric.DefaultRoCE()
	c.Priorities = 8
	c.DataPriority, c.CNPPriority = uint8(r.DataPriority), uint8(r.CNPPriority)
	_, _, c.CNPBytes = fabric.RoCEFraming(r.IPv6, r.VLAN)
	c.FirstHeaderExtra = fabric.RETHBytes
	c.Transport = r.Transport
	c.IRNBDPCap, c.IRNRTOLow, c.IRNRTOHigh, c.IRNLowThreshold = r.IRNBDPCap, r.IRNRTOLow, r.IRNRTOHigh, r.IRNLowThreshold
	c.QPsPerConn = r.QPsPerConn
	rc := d.RoCE
	rc.PFC, rc.Lossless = r.PFC, maskOf(r.PFCPriorities)
	rc.PFCDynamic, rc.PFCAlpha = r.PFCThreshold == "dynamic", r.PFCAlpha
	rc.XOFF, rc.XON, rc.XONOffset, rc.Headroom = r.PFCXOFF, r.PFCXON, r.PFCXONOffset, r.PFCHeadroom
	rc.PauseQuanta, rc.PauseRefresh = uint16(r.PFCPauseQuanta), r.PFCRefresh
	rc.Watchdog, rc.WatchdogRestore = r.PFCWatchdog, r.PFCWatchdogRestore
	rc.StormHost, rc.StormAt, rc.StormFor = int32(r.PFCStormHost), r.PFCStormStart, r.PFCStormDuration
	rc.ECN, rc.Kmin, rc.Kmax, rc.Pmax = r.ECN, r.ECNKmin, r.ECNKmax, r.ECNPmax
	rc.ECNMap = r.ecnMap
	rc.DCQCN, rc.DCQCNParams = r.DCQCN, s.dcqcnParams()
	rc.Strict = maskOf(r.StrictPriorities)
	copy(rc.Weights[:], r.Weights)
	rc.RandomLoss, rc.QPAwareHash = r.RandomLoss, r.QPAwareHash
	c.RoCE = rc
}

// rejectRoCEKeys reports a RoCE key given under another fabric kind.
func (s *Scenario) rejectRoCEKeys() error {
	for _, k := range roceKeys() {
		if s.Has("fabric." + k) {
			return s.errf("fabric."+k, "is a RoCE key; it needs `kind: roce` (kind is %q)", s.Fabric.Kind)
		}
	}
	return nil
}

// applyHPCCConfig reads HPCC ns-3's config.txt (one `NAME value...` per line) and sets the
// RoCE fields its names map to (docs/roce.md), except those the scenario wrote itself.
func (s *Scenario) applyHPCCConfig() error {
	f := &s.Fabric
	r := &f.RoCE
	path := s.Path(r.HPCCConfig)
	fh, err := os.Open(path)
	if err != nil {
		return s.errf("fabric.hpcc_config", "cannot open %s: %s", path, unwrapPathErr(err))
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	line := 0
	bad := func(name, format string, args ...any) error {
		return &Error{File: path, Pos: Pos{Line: line, Col: 1}, Field: name, Msg: fmt.Sprintf(format, args...) + " (fabric.hpcc_config of " + s.File + ")"}
	}
	set := func(key string, apply func()) {
		if !s.Has("fabric." + key) {
			apply()
		}
	}
	maps := map[string][]float64{}
	for sc.Scan() {
		line++
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		name := fields[0]
		if len(fields) < 2 {
			return bad(name, "has no value")
		}
		num := func() (float64, error) {
			v, err := strconv.ParseFloat(fields[1], 64)
			if err != nil {
				return 0, bad(name, "%q is not a number", fields[1])
			}
			return v, nil
		}
		rate := func() (units.Rate, error) {
			v, err := units.ParseRate(fields[1])
			if err != nil {
				return 0, bad(name, "%v", err)
			}
			return v, nil
		}
		us := func(v float64) units.Time { return units.Time(math.Round(v * float64(units.Microsecond))) }
		var v float64
		var rt units.Rate
		switch name {
		case "CC_MODE", "EWMA_GAIN", "RP_TIMER", "BUFFER_SIZE", "ALPHA_RESUME_INTERVAL", "RATE_DECREASE_INTERVAL",
			"FAST_RECOVERY_TIMES", "CLAMP_TARGET_RATE", "ERROR_RATE_PER_LINK", "PACKET_PAYLOAD_SIZE", "L2_ACK_INTERVAL",
			"L2_BACK_TO_ZERO", "ENABLE_QCN", "USE_DYNAMIC_PFC_THRESHOLD", "BYTE_COUNTER", "MIN_TIME_BETWEEN_CNPS":
			if v, err = num(); err != nil {
				return err
			}
		case "RATE_AI", "RATE_HAI", "MIN_RATE":
			if rt, err = rate(); err != nil {
				return err
			}
		case "KMAX_MAP", "KMIN_MAP", "PMAX_MAP":
			var vals []float64
			for _, x := range fields[1:] {
				y, err := strconv.ParseFloat(x, 64)
				if err != nil {
					return bad(name, "%q is not a number", x)
				}
				vals = append(vals, y)
			}
			if len(vals) < 1 || int(vals[0])*2+1 != len(vals) {
				return bad(name, "want `n rate1 value1 ... raten valuen`, got %d numbers", len(vals))
			}
			maps[name] = vals
			continue
		default:
			continue // topology, flow and output files, HPCC/TIMELY knobs: not RoCE fabric parameters
		}
		switch name {
		case "CC_MODE":
			if v != 1 {
				return bad(name, "CC_MODE %g is not modelled (fabricsim's RoCE runs DCQCN: CC_MODE 1)", v)
			}
			set("dcqcn", func() { r.DCQCN = true })
		case "ENABLE_QCN":
			set("ecn", func() { r.ECN = v != 0 })
			set("dcqcn", func() { r.DCQCN = v != 0 })
		case "EWMA_GAIN":
			set("dcqcn_g", func() { r.DCQCNG = v })
		case "RP_TIMER":
			set("dcqcn_increase_timer", func() { r.DCQCNIncreaseTimer = us(v) })
		case "ALPHA_RESUME_INTERVAL":
			set("dcqcn_alpha_timer", func() { r.DCQCNAlphaTimer = us(v) })
		case "RATE_DECREASE_INTERVAL":
			set("dcqcn_decrease_period", func() { r.DCQCNDecreasePeriod = us(v) })
		case "MIN_TIME_BETWEEN_CNPS":
			set("dcqcn_cnp_interval", func() { r.DCQCNCNPInterval = us(v) })
		case "FAST_RECOVERY_TIMES":
			set("dcqcn_f", func() { r.DCQCNF = int(v) })
		case "CLAMP_TARGET_RATE":
			set("dcqcn_clamp_target", func() { r.DCQCNClampTarget = v != 0 })
		case "BYTE_COUNTER":
			set("dcqcn_byte_counter", func() { r.DCQCNByteCounter = units.Size(v) })
		case "RATE_AI":
			set("dcqcn_rate_ai", func() { r.DCQCNRateAI = rt })
		case "RATE_HAI":
			set("dcqcn_rate_hai", func() { r.DCQCNRateHAI = rt })
		case "MIN_RATE":
			set("dcqcn_min_rate", func() { r.DCQCNMinRate = rt })
		case "BUFFER_SIZE":
			set("buffer", func() { f.Buffer = units.Size(v * float64(units.MB)) })
		case "ERROR_RATE_PER_LINK":
			set("random_loss", func() { r.RandomLoss = v })
		case "PACKET_PAYLOAD_SIZE":
			set("mtu", func() { f.MTU = units.Size(v) })
		case "L2_ACK_INTERVAL":
			set("ack_every", func() { f.AckEvery = max(1, int(v)) })
		case "L2_BACK_TO_ZERO":
			if v != 0 {
				return bad(name, "go-back-0 is not modelled (fabricsim's go-back-N is L2_BACK_TO_ZERO 0)")
			}
		case "USE_DYNAMIC_PFC_THRESHOLD":
			set("pfc_threshold", func() {
				r.PFCThreshold = "static"
				if v != 0 {
					r.PFCThreshold = "dynamic"
				}
			})
		}
	}
	if err := sc.Err(); err != nil {
		return s.errf("fabric.hpcc_config", "reading %s: %v", path, err)
	}
	// ECN maps: `n rate value ...`, rates in b/s, Kmin/Kmax in KB, Pmax a fraction.
	if kmin, kmax := maps["KMIN_MAP"], maps["KMAX_MAP"]; kmin != nil && kmax != nil && !s.Has("fabric.ecn_kmin") {
		pmax := maps["PMAX_MAP"]
		for i := 0; i < int(kmin[0]); i++ {
			t := fabric.ECNThreshold{Rate: units.Rate(kmin[1+2*i]), Kmin: units.Size(kmin[2+2*i] * 1000), Pmax: r.ECNPmax}
			for j := 0; j < int(kmax[0]); j++ {
				if kmax[1+2*j] == kmin[1+2*i] {
					t.Kmax = units.Size(kmax[2+2*j] * 1000)
				}
			}
			for j := 0; pmax != nil && j < int(pmax[0]); j++ {
				if pmax[1+2*j] == kmin[1+2*i] {
					t.Pmax = pmax[2+2*j]
				}
			}
			if t.Kmax == 0 || t.Kmin > t.Kmax {
				return &Error{File: path, Field: "KMAX_MAP", Msg: fmt.Sprintf("rate %v: Kmax missing or below Kmin (fabric.hpcc_config of %s)", t.Rate, s.File)}
			}
			r.ecnMap = append(r.ecnMap, t)
		}
	}
	return nil
}
