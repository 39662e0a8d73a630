package units

import (
	"strings"
	"testing"
)

func TestParseRate(t *testing.T) {
	cases := []struct {
		in   string
		want Rate
	}{
		{"100Gbps", 100 * Gbps},
		{"400G", 400 * Gbps},
		{"1.6Tbps", 1600 * Gbps},
		{"25Gb/s", 25 * Gbps},
		// IB EDR lane signalling rate, [IBA-Vol2].
		{"25.78125Gbps", 25781250000},
		{" 10 Mbps ", 10 * Mbps},
		{"1bps", 1},
	}
	for _, c := range cases {
		got, err := ParseRate(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
}

func TestParseRateErrors(t *testing.T) {
	cases := map[string]string{
		"":        "empty rate",
		"100Gbs":  `unknown unit "Gbs"`,
		"100":     "has no unit",
		"-5Gbps":  "must be positive",
		"0Gbps":   "must be positive",
		"Gbps":    "has no number",
		"1e30bps": "beyond",
		"abc":     "has no number",
	}
	for in, want := range cases {
		_, err := ParseRate(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseRate(%q) error = %v; want it to mention %q", in, err, want)
		}
	}
}

func TestParseSize(t *testing.T) {
	cases := []struct {
		in   string
		want Size
	}{
		{"4096", 4096}, {"4096B", 4096}, {"2MB", 2000000}, {"2MiB", 2 << 20},
		{"1KB", 1000}, {"1KiB", 1024}, {"1GB", 1e9}, {"1GiB", 1 << 30}, {"1.5KiB", 1536}, {"0", 0},
	}
	for _, c := range cases {
		got, err := ParseSize(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"2Mb", "1.5B", "-1KB", "x", "2 MBs"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
}

func TestParseTime(t *testing.T) {
	cases := []struct {
		in   string
		want Time
	}{
		{"1us", Microsecond}, {"1.5us", 1500 * Nanosecond}, {"0.001ms", Microsecond},
		{"500ps", 500}, {"2s", 2 * Second}, {"0", 0}, {"83.88608us", 83886080},
	}
	for _, c := range cases {
		got, err := ParseTime(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseTime(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"1", "1usec", "-1us", "0.1ps", ""} {
		if _, err := ParseTime(bad); err == nil {
			t.Errorf("ParseTime(%q) accepted", bad)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	for _, r := range []Rate{100 * Gbps, 400 * Gbps, 1600 * Gbps, 25781250000, 53125000000, 1, 5 * Mbps} {
		back, err := ParseRate(r.String())
		if err != nil || back != r {
			t.Errorf("rate %d -> %q -> %d, %v", r, r.String(), back, err)
		}
	}
	for _, s := range []Size{0, 1, 4096, 4097, 2 << 20, 2e6, 1 << 30, 12345678} {
		back, err := ParseSize(s.String())
		if err != nil || back != s {
			t.Errorf("size %d -> %q -> %d, %v", s, s.String(), back, err)
		}
	}
	for _, d := range []Time{0, 1, 999, 1000, 1500 * Nanosecond, Microsecond, 83886080, 3*Second + 7} {
		back, err := ParseTime(d.String())
		if err != nil || back != d {
			t.Errorf("time %d -> %q -> %d, %v", d, d.String(), back, err)
		}
	}
}

func TestTransmitTime(t *testing.T) {
	// One byte is 8 bits: 80 ps at 100 Gb/s, 20 ps at 400 Gb/s.
	if got := (100 * Gbps).TransmitTime(1); got != 80 {
		t.Errorf("1 B at 100G = %d ps, want 80", got)
	}
	// 4178 B (4096 payload + 62 header + 20 L1, [IEEE 802.3]) at 400G = 83.56 ns.
	if got := (400 * Gbps).TransmitTime(4178); got != 83560 {
		t.Errorf("4178 B at 400G = %d ps, want 83560", got)
	}
	// Large sizes must not overflow: 1 GiB at 100 Gb/s = 85.89934592 ms.
	if got := (100 * Gbps).TransmitTime(GiB); got != 85899345920 {
		t.Errorf("1 GiB at 100G = %d ps, want 85899345920", got)
	}
	// Rounds up: 1 B at 3 b/s is 8/3 s.
	if got := Rate(3).TransmitTime(1); got != 2666666666667 {
		t.Errorf("1 B at 3 b/s = %d, want 2666666666667", got)
	}
	if got := (100 * Gbps).BytesIn(Microsecond); got != 12500 {
		t.Errorf("100G for 1us = %d B, want 12500", got)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"100Gbps", "2MiB", "1.5us", "1e3", "", "..", "-0", "1e309G"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if r, err := ParseRate(s); err == nil {
			if back, err := ParseRate(r.String()); err != nil || back != r {
				t.Fatalf("rate %q -> %d -> %q does not round trip", s, r, r.String())
			}
		}
		if v, err := ParseSize(s); err == nil {
			if back, err := ParseSize(v.String()); err != nil || back != v {
				t.Fatalf("size %q -> %d -> %q does not round trip", s, v, v.String())
			}
		}
		if v, err := ParseTime(s); err == nil {
			if back, err := ParseTime(v.String()); err != nil || back != v {
				t.Fatalf("time %q -> %d -> %q does not round trip", s, v, v.String())
			}
		}
	})
}
