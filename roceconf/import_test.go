package roceconf

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/fabric"
	"github.com/fabricsim/fabricsim/units"
)

// TestImportVendorDefaults reads configurations as operators write them and checks the
// fabricsim settings they come to, each from its source.
func TestImportVendorDefaults(t *testing.T) {
	cases := []struct {
		name, file string
		f          Format
		want       map[string]string
		notes      int // how many lines the import reports as not imported
	}{{
		// NVIDIA's RoCE lossless profile ([NVIDIA-RoCE]): ECN 150,000..1,500,000 B with
		// probability 100 on TC 3, PFC on 3, CNPs on 6 strict, TC 3 and 0 at 50 % each.
		name: "nvue roce profile", f: NVUE, file: "cumulus@leaf01:mgmt:~$ nv set qos roce\nnv config apply\n",
		want: map[string]string{"data_priority": "3", "cnp_priority": "6", "pfc": "true", "pfc_priorities": "[3]",
			"ecn": "true", "ecn_kmin": "150KB", "ecn_kmax": "1500KB", "ecn_pmax": "1", "strict_priorities": "[6]",
			"weights": "[1, 1, 1, 6, 1, 1, 1, 1]"},
		notes: 2, // the TC 0 sharing, ECN on TC 0
	}, {
		name: "nvue lossy profile with overrides", f: NVUE,
		file: "nv set qos roce mode lossy\nnv set qos congestion-control default-global traffic-class 3 min-threshold 40000\n" +
			"nv set qos congestion-control default-global traffic-class 3 max-threshold 200000\nnv set qos congestion-control default-global traffic-class 3 probability 80\n" +
			"nv set qos pfc-watchdog polling-interval 200\nnv set qos pfc-watchdog robustness 5\nnv set interface swp1-32 qos pfc-watchdog\n",
		want:  map[string]string{"pfc": "false", "ecn_kmin": "40KB", "ecn_kmax": "200KB", "ecn_pmax": "0.8", "pfc_watchdog": "1s"},
		notes: 2,
	}, {
		// SONiC's Mellanox-style lossless settings (sonic-buildimage Configuration.md examples):
		// WRED AZURE_LOSSLESS ecn_all, 1 MiB .. 2 MiB at 5 %, a dynamic_th -3 profile whose
		// reserved size is below its xoff.
		name: "sonic mellanox style", f: SONiC, file: `{
 "BUFFER_POOL": {"ingress_lossless_pool": {"mode": "dynamic", "size": "14542848", "type": "ingress"}},
 "BUFFER_PROFILE": {"pg_lossless_40000_5m_profile": {"dynamic_th": "-3", "pool": "[BUFFER_POOL|ingress_lossless_pool]", "size": "1248", "xoff": "66560", "xon": "2288"}},
 "BUFFER_PG": {"Ethernet0|3-4": {"profile": "[BUFFER_PROFILE|pg_lossless_40000_5m_profile]"}, "Ethernet0|0": {"profile": "[BUFFER_PROFILE|ingress_lossy_profile]"}},
 "PORT_QOS_MAP": {"Ethernet0": {"dscp_to_tc_map": "[DSCP_TO_TC_MAP|AZURE]", "pfc_enable": "3,4", "tc_to_queue_map": "[TC_TO_QUEUE_MAP|AZURE]"}},
 "DSCP_TO_TC_MAP": {"AZURE": {"26": "3", "48": "6", "0": "0"}},
 "QUEUE": {"Ethernet0|3-4": {"scheduler": "[SCHEDULER|scheduler.1]", "wred_profile": "[WRED_PROFILE|AZURE_LOSSLESS]"}},
 "SCHEDULER": {"scheduler.1": {"type": "DWRR", "weight": "15"}},
 "WRED_PROFILE": {"AZURE_LOSSLESS": {"ecn": "ecn_all", "green_max_threshold": "2097152", "green_min_threshold": "1048576", "green_drop_probability": "5", "wred_green_enable": "true"}},
 "PFC_WD": {"Ethernet0": {"action": "drop", "detection_time": "200", "restoration_time": "200"}, "GLOBAL": {"POLL_INTERVAL": "200"}},
 "DEVICE_METADATA": {"localhost": {"hostname": "sonic"}}
}`,
		want: map[string]string{"buffer": "14202KiB", "pfc_threshold": "dynamic", "pfc_alpha": "0.125", "pfc_headroom": "65KiB",
			"pfc_priorities": "[3, 4]", "data_priority": "3", "cnp_priority": "6", "ecn_kmin": "1MiB", "ecn_kmax": "2MiB",
			"ecn_pmax": "0.05", "pfc_watchdog": "200ms", "pfc_watchdog_restore": "200ms"},
		notes: 5, // other tables, tc_to_queue_map, size < xoff, xon with dynamic, POLL_INTERVAL
	}, {
		name: "eos in kbytes", f: EOS, file: "qos profile RDMA\n   qos trust dscp\n   uc-tx-queue 3\n      random-detect ecn minimum-threshold 150 kbytes maximum-threshold 1500 kbytes max-mark-probability 10 weight 0\n   priority-flow-control on\n   priority-flow-control priority 3 no-drop\n",
		want:  map[string]string{"ecn": "true", "ecn_kmin": "150KB", "ecn_kmax": "1500KB", "ecn_pmax": "0.1", "pfc": "true", "pfc_priorities": "[3]", "strict_priorities": "[0, 1, 2, 3, 4, 5, 6, 7]"},
		notes: 1, // weight (queue 3 is strict: EOS's default without `no priority`)
	}, {
		// `grep -H . /sys/kernel/debug/mlx5/*/cc_params/*` and MLNX_OFED's sysfs names.
		name: "connectx dump", f: ConnectX,
		file: "/sys/kernel/debug/mlx5/0000:08:00.0/cc_params/rp_ai_rate:5\n/sys/kernel/debug/mlx5/0000:08:00.0/cc_params/rp_dce_tcp_g:1019\n" +
			"/sys/kernel/debug/mlx5/0000:08:00.0/cc_params/rp_gd:11\n/sys/kernel/debug/mlx5/0000:08:00.0/cc_params/np_min_time_between_cnps:0\n" +
			"echo 2 > /sys/class/net/eth0/ecn/roce_rp/rpg_time_reset\necho 1 > /sys/class/net/eth0/ecn/roce_np/enable/3\necho 1 > /sys/class/net/eth0/ecn/roce_rp/enable/3\n" +
			"mlnx_qos -i eth0 --trust dscp --pfc 0,0,0,1,0,0,0,0\n",
		want: map[string]string{"dcqcn_rate_ai": "5Mbps", "dcqcn_g": "0.0048828125", "dcqcn_cnp_interval": "0s",
			"dcqcn_increase_timer": "2us", "dcqcn": "true", "pfc": "true", "pfc_priorities": "[3]"},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, f := range []Format{c.f, ""} { // given and detected
				im, err := Import(f, []File{{Name: "cfg", Data: []byte(c.file)}})
				if err != nil {
					t.Fatalf("format %q: %v", f, err)
				}
				for k, v := range c.want {
					if _, ok := im.Origin(k); !ok {
						t.Errorf("fabric.%s not imported", k)
					} else if got := im.Text(k); got != v {
						t.Errorf("fabric.%s = %s, want %s", k, got, v)
					}
				}
				if len(im.Notes) != c.notes {
					t.Errorf("%d notes, want %d:\n%s", len(im.Notes), c.notes, notesText(im))
				}
				checkLoads(t, im)
			}
		})
	}
}

func notesText(im *Imported) string {
	var b strings.Builder
	for _, n := range im.Notes {
		b.WriteString(n.String() + "\n")
	}
	return b.String()
}

// TestImportBadInput: each bad file gets one error naming the file, the line and the vendor key.
func TestImportBadInput(t *testing.T) {
	sonicProb := `{"PORT_QOS_MAP": {"Ethernet0": {"pfc_enable": "3"}},
"QUEUE": {"Ethernet0|3": {"wred_profile": "W"}},
"WRED_PROFILE": {"W": {"ecn": "ecn_all", "green_min_threshold": "1000", "green_max_threshold": "2000",
  "green_drop_probability": "150"}}}`
	cases := []struct {
		name string
		f    Format
		file string
		want string // substring of the error: file:line, key and what is wrong
	}{
		{"unknown dialect", "", "interface ge-0/0/0 {\n  unit 0;\n}\n", "cfg: not a configuration format fabricsim reads (valid: nvue"},
		{"no nvue in it", NVUE, "hostname leaf01\n", "cfg: holds no nvue configuration: not a configuration format fabricsim reads"},
		{"json given as nvue", NVUE, `{"WRED_PROFILE": {}}`, "cfg: reads as sonic, not nvue"},
		{"nvue probability 150", NVUE, "nv set qos congestion-control default-global traffic-class 3 probability 150\n", "cfg:1: nv set qos congestion-control default-global traffic-class 3 probability 150: \"150\" is not a whole number 1..100"},
		{"nvue bad alpha", NVUE, "nv set qos advance-buffer-config default-global ingress-lossless-buffer shared-alpha alpha_3\n", "cfg:1:"},
		{"nvue min without max", NVUE, "nv set qos congestion-control default-global traffic-class 3 min-threshold 1000\n", "cfg:1: nv set qos congestion-control default-global traffic-class 3 min-threshold 1000: traffic class 3 has a minimum threshold but no maximum"},
		{"nvue min above max", NVUE, "nv set qos congestion-control default-global traffic-class 3 min-threshold 9000\nnv set qos congestion-control default-global traffic-class 3 max-threshold 1000\n", "cfg:1: nv set qos congestion-control default-global traffic-class 3 min-threshold 9000: gives fabric.ecn_kmin: 9KB above ecn_kmax 1KB"},
		{"sonic probability 150", SONiC, sonicProb, "cfg:4: WRED_PROFILE|W|green_drop_probability: \"150\" is not a percentage 0..100"},
		{"sonic syntax", SONiC, "{\"PFC_WD\": {\"Ethernet0\": {\"detection_time\": }}}", "cfg:1: not valid JSON"},
		{"sonic detection 50", SONiC, `{"PFC_WD": {"Ethernet0": {"detection_time": "50"}}}`, "cfg:1: PFC_WD|Ethernet0|detection_time: \"50\" is not a whole number 100..5000"},
		{"sonic ports disagree", SONiC, "{\"PORT_QOS_MAP\": {\"Ethernet0\": {\"pfc_enable\": \"3\"},\n \"Ethernet4\": {\"pfc_enable\": \"3,4\"}}}", "cfg:2: PORT_QOS_MAP|Ethernet4|pfc_enable: pfc_enable is \"3,4\" here but \"3\" at cfg:1"},
		{"sonic dynamic_th 9", SONiC, `{"PORT_QOS_MAP": {"Ethernet0": {"pfc_enable": "3"}}, "BUFFER_PG": {"Ethernet0|3": {"profile": "P"}}, "BUFFER_PROFILE": {"P": {"dynamic_th": "9", "pool": "X", "size": "0"}}}`, "BUFFER_PROFILE|P|dynamic_th: \"9\" is not a whole number -8..7"},
		{"eos segments", EOS, "qos profile X\n   uc-tx-queue 3\n      random-detect ecn minimum-threshold 10 segments maximum-threshold 20 segments\n", "cfg:3: random-detect ecn minimum-threshold 10 segments maximum-threshold 20 segments: thresholds in segments"},
		{"eos probability 0", EOS, "qos profile X\n   uc-tx-queue 3\n      random-detect ecn minimum-threshold 10 bytes maximum-threshold 20 bytes max-mark-probability 0\n", "max-mark-probability \"0\": want 1..100"},
		{"eos watchdog 90s", EOS, "priority-flow-control pause watchdog default timeout 90\n", "cfg:1: priority-flow-control pause watchdog default timeout 90: \"90\" is not a time in seconds 0.01..60"},
		{"connectx g 2000", ConnectX, "echo 2000 > /sys/kernel/debug/mlx5/x/cc_params/rp_dce_tcp_g\n", "cfg:1: rp_dce_tcp_g: 2000: g = (1024 - rp_dce_tcp_g)/1024 must be positive"},
		{"connectx min_dec_fac 100", ConnectX, "echo 100 > $CC/rp_min_dec_fac\n", "cfg:1: rp_min_dec_fac: 100: fabricsim's dcqcn_min_dec_factor is below 1"},
		{"connectx negative", ConnectX, "echo -1 > $CC/rp_ai_rate\n", "cfg:1: rp_ai_rate: \"-1\" is not a value 0..4294967295"},
		{"connectx pfc flags", ConnectX, "mlnx_qos -i eth0 --pfc 0,0,0,1\n", "cfg:1: mlnx_qos -i eth0 --pfc 0,0,0,1: --pfc 0,0,0,1: want 8 comma-separated 0/1 flags"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Import(c.f, []File{{Name: "cfg", Data: []byte(c.file)}})
			if err == nil {
				t.Fatalf("no error")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q\nwant it to contain %q", err, c.want)
			}
		})
	}
}

// TestImportConflict: two files that set one key to different values are an error naming both.
func TestImportConflict(t *testing.T) {
	a := File{Name: "leaf.nvue", Data: []byte("nv set qos pfc default-global switch-priority 3\n")}
	b := File{Name: "host.sh", Data: []byte("mlnx_qos -i eth0 --pfc 0,0,0,0,1,0,0,0\n")}
	_, err := Import("", []File{a, b})
	if err == nil || !strings.Contains(err.Error(), "host.sh:1: mlnx_qos -i eth0 --pfc 0,0,0,0,1,0,0,0: sets fabric.pfc_priorities to [4], but leaf.nvue:1: nv set qos pfc default-global switch-priority 3 set it to [3]") {
		t.Errorf("got %v", err)
	}
	// Agreeing files combine: the switch's ECN and the host's DCQCN.
	b.Data = []byte("mlnx_qos -i eth0 --pfc 0,0,0,1,0,0,0,0\necho 8 > $CC/rp_ai_rate\n")
	im, err := Import("", []File{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if im.Text("pfc_priorities") != "[3]" || im.Text("dcqcn_rate_ai") != "8Mbps" {
		t.Errorf("combined import: %s, %s", im.Text("pfc_priorities"), im.Text("dcqcn_rate_ai"))
	}
}

// TestExportOutOfRange: a value a format cannot hold is an error naming the scenario key and
// the vendor's range; one it holds only rounded is a note.
func TestExportOutOfRange(t *testing.T) {
	cases := []struct {
		name string
		f    Format
		edit func(c *fabric.Config)
		err  string
		note string
	}{
		{"sonic watchdog 50ms", SONiC, func(c *fabric.Config) { c.RoCE.Watchdog = 50 * units.Millisecond },
			"fabric.pfc_watchdog: 50ms is outside SONiC PFC_WD detection_time's 100..5000 ms (format sonic)", ""},
		{"nvue pmax 0.1 %", NVUE, func(c *fabric.Config) { c.RoCE.Pmax = 0.001 },
			"fabric.ecn_pmax: 0.001 is 0 %, outside NVUE probability's 1..100 % (format nvue)", ""},
		{"eos watchdog 5ms", EOS, func(c *fabric.Config) { c.RoCE.Watchdog = 5 * units.Millisecond },
			"fabric.pfc_watchdog: 5ms is outside EOS watchdog timeout's 1..6000 x 10 ms", ""},
		{"connectx g too small", ConnectX, func(c *fabric.Config) { c.RoCE.DCQCNParams.G = 0.0001 },
			"fabric.dcqcn_g: 0.0001 is (1024 - 1024)/1024, outside ConnectX rp_dce_tcp_g's 0..1023", ""},
		{"connectx g rounded", ConnectX, func(c *fabric.Config) { c.RoCE.DCQCNParams.G = 0.005 }, "",
			"fabric.dcqcn_g: 0.005 written as rp_dce_tcp_g 1019 (g = 5/1024)"},
		{"sonic alpha 1/1024", SONiC, func(c *fabric.Config) { c.RoCE.PFCAlpha = 1.0 / 1024 },
			"fabric.pfc_alpha: 0.0009765625 outside SONiC's dynamic_th -8..7", ""},
		{"nvue alpha 0.2 rounded", NVUE, func(c *fabric.Config) { c.RoCE.PFCAlpha = 0.2 }, "",
			"fabric.pfc_alpha: 0.2 written as alpha_1_4"},
		{"connectx AI 2.5Mbps rounded", ConnectX, func(c *fabric.Config) { c.RoCE.DCQCNParams.AI = 2500 * units.Kbps }, "",
			"fabric.dcqcn_rate_ai: 2.5Mbps written as 3 Mb/s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := fabric.DefaultRoCE()
			cfg.RoCE.Watchdog = 200 * units.Millisecond
			c.edit(&cfg)
			var b bytes.Buffer
			notes, err := Export(&b, c.f, cfg, target)
			switch {
			case c.err != "":
				var ee *ExportError
				if err == nil || !errors.As(err, &ee) || !strings.Contains(err.Error(), c.err) {
					t.Errorf("error %v, want %q", err, c.err)
				}
				if b.Len() != 0 {
					t.Errorf("wrote %d bytes on error", b.Len())
				}
			case err != nil:
				t.Fatal(err)
			default:
				if !strings.Contains(strings.Join(notes, "\n"), c.note) {
					t.Errorf("notes %q, want %q", notes, c.note)
				}
			}
		})
	}
}

// TestDetect tells every golden export's dialect from its content.
func TestDetect(t *testing.T) {
	want := map[string]Format{".nvue": NVUE, ".json": SONiC, ".eos": EOS, ".sh": ConnectX}
	files, _ := filepath.Glob("testdata/*")
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := Detect(p, data)
		if err != nil || f != want[filepath.Ext(p)] {
			t.Errorf("%s: detected %q (%v), want %s", p, f, err, want[filepath.Ext(p)])
		}
	}
}
