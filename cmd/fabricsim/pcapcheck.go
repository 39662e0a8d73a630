package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/fabricsim/fabricsim/wire"
)

func newPcapCheckCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "pcap-check FILE.pcap...",
		Short: "Decode captures with fabricsim's own decoder and verify every ICRC, VCRC, FCS and header length",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			bad := 0
			for _, name := range args {
				f, err := os.Open(name)
				if err != nil {
					return usageErr(fileErr(name, "capture", err))
				}
				sum, err := wire.Check(f)
				f.Close()
				if err != nil {
					return usageErr(fmt.Errorf("%s: %v", name, err))
				}
				fmt.Fprintf(c.OutOrStdout(), "== %s\n", name)
				sum.WriteText(c.OutOrStdout())
				bad += sum.ErrorCount
			}
			if bad > 0 {
				return failureErr(fmt.Errorf("%d packets failed the check", bad))
			}
			return nil
		},
	}
}
