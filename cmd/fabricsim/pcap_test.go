package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fabricsim/fabricsim/wire"
	"github.com/fabricsim/fabricsim/wire/tsharktest"
)

// TestIBCaptureTsharkRecipe: `run --pcap` on an infiniband fabric says where it wrote how much
// (files, packets, bytes: checked against the files), and the recipe docs/infiniband.md gives
// for Wireshark/tshark 4.0, run as written, dissects the capture's data packets and ACKs in
// full. The tshark part skips without tshark, except under CI=true.
func TestIBCaptureTsharkRecipe(t *testing.T) {
	dir := t.TempDir()
	scen := filepath.Join(dir, "ib.yaml")
	os.WriteFile(scen, []byte("name: ib-pcap\ntopology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 2}\n"+
		"fabric: {kind: infiniband}\ntraffic:\n  kind: flows\n  flows:\n    - {src: 0, dst: 3, size: 64KB}\n"), 0o644)
	pc := filepath.Join(dir, "pc")
	code, out := run(t, "run", scen, "--pcap", pc, "--pcap-ports", "host0:0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	file := filepath.Join(pc, "host0-p0.pcap")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := wire.NewPcapReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	pkts := 0
	for {
		if _, err := pr.Next(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkts++
	}
	// 64 KB in 4 KiB packets: 16 data packets, plus the credit updates host0 returns for ACKs.
	if pr.LinkType() != wire.LinkTypeInfiniBand || pkts < 16 {
		t.Fatalf("link type %d, %d packets; want 247 and at least 16", pr.LinkType(), pkts)
	}
	want := fmt.Sprintf("  pcap      1 files in %s: %d packets, %d bytes (LINKTYPE_INFINIBAND; with Wireshark/tshark 4.0 see docs/infiniband.md, Captures)", pc, pkts, len(data))
	if !strings.Contains(out, want) {
		t.Errorf("run output lacks %q:\n%s", want, out)
	}

	tsharktest.Path(t) // skips without tshark (fails under CI=true)
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "infiniband.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "<!-- tshark-4.0-recipe")
	if !ok {
		t.Fatal("docs/infiniband.md has no tshark-4.0-recipe block")
	}
	parts := strings.SplitN(after, "```", 3)
	if len(parts) < 3 {
		t.Fatal("docs/infiniband.md: the recipe is not in a ``` block")
	}
	recipe := strings.TrimSpace(parts[1])
	work := t.TempDir()
	os.WriteFile(filepath.Join(work, "host0-p0.pcap"), data, 0o644)
	runRecipe := func(extra string) string {
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", recipe+extra)
		cmd.Dir = work
		o, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("recipe %q: %v\n%s", recipe+extra, err, o)
		}
		os.WriteFile(filepath.Join(work, "host0-p0.pcap"), data, 0o644) // undo the relabel for the next run
		return string(o)
	}
	got := runRecipe("")
	if strings.Contains(got, "unknown or unsupported") || !strings.Contains(got, "InfiniBand") || !strings.Contains(got, "RC RDMA Write") {
		t.Errorf("recipe output does not show dissected InfiniBand RC packets:\n%s", got)
	}
	if bad := runRecipe(" -Y 'frame.len > 6 && _ws.malformed'"); strings.Contains(bad, "Malformed") {
		t.Errorf("tshark finds data packets malformed:\n%s", bad)
	}
}
