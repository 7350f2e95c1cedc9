package app

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/utils/clock"

	"github.com/trainersim/trainersim/sim"
)

func newCleanCommand(streams Streams) *cobra.Command {
	var kubeconfig, kubeContext string
	cmd := &cobra.Command{
		Use:   "clean --kubeconfig PATH",
		Short: "Delete what a killed 'simctl run --kubeconfig' left in a cluster",
		Long: `clean deletes from the cluster of --kubeconfig everything runs against it
created and did not delete because they were killed: the namespaces and
simulated nodes of their scenarios, their MutatingAdmissionPolicies and
bindings (all labelled app.kubernetes.io/managed-by=trainersim and
trainersim.dev/run), and an expired kwok lease (kube-system/trainersim-kwok).
It prints one line per object and does not wait for them to be gone.

It also deletes the objects of a run still going: run it when no simctl
uses the cluster. The nodes and namespaces of 'simctl up' itself carry no
trainersim.dev/run label and are left alone.

Exit codes: 0 done, 2 usage, 3 the cluster cannot be reached or refused a
delete.`,
		Example: `  simctl clean --kubeconfig /tmp/sim.kubeconfig`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			abs, err := filepath.Abs(kubeconfig)
			if err != nil {
				return withCode(ExitUsage, fmt.Errorf("invalid --kubeconfig: %w", err))
			}
			cfg, err := sim.LoadKubeconfig(abs, kubeContext)
			if err != nil {
				return withCode(ExitCluster, err)
			}
			c, err := sim.NewClient(cfg)
			if err != nil {
				return withCode(ExitCluster, err)
			}
			deleted, err := sim.Clean(cmd.Context(), c, clock.RealClock{})
			for _, d := range deleted {
				fmt.Fprintf(streams.Out, "deleted %s\n", d)
			}
			if err != nil {
				return withCode(ExitCluster, err)
			}
			fmt.Fprintf(streams.Out, "%d objects deleted from %s\n", len(deleted), cfg.Host)
			return nil
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "the cluster to clean (required)")
	cmd.Flags().StringVar(&kubeContext, "context", "", "the --kubeconfig context to use (default: its current context)")
	_ = cmd.MarkFlagRequired("kubeconfig")
	return cmd
}
