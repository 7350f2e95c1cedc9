package app

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/utils/clock"

	"github.com/trainersim/trainersim/sim"
	"github.com/trainersim/trainersim/sim/providers/kind"
	"github.com/trainersim/trainersim/sim/providers/kubeconfig"
)

func newCleanCommand(streams Streams) *cobra.Command {
	var kubeconfigPath, kubeContext, provider, kindName string
	cmd := &cobra.Command{
		Use:   "clean (--kubeconfig PATH | --cluster kind [--kind-name NAME])",
		Short: "Delete what a killed simctl left behind: objects in a cluster, or a kind cluster",
		Long: `With --cluster kind, clean deletes the kind cluster simctl created under
--kind-name (default trainersim) if no live simctl uses it: one a killed run
left, or one kept with --keep. A kind cluster simctl did not create is left
alone.

With --kubeconfig, clean deletes from that cluster everything runs against it
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
		Example: `  simctl clean --kubeconfig /tmp/sim.kubeconfig
  simctl clean --cluster kind`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case provider == sim.ClusterKind && kubeconfigPath != "":
				return withCode(ExitUsage, errors.New("give --kubeconfig or --cluster kind, not both"))
			case provider == sim.ClusterKind:
				deleted, err := kind.CleanKind("", kindName)
				if err != nil {
					return withCode(ExitCluster, err)
				}
				if deleted {
					fmt.Fprintf(streams.Out, "deleted kind cluster %s\n", kindName)
				} else {
					fmt.Fprintf(streams.Out, "no kind cluster %s\n", kindName)
				}
				return nil
			case provider != "":
				return withCode(ExitUsage, fmt.Errorf("invalid --cluster %q: clean knows kind; other clusters take --kubeconfig", provider))
			case kubeconfigPath == "":
				return withCode(ExitUsage, errors.New("give --kubeconfig PATH or --cluster kind"))
			}
			c, host, err := connectKubeconfig(kubeconfigPath, kubeContext)
			if err != nil {
				return withCode(ExitCluster, err)
			}
			deleted, err := kubeconfig.Clean(cmd.Context(), c, clock.RealClock{})
			for _, d := range deleted {
				fmt.Fprintf(streams.Out, "deleted %s\n", d)
			}
			if err != nil {
				return withCode(ExitCluster, err)
			}
			fmt.Fprintf(streams.Out, "%d objects deleted from %s\n", len(deleted), host)
			return nil
		},
	}
	cmd.Flags().StringVar(&kubeconfigPath, "kubeconfig", "", "the cluster to clean")
	cmd.Flags().StringVar(&kubeContext, "context", "", "the --kubeconfig context to use (default: its current context)")
	cmd.Flags().StringVar(&provider, "cluster", "", "kind: delete the kind cluster simctl created")
	cmd.Flags().StringVar(&kindName, "kind-name", kind.DefaultKindName, "with --cluster kind: the kind cluster's name")
	return cmd
}
