package roceconf

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// fuzzImport checks one dialect's importer on arbitrary input: it never panics, and what it
// accepts is a valid configuration (Import validates it) whose keys load as a scenario.
func fuzzImport(f *testing.F, format Format, ext string, seeds ...string) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*."+ext))
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		im, err := Import(format, []File{{Name: "fuzz", Data: data}})
		if err != nil {
			return
		}
		if err := im.Config.Validate(); err != nil {
			t.Fatalf("accepted an invalid configuration: %v", err)
		}
		var b bytes.Buffer
		if err := im.WriteYAML(&b, []string{"fuzz"}); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzImportNVUE(f *testing.F) {
	fuzzImport(f, NVUE, "nvue", "nv set qos roce\n", "nv set qos roce mode lossy\n",
		"nv set qos congestion-control default-global traffic-class 0-7 min-threshold 1\nnv set qos congestion-control default-global traffic-class 0-7 max-threshold 1\n")
}

func FuzzImportSONiC(f *testing.F) {
	fuzzImport(f, SONiC, "json", `{"PORT_QOS_MAP": {"Ethernet0": {"pfc_enable": "3,4"}}}`, `{"QUEUE": {"Ethernet0|0-7": {"scheduler": "[SCHEDULER|s]"}}, "SCHEDULER": {"s": {"type": "DWRR", "weight": "1"}}}`)
}

func FuzzImportEOS(f *testing.F) {
	fuzzImport(f, EOS, "eos", "qos profile X\n   tx-queue 3\n      random-detect ecn minimum-threshold 1 kbytes maximum-threshold 2 mbytes\n")
}

func FuzzImportConnectX(f *testing.F) {
	fuzzImport(f, ConnectX, "sh", "/sys/kernel/debug/mlx5/0000:08:00.0/cc_params/rp_ai_rate:5\n", "mlnx_qos -i eth0 --pfc=0,0,0,1,0,0,0,0 --dscp2prio set,26,3\n")
}

// FuzzDetect: any input is either a dialect whose importer does not panic, or an error.
func FuzzDetect(f *testing.F) {
	f.Add([]byte("nv set qos roce\n"))
	f.Add([]byte("{}"))
	f.Add([]byte("qos profile X\n"))
	f.Add([]byte("mlnx_qos -i eth0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := Detect("fuzz", data); err != nil {
			return
		}
		_, _ = Import("", []File{{Name: "fuzz", Data: data}})
	})
}
