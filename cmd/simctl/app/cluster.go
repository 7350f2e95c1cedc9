package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/probe"
	"github.com/trainersim/trainersim/sim/providers/kind"
	"github.com/trainersim/trainersim/sim/providers/kubeconfig"
	"github.com/trainersim/trainersim/sim/releases"
)

// clusterFlags are the flags of every command that starts or uses a
// cluster.
type clusterFlags struct {
	provider   string
	kindName   string
	kindImage  string
	keep       bool
	nodes      string
	assets     string
	workDir    string
	timeout    time.Duration
	kubeconfig string // an existing cluster (run, smoke)
	context    string
	unisolated bool
	trainer    string
	trainerAs  string
	serveHost  string
	with       []string
	layout     string
	auditLog   string // the file, as --audit-log gives it or run's DIR/audit.log
}

// register adds the cluster flags and --nodes.
func (f *clusterFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.nodes, "nodes", fakegpu.DefaultNodeGroupsSpec,
		"simulated nodes as profile=count,... ('simctl profiles' lists the profiles)")
	f.registerCluster(cmd)
}

// registerCluster adds the flags of every command that starts a cluster.
func (f *clusterFlags) registerCluster(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.provider, "cluster", sim.ClusterEnvtest,
		"the cluster to start: envtest (a local control plane, the Trainer in-process) or kind (a kind cluster,\nthe Trainer and JobSet as Deployments; needs 'make kind-images')")
	cmd.Flags().StringVar(&f.kindName, "kind-name", kind.DefaultKindName, "with --cluster kind: the kind cluster's name")
	cmd.Flags().StringVar(&f.kindImage, "kind-node-image", kind.KindNodeImage, "with --cluster kind: the node image ('make kind-images' builds the default; kindest/node works where it can be pulled)")
	cmd.Flags().StringVar(&f.assets, "assets", "",
		"directory with kube-apiserver, etcd, kube-controller-manager, kube-scheduler and kwok\n(default: $KUBEBUILDER_ASSETS, then bin/k8s/"+releases.KubernetesVersion+"/ as built by 'make assets', then the user's cache\nas built by 'simctl assets')")
	cmd.Flags().StringVar(&f.workDir, "work-dir", "",
		"directory for kubeconfigs, certificates and component logs (default: a temporary directory removed on exit)")
	cmd.Flags().DurationVar(&f.timeout, "start-timeout", cluster.DefaultStartTimeout, "how long the cluster may take to start")
	cmd.Flags().StringSliceVar(&f.with, "with", nil,
		"components to run besides the Trainer and JobSet: "+strings.Join(releases.Components, ", ")+" (Kueue "+releases.KueueVersion+": on envtest as a process 'simctl assets'\nbuilds, on kind as a Deployment from its manifests); simctl run adds those its scenarios ask for (spec.components).\nAn existing cluster (--kubeconfig) runs what it runs")
	cmd.Flags().StringVar(&f.trainer, "trainer", "",
		"the Kubeflow Trainer release to run: "+strings.Join(releases.TrainerVersions(), ", ")+" (default "+releases.TrainerVersion+");\nthe JobSet its go.mod pins comes with it. "+releases.TrainerVersion+" runs in simctl's process, the others as processes\n'simctl assets --all' builds")
	cmd.Flags().StringVar(&f.trainerAs, "trainer-as", "",
		"for a simctl built against a local Trainer checkout (make build TRAINER_DIR=...): the release vX.Y.Z the checkout\ndescends from, which it runs as newer than for version ranges (default: the release make found in its git\ntags or module version; a checkout without one must be given it)")
}

// registerAuditLog adds --audit-log: a FILE (up) or a DIR (run, which
// writes DIR/audit.log; the command sets f.auditLog from it).
func (f *clusterFlags) registerAuditLog(cmd *cobra.Command, target *string, where string) {
	cmd.Flags().StringVar(target, "audit-log", "",
		"record the API server's audit log "+where+": every user's writes to TrainJobs, runtimes,\nServiceAccounts, PVCs, ConfigMaps and Kueue's queues with their bodies and answers, the Pods as created, the\ncomponents' writes (on the clusters simctl starts, envtest and kind; docs/record.md: what it holds, and auditing on others)")
}

// registerLayout adds --layout: what a kind cluster installs where.
func (f *clusterFlags) registerLayout(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.layout, "layout", kind.LayoutTrainer,
		"with --cluster kind: where what is installed. trainer: the Trainer's own install (its manifests/overlays/manager,\nJobSet included, in kubeflow-system). kueue-e2e: the cluster of Kueue's own e2e set-up, for its test suites:\nJobSet from its release manifest in jobset-system, the Trainer without it, and Kueue of its test/e2e/config/extended,\nmanaging every namespace but kube-system and kueue-system")
}

// registerExisting adds --kubeconfig and --context: run on a cluster that
// already runs the Trainer instead of starting one.
func (f *clusterFlags) registerExisting(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.serveHost, "serve-host", "",
		"with --cluster kind or --kubeconfig: the IP address of this machine where the cluster's API server reaches the\nscenarios' webhooks and gates simctl serves (default: loopback, else the first address of this machine's\ninterfaces, bridges first, that a probe webhook proves it reaches; none: exit 3 at preflight)")
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "",
		"run on the existing cluster of this kubeconfig (one of 'simctl up', kind, staging) instead of starting one;\nit must run the Trainer (with --trainer, that release), JobSet and the default runtimes (checked first, exit 3 if not)")
	cmd.Flags().StringVar(&f.context, "context", "", "the --kubeconfig context to use (default: its current context)")
}

// options validates the flags and returns the cluster they describe;
// errors are usage errors. kubeconfigOut is where an envtest cluster writes
// its kubeconfig.
func (f *clusterFlags) options(kubeconfigOut string) (sim.ClusterOptions, error) {
	var groups []fakegpu.NodeGroup
	if f.nodes != "" {
		var err error
		if groups, err = fakegpu.ParseNodeGroups(f.nodes); err != nil {
			return sim.ClusterOptions{}, withCode(ExitUsage, fmt.Errorf("invalid --nodes: %w", err))
		}
	}
	release, err := releases.LookupTrainer(f.trainer)
	if err != nil {
		return sim.ClusterOptions{}, withCode(ExitUsage, fmt.Errorf("invalid --trainer: %w", err))
	}
	if err := releases.ValidateComponents(f.with); err != nil {
		return sim.ClusterOptions{}, withCode(ExitUsage, fmt.Errorf("invalid --with: %w", err))
	}
	if len(f.with) > 0 && f.kubeconfig != "" {
		return sim.ClusterOptions{}, withCode(ExitUsage, errors.New("--with starts components on the clusters simctl starts (envtest, kind); an existing cluster runs what it runs"))
	}
	switch f.provider {
	case sim.ClusterEnvtest, "":
	case sim.ClusterKind:
		if f.kubeconfig != "" {
			return sim.ClusterOptions{}, withCode(ExitUsage, errors.New("--kubeconfig runs on an existing cluster: it cannot be used with --cluster kind"))
		}
		if !release.InProcess() {
			return sim.ClusterOptions{}, withCode(ExitUsage, fmt.Errorf("--trainer %s: %w", release.Version, kind.ErrKindTrainer))
		}
	default:
		return sim.ClusterOptions{}, withCode(ExitUsage, fmt.Errorf("invalid --cluster %q: envtest or kind", f.provider))
	}
	if err := kind.ValidateLayout(f.layout); err != nil {
		return sim.ClusterOptions{}, withCode(ExitUsage, fmt.Errorf("invalid --layout: %w", err))
	}
	if f.layout != "" && f.layout != kind.LayoutTrainer && f.provider != sim.ClusterKind {
		return sim.ClusterOptions{}, withCode(ExitUsage, fmt.Errorf("--layout %s is a kind cluster's: use it with --cluster kind", f.layout))
	}
	if f.serveHost != "" {
		if net.ParseIP(f.serveHost) == nil {
			return sim.ClusterOptions{}, withCode(ExitUsage, fmt.Errorf("invalid --serve-host %q: an IP address of this machine", f.serveHost))
		}
		if f.provider != sim.ClusterKind && f.kubeconfig == "" {
			return sim.ClusterOptions{}, withCode(ExitUsage, errors.New("--serve-host is for --cluster kind and --kubeconfig: envtest's API server reaches simctl on loopback"))
		}
	}
	if err := f.checkTrainerAs(release); err != nil {
		return sim.ClusterOptions{}, withCode(ExitUsage, err)
	}
	o := sim.ClusterOptions{
		Provider:      f.provider,
		KindName:      f.kindName,
		KindNodeImage: f.kindImage,
		Keep:          f.keep,
		Context:       f.context,
		AssetsDir:     f.assets,
		Nodes:         groups,
		WorkDir:       f.workDir,
		KubeconfigOut: kubeconfigOut,
		StartTimeout:  f.timeout,
		Unisolated:    f.unisolated,
	}
	if f.trainer != "" {
		o.Trainer = release.Version
	}
	o.TrainerAs = f.trainerAs
	o.ServeHost = f.serveHost
	o.Components = f.with
	if f.layout != kind.LayoutTrainer {
		o.Layout = f.layout
	}
	if f.kubeconfig != "" {
		abs, err := filepath.Abs(f.kubeconfig)
		if err != nil {
			return o, withCode(ExitUsage, fmt.Errorf("invalid --kubeconfig: %w", err))
		}
		o.Kubeconfig = abs
	} else if f.context != "" {
		return o, withCode(ExitUsage, errors.New("--context needs --kubeconfig"))
	} else if f.unisolated {
		return o, withCode(ExitUsage, errors.New("--unisolated needs --kubeconfig: the clusters simctl starts isolate every scenario"))
	}
	if f.auditLog != "" {
		switch {
		case f.kubeconfig != "":
			return o, withCode(ExitUsage, errors.New("--audit-log records on a cluster simctl starts: an existing cluster's API server keeps its own audit log, if its flags turn one on (docs/record.md)"))
		}
		abs, err := filepath.Abs(f.auditLog)
		if err != nil {
			return o, withCode(ExitUsage, fmt.Errorf("invalid --audit-log: %w", err))
		}
		if err := sim.CheckAuditLog(abs); err != nil {
			return o, withCode(ExitUsage, fmt.Errorf("invalid --audit-log: %w", err))
		}
		o.AuditLog = abs
	}
	return o, nil
}

// checkTrainerAs refuses --trainer-as where no Trainer checkout runs, and
// a checkout that runs without a release to descend from.
func (f *clusterFlags) checkTrainerAs(release releases.Trainer) error {
	c, ok := releases.TrainerCheckout()
	var elsewhere string
	switch {
	case !ok:
		elsewhere = "this simctl runs the release " + releases.TrainerVersion + ", not a checkout (make build TRAINER_DIR=... builds against one)"
	case f.provider == sim.ClusterKind || f.kubeconfig != "":
		elsewhere = "a kind or existing cluster runs the Trainer of its images, not the checkout simctl was built against"
	case !release.InProcess():
		elsewhere = "--trainer " + release.Version + " runs that release, not the checkout simctl was built against"
	default:
		_, err := c.As(f.trainerAs)
		return err
	}
	if f.trainerAs != "" {
		return fmt.Errorf("--trainer-as gives the release of the Trainer checkout compiled into simctl: %s", elsewhere)
	}
	return nil
}

// startCluster starts a cluster, printing one line per component as it
// becomes ready. A failure to start is ExitCluster.
func startCluster(ctx context.Context, out io.Writer, o sim.ClusterOptions) (cluster.Cluster, error) {
	switch {
	case o.Kubeconfig != "":
		fmt.Fprintf(out, "using the cluster of %s\n", o.Kubeconfig)
	case o.Provider == sim.ClusterKind && o.Layout == kind.LayoutKueueE2E:
		fmt.Fprintf(out, "creating kind cluster %s (Kubernetes %s) laid out as Kueue's e2e set-up: JobSet in jobset-system, Kubeflow Trainer, then Kueue of its test/e2e/config/extended, as Deployments\n", o.KindName, releases.KubernetesVersion)
	case o.Provider == sim.ClusterKind && slices.Contains(o.Components, releases.ComponentKueue):
		fmt.Fprintf(out, "creating kind cluster %s (Kubernetes %s) with Kubeflow Trainer, JobSet and Kueue as Deployments\n", o.KindName, releases.KubernetesVersion)
	case o.Provider == sim.ClusterKind:
		fmt.Fprintf(out, "creating kind cluster %s (Kubernetes %s) with Kubeflow Trainer and JobSet as Deployments\n", o.KindName, releases.KubernetesVersion)
	default:
		fmt.Fprintf(out, "starting Kubernetes %s with Kubeflow Trainer and JobSet\n", releases.KubernetesVersion)
	}
	o.Progress = func(t cluster.StepTiming) {
		fmt.Fprintf(out, "  %-28s ready in %6s  (at %s)\n", t.Name, t.Took.Round(10*time.Millisecond), t.ReadyAt.Round(10*time.Millisecond))
	}
	c := sim.NewCluster(o)
	start := time.Now()
	if err := c.Start(ctx); err != nil {
		var mismatch *kubeconfig.TrainerMismatchError
		if errors.As(err, &mismatch) {
			return c, withCode(ExitCluster, fmt.Errorf("the cluster runs the Trainer %s, not the %s of --trainer", mismatch.Running, mismatch.Want))
		}
		return c, withCode(ExitCluster, fmt.Errorf("failed to start the cluster: %w", err))
	}
	v := c.Versions()
	fmt.Fprintf(out, "cluster ready in %s: %s, Kubernetes %s, Trainer %s, JobSet %s%s\n", time.Since(start).Round(10*time.Millisecond), v.Cluster, v.Kubernetes, v.Trainer, v.JobSet, kueueVersion(v.Kueue))
	if o.Kubeconfig == "" {
		fmt.Fprintf(out, "node heartbeat: %s\n", o.Heartbeat)
	}
	if v.TrainerCheckout != "" {
		fmt.Fprintf(out, "trainer: %s\n", v.TrainerCheckout)
	} else if c, ok := releases.TrainerCheckout(); ok {
		fmt.Fprintf(out, "warning: simctl was built against %s, which this cluster does not run: it runs the Trainer %s\n", c.Dir, v.Trainer)
	}
	if v.KueueCheckout != "" {
		fmt.Fprintf(out, "kueue: %s\n", v.KueueCheckout)
	} else if c, ok := releases.KueueCheckout(); ok && v.Kueue != "" {
		fmt.Fprintf(out, "warning: simctl was built with Kueue from %s, which this cluster does not run: it runs Kueue %s\n", c.Dir, v.Kueue)
	}
	if p, ok := c.(cluster.ParentDeath); ok && !p.ParentDeathProtected() {
		fmt.Fprintln(out, "warning: setpriv(1) with --pdeathsig is not available: if simctl is killed with SIGKILL, kube-apiserver and etcd keep running")
	}
	if i, ok := c.(cluster.Isolation); ok && !i.Isolated() {
		fmt.Fprintln(out, "warning: --unisolated: scenario Pods are not kept off the cluster's own nodes; scenarios run one at a time")
	}
	return c, nil
}

// stopCluster stops c and turns a failure into ExitCluster unless err
// already holds an error.
func stopCluster(c cluster.Cluster, err *error) {
	if c == nil {
		return
	}
	if stopErr := c.Stop(); stopErr != nil && *err == nil {
		*err = withCode(ExitCluster, fmt.Errorf("failed to stop the cluster: %w", stopErr))
	}
}

// isolatedNamespace creates the namespace ns on c, isolated as a scenario's
// is, waits for its default ServiceAccount and kube-root-ca.crt, and adds groups as its own
// nodes (named <ns>-<profile>-<i>). It returns the nodes' names, also on
// error, for their removal.
func isolatedNamespace(ctx context.Context, c cluster.Cluster, ns string, groups []fakegpu.NodeGroup) ([]string, error) {
	obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	c.IsolateNamespace(obj)
	if err := c.Client().Create(ctx, obj); err != nil {
		return nil, fmt.Errorf("failed to create namespace %s: %w", ns, err)
	}
	if err := probe.WaitForNamespaceReady(ctx, c.Client(), ns); err != nil {
		return nil, err
	}
	groups = slices.Clone(groups)
	for i := range groups {
		groups[i].NamePrefix = ns + "-" + groups[i].Profile
		groups[i] = c.IsolateNodeGroup(groups[i], ns)
	}
	nodes, err := c.AddNodes(ctx, groups)
	if err != nil {
		return nodes, fmt.Errorf("failed to add the nodes of %s: %w", ns, err)
	}
	return nodes, nil
}

// kueueVersion is ", Kueue <version>" after the other versions, when
// Kueue ran; empty otherwise.
func kueueVersion(version string) string {
	if version == "" {
		return ""
	}
	return ", Kueue " + version
}

// connectKubeconfig is a client of the cluster of kubeconfig path
// (kubeContext: its current one when empty), once the cluster answers, and
// the cluster's address.
func connectKubeconfig(path, kubeContext string) (client.WithWatch, string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, "", err
	}
	cfg, err := kubeconfig.LoadKubeconfig(abs, kubeContext)
	if err != nil {
		return nil, "", err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, "", err
	}
	if _, err := kubeconfig.Reach(dc, cfg.Host); err != nil {
		return nil, "", err
	}
	c, err := kubeconfig.NewClient(cfg)
	return c, cfg.Host, err
}
