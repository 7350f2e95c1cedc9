package app

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/trainersim/trainersim/sim"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/policy"
	"github.com/trainersim/trainersim/sim/providers/kind"
)

func newUpCommand(streams Streams) *cobra.Command {
	var flags clusterFlags
	var kubeconfig string
	var pods policy.DefaultLifecycle
	cmd := &cobra.Command{
		Use:   "up --kubeconfig PATH [--nodes PROFILE=COUNT,...]",
		Short: "Start a cluster and keep it up until Ctrl-C",
		Long: `up starts the control plane, the Trainer and JobSet controllers and webhooks,
the default ClusterTrainingRuntimes and the simulated nodes, writes an admin
kubeconfig to --kubeconfig, prints one line per component as it becomes ready
and then a line saying the cluster is ready. It runs until SIGINT or SIGTERM,
then stops every process it started.

Pods on the simulated nodes run until they are deleted: no container runs
to end them. --pods-succeed-after makes every Pod that no scenario owns (in
any namespace but kube-system and the scenarios') succeed that long after it
starts, and --pods-start-after holds it in Pending that long first, as a
kubelet pulling images does, so that a test suite written for a real cluster
sees its jobs start and complete. A Pod that carries its own
lifecycle.trainersim.dev annotations keeps them.

--cluster kind --layout kueue-e2e lays the kind cluster out as Kueue's own e2e
set-up does, for Kueue's test suites: JobSet in jobset-system, the Trainer
without it, then Kueue managing every namespace. Scenarios written for the
default layout (Kueue only where they ask for it) see its entry on their
TrainJobs there.

--audit-log FILE records, while the cluster is up, who wrote what: whoever
pokes the cluster (kubectl, the Kubeflow SDK, an in-house controller) is
recorded with their writes, bodies and the server's answers, the log a
scenario can be rebuilt from (docs/record.md).`,
		Example: `  simctl up --kubeconfig /tmp/sim.kubeconfig --nodes nvidia-h100-80gb=2,cpu=1
  kubectl --kubeconfig /tmp/sim.kubeconfig get nodes -o wide
  simctl up --kubeconfig /tmp/sim.kubeconfig --pods-start-after 3s --pods-succeed-after 20s
  simctl up --kubeconfig /tmp/kueue.kubeconfig --cluster kind --layout kueue-e2e --nodes cpu=4
  simctl up --kubeconfig /tmp/sim.kubeconfig --with kueue --audit-log /tmp/incident/audit.log`,
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
			if pods.StartAfter < 0 || pods.SucceedAfter < 0 {
				return withCode(ExitUsage, fmt.Errorf("--pods-start-after and --pods-succeed-after must not be negative"))
			}
			return runUp(cmd.Context(), streams, o, pods)
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "where to write the admin kubeconfig (required)")
	_ = cmd.MarkFlagRequired("kubeconfig")
	cmd.Flags().DurationVar(&pods.StartAfter, "pods-start-after", 0, "hold every Pod no scenario owns in Pending this long after it is bound, as an image pull would (default: start at once)")
	cmd.Flags().DurationVar(&pods.SucceedAfter, "pods-succeed-after", 0, "make every Pod no scenario owns succeed this long after it starts running (default: run until deleted)")
	flags.register(cmd)
	flags.registerLayout(cmd)
	flags.registerAuditLog(cmd, &flags.auditLog, "to FILE (which must not exist yet, or be empty)")
	return cmd
}

func runUp(ctx context.Context, streams Streams, o sim.ClusterOptions, pods policy.DefaultLifecycle) (err error) {
	env, err := startCluster(ctx, streams.Out, o)
	defer func() {
		fmt.Fprintln(streams.Out, "stopping")
		stopCluster(env, &err)
	}()
	if err != nil {
		return err
	}
	if !pods.Empty() {
		if err := pods.Install(ctx, env.Client()); err != nil {
			return withCode(ExitCluster, fmt.Errorf("failed to install the default Pod lifecycle: %w", err))
		}
		fmt.Fprintf(streams.Out, "pods no scenario owns: %s\n", pods)
	}
	fmt.Fprintf(streams.Out, "kubeconfig: %s\n", env.AdminKubeconfig())
	fmt.Fprintf(streams.Out, "  kubectl --kubeconfig %s get nodes -L nvidia.com/gpu.product\n", env.AdminKubeconfig())
	if o.Layout == kind.LayoutKueueE2E {
		// Its Kueue manages every namespace: it adds its entry to the
		// TrainJobs of scenarios written for a Kueue that does not.
		fmt.Fprintln(streams.Out, "  Kueue's e2e suites run against it as make test-upstream runs its TrainJob test: docs/upstream.md")
	} else {
		fmt.Fprintf(streams.Out, "  simctl run --kubeconfig %s scenarios/examples/sdk-and-kueue-share-a-gpu-job.yaml\n", env.AdminKubeconfig())
	}
	if l, ok := env.(cluster.Logs); ok {
		fmt.Fprintf(streams.Out, "component logs: %s\n", l.LogDir())
	}
	if o.AuditLog != "" {
		fmt.Fprintf(streams.Out, "audit log: %s (every write to TrainJobs and what they depend on, recorded)\n", o.AuditLog)
	}
	fmt.Fprintln(streams.Out, "press Ctrl-C to stop")
	<-ctx.Done()
	return nil
}
