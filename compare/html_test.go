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
