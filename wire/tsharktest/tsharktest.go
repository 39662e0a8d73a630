// Package tsharktest runs Wireshark's tshark over captures for tests: an independent dissector to
// check fabricsim's packets against. Tests that need tshark skip without it, except under CI
// (CI=true), which installs it and must not skip.
package tsharktest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Path returns tshark's path, skipping the test when it is missing outside CI.
func Path(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tshark not found; .ci/run must install it (apt-get install tshark)")
		}
		t.Skip("tshark not installed: skipping the dissector cross-check (apt-get install tshark)")
	}
	return p
}

// userDLTsIB maps LINKTYPE_USER0 (147) to the infiniband dissector: tshark 4.0 cannot read
// LINKTYPE_INFINIBAND (247) files ("network type 247 unknown or unsupported").
const userDLTsIB = `uat:user_dlts:"User 0 (DLT=147)","infiniband","0","","0",""`

// Readable returns a file and options under which tshark dissects capture: the file itself, or
// for an InfiniBand capture that this tshark cannot read, a copy relabelled as LINKTYPE_USER0
// with the infiniband dissector mapped to it.
func Readable(t testing.TB, tshark, file string) (string, []string) {
	t.Helper()
	out, err := exec.Command(tshark, "-n", "-r", file, "-c", "1").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "unknown or unsupported") {
		return file, nil
	}
	data, err := os.ReadFile(file)
	if err != nil || len(data) < 24 {
		t.Fatalf("read %s: %v", file, err)
	}
	patched := bytes.Clone(data)
	binary.LittleEndian.PutUint32(patched[20:], 147)
	copyName := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(file), ".pcap")+"-user0.pcap")
	if err := os.WriteFile(copyName, patched, 0o644); err != nil {
		t.Fatal(err)
	}
	return copyName, []string{"-o", userDLTsIB}
}

// Fields dissects file and returns, per packet, the values of the named fields (comma-joined
// when a field occurs several times).
func Fields(t testing.TB, tshark, file string, opts, fields []string) []map[string]string {
	t.Helper()
	args := append([]string{"-n", "-r", file}, opts...)
	args = append(args, "-T", "fields", "-E", "separator=/t", "-E", "occurrence=a", "-E", "aggregator=,")
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(tshark, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("tshark %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var rows []map[string]string
	for _, line := range strings.Split(strings.TrimRight(stdout.String(), "\n"), "\n") {
		if line == "" {
			continue
		}
		vals := strings.Split(line, "\t")
		row := map[string]string{}
		for i, f := range fields {
			if i < len(vals) {
				row[f] = vals[i]
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// Problems lists frames tshark marks malformed or with an expert item of warning severity or
// worse (Wireshark's PI_WARN is 0x00600000).
func Problems(t testing.TB, tshark, file string, opts []string) string {
	t.Helper()
	args := append([]string{"-n", "-r", file}, opts...)
	args = append(args, "-Y", "_ws.malformed || _ws.expert.severity >= 0x600000", "-V")
	out, err := exec.Command(tshark, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("tshark %v: %v\n%s", args, err, out)
	}
	var b strings.Builder
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "Frame ") || strings.Contains(l, "Expert Info") || strings.Contains(l, "Malformed") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// Uint parses a field value (decimal or 0x hex; the first of several occurrences).
func Uint(row map[string]string, field string) (uint64, error) {
	s := row[field]
	if i := strings.IndexByte(s, ','); i >= 0 {
		s = s[:i]
	}
	if s == "" {
		return 0, fmt.Errorf("no %s", field)
	}
	return strconv.ParseUint(s, 0, 64)
}
