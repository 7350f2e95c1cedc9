package sim

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap/zapcore"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/fixtures"
	"github.com/trainersim/trainersim/sim/internal/controllers"
	"github.com/trainersim/trainersim/sim/internal/proc"
)

// Defaults for the zero values of Environment.
const (
	// DefaultStartTimeout bounds Start when Environment.StartTimeout is zero.
	DefaultStartTimeout = 3 * time.Minute
	// stopGrace is how long a child process gets between SIGTERM and SIGKILL.
	stopGrace = 10 * time.Second
	// pollInterval is how often readiness checks run during Start.
	pollInterval = 100 * time.Millisecond
)

// Component names, in the order they are reported by a sequential start.
const (
	ComponentAPIServer         = "kube-apiserver+etcd"
	ComponentCRDs              = "crds"
	ComponentWebhookConfigs    = "webhook-configurations"
	ComponentControllerManager = "kube-controller-manager"
	ComponentScheduler         = "kube-scheduler"
	ComponentKwok              = "kwok"
	ComponentControllers       = "trainer+jobset-controllers"
	ComponentRuntimes          = "default-runtimes"
	ComponentNodes             = "nodes"
)

// controllerManagerControllers are the kube-controller-manager controllers a
// TrainJob needs on its way to Pods, and to be cleaned up after.
var controllerManagerControllers = []string{
	"job-controller",                   // Jobs -> Pods
	"garbage-collector-controller",     // TrainJob -> JobSet -> Jobs -> Pods cascade
	"namespace-controller",             // deleting a namespace deletes its objects
	"node-lifecycle-controller",        // clears node.kubernetes.io/not-ready once Ready
	"serviceaccount-controller",        // the default ServiceAccount of new namespaces
	"pod-garbage-collector-controller", // Pods bound to deleted nodes
}

// ComponentTiming says when one component became ready.
type ComponentTiming struct {
	// Name is one of the Component* constants.
	Name string
	// Took is how long the component itself took, from its own start.
	Took time.Duration
	// ReadyAt is the time since Start began at which it was ready.
	ReadyAt time.Duration
}

// Environment is a local Kubernetes control plane running the real Kubeflow
// Trainer and JobSet controllers and webhooks, the real Job controller and
// scheduler, and KWOK-simulated GPU nodes. The zero value is usable: every
// field is optional and its zero value is the documented default.
type Environment struct {
	// AssetsDir is the directory holding kube-apiserver, etcd,
	// kube-controller-manager, kube-scheduler and kwok. Empty: look in
	// $KUBEBUILDER_ASSETS, then in bin/k8s/<KubernetesVersion>/ of the working
	// directory or one of its parents (where `make assets` builds them).
	AssetsDir string

	// Nodes are the simulated node groups created by Start. Empty: no nodes;
	// fakegpu.DefaultNodeGroups() is what simctl up uses.
	Nodes []fakegpu.NodeGroup

	// SkipDefaultRuntimes leaves out the Trainer's default
	// ClusterTrainingRuntimes (torch-distributed, ...). False installs them.
	SkipDefaultRuntimes bool

	// WorkDir receives kubeconfigs, serving certificates and component logs
	// under logs/. Empty: a new temporary directory that Stop removes.
	WorkDir string

	// KubeconfigPath is where Start writes an admin kubeconfig usable by
	// kubectl. Empty: <WorkDir>/kubeconfig.
	KubeconfigPath string

	// StartTimeout bounds Start. Zero: DefaultStartTimeout.
	StartTimeout time.Duration

	// Progress, when set, is called once per component as it becomes ready,
	// from one goroutine at a time.
	Progress func(ComponentTiming)

	// Clock measures start times. Nil: the real clock.
	Clock clock.PassiveClock

	// OnTrainerBuild, when set before Start, is called each time the
	// in-process Trainer controller has built a TrainJob's objects (a
	// NewObjects call of its runtime that returned no error), before it
	// applies them: with the TrainJob it built from (a deep copy, the
	// hook's to keep) and the apply configurations it is about to apply (the
	// trainer's own: the hook must neither modify them nor read them after
	// it returns). It is called from the controller's reconcile goroutines,
	// possibly at the same time for different TrainJobs. Nil: off; the
	// trainer's runtimes are then passed to its controllers undecorated.
	// The hook does not change what the trainer builds or applies.
	OnTrainerBuild func(trainJob *trainer.TrainJob, objects []apiruntime.ApplyConfiguration)

	env        *envtest.Environment
	cfg        *rest.Config
	scheme     *apiruntime.Scheme
	client     client.Client
	processes  []*proc.Process
	kwok       *proc.Process
	mgrCancel  context.CancelFunc
	mgrDone    chan error
	ownWorkDir bool
	timings    []ComponentTiming
	progressMu sync.Mutex
	// usersMu serializes envtest's AddUser, whose certificate authority is
	// not safe for concurrent use; components start in parallel.
	usersMu sync.Mutex
	started time.Time
	// ParentDeathProtected is false when the apiserver and etcd could not be
	// given a parent-death signal (setpriv missing or not Linux).
	parentDeathProtected bool
}

// Config returns the admin rest.Config of a started environment.
func (e *Environment) Config() *rest.Config { return rest.CopyConfig(e.cfg) }

// Scheme returns the scheme with every type the environment serves.
func (e *Environment) Scheme() *apiruntime.Scheme { return e.scheme }

// Client returns an admin client of a started environment.
func (e *Environment) Client() client.Client { return e.client }

// Timings returns the start time of each component, in the order they
// became ready.
func (e *Environment) Timings() []ComponentTiming {
	e.progressMu.Lock()
	defer e.progressMu.Unlock()
	return append([]ComponentTiming(nil), e.timings...)
}

// LogDir is the directory that holds one log file per component.
func (e *Environment) LogDir() string { return filepath.Join(e.WorkDir, "logs") }

// ParentDeathProtected reports whether every child process dies with this
// process even on SIGKILL (Linux with setpriv(1)).
func (e *Environment) ParentDeathProtected() bool { return e.parentDeathProtected }

func (e *Environment) now() time.Time {
	if e.Clock == nil {
		e.Clock = clock.RealClock{}
	}
	return e.Clock.Now()
}

func (e *Environment) ready(name string, since time.Time) {
	now := e.now()
	t := ComponentTiming{Name: name, Took: now.Sub(since), ReadyAt: now.Sub(e.started)}
	e.progressMu.Lock()
	defer e.progressMu.Unlock()
	e.timings = append(e.timings, t)
	if e.Progress != nil {
		e.Progress(t)
	}
}

// Start brings the environment up and returns once the webhook server
// answers TLS, the controllers' caches have synced, kube-controller-manager
// and kube-scheduler report healthy and every node is Ready and schedulable.
// On error everything already started is stopped again.
func (e *Environment) Start(ctx context.Context) (err error) {
	e.started = e.now()
	timeout := e.StartTimeout
	if timeout == 0 {
		timeout = DefaultStartTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer func() {
		if err != nil {
			_ = e.Stop()
		}
	}()

	bins, err := findBinaries(e.AssetsDir)
	if err != nil {
		return err
	}
	if e.WorkDir == "" {
		if e.WorkDir, err = newWorkDir(); err != nil {
			return err
		}
		e.ownWorkDir = true
	}
	for _, d := range []string{e.LogDir(), filepath.Join(e.WorkDir, "bin"), filepath.Join(e.WorkDir, "kube-apiserver-certs"), filepath.Join(e.WorkDir, "etcd")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("failed to create %s: %w", d, err)
		}
	}
	if e.KubeconfigPath == "" {
		e.KubeconfigPath = filepath.Join(e.WorkDir, "kubeconfig")
	}
	if e.scheme, err = controllers.NewScheme(); err != nil {
		return err
	}

	if err := e.startAPIServer(bins); err != nil {
		return err
	}
	if e.client, err = client.New(e.cfg, client.Options{Scheme: e.scheme}); err != nil {
		return fmt.Errorf("failed to create client: %w", err)
	}
	if err := e.writeKubeconfig("admin", e.KubeconfigPath); err != nil {
		return err
	}

	// Everything below needs only the API server; run it side by side.
	g, gctx := errgroup.WithContext(ctx)
	crdsReady := make(chan struct{})
	webhooksReady := make(chan struct{})
	g.Go(func() error { return e.installCRDs(crdsReady) })
	g.Go(func() error { return e.installWebhookConfigs(webhooksReady) })
	g.Go(func() error { return e.startControllerManager(gctx, bins[binControllerManager]) })
	g.Go(func() error { return e.startScheduler(gctx, bins[binScheduler]) })
	g.Go(func() error { return e.startNodes(gctx, bins[binKwok]) })
	g.Go(func() error {
		if err := waitFor(gctx, crdsReady, webhooksReady); err != nil {
			return err
		}
		if err := e.startControllers(gctx); err != nil {
			return err
		}
		return e.installRuntimes(gctx)
	})
	return g.Wait()
}

func waitFor(ctx context.Context, chans ...chan struct{}) error {
	for _, c := range chans {
		select {
		case <-c:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (e *Environment) startAPIServer(bins map[string]string) error {
	since := e.now()
	binDir := filepath.Join(e.WorkDir, "bin")
	apiserver, protected, err := proc.WrapWithParentDeathSignal(binDir, binAPIServer, bins[binAPIServer])
	if err != nil {
		return err
	}
	etcd, _, err := proc.WrapWithParentDeathSignal(binDir, binEtcd, bins[binEtcd])
	if err != nil {
		return err
	}
	e.parentDeathProtected = protected
	e.env = &envtest.Environment{ControlPlaneStartTimeout: time.Minute, ControlPlaneStopTimeout: stopGrace}
	// PodNodeSelector and PodTolerationRestriction let a namespace's
	// annotations add a nodeSelector and tolerations to its Pods: the
	// scenario runner confines each scenario's Pods to its own nodes so.
	e.env.ControlPlane.GetAPIServer().Configure().Append("enable-admission-plugins", "PodNodeSelector", "PodTolerationRestriction")
	// Their state lives in the work dir, so that it goes with it.
	e.env.ControlPlane.GetAPIServer().Path = apiserver
	e.env.ControlPlane.GetAPIServer().CertDir = filepath.Join(e.WorkDir, "kube-apiserver-certs")
	e.env.ControlPlane.Etcd = &envtest.Etcd{Path: etcd, DataDir: filepath.Join(e.WorkDir, "etcd")}
	cfg, err := e.env.Start()
	if err != nil {
		return fmt.Errorf("failed to start kube-apiserver and etcd: %w", err)
	}
	e.cfg = cfg
	e.cfg.QPS, e.cfg.Burst = 200, 400
	e.ready(ComponentAPIServer, since)
	return nil
}

// writeKubeconfig writes a kubeconfig for a user in system:masters.
func (e *Environment) writeKubeconfig(user, path string) error {
	e.usersMu.Lock()
	u, err := e.env.AddUser(envtest.User{Name: user, Groups: []string{"system:masters"}}, nil)
	e.usersMu.Unlock()
	if err != nil {
		return fmt.Errorf("failed to add user %s: %w", user, err)
	}
	data, err := u.KubeConfig()
	if err != nil {
		return fmt.Errorf("failed to render kubeconfig of %s: %w", user, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("failed to create kubeconfig dir: %w", err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("failed to write kubeconfig %s: %w", path, err)
	}
	return nil
}

func (e *Environment) installCRDs(done chan struct{}) error {
	since := e.now()
	crds, err := readCRDs(fixtures.FS, fixtures.CRDDir)
	if err != nil {
		return err
	}
	// One request each, side by side: the API server compiles every CRD's
	// schema and CEL rules on create, which dominates this step.
	var g errgroup.Group
	for _, crd := range crds {
		g.Go(func() error { return envtest.CreateCRDs(e.cfg, []*apiextensionsv1.CustomResourceDefinition{crd}) })
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("failed to create CRDs: %w", err)
	}
	if err := envtest.WaitForCRDs(e.cfg, crds, envtest.CRDInstallOptions{MaxTime: time.Minute, PollInterval: 20 * time.Millisecond}); err != nil {
		return fmt.Errorf("failed to wait for CRDs: %w", err)
	}
	close(done)
	e.ready(ComponentCRDs, since)
	return nil
}

func (e *Environment) installWebhookConfigs(done chan struct{}) error {
	since := e.now()
	// envtest's Start already chose the serving host, port and certificate
	// (with no webhooks to install); point the configurations at them.
	opts := &e.env.WebhookInstallOptions
	for file, prefix := range map[string]string{fixtures.TrainerWebhooks: "trainer-", fixtures.JobSetWebhooks: "jobset-"} {
		muts, vals, err := readWebhooks(fixtures.FS, file, prefix)
		if err != nil {
			return err
		}
		opts.MutatingWebhooks = append(opts.MutatingWebhooks, muts...)
		opts.ValidatingWebhooks = append(opts.ValidatingWebhooks, vals...)
	}
	if err := opts.ModifyWebhookDefinitions(); err != nil {
		return fmt.Errorf("failed to point webhook configurations at the local server: %w", err)
	}
	if err := opts.Install(e.cfg); err != nil {
		return fmt.Errorf("failed to install webhook configurations: %w", err)
	}
	close(done)
	e.ready(ComponentWebhookConfigs, since)
	return nil
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("failed to find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startComponent starts a kube component that serves /healthz over HTTPS on
// a loopback port and waits until it answers ok.
func (e *Environment) startComponent(ctx context.Context, name, bin string, args func(kubeconfig string, port int, certDir string) []string) error {
	since := e.now()
	kubeconfig := filepath.Join(e.WorkDir, name+".kubeconfig")
	if err := e.writeKubeconfig("system:"+name, kubeconfig); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	certDir := filepath.Join(e.WorkDir, name+"-certs")
	p := &proc.Process{Name: name, Path: bin, Args: args(kubeconfig, port, certDir), LogPath: filepath.Join(e.LogDir(), name+".log")}
	if err := e.addProcess(p); err != nil {
		return err
	}
	healthz := "https://127.0.0.1:" + strconv.Itoa(port) + "/healthz"
	httpClient := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	if err := p.WaitUntil(ctx, pollInterval, func(ctx context.Context) error { return checkHealthz(ctx, httpClient, healthz) }); err != nil {
		return err
	}
	e.ready(name, since)
	return nil
}

func checkHealthz(ctx context.Context, c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", url, resp.Status)
	}
	return nil
}

func (e *Environment) addProcess(p *proc.Process) error {
	if err := p.Start(); err != nil {
		return err
	}
	e.progressMu.Lock()
	e.processes = append(e.processes, p)
	e.progressMu.Unlock()
	return nil
}

func (e *Environment) startControllerManager(ctx context.Context, bin string) error {
	return e.startComponent(ctx, ComponentControllerManager, bin, func(kubeconfig string, port int, certDir string) []string {
		return append(componentArgs(kubeconfig, port, certDir),
			"--controllers="+strings.Join(controllerManagerControllers, ","),
			// Check node conditions every second, so the not-ready taint
			// goes as soon as KWOK reports a node Ready.
			"--node-monitor-period=1s",
		)
	})
}

func (e *Environment) startScheduler(ctx context.Context, bin string) error {
	return e.startComponent(ctx, ComponentScheduler, bin, componentArgs)
}

// componentArgs are the flags kube-controller-manager and kube-scheduler
// share: the harness's kubeconfig for the API and for delegated authn/authz,
// serving on a loopback port with a self-signed certificate, no leader
// election.
func componentArgs(kubeconfig string, port int, certDir string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--authentication-skip-lookup=true",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + certDir,
		"--leader-elect=false",
		"--kube-api-qps=200",
		"--kube-api-burst=400",
	}
}

// startNodes starts KWOK, creates the configured nodes and waits until each
// is Ready and no longer carries the node.kubernetes.io/not-ready taint.
func (e *Environment) startNodes(ctx context.Context, bin string) error {
	since := e.now()
	kubeconfig := filepath.Join(e.WorkDir, "kwok.kubeconfig")
	if err := e.writeKubeconfig("system:kwok", kubeconfig); err != nil {
		return err
	}
	config := filepath.Join(e.WorkDir, "kwok.yaml")
	if err := os.WriteFile(config, fakegpu.KwokConfig(), 0o644); err != nil {
		return fmt.Errorf("failed to write kwok config: %w", err)
	}
	// kwok would also read ~/.kwok/kwok.yaml; give it an empty work dir.
	kwokDir := filepath.Join(e.WorkDir, "kwok")
	if err := os.MkdirAll(kwokDir, 0o755); err != nil {
		return fmt.Errorf("failed to create kwok work dir: %w", err)
	}
	kwok := &proc.Process{
		Name:    ComponentKwok,
		Path:    bin,
		Args:    fakegpu.KwokArgs(kubeconfig, config),
		Env:     []string{fakegpu.KwokWorkDirEnv + "=" + kwokDir},
		LogPath: filepath.Join(e.LogDir(), "kwok.log"),
	}
	if err := e.addProcess(kwok); err != nil {
		return err
	}
	e.ready(ComponentKwok, since)

	e.kwok = kwok
	since = e.now()
	if _, err := e.AddNodes(ctx, e.Nodes); err != nil {
		return err
	}
	e.ready(ComponentNodes, since)
	return nil
}

// AddNodes creates simulated nodes on a started environment and waits until
// each is Ready and schedulable. It returns their names.
func (e *Environment) AddNodes(ctx context.Context, groups []fakegpu.NodeGroup) ([]string, error) {
	nodes, err := fakegpu.BuildNodes(groups)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(nodes))
	for _, n := range nodes {
		if err := e.client.Create(ctx, n); err != nil && !apierrors.IsAlreadyExists(err) {
			return names, fmt.Errorf("failed to create node %s: %w", n.Name, err)
		}
		names = append(names, n.Name)
	}
	if err := e.kwok.WaitUntil(ctx, pollInterval, func(ctx context.Context) error { return e.nodesSchedulable(ctx, names) }); err != nil {
		return names, fmt.Errorf("nodes did not become ready: %w", err)
	}
	return names, nil
}

// nodesSchedulable returns nil once every named node is Ready and carries
// neither the not-ready nor the unreachable taint.
func (e *Environment) nodesSchedulable(ctx context.Context, names []string) error {
	for _, name := range names {
		n := &corev1.Node{}
		if err := e.client.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			return err
		}
		if !NodeReady(n) {
			return fmt.Errorf("node %s is not Ready", name)
		}
		for _, t := range n.Spec.Taints {
			if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
				return fmt.Errorf("node %s still has taint %s", name, t.Key)
			}
		}
	}
	return nil
}

// NodeReady reports whether a node's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

var setGlobalLogger sync.Once

func (e *Environment) startControllers(ctx context.Context) error {
	since := e.now()
	logFile, err := os.Create(filepath.Join(e.LogDir(), "controllers.log"))
	if err != nil {
		return fmt.Errorf("failed to create controllers log: %w", err)
	}
	logger := zap.New(zap.WriteTo(logFile), zap.Level(zapcore.InfoLevel))
	// controller-runtime warns on stderr when its global logger is never set;
	// the Trainer and JobSet log through the manager's logger otherwise.
	setGlobalLogger.Do(func() { ctrl.SetLogger(logger) })

	hooks := &e.env.WebhookInstallOptions
	mgrCtx, mgrCancel := context.WithCancel(context.Background())
	mgr, err := controllers.NewManager(mgrCtx, controllers.Options{
		Config:         e.cfg,
		Scheme:         e.scheme,
		WebhookHost:    hooks.LocalServingHost,
		WebhookPort:    hooks.LocalServingPort,
		WebhookCertDir: hooks.LocalServingCertDir,
		Logger:         logger,
		OnBuild:        e.OnTrainerBuild,
	})
	if err != nil {
		mgrCancel()
		_ = logFile.Close()
		return err
	}
	e.mgrCancel = mgrCancel
	e.mgrDone = make(chan error, 1)
	go func() {
		err := mgr.Start(mgrCtx)
		_ = logFile.Close()
		e.mgrDone <- err
	}()

	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return fmt.Errorf("failed to sync controller caches: %w", ctx.Err())
	}
	addr := net.JoinHostPort(hooks.LocalServingHost, strconv.Itoa(hooks.LocalServingPort))
	dialer := &net.Dialer{Timeout: time.Second}
	err = wait.PollUntilContextCancel(ctx, pollInterval, true, func(context.Context) (bool, error) {
		select {
		case err := <-e.mgrDone:
			e.mgrDone <- err
			return false, fmt.Errorf("controller manager stopped: %w", err)
		default:
		}
		conn, err := tls.DialWithDialer(dialer, "tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			return false, nil
		}
		return true, conn.Close()
	})
	if err != nil {
		return fmt.Errorf("failed to reach the webhook server at %s: %w", addr, err)
	}
	e.ready(ComponentControllers, since)
	return nil
}

// installRuntimes creates the Trainer's default ClusterTrainingRuntimes,
// through the Trainer's validating webhook like on a real cluster.
func (e *Environment) installRuntimes(ctx context.Context) error {
	if e.SkipDefaultRuntimes {
		return nil
	}
	since := e.now()
	objs, err := readObjects(fixtures.FS, fixtures.RuntimeDir)
	if err != nil {
		return err
	}
	if err := e.waitPastCreateGrace(ctx, runtimeCRD); err != nil {
		return err
	}
	for _, o := range objs {
		if err := e.client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("failed to create %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	e.ready(ComponentRuntimes, since)
	return nil
}

// runtimeCRD is the CRD of the default runtimes.
const runtimeCRD = "clustertrainingruntimes.trainer.kubeflow.org"

// crdCreateGrace is how long after a CRD becomes Established the API server
// delays every create of its resource by a flat two seconds
// (apiextensions-apiserver's crdHandler, for HA API servers to catch up).
const crdCreateGrace = 2 * time.Second

// waitPastCreateGrace waits until the API server no longer delays creates of
// the CRD's resource. The server compares against the Established
// condition's second-precision time, so this wait is shorter than its sleep.
func (e *Environment) waitPastCreateGrace(ctx context.Context, name string) error {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := e.client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		return fmt.Errorf("failed to get CRD %s: %w", name, err)
	}
	for _, c := range crd.Status.Conditions {
		if c.Type != apiextensionsv1.Established {
			continue
		}
		wait := c.LastTransitionTime.Add(crdCreateGrace).Sub(e.now())
		if wait <= 0 {
			return nil
		}
		select {
		case <-time.After(wait):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return fmt.Errorf("CRD %s is not Established", name)
}

// Stop stops every component and removes the work directory when Start
// created it. It is safe to call on a partly started environment and more
// than once.
func (e *Environment) Stop() error {
	var errs []error
	if e.mgrCancel != nil {
		e.mgrCancel()
		select {
		case err := <-e.mgrDone:
			if err != nil && !errors.Is(err, context.Canceled) {
				errs = append(errs, fmt.Errorf("controller manager: %w", err))
			}
		case <-time.After(stopGrace):
			errs = append(errs, errors.New("controller manager did not stop in time"))
		}
		e.mgrCancel = nil
	}
	e.progressMu.Lock()
	processes := e.processes
	e.processes = nil
	e.progressMu.Unlock()
	var wg sync.WaitGroup
	for _, p := range processes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = p.Stop(stopGrace)
		}()
	}
	wg.Wait()
	if e.env != nil {
		if err := e.env.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("failed to stop kube-apiserver and etcd: %w", err))
		}
		e.env = nil
	}
	if e.ownWorkDir && e.WorkDir != "" {
		if err := os.RemoveAll(e.WorkDir); err != nil {
			errs = append(errs, fmt.Errorf("failed to remove work dir: %w", err))
		}
		e.WorkDir = ""
		e.ownWorkDir = false
	}
	return errors.Join(errs...)
}
