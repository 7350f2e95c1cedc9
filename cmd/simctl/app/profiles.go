package app

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/trainersim/trainersim/fakegpu"
)

func newProfilesCommand(streams Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "profiles",
		Short: "List the simulated node profiles usable in --nodes",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			w := tabwriter.NewWriter(streams.Out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "PROFILE\tGPUS\tCPU\tMEMORY\tTAINTS")
			for _, p := range fakegpu.Profiles() {
				taints := "-"
				if len(p.Taints) > 0 {
					taints = ""
					for i, t := range p.Taints {
						if i > 0 {
							taints += ","
						}
						taints += t.ToString()
					}
				}
				cpu, mem := p.Capacity["cpu"], p.Capacity["memory"]
				fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\n", p.Name, p.GPUs(), cpu.String(), mem.String(), taints)
			}
			return w.Flush()
		},
	}
}
