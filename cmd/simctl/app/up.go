package app

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/trainersim/trainersim/sim"
	"github.com/trainersim/trainersim/sim/cluster"
)

func newUpCommand(streams Streams) *cobra.Command {
	var flags clusterFlags
	var kubeconfig string
	cmd := &cobra.Command{
		Use:   "up --kubeconfig PATH [--nodes PROFILE=COUNT,...]",
		Short: "Start a cluster and keep it up until Ctrl-C",
		Long: `up starts the control plane, the Trainer and JobSet controllers and webhooks,
the default ClusterTrainingRuntimes and the simulated nodes, writes an admin
kubeconfig to --kubeconfig, prints one line per component as it becomes ready
and then a line saying the cluster is ready. It runs until SIGINT or SIGTERM,
then stops every process it started.`,
		Example: `  simctl up --kubeconfig /tmp/sim.kubeconfig --nodes nvidia-h100-80gb=2,cpu=1
  kubectl --kubeconfig /tmp/sim.kubeconfig get nodes -o wide`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			abs, err := filepath.Abs(kubeconfig)
			if err != nil {
				return withCode(ExitUsage, fmt.Errorf("invalid --kubeconfig: %w", err))
			}
			o, err := flags.options(abs)
			if err != nil {
				return err
			}
			return runUp(cmd.Context(), streams, o)
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "where to write the admin kubeconfig (required)")
	_ = cmd.MarkFlagRequired("kubeconfig")
	flags.register(cmd)
	return cmd
}

func runUp(ctx context.Context, streams Streams, o sim.ClusterOptions) (err error) {
	env, err := startCluster(ctx, streams.Out, o)
	defer func() {
		fmt.Fprintln(streams.Out, "stopping")
		stopCluster(env, &err)
	}()
	if err != nil {
		return err
	}
	fmt.Fprintf(streams.Out, "kubeconfig: %s\n", env.AdminKubeconfig())
	fmt.Fprintf(streams.Out, "  kubectl --kubeconfig %s get nodes -L nvidia.com/gpu.product\n", env.AdminKubeconfig())
	fmt.Fprintf(streams.Out, "  simctl run --kubeconfig %s scenarios/examples/sdk-and-kueue-share-a-gpu-job.yaml\n", env.AdminKubeconfig())
	if l, ok := env.(cluster.Logs); ok {
		fmt.Fprintf(streams.Out, "component logs: %s\n", l.LogDir())
	}
	fmt.Fprintln(streams.Out, "press Ctrl-C to stop")
	<-ctx.Done()
	return nil
}
