package compare

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestReportInChromium opens report.html in headless Chromium (Debian package "chromium") and
// checks that the page logs nothing to the console (Chromium logs every console message,
// errors and uncaught exceptions included, as INFO:CONSOLE lines with --enable-logging=stderr)
// and that its script counted at least four charts with data. Without Chromium the test is
// skipped, unless CI=true, where it fails.
func TestReportInChromium(t *testing.T) {
	bin := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium not installed (apt-get install -y chromium)")
		}
		t.Skip("chromium not installed (apt-get install -y chromium); set CI=true to make this a failure")
	}
	r := run(t, fmt.Sprintf(moe, 3.0, "ib-ndr, roce-default, roce-tuned"), Options{})
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteHTML(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--enable-logging=stderr", "--v=0",
		"--dump-dom", "file://"+page)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, ":CONSOLE") || strings.Contains(line, "Uncaught") {
			t.Errorf("console output: %s", line)
		}
	}
	m := regexp.MustCompile(`id="fabricsim-charts" data-charts="(\d+)"`).FindStringSubmatch(stdout.String())
	if m == nil {
		t.Fatalf("the page's chart count is missing from the DOM (script did not run?)")
	}
	n, _ := strconv.Atoi(m[1])
	t.Logf("%d non-empty charts", n)
	if n < 4 {
		t.Errorf("%d non-empty charts, want at least 4", n)
	}
}

// TestParamRows: the report's parameter table lists each variant's settings under their
// scenario keys (never Go field names), with the values a scenario would write, and marks
// exactly the rows whose values differ between variants.
func TestParamRows(t *testing.T) {
	s, err := Parse([]byte(fmt.Sprintf(dense, "400Gbps", "gpudirect", "ib-ndr, roce-default, roce-tuned")), "test.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	keys, cells, differ := ParamRows(s.Variants)
	row := map[string]int{}
	for i, k := range keys {
		if !regexp.MustCompile(`^fabric\.[a-z0-9_]+(\.[a-z0-9_]+)?$`).MatchString(k) {
			t.Errorf("parameter %q is not a scenario key", k)
		}
		row[k] = i
	}
	for _, c := range []struct {
		key    string
		values []string // ib-ndr, roce-default, roce-tuned
		differ bool
	}{
		// The built-in variants' own keys (variants.go) and defaults from the fabric's tables.
		{"fabric.dcqcn_rate_ai", []string{"", "5Mbps", "10Mbps"}, true},
		{"fabric.dcqcn_min_dec_factor", []string{"", "0.5", "0.9"}, true},
		{"fabric.ecn_kmin", []string{"", "150KB", "150KB"}, true},
		{"fabric.pfc_priorities", []string{"", "[3]", "[3]"}, true},
		{"fabric.mtu", []string{"4KiB", "4KiB", "4KiB"}, false},
		{"fabric.header_bytes", []string{"26", "66", "66"}, true},
		{"fabric.adaptive_routing", []string{"true", "", ""}, true},
		{"fabric.ib_cc.ccti_timer", []string{"2us", "", ""}, true},
		{"fabric.kind", []string{"infiniband", "roce", "roce"}, true},
	} {
		r, ok := row[c.key]
		if !ok {
			t.Errorf("%s missing from the table", c.key)
			continue
		}
		if strings.Join(cells[r], "|") != strings.Join(c.values, "|") || differ[r] != c.differ {
			t.Errorf("%s: %q differ=%v, want %q differ=%v", c.key, cells[r], differ[r], c.values, c.differ)
		}
	}
	// The keys of every kind come first: routing (which InfiniBand lacks) before generation.
	if row["fabric.routing"] > row["fabric.no_progress"] || row["fabric.no_progress"] > row["fabric.generation"] {
		t.Errorf("order: routing %d, no_progress %d, generation %d", row["fabric.routing"], row["fabric.no_progress"], row["fabric.generation"])
	}
	// InfiniBand routes by routing_engine: the Ethernet key is not listed for it.
	if r := row["fabric.routing"]; cells[r][0] != "" || cells[r][1] != "ecmp" {
		t.Errorf("fabric.routing: %q", cells[r])
	}
}
