package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/transport/cc/dcqcn"
	"github.com/fabricsim/fabricsim/units"
)

func roceScenario(fabricKeys string) string {
	return `name: r
topology:
  kind: fat-tree
  k: 4
fabric:
  kind: roce
` + fabricKeys + `traffic:
  kind: incast
  senders: 4
`
}

// The roce defaults (docs/references.md: [IBA] Annex A17, [NVIDIA-RoCE], [ConnectX-DCQCN]): VLAN-tagged IPv4 framing (66 B, ACK 70 B, CNP 82 B, RETH
// 16 B), netdev 4200 -> RoCE MTU 4096, 8 priorities with data on 3 and CNPs on 6, PFC on 3 with
// a dynamic threshold, ECN, DCQCN with the ConnectX preset, go-back-N.
func TestRoCEDefaults(t *testing.T) {
	s, err := Parse([]byte(roceScenario("")), "r.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Build()
	if err != nil {
		t.Fatal(err)
	}
	c := b.Fabric
	if c.MTU != 4096 || c.HeaderBytes != 66 || c.AckBytes != 70 || c.CNPBytes != 82 || c.FirstHeaderExtra != 16 ||
		c.Priorities != 8 || c.DataPriority != 3 || c.CNPPriority != 6 || c.Transport != "gbn" || c.QPsPerConn != 1 {
		t.Fatalf("framing/classes: %+v", c)
	}
	r := c.RoCE
	cx := fabric.DefaultRoCE().RoCE
	if !r.PFC || r.Lossless != 1<<3 || r.PFCThreshold != fabric.PFCDynamic || r.PFCAlpha != 0.125 || !r.ECN || !r.DCQCN || r.Strict != 1<<6|1<<7 ||
		r.DCQCNParams != cx.DCQCNParams || r.StormHost != -1 || r.PauseQuanta != 65535 {
		t.Fatalf("roce defaults: %+v", r)
	}
	if _, err := fabric.New(b.Graph, b.Routes, c); err != nil {
		t.Fatal(err)
	}
}

func TestRoCEKeysApplied(t *testing.T) {
	s, err := Parse([]byte(roceScenario(`  netdev_mtu: 1500
  ipv6: true
  transport: irn
  qps_per_conn: 4
  qp_aware_hash: true
  pfc_threshold: static
  pfc_xoff: 100KB
  pfc_xon: 80KB
  ecn_kmin: 50KB
  ecn_kmax: 200KB
  dcqcn_preset: paper
  dcqcn_rate_ai: 20Mbps
  weights: [1, 2, 1, 4, 1, 1, 1, 1]
`)), "r.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	c := s.FabricConfig()
	if c.MTU != 1024 || c.HeaderBytes != 86 || c.Transport != "irn" || c.QPsPerConn != 4 || !c.RoCE.QPAwareHash ||
		c.RoCE.PFCThreshold != fabric.PFCStatic || c.RoCE.XOFF != 100*units.KB || c.RoCE.XON != 80*units.KB || c.RoCE.Kmin != 50*units.KB ||
		c.RoCE.DCQCNParams.G != 1.0/256 || c.RoCE.DCQCNParams.AI != 20*units.Mbps || c.RoCE.Weights[3] != 4 {
		t.Fatalf("keys not applied: %+v", c)
	}
}

// Every invalid RoCE parameter is rejected at its line with what would be valid.
func TestRoCEBadInput(t *testing.T) {
	for _, c := range []struct {
		keys, field, want string
	}{
		{"  ecn_kmin: 300KB\n  ecn_kmax: 200KB\n", "fabric.ecn_kmin", "Kmin must be at most Kmax"},
		{"  ecn_kmin: 300KB\n", "fabric.ecn_kmin", "give both"},
		{"  ecn_pmax: 0\n", "fabric.ecn_pmax", "outside (0,1]"},
		{"  ecn_pmax: 1.5\n", "fabric.ecn_pmax", "outside (0,1]"},
		{"  pfc_threshold: static\n  pfc_xoff: 100KB\n  pfc_xon: 200KB\n", "fabric.pfc_xon", "XON must be at most XOFF"},
		{"  pfc_threshold: sometimes\n", "fabric.pfc_threshold", "valid: static, dynamic"},
		{"  pfc_alpha: 0\n", "fabric.pfc_alpha", "outside (0,64]"},
		{"  buffer: 1MB\n  pfc_headroom: 2MB\n", "fabric.pfc_headroom", "larger than the 1MB switch buffer"},
		{"  pfc_pause_quanta: 70000\n", "fabric.pfc_pause_quanta", "70000 outside 0..65535"},
		{"  pfc_pause_quanta: 0\n", "fabric.pfc_pause_quanta", "0 outside 1..65535"},
		{"  pfc_priorities: [9]\n", "fabric.pfc_priorities[0]", "outside 0..7"},
		{"  dcqcn_g: 0\n", "fabric.dcqcn_g", "outside (0,1]"},
		{"  dcqcn_g: 1.5\n", "fabric.dcqcn_g", "outside (0,1]"},
		{"  dcqcn_increase_timer: 0\n", "fabric.dcqcn_increase_timer", "must be positive"},
		{"  dcqcn_alpha_timer: 0\n", "fabric.dcqcn_alpha_timer", "must be positive"},
		{"  dcqcn_byte_counter: 0\n", "fabric.dcqcn_byte_counter", "must be positive"},
		{"  dcqcn_min_rate: 0bps\n", "fabric.dcqcn_min_rate", "must be positive"},
		{"  dcqcn_preset: fast\n", "fabric.dcqcn_preset", "valid: paper, connectx, ns3"},
		{"  ecn: false\n", "fabric.dcqcn", "needs ecn: true"},
		{"  transport: tcp\n", "fabric.transport", "valid: gbn"},
		{"  irn_rto_low: 1ms\n", "fabric.irn_rto_low", "above irn_rto_high"},
		{"  qps_per_conn: 0\n", "fabric.qps_per_conn", "outside 1..1024"},
		{"  netdev_mtu: 300\n", "fabric.netdev_mtu", "no RoCE MTU"},
		{"  netdev_mtu: 1500\n  mtu: 4096\n", "fabric.mtu", "does not fit netdev_mtu 1500"},
		{"  random_loss: 1\n", "fabric.random_loss", "outside [0,1)"},
		{"  data_priority: 8\n", "fabric.data_priority", "outside 0..7"},
		{"  weights: [1, 1]\n", "fabric.weights", "want 8 entries, got 2"},
		{"  pfc: false\n  pfc_storm_host: 1\n", "fabric.pfc_storm_host", "needs pfc: true"},
		{"  hpcc_config: nowhere.txt\n", "fabric.hpcc_config", "cannot read"},
		{"  dcqcn_model: dctcp\n", "fabric.dcqcn_model", "valid: paper, connectx, ns3"},
		{"  dcqcn_model: ns3\n  dcqcn_byte_counter: 10KB\n", "fabric.dcqcn_byte_counter", "not a parameter of dcqcn_model ns3"},
		{"  dcqcn_model: ns3\n  dcqcn_alpha_init: 0.5\n", "fabric.dcqcn_alpha_init", "not a parameter of dcqcn_model ns3"},
		{"  dcqcn_clamp_after_timer: true\n", "fabric.dcqcn_clamp_after_timer", "not a parameter of dcqcn_model paper"},
		{"  dcqcn_model: connectx\n  dcqcn_rate_on_first_cnp: 0\n", "fabric.dcqcn_rate_on_first_cnp", "outside (0,1]"},
		{"  ecn_mark: exit\n", "fabric.ecn_mark", "valid: enqueue, dequeue"},
		{"  cnp: piggyback\n", "fabric.cnp", "valid: packet, ack-flag"},
		{"  ack_priority: 9\n", "fabric.ack_priority", "outside 0..7"},
		{"  fct_end: first-ack\n", "fabric.fct_end", "valid: delivery, last-ack"},
		{"  dcqcn: false\n  hpcc: true\n", "fabric.hpcc", "needs in-band telemetry from the switches: set int: true"},
		{"  int: true\n  hpcc: true\n", "fabric.hpcc", "set dcqcn: false"},
		{"  dcqcn: false\n  int: true\n  hpcc: true\n  hpcc_eta: 1.5\n", "fabric.hpcc_eta", "outside (0,1]"},
		{"  dctcp: true\n", "fabric.dctcp", "set dcqcn: false"},
		{"  dcqcn: false\n  int: true\n  hpcc: true\n  dctcp: true\n", "fabric.dctcp", "choose one"},
		{"  dcqcn: false\n  ecn: false\n  dctcp: true\n", "fabric.dctcp", "needs ecn: true"},
		{"  dcqcn: false\n  dctcp: true\n  dctcp_g: 2\n", "fabric.dctcp_g", "outside (0,1]"},
		{"  dctcp_g: 0.5\n", "fabric.dctcp_g", "set dctcp: true"},
		{"  swift: true\n", "fabric.swift", "set dcqcn: false"},
		{"  dcqcn: false\n  int: true\n  hpcc: true\n  swift: true\n", "fabric.swift", "choose one"},
		{"  dcqcn: false\n  dctcp: true\n  swift: true\n", "fabric.swift", "choose one"},
		{"  dcqcn: false\n  int: true\n  swift: true\n", "fabric.swift", "set int: false"},
		{"  dcqcn: false\n  swift: true\n  swift_beta: 2\n", "fabric.swift_beta", "outside (0,1]"},
		{"  swift_beta: 0.5\n", "fabric.swift_beta", "set swift: true"},
		{"  swift_base_target: 20us\n", "fabric.swift_base_target", "set swift: true"},
		{"  transport: uet\n", "fabric.transport", "set dcqcn: false"},
		{"  dcqcn: false\n  swift: true\n  transport: uet\n", "fabric.transport", "set hpcc, dctcp and swift false"},
		{"  dcqcn: false\n  transport: uet\n  uet_cc: dcqcn\n", "fabric.uet_cc", "valid: nscc, none"},
		{"  dcqcn: false\n  transport: uet\n  uet_target_delay: -1us\n", "fabric.uet_target_delay", "must not be negative"},
		{"  dcqcn: false\n  transport: uet\n  uet_ooo_threshold: -1\n", "fabric.uet_ooo_threshold", "is negative"},
		{"  uet_cc: none\n", "fabric.uet_cc", "set transport: uet"},
		{"  transport: irn\n  uet_target_delay: 5us\n", "fabric.uet_target_delay", "set transport: uet"},
		{"  uet_ooo_threshold: 8\n", "fabric.uet_ooo_threshold", "set transport: uet"},
		{"  uet_load_balance: reps\n", "fabric.uet_load_balance", "set transport: uet"},
		{"  dcqcn: false\n  transport: uet\n  uet_load_balance: adaptive\n", "fabric.uet_load_balance", "valid: oblivious, reps"},
		{"  transport: gbn\n  ooo_window: 64\n", "fabric.ooo_window", "set transport: ooo"},
		{"  transport: ooo\n  ooo_window: -1\n", "fabric.ooo_window", "is negative"},
		{"  spray_policy: least_queue\n", "fabric.spray_policy", "set routing: spray"},
		{"  routing: spray\n  spray_policy: adaptive\n", "fabric.spray_policy", "valid: random, least_queue"},
		{"  timely: true\n", "fabric.timely", "set dcqcn: false"},
		{"  dcqcn: false\n  int: true\n  hpcc: true\n  timely: true\n", "fabric.timely", "choose one"},
		{"  dcqcn: false\n  swift: true\n  timely: true\n", "fabric.timely", "choose one"},
		{"  dcqcn: false\n  int: true\n  timely: true\n", "fabric.timely", "set int: false"},
		{"  dcqcn: false\n  timely: true\n  timely_t_high: 40us\n", "fabric.timely_t_high", "must be above timely_t_low"},
		{"  dcqcn: false\n  timely: true\n  timely_alpha: 0\n", "fabric.timely_alpha", "outside (0,1]"},
		{"  timely_beta: 0.5\n", "fabric.timely_beta", "set timely: true"},
		{"  dcqcn: false\n  swift: true\n  timely_segment: 64KB\n", "fabric.timely_segment", "set timely: true"},
	} {
		_, err := Parse([]byte(roceScenario(c.keys)), "r.yaml", "")
		if err == nil {
			t.Errorf("%q: accepted", c.keys)
			continue
		}
		e, ok := err.(*Error)
		if !ok || e.Field != c.field || !strings.Contains(e.Msg, c.want) || e.Pos.Line == 0 {
			t.Errorf("%q: got %v, want %s: ...%s... with a line", c.keys, err, c.field, c.want)
		}
	}
	// A RoCE key under another kind.
	_, err := Parse([]byte(strings.Replace(roceScenario("  pfc: true\n"), "kind: roce", "kind: ethernet", 1)), "r.yaml", "")
	if err == nil || !strings.Contains(err.Error(), "fabric.pfc: is a RoCE key") {
		t.Errorf("RoCE key under ethernet: %v", err)
	}
}

// HPCC ns-3 config.txt names map onto RoCE keys (docs/roce.md); scenario keys win.
func TestHPCCConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := `ENABLE_QCN 1
USE_DYNAMIC_PFC_THRESHOLD 1
PACKET_PAYLOAD_SIZE 1000
CC_MODE 1
ALPHA_RESUME_INTERVAL 1
RATE_DECREASE_INTERVAL 4
CLAMP_TARGET_RATE 0
RP_TIMER 900
EWMA_GAIN 0.00390625
FAST_RECOVERY_TIMES 1
RATE_AI 5Mb/s
RATE_HAI 50Mb/s
MIN_RATE 100Mb/s
BUFFER_SIZE 32
KMAX_MAP 2 25000000000 400 100000000000 1600
KMIN_MAP 2 25000000000 100 100000000000 400
PMAX_MAP 2 25000000000 0.2 100000000000 0.2
FLOW_FILE mix/flow.txt
`
	if err := os.WriteFile(filepath.Join(dir, "config.txt"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Parse([]byte(roceScenario("  hpcc_config: config.txt\n  dcqcn_rate_ai: 8Mbps\n")), filepath.Join(dir, "r.yaml"), dir)
	if err != nil {
		t.Fatal(err)
	}
	c := s.FabricConfig()
	p := c.RoCE.DCQCNParams
	if c.MTU != 1000 || p.IncreaseTimer != 900*units.Microsecond || p.G != 1.0/256 || p.F != 1 || p.AI != 8*units.Mbps ||
		p.HAI != 50*units.Mbps || p.MinRate != 100*units.Mbps || p.ClampTarget || p.AlphaTimer != units.Microsecond ||
		c.Buffer != 32*units.MiB || len(c.RoCE.ECNMap) != 2 || c.RoCE.ECNMap[1].Kmin != 400*units.KB || c.RoCE.ECNMap[1].Kmax != 1600*units.KB {
		t.Fatalf("HPCC config not applied: %+v %+v", c, p)
	}
	// third.cc: ConfigBufferSize(buffer_size * 1024 * 1024), so BUFFER_SIZE 32 is 33554432 B, not 32 MB.
	if c.Buffer != 33554432 {
		t.Errorf("BUFFER_SIZE 32: buffer %d B, want 33554432 B (32 * 1024 * 1024)", int64(c.Buffer))
	}
	for _, v := range []string{"0", "1.5", "4096", "-2"} {
		os.WriteFile(filepath.Join(dir, "buf.txt"), []byte("BUFFER_SIZE "+v+"\n"), 0o644)
		_, err = Parse([]byte(roceScenario("  hpcc_config: buf.txt\n")), filepath.Join(dir, "r.yaml"), dir)
		if err == nil || !strings.Contains(err.Error(), "buf.txt:1") || !strings.Contains(err.Error(), "MiB") {
			t.Errorf("BUFFER_SIZE %s: %v, want an error naming buf.txt:1 and MiB", v, err)
		}
	}
	os.WriteFile(filepath.Join(dir, "bad.txt"), []byte("RATE_AI fast\n"), 0o644)
	_, err = Parse([]byte(roceScenario("  hpcc_config: bad.txt\n")), filepath.Join(dir, "r.yaml"), dir)
	if err == nil || !strings.Contains(err.Error(), "bad.txt:1") || !strings.Contains(err.Error(), "RATE_AI") {
		t.Errorf("bad HPCC config: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "timely.txt"), []byte("CC_MODE 7\n"), 0o644)
	_, err = Parse([]byte(roceScenario("  hpcc_config: timely.txt\n")), filepath.Join(dir, "r.yaml"), dir)
	if err == nil || !strings.Contains(err.Error(), "CC_MODE 7") || !strings.Contains(err.Error(), "timely: true") {
		t.Errorf("CC_MODE 7: %v", err)
	}
	// CC_MODE 3 (HPCC's mix/config.txt): HPCC on INT instead of DCQCN, its RATE_AI, U_TARGET,
	// MI_THRESH and MULTI_RATE.
	os.WriteFile(filepath.Join(dir, "hpcc.txt"), []byte("ENABLE_QCN 1\nCC_MODE 3\nRATE_AI 50Mb/s\nU_TARGET 0.9\nMI_THRESH 0\nMULTI_RATE 1\n"), 0o644)
	sc, err := Parse([]byte(roceScenario("  hpcc_config: hpcc.txt\n")), filepath.Join(dir, "r.yaml"), dir)
	if err != nil {
		t.Fatalf("CC_MODE 3: %v", err)
	}
	if r := sc.FabricConfig().RoCE; !r.HPCC || !r.INT || r.DCQCN || r.HPCCParams.Eta != 0.9 || r.HPCCParams.MaxStage != 0 || r.HPCCParams.AI != 50*units.Mbps || !r.HPCCParams.MultiRate {
		t.Errorf("CC_MODE 3 not applied: hpcc %v int %v dcqcn %v %+v", r.HPCC, r.INT, r.DCQCN, r.HPCCParams)
	}
}

// FuzzHPCCConfig: any config.txt content is accepted or rejected with an error, never a panic.
func FuzzHPCCConfig(f *testing.F) {
	f.Add("CC_MODE 1\nRATE_AI 5Mb/s\nKMAX_MAP 1 25000000000 400\nKMIN_MAP 1 25000000000 100\n")
	f.Add("KMAX_MAP 3 1 2\n")
	f.Add("EWMA_GAIN x\n")
	f.Fuzz(func(t *testing.T, cfg string) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "c.txt"), []byte(cfg), 0o644); err != nil {
			t.Skip()
		}
		_, _ = Parse([]byte(roceScenario("  hpcc_config: c.txt\n")), filepath.Join(dir, "r.yaml"), dir)
	})
}

// dcqcn_model picks the reaction point; its parameters default to its own source's preset
// unless dcqcn_preset says otherwise, and the issue-19 keys reach the fabric configuration.
func TestDCQCNModelKeys(t *testing.T) {
	for _, c := range []struct {
		keys  string
		model dcqcn.Model
		want  dcqcn.Params
	}{
		{"", dcqcn.ModelPaper, dcqcn.ConnectX()},
		{"  dcqcn_model: ns3\n", dcqcn.ModelNS3, dcqcn.NS3()},
		{"  dcqcn_model: paper\n", dcqcn.ModelPaper, dcqcn.Paper()},
		{"  dcqcn_model: connectx\n  dcqcn_preset: paper\n", dcqcn.ModelConnectX, dcqcn.Paper()},
	} {
		s, err := Parse([]byte(roceScenario(c.keys)), "r.yaml", "")
		if err != nil {
			t.Fatalf("%q: %v", c.keys, err)
		}
		r := s.FabricConfig().RoCE
		if r.DCQCNModel != c.model || r.DCQCNParams != c.want {
			t.Errorf("%q: model %s params %+v, want %s %+v", c.keys, r.DCQCNModel, r.DCQCNParams, c.model, c.want)
		}
	}
	s, err := Parse([]byte(roceScenario("  ecn_mark: dequeue\n  cnp: ack-flag\n  ack_priority: 7\n  fct_end: last-ack\n")), "r.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	if c := s.FabricConfig(); c.RoCE.ECNMark != fabric.ECNMarkDequeue || c.RoCE.CNP != fabric.CNPAckFlag || c.AckPriority != 7 || c.FCTEnd != fabric.FCTLastAck {
		t.Errorf("keys not applied: %+v", c)
	}
}
