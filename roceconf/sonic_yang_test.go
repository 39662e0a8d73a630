package roceconf

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// sonicSchema is what the SONiC YANG models allow in the tables the export writes, from
// sonic-net/sonic-buildimage src/sonic-yang-models/yang-models/ @086b03bd70f9 (sonic-buffer-pool,
// sonic-buffer-profile, sonic-buffer-pg, sonic-port-qos-map, sonic-queue, sonic-scheduler,
// sonic-dscp-tc-map, sonic-wred-profile, sonic-pfcwd, sonic-cable-length .yang): each table's
// leaves, how many parts its key has ("port|pg_num"), and the checks on leaf values (ranges,
// enumerations, patterns) the models state. Tables whose entries are a nested list
// (DSCP_TO_TC_MAP: dscp -> tc, CABLE_LENGTH: port -> length) check the nested key and value.
type yangTable struct {
	keyParts int
	leaves   map[string]func(v string) bool
	// nested, when set, checks a nested list's entry: key and value.
	nestedKey, nestedVal func(string) bool
	// mandatory leaves.
	mandatory []string
}

func rangeInt(lo, hi int64) func(string) bool {
	return func(v string) bool {
		n, err := strconv.ParseInt(v, 10, 64)
		return err == nil && n >= lo && n <= hi
	}
}

func enum(vals ...string) func(string) bool {
	return func(v string) bool {
		for _, x := range vals {
			if v == x {
				return true
			}
		}
		return false
	}
}

func pattern(re string) func(string) bool {
	r := regexp.MustCompile("^(?:" + re + ")$")
	return r.MatchString
}

var (
	anyValue = func(string) bool { return true }
	uint64V  = rangeInt(0, 1<<62)
	boolV    = enum("true", "false")
	// YANG names of WRED profiles, DSCP maps and cable-length lists.
	yangName = pattern(`[a-zA-Z0-9]{1}([-a-zA-Z0-9_]{0,31})`)
)

var sonicSchema = map[string]yangTable{
	"BUFFER_POOL": {keyParts: 1, leaves: map[string]func(string) bool{
		"type": enum("ingress", "egress", "both"), "mode": enum("static", "dynamic"), "size": uint64V,
		"xoff": uint64V, "percentage": rangeInt(0, 255)}},
	"BUFFER_PROFILE": {keyParts: 1, mandatory: []string{"size", "pool"}, leaves: map[string]func(string) bool{
		"static_th": uint64V, "dynamic_th": rangeInt(-8, 7), "size": uint64V, "pool": anyValue,
		"xon_offset": uint64V, "xon": uint64V, "xoff": uint64V, "headroom_type": enum("static", "dynamic"),
		"packet_discard_action": enum("drop", "trim")}},
	"BUFFER_PG": {keyParts: 2, leaves: map[string]func(string) bool{"profile": anyValue}},
	"PORT_QOS_MAP": {keyParts: 1, leaves: map[string]func(string) bool{
		"tc_to_pg_map": anyValue, "tc_to_queue_map": anyValue, "pfc_enable": pattern(`([0-7](,[0-7])*)?`),
		"pfcwd_sw_enable": pattern(`([0-7](,[0-7])*)?`), "pfc_to_queue_map": anyValue, "pfc_to_pg_map": anyValue,
		"dscp_to_tc_map": anyValue, "tc_to_dscp_map": anyValue, "dot1p_to_tc_map": anyValue, "scheduler": anyValue}},
	"QUEUE": {keyParts: 2, leaves: map[string]func(string) bool{"scheduler": anyValue, "wred_profile": anyValue}},
	"SCHEDULER": {keyParts: 1, leaves: map[string]func(string) bool{
		"type": enum("DWRR", "WRR", "STRICT"), "weight": rangeInt(1, 100), "priority": rangeInt(0, 9),
		"meter_type": enum("packets", "bytes"), "cir": uint64V, "pir": uint64V, "cbs": uint64V, "pbs": uint64V}},
	"DSCP_TO_TC_MAP": {keyParts: 1, nestedKey: pattern(`6[0-3]|[1-5][0-9]?|[0-9]?`), nestedVal: rangeInt(0, 15)},
	"WRED_PROFILE": {keyParts: 1, leaves: map[string]func(string) bool{
		"yellow_min_threshold": uint64V, "green_min_threshold": uint64V, "red_min_threshold": uint64V,
		"yellow_max_threshold": uint64V, "green_max_threshold": uint64V, "red_max_threshold": uint64V,
		"ecn":               enum("ecn_none", "ecn_green", "ecn_yellow", "ecn_red", "ecn_green_yellow", "ecn_green_red", "ecn_yellow_red", "ecn_all"),
		"wred_green_enable": boolV, "wred_yellow_enable": boolV, "wred_red_enable": boolV,
		"yellow_drop_probability": rangeInt(0, 100), "green_drop_probability": rangeInt(0, 100), "red_drop_probability": rangeInt(0, 100)}},
	"PFC_WD": {keyParts: 1, leaves: map[string]func(string) bool{
		"action": enum("drop", "forward", "alert"), "detection_time": rangeInt(100, 5000),
		"restoration_time": rangeInt(100, 60000), "pfc_stat_history": enum("enable", "disable"), "POLL_INTERVAL": rangeInt(100, 1000)}},
	"CABLE_LENGTH": {keyParts: 1, nestedKey: anyValue, nestedVal: pattern(`[0-9]+m`)},
}

// TestSONiCMatchesYANG checks every exported config_db.json against the YANG models: only
// tables, keys and leaves the models define, values within their types, ranges, enumerations
// and patterns, mandatory leaves present, the models' `must` rules (thresholds ordered,
// POLL_INTERVAL only on GLOBAL and not above the detection and restoration times), and every
// reference (leafref) pointing at an entry that exists.
func TestSONiCMatchesYANG(t *testing.T) {
	for _, p := range presets {
		out, _ := exportString(t, SONiC, p.cfg())
		var db map[string]map[string]map[string]string
		if err := json.Unmarshal([]byte(out), &db); err != nil {
			t.Fatalf("%s: not config_db.json: %v", p.name, err)
		}
		for table, entries := range db {
			sch, ok := sonicSchema[table]
			if !ok {
				t.Errorf("%s: table %s is not one of the YANG models checked", p.name, table)
				continue
			}
			for key, fields := range entries {
				parts := strings.Split(key, "|")
				if len(parts) != sch.keyParts {
					t.Errorf("%s: %s|%s: key has %d parts, the model %d", p.name, table, key, len(parts), sch.keyParts)
				}
				if table == "BUFFER_PG" && !pattern(`[0-7]((-)[0-7])?`)(parts[len(parts)-1]) {
					t.Errorf("%s: BUFFER_PG|%s: pg_num does not match the model's pattern", p.name, key)
				}
				if (table == "WRED_PROFILE" || table == "DSCP_TO_TC_MAP" || table == "CABLE_LENGTH") && !yangName(key) {
					t.Errorf("%s: %s|%s: name does not match the model's pattern", p.name, table, key)
				}
				for f, v := range fields {
					if sch.nestedKey != nil {
						if !sch.nestedKey(f) || !sch.nestedVal(v) {
							t.Errorf("%s: %s|%s: entry %s: %s outside the model", p.name, table, key, f, v)
						}
						continue
					}
					check, ok := sch.leaves[f]
					if !ok {
						t.Errorf("%s: %s|%s: %s is not a leaf of the model", p.name, table, key, f)
					} else if !check(v) {
						t.Errorf("%s: %s|%s|%s = %q outside the model's type", p.name, table, key, f, v)
					}
				}
				for _, m := range sch.mandatory {
					if _, ok := fields[m]; !ok {
						t.Errorf("%s: %s|%s: mandatory leaf %s missing", p.name, table, key, m)
					}
				}
			}
		}
		// must: max >= min; POLL_INTERVAL only for GLOBAL and <= detection/restoration.
		for name, w := range db["WRED_PROFILE"] {
			for _, c := range []string{"green", "yellow", "red"} {
				lo, _ := strconv.Atoi(w[c+"_min_threshold"])
				hi, _ := strconv.Atoi(w[c+"_max_threshold"])
				if hi < lo {
					t.Errorf("%s: WRED_PROFILE|%s: %s max below min", p.name, name, c)
				}
			}
		}
		poll, _ := strconv.Atoi(db["PFC_WD"]["GLOBAL"]["POLL_INTERVAL"])
		for port, e := range db["PFC_WD"] {
			if port == "GLOBAL" {
				if len(e) != 1 {
					t.Errorf("%s: PFC_WD|GLOBAL holds more than POLL_INTERVAL", p.name)
				}
				continue
			}
			if _, ok := e["POLL_INTERVAL"]; ok {
				t.Errorf("%s: POLL_INTERVAL on a port", p.name)
			}
			for _, f := range []string{"detection_time", "restoration_time"} {
				if n, _ := strconv.Atoi(e[f]); n < poll {
					t.Errorf("%s: PFC_WD|%s|%s %d below POLL_INTERVAL %d", p.name, port, f, n, poll)
				}
			}
		}
		// leafrefs.
		refs := []struct{ table, field, target string }{
			{"BUFFER_PG", "profile", "BUFFER_PROFILE"}, {"BUFFER_PROFILE", "pool", "BUFFER_POOL"},
			{"QUEUE", "scheduler", "SCHEDULER"}, {"QUEUE", "wred_profile", "WRED_PROFILE"},
			{"PORT_QOS_MAP", "dscp_to_tc_map", "DSCP_TO_TC_MAP"},
		}
		for _, r := range refs {
			for key, e := range db[r.table] {
				if v, ok := e[r.field]; ok {
					if _, ok := db[r.target][v]; !ok {
						t.Errorf("%s: %s|%s|%s = %q: no %s entry", p.name, r.table, key, r.field, v, r.target)
					}
				}
			}
		}
	}
}
