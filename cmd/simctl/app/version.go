package app

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/trainersim/trainersim/sim/releases"
)

func newVersionCommand(streams Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the Kubernetes, Kubeflow Trainer and JobSet versions simctl runs",
		Long: `version prints the versions simctl was built with. When simctl was built
against a local checkout of the trainer (make build TRAINER_DIR=...), the
trainer line says "(devel)" and names the checkout.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintf(streams.Out, "kubernetes  v%s\n", releases.KubernetesVersion)
			fmt.Fprintf(streams.Out, "trainer     %s\n", releases.ModuleVersion(releases.TrainerModule))
			fmt.Fprintf(streams.Out, "jobset      %s\n", releases.ModuleVersion(releases.JobSetModule))
			return nil
		},
	}
}
