package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fabricsim/fabricsim/headroom"
	"github.com/fabricsim/fabricsim/units"
)

type headroomFlags struct {
	rate, cable, swLat, buffer string
	mtu, ports, classes        int
}

func newHeadroomCmd() *cobra.Command {
	var f headroomFlags
	c := &cobra.Command{
		Use:   "headroom --rate 400G --cable 100m --mtu 4096",
		Short: "PFC headroom and XOFF/XON advice for one link, every term of the formula shown",
		Long: `Headroom is the buffer a lossless priority needs at an ingress port for the bytes that still
arrive after it sends PAUSE. It is computed two ways (docs/references.md): NVIDIA's mlx5 driver formula
xoff_bytes = (301 + 2.16 x cable_m) x speed_Gbps + 2.72 x MTU, and the IEEE 802.1Qbb-style
breakdown (cable round trip + both ends' response delays) x rate + two max frames + the PAUSE
frame. With --buffer and --ports it also says how much shared buffer the reservation leaves.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runHeadroom(c.OutOrStdout(), &f) },
	}
	c.Flags().StringVar(&f.rate, "rate", "400G", "link rate (e.g. 100G, 400Gbps, 800G)")
	c.Flags().StringVar(&f.cable, "cable", "7m", "cable length (e.g. 7m, 100m, 2km); the mlx5 default is 7 m")
	c.Flags().IntVar(&f.mtu, "mtu", 4200, "largest frame in bytes (the netdev MTU)")
	c.Flags().StringVar(&f.swLat, "switch-latency", "500ns", "each end's response and interface delay (switch pipeline latency)")
	c.Flags().StringVar(&f.buffer, "buffer", "", "switch buffer (e.g. 32MiB): report the shared buffer left after the reservation")
	c.Flags().IntVar(&f.ports, "ports", 64, "switch ports reserving headroom (with --buffer)")
	c.Flags().IntVar(&f.classes, "classes", 1, "lossless priorities per port (with --buffer)")
	return c
}

// parseMetres reads a cable length: "7m", "7", "100 m", "0.1km".
func parseMetres(s string) (float64, error) {
	t := strings.TrimSpace(strings.ToLower(s))
	scale := 1.0
	switch {
	case strings.HasSuffix(t, "km"):
		t, scale = strings.TrimSuffix(t, "km"), 1000
	case strings.HasSuffix(t, "m"):
		t = strings.TrimSuffix(t, "m")
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("--cable %q: want a length such as 7m, 100m or 2km", s)
	}
	return v * scale, nil
}

func runHeadroom(w io.Writer, f *headroomFlags) error {
	rate, err := units.ParseRate(f.rate)
	if err != nil || rate <= 0 {
		return usageErr(fmt.Errorf("--rate %q: want a link rate such as 100G or 400Gbps", f.rate))
	}
	cable, err := parseMetres(f.cable)
	if err != nil {
		return usageErr(err)
	}
	if f.mtu < 64 || f.mtu > 16384 {
		return usageErr(fmt.Errorf("--mtu %d: want a frame size of 64..16384 bytes", f.mtu))
	}
	lat, err := units.ParseTime(f.swLat)
	if err != nil || lat < 0 {
		return usageErr(fmt.Errorf("--switch-latency %q: want a duration such as 500ns", f.swLat))
	}
	r := headroom.Headroom(headroom.Input{Rate: rate, CableMetres: cable, MTU: f.mtu, Response: lat})
	fmt.Fprintf(w, "PFC headroom per ingress port and lossless priority: %v link, %g m cable, %d B MTU\n\n", rate, cable, f.mtu)
	table := func(title string, terms []headroom.Term, total float64) {
		fmt.Fprintf(w, "%s\n", title)
		for _, t := range terms {
			fmt.Fprintf(w, "  %-58s %-36s %10.0f B\n", t.Name, t.Formula, t.Bytes)
		}
		fmt.Fprintf(w, "  %-58s %-36s %10.0f B  (%.1f KB)\n\n", "total", "", total, total/1000)
	}
	table("mlx5 driver: xoff_bytes = (301 + 2.16 x cable_m) x speed_Gbps + 2.72 x MTU", r.MLX5Terms, r.MLX5)
	table(fmt.Sprintf("IEEE 802.1Qbb-style: (2 x cable + 2 x response) x rate + 2 max frames + PAUSE (fibre %g ns/m, response %v)", headroom.FibreNsPerMetre, lat), r.IEEETerms, r.IEEE)
	need := headroom.Bytes(math.Max(r.MLX5, r.IEEE))
	fmt.Fprintf(w, "Advice\n")
	fmt.Fprintf(w, "  headroom        reserve at least %d B per port and lossless priority (fabric.pfc_headroom: %dB)\n", need, need)
	fmt.Fprintf(w, "  XON             resume at least 2 frames (%d B) below XOFF so a resumed sender does not re-pause at once (fabric.pfc_xon_offset)\n", 2*f.mtu)
	fmt.Fprintf(w, "  XOFF            set ECN Kmax below XOFF so that DCQCN reacts before PFC pauses (Zhu et al. SIGCOMM'15, Guo et al. SIGCOMM'16; docs/references.md)\n")
	if f.buffer != "" {
		buf, err := units.ParseSize(f.buffer)
		if err != nil || buf <= 0 {
			return usageErr(fmt.Errorf("--buffer %q: want a size such as 32MiB", f.buffer))
		}
		if f.ports < 1 || f.classes < 1 {
			return usageErr(fmt.Errorf("--ports and --classes must be at least 1"))
		}
		reserved := need * int64(f.ports) * int64(f.classes)
		left := int64(buf) - reserved
		fmt.Fprintf(w, "  buffer          %d ports x %d classes x %d B = %v reserved of %v", f.ports, f.classes, need, units.Size(reserved), buf)
		if left <= 0 {
			fmt.Fprintf(w, ": the headroom does not fit; use fewer lossless classes or a larger buffer\n")
		} else {
			fmt.Fprintf(w, ", %v shared (static XOFF at most %v per port at 1/8 of it)\n", units.Size(left), units.Size(left/8))
		}
	}
	return nil
}
