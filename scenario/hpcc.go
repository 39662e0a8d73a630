package scenario

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/units"
)

// applyHPCCConfig reads HPCC ns-3's config.txt (one `NAME value...` per line) and sets the
// RoCE fields its names map to (docs/roce.md), except those the scenario wrote itself.
func (s *Scenario) applyHPCCConfig() error {
	f := &s.Fabric
	r := &f.RoCE
	p := &r.DCQCNParams
	path := s.Path(f.HPCCConfig)
	fh, err := os.Open(path)
	if err != nil {
		return s.errf("fabric.hpcc_config", "cannot read %s: %s", path, unwrapPathErr(err))
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
	// HPCC (CC_MODE 3) takes RATE_AI, U_TARGET, MI_THRESH and MULTI_RATE, applied once the mode
	// is known.
	ccMode := 1.0
	var hpAI units.Rate
	var uTarget, miThresh, multiRate float64 = -1, -1, -1
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
			"L2_BACK_TO_ZERO", "ENABLE_QCN", "USE_DYNAMIC_PFC_THRESHOLD", "BYTE_COUNTER", "MIN_TIME_BETWEEN_CNPS",
			"U_TARGET", "MI_THRESH", "MULTI_RATE":
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
			if v == 7 {
				return bad(name, "CC_MODE 7 (ns-3's TIMELY, one update per RTT) is not read from config.txt: fabricsim's TIMELY follows the paper (per segment); write timely: true and dcqcn: false in the scenario instead (docs/transports.md)")
			}
			if v != 1 && v != 3 {
				return bad(name, "CC_MODE %g is not modelled (fabricsim's RoCE runs DCQCN, CC_MODE 1, or HPCC, CC_MODE 3)", v)
			}
			ccMode = v
			if v == 1 {
				set("dcqcn", func() { r.DCQCN = true })
			}
		case "U_TARGET":
			uTarget = v
		case "MI_THRESH":
			miThresh = v
		case "MULTI_RATE":
			multiRate = v
		case "ENABLE_QCN":
			set("ecn", func() { r.ECN = v != 0 })
			set("dcqcn", func() { r.DCQCN = v != 0 })
		case "EWMA_GAIN":
			set("dcqcn_g", func() { p.G = v })
		case "RP_TIMER":
			set("dcqcn_increase_timer", func() { p.IncreaseTimer = us(v) })
		case "ALPHA_RESUME_INTERVAL":
			set("dcqcn_alpha_timer", func() { p.AlphaTimer = us(v) })
		case "RATE_DECREASE_INTERVAL":
			set("dcqcn_decrease_period", func() { p.DecreasePeriod = us(v) })
		case "MIN_TIME_BETWEEN_CNPS":
			set("dcqcn_cnp_interval", func() { p.CNPInterval = us(v) })
		case "FAST_RECOVERY_TIMES":
			set("dcqcn_f", func() { p.F = int(v) })
		case "CLAMP_TARGET_RATE":
			set("dcqcn_clamp_target", func() { p.ClampTarget = v != 0 })
		case "BYTE_COUNTER":
			set("dcqcn_byte_counter", func() { p.ByteCounter = units.Size(v) })
		case "RATE_AI":
			set("dcqcn_rate_ai", func() { p.AI = rt })
			hpAI = rt
		case "RATE_HAI":
			set("dcqcn_rate_hai", func() { p.HAI = rt })
		case "MIN_RATE":
			set("dcqcn_min_rate", func() { p.MinRate = rt })
		case "BUFFER_SIZE":
			// Whole MiB: third.cc reads it into a uint32 and calls ConfigBufferSize(buffer_size * 1024 * 1024)
			// (alibaba-edu/High-Precision-Congestion-Control simulation/scratch/third.cc@4b78df6).
			if v < 1 || v != math.Trunc(v) || v > 4095 {
				return bad(name, "%q: want a whole number of MiB 1..4095 (HPCC's third.cc multiplies it by 1024*1024 in a uint32)", fields[1])
			}
			set("buffer", func() { f.Buffer = units.Size(v) * units.MiB })
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
				r.PFCThreshold = fabric.PFCStatic
				if v != 0 {
					r.PFCThreshold = fabric.PFCDynamic
				}
			})
		}
	}
	if err := sc.Err(); err != nil {
		return s.errf("fabric.hpcc_config", "reading %s: %v", path, err)
	}
	if ccMode == 3 { // HPCC on INT; ENABLE_QCN's DCQCN gives way to it
		h := &r.HPCCParams
		set("int", func() { r.INT = true })
		set("hpcc", func() { r.HPCC = true })
		set("dcqcn", func() { r.DCQCN = false })
		if hpAI > 0 {
			set("hpcc_rate_ai", func() { h.AI = hpAI })
		}
		if multiRate >= 0 {
			set("hpcc_multi_rate", func() { h.MultiRate = multiRate != 0 })
		}
		if uTarget >= 0 {
			set("hpcc_eta", func() { h.Eta = uTarget })
		}
		if miThresh >= 0 {
			set("hpcc_max_stage", func() { h.MaxStage = int(miThresh) })
		}
	}
	// ECN maps: `n rate value ...`, rates in b/s, Kmin/Kmax in KB, Pmax a fraction.
	if kmin, kmax := maps["KMIN_MAP"], maps["KMAX_MAP"]; kmin != nil && kmax != nil && !s.Has("fabric.ecn_kmin") {
		pmax := maps["PMAX_MAP"]
		for i := 0; i < int(kmin[0]); i++ {
			t := fabric.ECNThreshold{Rate: units.Rate(kmin[1+2*i]), Kmin: units.Size(kmin[2+2*i] * 1000), Pmax: r.Pmax}
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
			r.ECNMap = append(r.ECNMap, t)
		}
	}
	return nil
}
