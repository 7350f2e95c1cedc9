// Package sime2e plugs trainersim into sigs.k8s.io/e2e-framework: Provider
// is a cluster provider for its envfuncs (envfuncs.CreateCluster,
// envfuncs.DestroyCluster) that starts a trainersim cluster, envtest by
// default, kind or an existing cluster as sim.ClusterOptions say; and
// Provider.Scenarios turns scenario files into e2e-framework features, one
// per scenario, each failing with what the ginkgo adapter (sim/simginkgo)
// fails its spec with. A suite written in e2e-framework gets the harness in
// a few lines:
//
//	var (
//		testenv    env.Environment
//		trainersim = sime2e.NewProvider(sim.ClusterOptions{})
//		examples   = trainersim.Scenarios("scenarios/examples")
//	)
//
//	func TestMain(m *testing.M) {
//		testenv = env.NewWithConfig(envconf.New())
//		testenv.Setup(envfuncs.CreateCluster(trainersim, "trainersim"))
//		testenv.Finish(envfuncs.DestroyCluster("trainersim"))
//		os.Exit(testenv.Run(m))
//	}
//
//	func TestExamples(t *testing.T) { testenv.Test(t, examples...) }
//
// Scenarios declared before the environment's Setup runs (at package level,
// or in TestMain before Run) decide what the cluster starts (Kueue when one
// asks for it), and a file among them that does not load keeps the cluster
// from starting: e2e-framework then reports the loader's file:line:column
// line as the Setup failure. Scenarios declared later run on the cluster as
// it is.
//
// Create routes the process's global loggers (klog, controller-runtime's,
// Go's log) as the ginkgo adapter does (sim.RouteProcessLogs), with one
// difference: while an envtest cluster runs, their lines go to its
// logs/controllers.log, so that the in-process Trainer's and JobSet's lines
// stay off the test's output; while none runs, to standard error, where
// e2e-framework reports through klog that the environment's Setup failed.
//
// Besides the ginkgo adapter, it is the only non-test package that imports
// a test framework.
package sime2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/e2e-framework/klient"
	"sigs.k8s.io/e2e-framework/support"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/internal/proclog"
	"github.com/trainersim/trainersim/sim/internal/suite"
	"github.com/trainersim/trainersim/sim/releases"
	"github.com/trainersim/trainersim/sim/runner"
	"github.com/trainersim/trainersim/sim/scenario"
)

// Provider is a trainersim cluster as an e2e-framework cluster provider
// (support.E2EClusterProvider, with the image loader's methods, which
// refuse). One Provider is one cluster: envfuncs.CreateCluster(p, name)
// starts it in the environment's Setup and points the environment's
// kubeconfig (envconf.Config.KubeconfigFile, Client) at its admin
// kubeconfig; envfuncs.DestroyCluster(name) stops it in Finish and leaves
// nothing behind (no process, no temporary directory; on an existing
// cluster, nothing trainersim created there).
//
// Its methods are safe to call from several goroutines.
type Provider struct {
	mu sync.Mutex
	// name is the name the environment knows the cluster by (WithName).
	name string
	// opts describe the cluster; Scenarios adds the components its files
	// ask for until Create.
	opts sim.ClusterOptions
	// problems are settings it cannot honour (WithVersion) and scenario
	// files declared before Create that did not load: Create refuses with
	// them.
	problems []error
	// suite is the started cluster; nil before Create and after Destroy.
	suite *suite.Suite
	// created is set by the Create that started the cluster.
	created bool
	// declared is set once scenario files are declared before Create;
	// fastHeartbeat when one of them takes a node unreachable
	// (runner.HeartbeatFor).
	declared, fastHeartbeat bool
	// kubectlContext is the admin kubeconfig's current context, read by
	// Create.
	kubectlContext string
}

var _ support.E2EClusterProviderWithImageLoader = (*Provider)(nil)

// NewProvider returns the provider of a trainersim cluster that opts
// describe, not started yet. The zero options are an envtest cluster (a
// local control plane with the Trainer and JobSet in this process, no
// nodes until a scenario adds its own); sim.ClusterOptions{Kubeconfig:
// path} runs on an existing cluster, sim.ClusterOptions{Provider:
// sim.ClusterKind} creates a kind cluster, and sim.ClusterOptionsFromEnv()
// chooses as the ginkgo adapter does ($TRAINERSIM_KUBECONFIG,
// $TRAINERSIM_CLUSTER, $TRAINERSIM_TRAINER).
func NewProvider(opts sim.ClusterOptions) *Provider {
	return &Provider{opts: opts}
}

// SetDefaults returns p: the zero ClusterOptions are the defaults.
func (p *Provider) SetDefaults() support.E2EClusterProvider { return p }

// WithName sets the name the environment knows the cluster by, which
// envfuncs.CreateCluster passes; a kind cluster takes it as its own name
// when the options name none (ClusterOptions.KindName).
func (p *Provider) WithName(name string) support.E2EClusterProvider {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.name = name
	return p
}

// WithVersion accepts the Kubernetes version trainersim runs
// (releases.KubernetesVersion, with or without its v) and no other: its
// control plane is built from the version hack/controlplane pins. Create
// refuses another. The release a cluster may be chosen by is the
// Trainer's: ClusterOptions.Trainer.
func (p *Provider) WithVersion(version string) support.E2EClusterProvider {
	p.mu.Lock()
	defer p.mu.Unlock()
	if strings.TrimPrefix(version, "v") != releases.KubernetesVersion {
		p.problems = append(p.problems, fmt.Errorf("trainersim runs Kubernetes v%s only, not %s: leave WithVersion out, or choose the Trainer release with sim.ClusterOptions.Trainer", releases.KubernetesVersion, version))
	}
	return p
}

// WithPath sets the directory that holds kube-apiserver, etcd,
// kube-controller-manager, kube-scheduler and kwok
// (ClusterOptions.AssetsDir; `make assets` builds them into
// bin/k8s/<version>/, where an empty path finds them).
func (p *Provider) WithPath(path string) support.E2EClusterProvider {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.opts.AssetsDir = path
	return p
}

// WithOpts calls each option with p, as e2e-framework's providers do.
func (p *Provider) WithOpts(opts ...support.ClusterOpts) support.E2EClusterProvider {
	for _, o := range opts {
		o(p)
	}
	return p
}

// Create starts the cluster and returns the path of its admin kubeconfig
// once scenarios can run on it: on envtest, every component is ready and
// every node of ClusterOptions.Nodes is Ready (cluster.Cluster's Start).
// It takes no arguments. It refuses, starting nothing, when a setting
// cannot be honoured or a scenario file declared before it did not load;
// when the start fails, nothing it started is left behind.
func (p *Provider) Create(ctx context.Context, args ...string) (string, error) {
	if len(args) > 0 {
		return "", fmt.Errorf("the trainersim cluster provider takes no arguments (got %q): describe the cluster with sim.ClusterOptions in sime2e.NewProvider", args)
	}
	routeLogs()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.problems) > 0 {
		return "", errors.Join(p.problems...)
	}
	if p.created {
		return "", fmt.Errorf("the trainersim cluster %q was created already: one Provider is one cluster, make another for a second", p.name)
	}
	opts := p.opts
	if opts.Kubeconfig != "" && opts.Context != "" {
		// e2e-framework builds its client from the kubeconfig file Create
		// returns, with the file's current context.
		raw, err := clientcmd.LoadFromFile(opts.Kubeconfig)
		if err != nil {
			return "", fmt.Errorf("failed to read kubeconfig %s: %w", opts.Kubeconfig, err)
		}
		if raw.CurrentContext != opts.Context {
			return "", fmt.Errorf("e2e-framework reaches the cluster through the current context of %s (%q), not ClusterOptions.Context (%q): give a kubeconfig whose current context is the cluster's", opts.Kubeconfig, raw.CurrentContext, opts.Context)
		}
	}
	if opts.Provider == sim.ClusterKind && opts.KindName == "" {
		opts.KindName = p.name
	}
	// The heartbeat its scenarios need, as simctl run's, when they were
	// declared before Create and the options do not say: none declared,
	// the fast one, which any scenario declared later can run on.
	if opts.Heartbeat == (fakegpu.Heartbeat{}) && p.declared && !p.fastHeartbeat {
		opts.Heartbeat = fakegpu.KubernetesHeartbeat
	}
	s := suite.New(sim.NewCluster(opts))
	if err := s.Start(ctx); err != nil {
		return "", fmt.Errorf("the trainersim cluster %q did not start: %w", p.name, err)
	}
	path := s.Cluster().AdminKubeconfig()
	raw, err := clientcmd.LoadFromFile(path)
	if err != nil {
		_ = s.Stop()
		return "", fmt.Errorf("failed to read the trainersim cluster's kubeconfig %s: %w", path, err)
	}
	p.suite, p.created, p.kubectlContext = s, true, raw.CurrentContext
	return path, nil
}

// CreateWithConfig is Create when configFile is empty; trainersim reads no
// configuration file, so it refuses any other.
func (p *Provider) CreateWithConfig(ctx context.Context, configFile string) (string, error) {
	if configFile != "" {
		return "", fmt.Errorf("the trainersim cluster provider reads no configuration file (got %s): describe the cluster with sim.ClusterOptions in sime2e.NewProvider and create it with envfuncs.CreateCluster", configFile)
	}
	return p.Create(ctx)
}

// WaitForControlPlane checks that the client e2e-framework made from the
// kubeconfig Create returned reaches the cluster (it lists the nodes):
// Create returned once everything was ready. When the client cannot, it
// destroys the cluster, which the environment would otherwise not know to
// destroy (envfuncs.CreateCluster keeps the cluster only when this
// succeeds).
func (p *Provider) WaitForControlPlane(ctx context.Context, client klient.Client) error {
	var nodes corev1.NodeList
	if err := client.Resources().List(ctx, &nodes); err != nil {
		err = fmt.Errorf("the kubeconfig %s does not reach the trainersim cluster %q, so it was stopped: %w", p.GetKubeconfig(), p.clusterName(), err)
		return errors.Join(err, p.Destroy(ctx))
	}
	return nil
}

// Destroy stops the cluster and removes what Start created: its processes
// and temporary directory on envtest, the kind cluster on kind (unless
// ClusterOptions.Keep), the nodes, namespaces and policies trainersim made
// on an existing cluster. It is safe to call more than once.
func (p *Provider) Destroy(context.Context) error {
	p.mu.Lock()
	s := p.suite
	p.suite = nil
	p.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.Stop()
}

// Cluster returns the started cluster, nil before Create and after
// Destroy. Its Client knows the Trainer's and JobSet's types, and
// AddNodes adds simulated nodes, for features written by hand.
func (p *Provider) Cluster() cluster.Cluster {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.suite == nil {
		return nil
	}
	return p.suite.Cluster()
}

// clusterName is the name the environment knows the cluster by.
func (p *Provider) clusterName() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.name
}

// started is the suite of the started cluster, or nil.
func (p *Provider) started() *suite.Suite {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.suite
}

// GetKubeconfig returns the path of the cluster's admin kubeconfig (on
// envtest, in the cluster's work directory, removed by Destroy; on an
// existing cluster, ClusterOptions.Kubeconfig). Empty before Create.
func (p *Provider) GetKubeconfig() string {
	if c := p.Cluster(); c != nil {
		return c.AdminKubeconfig()
	}
	return ""
}

// GenerateKubeconfig returns GetKubeconfig's path: the kubeconfig is a file
// already, and takes no arguments.
func (p *Provider) GenerateKubeconfig(args ...string) (string, error) {
	if len(args) > 0 {
		return "", fmt.Errorf("the trainersim cluster provider's kubeconfig takes no arguments (got %q)", args)
	}
	path := p.GetKubeconfig()
	if path == "" {
		return "", fmt.Errorf("the trainersim cluster %q is not running: create it first (envfuncs.CreateCluster)", p.clusterName())
	}
	return path, nil
}

// GetKubectlContext returns the context of the kubeconfig the cluster is
// reached through (its current context, read by Create). Empty before
// Create.
func (p *Provider) GetKubectlContext() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.suite == nil {
		return ""
	}
	return p.kubectlContext
}

// KubernetesRestConfig returns an admin rest.Config of the cluster (a
// copy), nil before Create.
func (p *Provider) KubernetesRestConfig() *rest.Config {
	if c := p.Cluster(); c != nil {
		return c.Config()
	}
	return nil
}

// ExportLogs copies the components' logs (cluster.Logs: an envtest
// cluster's kube-apiserver, etcd, kube-controller-manager, kube-scheduler,
// KWOK and in-process controllers' logs) into dest, which must not hold
// files of the same names. Other clusters keep no logs in this process: it
// says so.
func (p *Provider) ExportLogs(_ context.Context, dest string) error {
	c := p.Cluster()
	if c == nil {
		return fmt.Errorf("the trainersim cluster %q is not running: its logs are exported while it runs, before envfuncs.DestroyCluster", p.clusterName())
	}
	logs, ok := c.(cluster.Logs)
	if !ok {
		return fmt.Errorf("a %s trainersim cluster keeps no logs in this process: read its components' logs with kubectl logs", c.Versions().Cluster)
	}
	if err := os.CopyFS(dest, os.DirFS(logs.LogDir())); err != nil {
		return fmt.Errorf("failed to export the logs of %s to %s: %w", logs.LogDir(), dest, err)
	}
	return nil
}

// routeLogs routes the process's global loggers to the log of the envtest
// cluster that runs, and to standard error while none runs, once for the
// process.
var routeLogs = sync.OnceFunc(func() {
	proclog.Install()
	// The writer attached first: it gets the lines whenever no cluster's
	// log is attached after it.
	proclog.Attach(os.Stderr)
})

// errNoImages is why a trainersim cluster loads no image.
var errNoImages = errors.New("trainersim runs no container, so it loads no image: KWOK reports the Pods on simulated nodes Running without pulling anything, and the Trainer and JobSet run in this process (envtest) or from images built for kind")

// LoadImage refuses (errNoImages): no container runs.
func (p *Provider) LoadImage(_ context.Context, image string, _ ...string) error {
	return fmt.Errorf("load image %s: %w", image, errNoImages)
}

// LoadImageArchive refuses (errNoImages): no container runs.
func (p *Provider) LoadImageArchive(_ context.Context, archive string, _ ...string) error {
	return fmt.Errorf("load image archive %s: %w", archive, errNoImages)
}

// declare loads scenario files. Before Create, the components they ask
// for join the options and a load error keeps Create from starting the
// cluster. After Create, missing names, by file, the components a file
// asks for that an envtest or kind cluster was started without (only the
// clusters simctl starts start components: on an existing one the runner
// says why it skips the scenario).
func (p *Provider) declare(paths []string) (files []*scenario.File, missing map[*scenario.File][]string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	started := p.opts.Components
	files, components, err := suite.Load(paths, started, p.opts.Trainer)
	if !p.created {
		p.opts.Components = components
		p.declared = true
		p.fastHeartbeat = p.fastHeartbeat || runner.HeartbeatFor(files, p.opts.Trainer) == fakegpu.FastHeartbeat
		p.opts.Serve = p.opts.Serve || runner.NeedsServing(files, p.opts.ClusterName(), p.opts.Trainer)
		p.opts.Views = runner.UnionViews(p.opts.Views, runner.ViewsFor(files, p.opts.Trainer))
		if err != nil {
			p.problems = append(p.problems, err)
		}
		return files, nil, err
	}
	if p.suite == nil || !slices.Contains([]string{cluster.Envtest, cluster.Kind}, p.suite.Cluster().Versions().Cluster) {
		return files, nil, err
	}
	missing = map[*scenario.File][]string{}
	for _, f := range files {
		if need := runner.WithComponents(started, []*scenario.File{f}, p.opts.Trainer); len(need) > len(started) {
			missing[f] = need[len(started):]
		}
	}
	return files, missing, err
}
