package roceconf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/units"
)

// SONiC: config_db.json tables as the sonic-yang-models define them ([SONiC-YANG]); buffer
// semantics from SAI's saibuffer.h ([SAI-buffer]): a lossless priority group's profile has a
// shared-buffer limit (dynamic_th n: 2^n x the free pool, or static_th bytes), at which PAUSE
// is sent, the headroom behind it (xoff bytes), and resumes at max(xon, limit - xon_offset).
// fabricsim's pfc_xoff/pfc_alpha are the limit, pfc_headroom is xoff. WRED thresholds are in
// bytes, probabilities in percent; PFC_WD times in ms. Every value is a JSON string.

// SONiC names the export gives its objects (the names SONiC's own templates use, [SONiC-YANG]
// Configuration.md examples).
const (
	sonicPool    = "ingress_lossless_pool"
	sonicWRED    = "AZURE_LOSSLESS"
	sonicDSCPMap = "AZURE"
	sonicCable   = "AZURE"
)

// sonicDB is config_db.json: table -> key -> field -> value.
type sonicDB map[string]map[string]map[string]string

func (db sonicDB) put(table, key, field, value string) {
	t := db[table]
	if t == nil {
		t = map[string]map[string]string{}
		db[table] = t
	}
	e := t[key]
	if e == nil {
		e = map[string]string{}
		t[key] = e
	}
	e[field] = value
}

func exportSONiC(x *exporter, c *fabric.Config, t Target) {
	r := &c.RoCE
	db := sonicDB{}
	ports := t.ports(SONiC)
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	db.put("DSCP_TO_TC_MAP", sonicDSCPMap, strconv.Itoa(DSCPData), strconv.Itoa(int(c.DataPriority)))
	db.put("DSCP_TO_TC_MAP", sonicDSCPMap, strconv.Itoa(DSCPCNP), strconv.Itoa(int(c.CNPPriority)))
	pfcEnable := ""
	if r.PFC {
		pfcEnable = joinInts(r.Lossless.List(), ",")
	}
	// Buffers: the shared pool and the lossless priority groups' profile.
	profile := fmt.Sprintf("pg_lossless_%d_%dm_profile", int64(t.Rate/units.Mbps), t.CableMetres())
	mode := "dynamic"
	if r.PFCThreshold == fabric.PFCStatic {
		mode = "static"
	}
	db.put("BUFFER_POOL", sonicPool, "type", "ingress")
	db.put("BUFFER_POOL", sonicPool, "mode", mode)
	db.put("BUFFER_POOL", sonicPool, "size", i64(int64(c.Buffer)))
	if r.PFC {
		p := func(f, v string) { db.put("BUFFER_PROFILE", profile, f, v) }
		p("pool", sonicPool)
		p("xoff", i64(int64(r.Headroom)))
		p("size", i64(int64(r.Headroom)))
		if r.PFCThreshold == fabric.PFCStatic {
			p("static_th", i64(int64(r.XOFF)))
			p("xon", i64(int64(r.XON)))
			p("xon_offset", i64(int64(r.XOFF-r.XON)))
		} else {
			n, exact := alphaLog2(r.PFCAlpha)
			if n < -8 || n > 7 {
				x.fail("pfc_alpha", "%g outside SONiC's dynamic_th -8..7 (alpha 2^-8..2^7)", r.PFCAlpha)
			} else if !exact {
				x.round("pfc_alpha", "%g written as dynamic_th %d (alpha %g; SONiC's alpha is a power of two)", r.PFCAlpha, n, math.Ldexp(1, n))
			}
			p("dynamic_th", strconv.Itoa(n))
			p("xon", "0")
			p("xon_offset", i64(int64(r.XONOffset)))
		}
	}
	// ECN marking on the data priority's queue.
	if r.ECN {
		pm := x.percent("ecn_pmax", r.Pmax, 0, 100, "SONiC green_drop_probability")
		db.put("WRED_PROFILE", sonicWRED, "ecn", "ecn_all")
		for _, color := range []string{"green", "yellow", "red"} {
			db.put("WRED_PROFILE", sonicWRED, "wred_"+color+"_enable", "true")
			db.put("WRED_PROFILE", sonicWRED, color+"_min_threshold", i64(int64(r.Kmin)))
			db.put("WRED_PROFILE", sonicWRED, color+"_max_threshold", i64(int64(r.Kmax)))
			db.put("WRED_PROFILE", sonicWRED, color+"_drop_probability", strconv.Itoa(pm))
		}
	} else {
		db.put("WRED_PROFILE", sonicWRED, "ecn", "ecn_none")
	}
	// Schedulers: strict classes, the others DWRR with their weights (SONiC weights 1..100).
	weights := r.Weights
	maxW := 0
	for p := range 8 {
		if !r.Strict.Has(uint8(p)) {
			maxW = max(maxW, weights[p])
		}
	}
	if maxW > 100 {
		for p := range 8 {
			weights[p] = max(1, int(math.Round(float64(weights[p])*100/float64(maxW))))
		}
		x.round("weights", "%v written as %v (SONiC scheduler weights are 1..100)", r.Weights, weights)
	}
	for p := range 8 {
		name := fmt.Sprintf("scheduler.%d", p)
		if r.Strict.Has(uint8(p)) {
			db.put("SCHEDULER", name, "type", "STRICT")
		} else {
			db.put("SCHEDULER", name, "type", "DWRR")
			db.put("SCHEDULER", name, "weight", strconv.Itoa(weights[p]))
		}
	}
	var detect, restore int64
	if r.PFC && r.Watchdog > 0 {
		detect = x.whole("pfc_watchdog", r.Watchdog, units.Millisecond, "ms", 100, 5000, "SONiC PFC_WD detection_time")
		restore = x.whole("pfc_watchdog_restore", r.WatchdogRestore, units.Millisecond, "ms", 100, 60000, "SONiC PFC_WD restoration_time")
		db.put("PFC_WD", "GLOBAL", "POLL_INTERVAL", i64(min(200, detect, restore)))
	}
	for _, port := range ports {
		db.put("PORT_QOS_MAP", port, "dscp_to_tc_map", sonicDSCPMap)
		db.put("PORT_QOS_MAP", port, "pfc_enable", pfcEnable)
		db.put("CABLE_LENGTH", sonicCable, port, fmt.Sprintf("%dm", t.CableMetres()))
		if r.PFC {
			for _, p := range r.Lossless.List() {
				db.put("BUFFER_PG", fmt.Sprintf("%s|%d", port, p), "profile", profile)
			}
		}
		for p := range 8 {
			q := fmt.Sprintf("%s|%d", port, p)
			db.put("QUEUE", q, "scheduler", fmt.Sprintf("scheduler.%d", p))
			if p == int(c.DataPriority) {
				db.put("QUEUE", q, "wred_profile", sonicWRED)
			}
		}
		if detect > 0 {
			db.put("PFC_WD", port, "action", "drop")
			db.put("PFC_WD", port, "detection_time", i64(detect))
			db.put("PFC_WD", port, "restoration_time", i64(restore))
		}
	}
	out, err := json.MarshalIndent(db, "", "    ")
	if err != nil {
		x.fail("", "%v", err)
		return
	}
	x.buf.Write(out)
	x.buf.WriteByte('\n')
}

// sonicDoc is a parsed config_db.json with the line of every table, key and field.
type sonicDoc struct {
	file string
	db   sonicDB
	line map[string]int // "TABLE", "TABLE|key", "TABLE|key|field" -> line
}

func (d *sonicDoc) pos(table, key, field string) Pos {
	path := table
	if key != "" {
		path += "|" + key
	}
	if field != "" {
		path += "|" + field
	}
	return Pos{File: d.file, Line: d.line[path], Key: path}
}

// parseSonic reads config_db.json: an object of tables, each an object of keys, each an object
// of fields whose values are strings (numbers and booleans are taken as their text).
func parseSonic(file string, data []byte) (*sonicDoc, error) {
	d := &sonicDoc{file: file, db: sonicDB{}, line: map[string]int{}}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	// lineAt counts lines incrementally: offsets only grow as the decoder reads on.
	lastOff, lastLine := 0, 1
	lineAt := func(off int64) int {
		o := min(int(off), len(data))
		if o >= lastOff {
			lastLine += bytes.Count(data[lastOff:o], []byte("\n"))
			lastOff = o
		}
		return lastLine
	}
	fail := func(format string, args ...any) error {
		return errAt(Pos{File: file, Line: lineAt(dec.InputOffset())}, format, args...)
	}
	tok := func() (json.Token, error) {
		t, err := dec.Token()
		if err != nil {
			return nil, fail("not valid JSON: %v", err)
		}
		return t, nil
	}
	expectObject := func(what string) error {
		t, err := tok()
		if err != nil {
			return err
		}
		if t != json.Delim('{') {
			return fail("%s: want a JSON object, got %v", what, t)
		}
		return nil
	}
	// key reads the next key of an object, or "" at its end.
	key := func() (string, int, error) {
		t, err := tok()
		if err != nil {
			return "", 0, err
		}
		if t == json.Delim('}') {
			return "", 0, nil
		}
		s, ok := t.(string)
		if !ok {
			return "", 0, fail("want an object key, got %v", t)
		}
		return s, lineAt(dec.InputOffset()), nil
	}
	if err := expectObject("config_db.json"); err != nil {
		return nil, err
	}
	for {
		table, tl, err := key()
		if err != nil {
			return nil, err
		}
		if table == "" {
			break
		}
		d.line[table] = tl
		if err := expectObject("table " + table); err != nil {
			return nil, err
		}
		for {
			k, kl, err := key()
			if err != nil {
				return nil, err
			}
			if k == "" {
				break
			}
			d.line[table+"|"+k] = kl
			if err := expectObject(table + "|" + k); err != nil {
				return nil, err
			}
			for {
				f, fl, err := key()
				if err != nil {
					return nil, err
				}
				if f == "" {
					break
				}
				d.line[table+"|"+k+"|"+f] = fl
				v, err := tok()
				if err != nil {
					return nil, err
				}
				var s string
				switch v := v.(type) {
				case string:
					s = v
				case json.Number:
					s = v.String()
				case bool:
					s = strconv.FormatBool(v)
				default:
					return nil, fail("%s|%s|%s: want a string value, got %v", table, k, f, v)
				}
				d.db.put(table, k, f, s)
			}
			if d.db[table] == nil {
				d.db[table] = map[string]map[string]string{}
			}
			if d.db[table][k] == nil {
				d.db[table][k] = map[string]string{}
			}
		}
		if d.db[table] == nil {
			d.db[table] = map[string]map[string]string{}
		}
	}
	if _, err := dec.Token(); err == nil {
		return nil, fail("data after the config_db.json object")
	}
	return d, nil
}

// ref strips SONiC's older "[TABLE|name]" reference form to the name.
func ref(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		if _, name, ok := strings.Cut(s[1:len(s)-1], "|"); ok {
			return name
		}
	}
	return s
}

// sonicTables are the tables the import reads; others are listed in one note.
var sonicTables = map[string]bool{
	"BUFFER_POOL": true, "BUFFER_PROFILE": true, "BUFFER_PG": true, "PORT_QOS_MAP": true, "QUEUE": true,
	"SCHEDULER": true, "DSCP_TO_TC_MAP": true, "WRED_PROFILE": true, "PFC_WD": true, "CABLE_LENGTH": true,
}

// agreed is one value every port must agree on.
type agreed struct {
	val string
	pos Pos
	set bool
}

// agree records v for a port; a port that differs from an earlier one is an error.
func (a *agreed) agree(v string, p Pos, what string) error {
	if a.set && a.val != v {
		return errAt(p, "%s is %q here but %q at %s: fabricsim has one setting for every port", what, v, a.val, a.pos)
	}
	if !a.set {
		*a = agreed{val: v, pos: p, set: true}
	}
	return nil
}

func importSONiC(fi *fileImport, raw []byte) error {
	d, err := parseSonic(fi.file, raw)
	if err != nil {
		return err
	}
	db := d.db
	var other []string
	for t := range db {
		if !sonicTables[t] {
			other = append(other, t)
		}
	}
	sort.Strings(other)
	if len(other) > 0 {
		fi.note(Pos{File: fi.file}, "tables not read (no RoCE setting fabricsim models): %s", strings.Join(other, ", "))
	}
	num := func(p Pos, s string, lo, hi int64) (int64, error) {
		v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil || v < lo || v > hi {
			return 0, errAt(p, "%q is not a whole number %d..%d", s, lo, hi)
		}
		return v, nil
	}
	keys := func(table string) []string {
		var out []string
		for k := range db[table] {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	// PORT_QOS_MAP: the DSCP map and the lossless priorities, the same on every port.
	var dscpMap, pfcEnable agreed
	for _, port := range keys("PORT_QOS_MAP") {
		for _, f := range sortedFields(db["PORT_QOS_MAP"][port]) {
			v, p := db["PORT_QOS_MAP"][port][f], d.pos("PORT_QOS_MAP", port, f)
			switch f {
			case "dscp_to_tc_map":
				if err := dscpMap.agree(ref(v), p, "dscp_to_tc_map"); err != nil {
					return err
				}
			case "pfc_enable":
				if err := pfcEnable.agree(v, p, "pfc_enable"); err != nil {
					return err
				}
			default:
				fi.note(p, "not a setting fabricsim models")
			}
		}
	}
	if dscpMap.set {
		m, ok := db["DSCP_TO_TC_MAP"][dscpMap.val]
		if !ok {
			return errAt(dscpMap.pos, "DSCP_TO_TC_MAP %q does not exist", dscpMap.val)
		}
		for _, dk := range []struct {
			dscp int
			key  string
		}{{DSCPData, "data_priority"}, {DSCPCNP, "cnp_priority"}} {
			v, ok := m[strconv.Itoa(dk.dscp)]
			if !ok {
				continue
			}
			p := d.pos("DSCP_TO_TC_MAP", dscpMap.val, strconv.Itoa(dk.dscp))
			tc, err := num(p, v, 0, 7)
			if err != nil {
				return err
			}
			if dk.key == "data_priority" {
				fi.set(dk.key, p, func(c *fabric.Config) { c.DataPriority = uint8(tc) })
			} else {
				fi.set(dk.key, p, func(c *fabric.Config) { c.CNPPriority = uint8(tc) })
			}
		}
	}
	var lossless fabric.PrioritySet
	if pfcEnable.set {
		var list []int
		if strings.TrimSpace(pfcEnable.val) != "" {
			if list, err = parseList(pfcEnable.val, 0, 7); err != nil {
				return errAt(pfcEnable.pos, "%v", err)
			}
		}
		for _, p := range list {
			lossless |= 1 << p
		}
		fi.set("pfc", pfcEnable.pos, func(c *fabric.Config) { c.RoCE.PFC = lossless != 0 })
		if lossless != 0 {
			fi.set("pfc_priorities", pfcEnable.pos, func(c *fabric.Config) { c.RoCE.Lossless = lossless })
		}
	}
	data := int(fi.cfg.DataPriority)
	// QUEUE: the data queue's WRED profile and every queue's scheduler.
	var wred agreed
	sched := map[int]*agreed{}
	for _, k := range keys("QUEUE") {
		port, qs, ok := strings.Cut(k, "|")
		p0 := d.pos("QUEUE", k, "")
		if !ok || port == "" {
			return errAt(p0, "want a key PORT|QUEUE (e.g. Ethernet0|3)")
		}
		qlist, err := parseList(qs, 0, 7)
		if err != nil {
			return errAt(p0, "queue %v", err)
		}
		e := db["QUEUE"][k]
		for _, q := range qlist {
			for _, f := range sortedFields(e) {
				p := d.pos("QUEUE", k, f)
				switch f {
				case "wred_profile":
					if q == data {
						if err := wred.agree(ref(e[f]), p, "the data queue's wred_profile"); err != nil {
							return err
						}
					}
				case "scheduler":
					if sched[q] == nil {
						sched[q] = &agreed{}
					}
					if err := sched[q].agree(ref(e[f]), p, fmt.Sprintf("queue %d's scheduler", q)); err != nil {
						return err
					}
				default:
					fi.note(p, "not a setting fabricsim models")
				}
			}
		}
	}
	if wred.set {
		if err := importWRED(fi, d, wred); err != nil {
			return err
		}
	}
	if len(sched) > 0 {
		st := newSched()
		st.touched = true
		for q := 0; q < 8; q++ {
			a := sched[q]
			if a == nil {
				continue
			}
			s, ok := db["SCHEDULER"][a.val]
			if !ok {
				return errAt(a.pos, "SCHEDULER %q does not exist", a.val)
			}
			p := d.pos("SCHEDULER", a.val, "type")
			st.modeP, st.shareP = p, d.pos("SCHEDULER", a.val, "weight")
			switch strings.ToUpper(s["type"]) {
			case "STRICT":
				st.mode[q] = "strict"
			case "DWRR", "WRR", "":
				st.mode[q] = "dwrr"
				w, err := num(d.pos("SCHEDULER", a.val, "weight"), s["weight"], 1, 100)
				if err != nil {
					return err
				}
				st.share[q] = int(w)
			default:
				return errAt(p, "%q is not a scheduler type (valid: DWRR, WRR, STRICT)", s["type"])
			}
		}
		st.apply(fi)
	}
	// BUFFER_PG -> the lossless priority groups' BUFFER_PROFILE -> BUFFER_POOL.
	var prof agreed
	for _, k := range keys("BUFFER_PG") {
		port, pgs, ok := strings.Cut(k, "|")
		p := d.pos("BUFFER_PG", k, "profile")
		if !ok || port == "" {
			return errAt(d.pos("BUFFER_PG", k, ""), "want a key PORT|PG (e.g. Ethernet0|3-4)")
		}
		list, err := parseList(pgs, 0, 7)
		if err != nil {
			return errAt(p, "priority group %v", err)
		}
		lossy := true
		for _, pg := range list {
			if fi.cfg.RoCE.Lossless.Has(uint8(pg)) {
				lossy = false
			}
		}
		name := ref(db["BUFFER_PG"][k]["profile"])
		if lossy || name == "NULL" || name == "" {
			continue
		}
		if err := prof.agree(name, p, "the lossless priority groups' profile"); err != nil {
			return err
		}
	}
	pool, poolP := sonicPool, Pos{}
	if prof.set {
		if pool, poolP, err = sonicProfile(fi, d, prof, num); err != nil {
			return err
		}
	}
	// The shared buffer: the lossless profile's pool (or, without one, ingress_lossless_pool).
	if bpool, ok := db["BUFFER_POOL"][pool]; ok {
		if v, ok := bpool["size"]; ok {
			p := d.pos("BUFFER_POOL", pool, "size")
			n, err := num(p, v, 1, math.MaxInt64)
			if err != nil {
				return err
			}
			fi.set("buffer", p, func(c *fabric.Config) { c.Buffer = units.Size(n) })
		}
	} else if prof.set && pool != "" {
		return errAt(poolP, "BUFFER_POOL %q does not exist", pool)
	}
	// PFC_WD: the watchdog, the same on every port.
	var action, detect, restore agreed
	for _, port := range keys("PFC_WD") {
		for _, f := range sortedFields(db["PFC_WD"][port]) {
			v, p := db["PFC_WD"][port][f], d.pos("PFC_WD", port, f)
			switch {
			case port == "GLOBAL":
				fi.note(p, "fabricsim checks the pause time continuously (no polling interval)")
			case f == "action":
				if err := action.agree(v, p, "action"); err != nil {
					return err
				}
			case f == "detection_time":
				if err := detect.agree(v, p, "detection_time"); err != nil {
					return err
				}
			case f == "restoration_time":
				if err := restore.agree(v, p, "restoration_time"); err != nil {
					return err
				}
			default:
				fi.note(p, "not a setting fabricsim models")
			}
		}
	}
	if action.set && action.val != "drop" {
		fi.note(action.pos, "action %s: fabricsim's watchdog drops (flushes the queue and ignores PAUSE)", action.val)
	}
	if detect.set {
		ms, err := num(detect.pos, detect.val, 100, 5000)
		if err != nil {
			return err
		}
		fi.set("pfc_watchdog", detect.pos, func(c *fabric.Config) { c.RoCE.Watchdog = units.Time(ms) * units.Millisecond })
	}
	if restore.set {
		ms, err := num(restore.pos, restore.val, 100, 60000)
		if err != nil {
			return err
		}
		fi.set("pfc_watchdog_restore", restore.pos, func(c *fabric.Config) { c.RoCE.WatchdogRestore = units.Time(ms) * units.Millisecond })
	}
	for _, name := range keys("CABLE_LENGTH") {
		fi.note(d.pos("CABLE_LENGTH", name, ""), "fabricsim takes each cable from its link's latency (5 ns/m); the profile's xoff gives the headroom")
	}
	return nil
}

func sortedFields(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// importWRED reads the data queue's WRED profile: ECN marking and its thresholds. The newer
// ecn_green_* fields, when given, are the marking thresholds ([SONiC-YANG] sonic-wred-profile).
func importWRED(fi *fileImport, d *sonicDoc, wred agreed) error {
	w, ok := d.db["WRED_PROFILE"][wred.val]
	if !ok {
		return errAt(wred.pos, "WRED_PROFILE %q does not exist", wred.val)
	}
	name := wred.val
	pos := func(f string) Pos { return d.pos("WRED_PROFILE", name, f) }
	mode := w["ecn"]
	if mode == "" {
		mode = "ecn_none" // the YANG default
	}
	valid := map[string]bool{"ecn_none": true, "ecn_green": true, "ecn_yellow": true, "ecn_red": true, "ecn_green_yellow": true, "ecn_green_red": true, "ecn_yellow_red": true, "ecn_all": true}
	if !valid[mode] {
		return errAt(pos("ecn"), "%q is not an ECN mode (valid: ecn_none, ecn_green, ecn_yellow, ecn_red, ecn_green_yellow, ecn_green_red, ecn_yellow_red, ecn_all)", mode)
	}
	green := strings.Contains(mode, "green") || mode == "ecn_all"
	if !green && mode != "ecn_none" {
		fi.note(pos("ecn"), "%s marks only yellow or red packets; RoCE traffic is green: ECN off", mode)
	}
	fi.set("ecn", pos("ecn"), func(c *fabric.Config) { c.RoCE.ECN = green })
	if !green {
		return nil
	}
	field := func(names ...string) (string, string) {
		for _, n := range names {
			if v, ok := w[n]; ok {
				return n, v
			}
		}
		return "", ""
	}
	size := func(f, v string) (units.Size, error) {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			return 0, errAt(pos(f), "%q is not a byte count", v)
		}
		return units.Size(n), nil
	}
	fmin, vmin := field("ecn_green_min_threshold", "green_min_threshold")
	fmax, vmax := field("ecn_green_max_threshold", "green_max_threshold")
	switch {
	case fmin != "" && fmax != "":
		kmin, err := size(fmin, vmin)
		if err != nil {
			return err
		}
		kmax, err := size(fmax, vmax)
		if err != nil {
			return err
		}
		fi.set("ecn_kmin", pos(fmin), func(c *fabric.Config) { c.RoCE.Kmin = kmin })
		fi.set("ecn_kmax", pos(fmax), func(c *fabric.Config) { c.RoCE.Kmax = kmax })
	case fmin != "" || fmax != "":
		return errAt(pos(fmin+fmax), "give both the green minimum and maximum thresholds")
	}
	if fp, vp := field("ecn_green_mark_probability", "green_drop_probability"); fp != "" {
		n, err := strconv.Atoi(strings.TrimSpace(vp))
		if err != nil || n < 0 || n > 100 {
			return errAt(pos(fp), "%q is not a percentage 0..100", vp)
		}
		pm := float64(n) / 100
		fi.set("ecn_pmax", pos(fp), func(c *fabric.Config) { c.RoCE.Pmax = pm })
	}
	for _, f := range sortedFields(w) {
		switch {
		case strings.HasPrefix(f, "yellow_") || strings.HasPrefix(f, "red_") || strings.HasPrefix(f, "ecn_yellow") || strings.HasPrefix(f, "ecn_red"):
			// Other colours: RoCE traffic is green.
		case f == "ecn" || strings.HasPrefix(f, "green_") || strings.HasPrefix(f, "ecn_green"):
		case strings.HasPrefix(f, "wred_"):
			// WRED dropping per colour: fabricsim marks ECN-capable RoCE packets, never drops early.
		default:
			fi.note(pos(f), "not a setting fabricsim models")
		}
	}
	return nil
}

// sonicProfile reads the lossless priority groups' buffer profile; it returns the profile's pool.
func sonicProfile(fi *fileImport, d *sonicDoc, prof agreed, num func(Pos, string, int64, int64) (int64, error)) (pool string, poolP Pos, err error) {
	bp, ok := d.db["BUFFER_PROFILE"][prof.val]
	if !ok {
		return "", Pos{}, errAt(prof.pos, "BUFFER_PROFILE %q does not exist", prof.val)
	}
	name := prof.val
	pos := func(f string) Pos { return d.pos("BUFFER_PROFILE", name, f) }
	get := func(f string) (int64, bool, error) {
		v, ok := bp[f]
		if !ok {
			return 0, false, nil
		}
		n, err := num(pos(f), v, math.MinInt32, math.MaxInt64)
		return n, true, err
	}
	xon, hasXon, err := get("xon")
	if err != nil {
		return "", Pos{}, err
	}
	off, hasOff, err := get("xon_offset")
	if err != nil {
		return "", Pos{}, err
	}
	if xoff, ok, err := get("xoff"); err != nil {
		return "", Pos{}, err
	} else if ok {
		if xoff < 0 {
			return "", Pos{}, errAt(pos("xoff"), "must not be negative")
		}
		fi.set("pfc_headroom", pos("xoff"), func(c *fabric.Config) { c.RoCE.Headroom = units.Size(xoff) })
		if size, ok, _ := get("size"); ok && size < xoff {
			fi.note(pos("size"), "reserved size %d B below the headroom (xoff) %d B: fabricsim reserves the headroom", size, xoff)
		}
	}
	switch {
	case bp["dynamic_th"] != "":
		n, err := num(pos("dynamic_th"), bp["dynamic_th"], -8, 7)
		if err != nil {
			return "", Pos{}, err
		}
		alpha := math.Ldexp(1, int(n))
		fi.set("pfc_threshold", pos("dynamic_th"), func(c *fabric.Config) { c.RoCE.PFCThreshold = fabric.PFCDynamic })
		fi.set("pfc_alpha", pos("dynamic_th"), func(c *fabric.Config) { c.RoCE.PFCAlpha = alpha })
		if hasOff {
			fi.set("pfc_xon_offset", pos("xon_offset"), func(c *fabric.Config) { c.RoCE.XONOffset = units.Size(off) })
		}
		if hasXon && xon > 0 {
			fi.note(pos("xon"), "xon %d B: with a dynamic limit fabricsim resumes at limit - xon_offset only", xon)
		}
	case bp["static_th"] != "":
		xoff, err := num(pos("static_th"), bp["static_th"], 1, math.MaxInt64)
		if err != nil {
			return "", Pos{}, err
		}
		fi.set("pfc_threshold", pos("static_th"), func(c *fabric.Config) { c.RoCE.PFCThreshold = fabric.PFCStatic })
		fi.set("pfc_xoff", pos("static_th"), func(c *fabric.Config) { c.RoCE.XOFF = units.Size(xoff) })
		// SAI resumes at max(xon, limit - xon_offset), both 0 when not given ([SAI-buffer]).
		resume, p := xon, pos("xon")
		if xoff-off > xon || !hasXon {
			resume, p = xoff-off, pos("xon_offset")
			if !hasOff {
				p = pos("static_th")
			}
		}
		fi.set("pfc_xon", p, func(c *fabric.Config) { c.RoCE.XON = units.Size(max(resume, 0)) })
	}
	for _, f := range sortedFields(bp) {
		switch f {
		case "xon", "xoff", "xon_offset", "size", "pool", "dynamic_th", "static_th":
		default:
			fi.note(pos(f), "not a setting fabricsim models")
		}
	}
	return ref(bp["pool"]), pos("pool"), nil
}
