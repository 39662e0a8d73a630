package fabric

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/msggraph"
	"github.com/fabricsim/fabricsim/topo"
	"github.com/fabricsim/fabricsim/units"
	"github.com/fabricsim/fabricsim/wire"
)

// captureRun runs g with cfg and mg, capturing sel into a temp dir, and returns the files.
func captureRun(t *testing.T, g *topo.Graph, cfg Config, mg *msggraph.Graph, sel string, setup func(*Network)) []string {
	t.Helper()
	n := newNet(t, g, cfg)
	if setup != nil {
		setup(n)
	}
	dir := t.TempDir()
	c, err := n.EnableCapture(dir, sel, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Run(mg, units.MaxTime); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	return c.Files()
}

func checkFile(t *testing.T, name string) wire.CheckSummary {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sum, err := wire.Check(f)
	if err != nil {
		t.Fatal(err)
	}
	if !sum.OK() {
		t.Fatalf("%s: %d packets fail our own checker: %v", name, sum.ErrorCount, sum.Errors)
	}
	return sum
}

func TestCaptureEthernet(t *testing.T) {
	g := line(1, 100*units.Gbps, units.Microsecond)
	mg := &msggraph.Graph{Endpoints: 2}
	mg.Add(msggraph.Message{Src: 0, Dst: 1, Bytes: 3*4096 + 100}) // WRITE First, Middle, Middle, Last
	files := captureRun(t, g, DefaultEthernet(), mg, "host0:0,host1:0", nil)
	if len(files) != 2 {
		t.Fatalf("files %v", files)
	}
	tx := checkFile(t, files[0])
	rx := checkFile(t, files[1])
	if tx.Packets != 4 || rx.Packets != 4 {
		t.Fatalf("host0 sent %d packets, host1 %d; want 4 data and 4 ACKs", tx.Packets, rx.Packets)
	}
	tshark := tsharkPath(t)
	out, err := exec.Command(tshark, "-r", files[0], "-T", "fields", "-e", "infiniband.bth.opcode", "-e", "infiniband.bth.psn", "-e", "infiniband.bth.destqp", "-e", "infiniband.reth.dmalen", "-e", "_ws.malformed").CombinedOutput()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, out)
	}
	// RC RDMA WRITE First (6) with RETH DMA length = message size, Middle (7) x2, Last (8);
	// PSNs 0..3; one QP (0x100, the first above the special QPs 0 and 1).
	want := "6\t0\t0x000100\t12388\t\n7\t1\t0x000100\t\t\n7\t2\t0x000100\t\t\n8\t3\t0x000100\t\t\n"
	if got := filterTshark(string(out)); got != want {
		t.Fatalf("tshark fields:\n%q\nwant\n%q", got, want)
	}
}

// tsharkPath finds tshark: integration tests skip without it, except in CI, which installs it.
func tsharkPath(t *testing.T) string {
	p, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tshark not found; .ci/run must install it (apt-get install tshark)")
		}
		t.Skip("tshark not installed: skipping the dissector cross-check (apt-get install tshark)")
	}
	return p
}

func filterTshark(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if l == "" || strings.HasPrefix(l, "Running as user") {
			continue
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}

// tsharkJSON dissects a capture and returns each packet's layers.
func tsharkJSON(t *testing.T, file string, extra ...string) []map[string]any {
	t.Helper()
	args := append([]string{"-r", file, "-T", "json"}, extra...)
	out, err := exec.Command(tsharkPath(t), args...).Output()
	if err != nil {
		t.Fatalf("tshark %s: %v", filepath.Base(file), err)
	}
	var pkts []struct {
		Source struct {
			Layers map[string]any `json:"layers"`
		} `json:"_source"`
	}
	if err := json.Unmarshal(out, &pkts); err != nil {
		t.Fatalf("tshark json: %v", err)
	}
	var layers []map[string]any
	for _, p := range pkts {
		if _, bad := p.Source.Layers["_ws.malformed"]; bad {
			t.Fatalf("%s: tshark reports a malformed packet: %v", file, p.Source.Layers)
		}
		layers = append(layers, p.Source.Layers)
	}
	return layers
}
