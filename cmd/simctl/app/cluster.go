package app

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim"
)

// clusterFlags are the flags of every command that starts a cluster.
type clusterFlags struct {
	nodes   string
	assets  string
	workDir string
	timeout time.Duration
}

// register adds the cluster flags and --nodes.
func (f *clusterFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.nodes, "nodes", fakegpu.DefaultNodeGroupsSpec,
		"simulated nodes as profile=count,... ('simctl profiles' lists the profiles)")
	f.registerCluster(cmd)
}

// registerCluster adds the flags of every command that starts a cluster.
func (f *clusterFlags) registerCluster(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.assets, "assets", "",
		"directory with kube-apiserver, etcd, kube-controller-manager, kube-scheduler and kwok\n(default: $KUBEBUILDER_ASSETS, then bin/k8s/"+sim.KubernetesVersion+"/ as built by 'make assets')")
	cmd.Flags().StringVar(&f.workDir, "work-dir", "",
		"directory for kubeconfigs, certificates and component logs (default: a temporary directory removed on exit)")
	cmd.Flags().DurationVar(&f.timeout, "start-timeout", sim.DefaultStartTimeout, "how long the cluster may take to start")
}

// environment validates the flags and builds the environment they describe;
// errors are usage errors.
func (f *clusterFlags) environment(kubeconfig string) (*sim.Environment, error) {
	var groups []fakegpu.NodeGroup
	if f.nodes != "" {
		var err error
		if groups, err = fakegpu.ParseNodeGroups(f.nodes); err != nil {
			return nil, withCode(ExitUsage, fmt.Errorf("invalid --nodes: %w", err))
		}
	}
	return &sim.Environment{
		AssetsDir:      f.assets,
		Nodes:          groups,
		WorkDir:        f.workDir,
		KubeconfigPath: kubeconfig,
		StartTimeout:   f.timeout,
	}, nil
}

// startCluster starts env, printing one line per component as it becomes
// ready. A failure to start is ExitCluster.
func startCluster(ctx context.Context, out io.Writer, env *sim.Environment) error {
	fmt.Fprintf(out, "starting Kubernetes %s with Kubeflow Trainer and JobSet\n", sim.KubernetesVersion)
	env.Progress = func(t sim.ComponentTiming) {
		fmt.Fprintf(out, "  %-28s ready in %6s  (at %s)\n", t.Name, t.Took.Round(10*time.Millisecond), t.ReadyAt.Round(10*time.Millisecond))
	}
	start := time.Now()
	if err := env.Start(ctx); err != nil {
		return withCode(ExitCluster, fmt.Errorf("failed to start the cluster: %w", err))
	}
	fmt.Fprintf(out, "cluster ready in %s\n", time.Since(start).Round(10*time.Millisecond))
	if !env.ParentDeathProtected() {
		fmt.Fprintln(out, "warning: setpriv(1) with --pdeathsig is not available: if simctl is killed with SIGKILL, kube-apiserver and etcd keep running")
	}
	return nil
}
