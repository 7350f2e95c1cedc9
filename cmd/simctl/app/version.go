package app

import (
	"cmp"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/trainersim/trainersim/sim/releases"
)

func newVersionCommand(streams Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the Kubernetes, Kubeflow Trainer and JobSet versions simctl runs",
		Long: `version prints the versions simctl was built with. When simctl was built
against a local checkout of the Trainer (make build TRAINER_DIR=...), the
trainer line says "(devel)" and the next line names the checkout, the commit
it was built at and the release it runs as newer than for version ranges
(found in its git tags or its module version; --trainer-as of run, up and
smoke gives another). When built with the Kueue component from a local
checkout (make build KUEUE_DIR=...), a kueue line says the same of it.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintf(streams.Out, "kubernetes  v%s\n", releases.KubernetesVersion)
			fmt.Fprintf(streams.Out, "trainer     %s\n", releases.ModuleVersion(releases.TrainerModule))
			if c, ok := releases.TrainerCheckout(); ok {
				fmt.Fprintf(streams.Out, "            %s\n", c)
			}
			fmt.Fprintf(streams.Out, "jobset      %s\n", releases.ModuleVersion(releases.JobSetModule))
			if c, ok := releases.KueueCheckout(); ok {
				fmt.Fprintf(streams.Out, "kueue       %s (the component)\n            %s\n", cmp.Or(c.Version(), c.Describe), c)
			}
			return nil
		},
	}
}
