package envtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/gate"
	"github.com/trainersim/trainersim/sim/internal/assets"
	"github.com/trainersim/trainersim/sim/internal/audit"
	"github.com/trainersim/trainersim/sim/internal/controllers"
	"github.com/trainersim/trainersim/sim/internal/controlplane"
	"github.com/trainersim/trainersim/sim/internal/proc"
	"github.com/trainersim/trainersim/sim/internal/startup"
	"github.com/trainersim/trainersim/sim/internal/storage"
	"github.com/trainersim/trainersim/sim/kwok"
	"github.com/trainersim/trainersim/sim/releases"
	"github.com/trainersim/trainersim/sim/view"
	"github.com/trainersim/trainersim/sim/webhooks"
)

// Steps of the envtest provider's Start, in the order a sequential start
// reports them (with cluster.StepKwok, cluster.StepRuntimes and
// cluster.StepNodes).
const (
	StepAPIServer         = "kube-apiserver+etcd"
	StepCRDs              = "crds"
	StepWebhookConfigs    = "webhook-configurations"
	StepControllerManager = controlplane.ControllerManager
	StepScheduler         = controlplane.Scheduler
	StepControllers       = "trainer+jobset-controllers"
	StepStorageClass      = "storage-class"
	StepProvisioner       = "local-path-provisioner"
)

// Environment is a local Kubernetes control plane running the real Kubeflow
// Trainer and JobSet controllers and webhooks, the real Job controller and
// scheduler, and KWOK-simulated GPU nodes. The zero value is usable: every
// field is optional and its zero value is the documented default.
type Environment struct {
	// AssetsDir is the directory holding kube-apiserver, etcd,
	// kube-controller-manager, kube-scheduler and kwok. Empty: look in
	// $KUBEBUILDER_ASSETS, then in bin/k8s/<releases.KubernetesVersion>/ of the working
	// directory or one of its parents (where `make assets` builds them).
	AssetsDir string

	// Trainer is the Kubeflow Trainer release to run (releases.Trainers).
	// Empty: releases.TrainerVersion, the one compiled in, which runs in this
	// process; any other runs as processes (see release.go).
	Trainer string

	// TrainerAs is, when the Trainer compiled in was built from a local
	// checkout (make build TRAINER_DIR=...), the release it descends from
	// (vX.Y.Z): the checkout runs as newer than it for version ranges.
	// Empty: the one make found in its git tags or module version; Start
	// fails when it found none. Only for the Trainer compiled in.
	TrainerAs string

	// Components are run besides the Trainer and JobSet (releases.Components:
	// kueue). Empty: none.
	Components []string

	// Nodes are the simulated node groups created by Start. Empty: no nodes;
	// fakegpu.DefaultNodeGroups() is what simctl up uses.
	Nodes []fakegpu.NodeGroup

	// Heartbeat is how often KWOK renews the simulated nodes' Leases and
	// how long kube-controller-manager's node-lifecycle controller waits
	// for a renewal before it marks a node Unknown. Zero:
	// fakegpu.FastHeartbeat; simctl run and the ginkgo and e2e-framework
	// adapters choose fakegpu.KubernetesHeartbeat when none of their
	// scenarios takes a node unreachable (runner.HeartbeatFor).
	Heartbeat fakegpu.Heartbeat

	// Views are the components whose watches are made viewable
	// (cluster.ViewServing, sim/view): the Trainer's and JobSet's managers,
	// which run in this process, have their transports go through the
	// views' registry when it names any component; a component that runs
	// as a process (Kueue, kube-controller-manager, kube-scheduler, KWOK,
	// another Trainer release) is given a loopback proxy when it is named.
	// Empty: every transport is client-go's, untouched, and no proxy runs;
	// simctl run and the adapters name the components a scenario they run
	// declares a view of (runner.ViewsFor).
	Views []string

	// NoSnapshot starts on an empty etcd and installs the CRDs, webhook
	// configurations, default runtimes and isolation policy itself, as the
	// snapshot build does. False: start on the snapshot of that state,
	// building it first when there is none for these binaries, fixtures and
	// versions (see snapshot.go).
	NoSnapshot bool

	// WorkDir receives kubeconfigs, serving certificates and component logs
	// under logs/. Empty: a new temporary directory that Stop removes.
	WorkDir string

	// KubeconfigPath is where Start writes an admin kubeconfig usable by
	// kubectl. Empty: <WorkDir>/kubeconfig.
	KubeconfigPath string

	// AuditLog, when set, is the file the API server writes its audit log
	// to, recording who wrote what with the bodies and answers a scenario
	// can be rebuilt from (audit.RecordPolicy); it
	// must not exist yet, or be empty. Empty: logs/audit.log of WorkDir,
	// recording the components' writes only (audit.Policy).
	AuditLog string

	// StartTimeout bounds Start. Zero: cluster.DefaultStartTimeout.
	StartTimeout time.Duration

	// Progress, when set, is called once per component as it becomes ready,
	// from one goroutine at a time.
	Progress func(cluster.StepTiming)

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

	env     *envtest.Environment
	release releases.Trainer
	views   *view.Registry
	proxies map[string]*view.Proxy // the views' of the components that run as processes, under mu
	// jobSetWebhookPort is where the JobSet manager serves its webhooks
	// (the Trainer's serves on envtest's port).
	jobSetWebhookPort int
	cfg               *rest.Config
	scheme            *apiruntime.Scheme
	client            client.WithWatch
	processes         []*proc.Process
	// hollow are the hollow kubelets (hollow.go) by node name; guarded
	// by mu.
	hollow map[string]*proc.Process
	// releaseProcesses are the Trainer's and JobSet's managers of a
	// release that runs as processes; guarded by mu.
	releaseProcesses []*proc.Process
	// upgrades counts the upgrades that started a release's processes.
	upgrades int
	nodes    *kwok.Pool
	lease    *kwok.Lease
	// volumes is KWOK's volume manager, which runs while KWOK does.
	volumes *inProcessPart
	// managers are the Trainer's and JobSet's managers in this process,
	// each as it runs now (lifecycle.go); guarded by mu.
	managers []*inProcessManager
	// processComponents are the components that run as processes whose
	// lifecycle a scenario may change (Kueue); guarded by mu.
	processComponents []*processComponent
	// kueueTrainJob is Kueue's TrainJob defaulting webhook as installed.
	kueueTrainJob *admissionregistrationv1.MutatingWebhook
	// webhooks serves the scenario webhooks (ServeWebhooks); guarded by mu.
	webhooks *webhooks.Server
	// gates serves the scenarios' gates, once one asks (ServeGates).
	gates *gate.Server
	// provisioner is the default StorageClass's provisioner.
	provisioner *storage.Controller
	// logFile and logger are the in-process components' log
	// (controllers.log); detachLogs ends the routing of the process's
	// global loggers to it.
	logFile    *os.File
	logger     logr.Logger
	detachLogs func()
	ownWorkDir bool
	progress   startup.Progress
	// snapshotBuild makes Start build a snapshot's state: no
	// kube-controller-manager, kube-scheduler or kwok, nothing run-specific.
	snapshotBuild bool
	// mu guards processes.
	mu sync.Mutex
	// auditLog is the API server's audit log, read as it grows.
	auditOnce sync.Once
	auditLog  *audit.Log
	// usersMu serializes envtest's AddUser, whose certificate authority is
	// not safe for concurrent use; components start in parallel.
	usersMu sync.Mutex
	// ParentDeathProtected is false when the apiserver and etcd could not be
	// given a parent-death signal (setpriv missing or not Linux).
	parentDeathProtected bool
}

var (
	_ cluster.Cluster              = (*Environment)(nil)
	_ cluster.TrainerBuildObserver = (*Environment)(nil)
	_ cluster.WebhookServing       = (*Environment)(nil)
	_ cluster.RequestAuditing      = (*Environment)(nil)
	_ cluster.GateServing          = (*Environment)(nil)
	_ cluster.KueueWebhooks        = (*Environment)(nil)
	_ cluster.ParentDeath          = (*Environment)(nil)
	_ cluster.Logs                 = (*Environment)(nil)
)

// ObserveTrainerBuilds sets OnTrainerBuild (cluster.TrainerBuildObserver) when the
// Trainer runs in this process, and says whether it does.
func (e *Environment) ObserveTrainerBuilds(fn func(*trainer.TrainJob, []apiruntime.ApplyConfiguration)) bool {
	if r, err := releases.LookupTrainer(e.Trainer); err != nil || !r.InProcess() {
		return false
	}
	e.OnTrainerBuild = fn
	return true
}

// Versions says what runs: this control plane, and the Trainer and JobSet
// modules compiled into this binary or, for another release, that release's.
func (e *Environment) Versions() cluster.Versions {
	v := cluster.Versions{
		Cluster:    cluster.Envtest,
		Kubernetes: "v" + releases.KubernetesVersion,
		Trainer:    releases.ModuleVersion(releases.TrainerModule),
		JobSet:     releases.ModuleVersion(releases.JobSetModule),
	}
	r, err := releases.LookupTrainer(e.Trainer)
	switch {
	case err != nil:
	case !r.InProcess():
		v.Trainer, v.JobSet = r.Version, r.JobSet
	default:
		if v.Trainer == "unknown" {
			// A test binary carries no module versions: the compiled-in
			// release is go.mod's (a unit test keeps releases.TrainerVersion
			// so), unless make test built it against a checkout.
			v.Trainer, v.JobSet = r.Version, r.JobSet
		}
		if c, ok := releases.TrainerCheckout(); ok {
			c, _ = c.As(e.TrainerAs)
			v.Trainer, v.TrainerCheckout, v.TrainerBase = c.Version(), c.String(), c.Base
		}
	}
	if slices.Contains(e.Components, releases.ComponentKueue) {
		v.Kueue = releases.KueueVersion
		if c, ok := releases.KueueCheckout(); ok {
			v.Kueue, v.KueueCheckout, v.KueueBase = kueueCheckoutVersion(c), c.String(), c.Base
		}
	}
	return v
}

// IsolateNamespace labels the namespace cluster.IsolationKey=<name> and ManagedBy,
// and annotates it for the API server's PodNodeSelector and
// PodTolerationRestriction admission plugins (which Start enables), so that
// every Pod created in it gets the node selector and the toleration of
// cluster.IsolateNodeGroup's nodes.
func (e *Environment) IsolateNamespace(ns *corev1.Namespace) {
	tolerations, _ := json.Marshal([]corev1.Toleration{cluster.IsolationToleration(ns.Name)})
	metav1.SetMetaDataLabel(&ns.ObjectMeta, cluster.IsolationKey, ns.Name)
	metav1.SetMetaDataLabel(&ns.ObjectMeta, cluster.ManagedByLabel, cluster.ManagedByValue)
	metav1.SetMetaDataAnnotation(&ns.ObjectMeta, "scheduler.alpha.kubernetes.io/node-selector", cluster.IsolationKey+"="+ns.Name)
	metav1.SetMetaDataAnnotation(&ns.ObjectMeta, "scheduler.alpha.kubernetes.io/defaultTolerations", string(tolerations))
}

// IsolateNodeGroup is cluster.IsolateNodeGroup.
func (e *Environment) IsolateNodeGroup(g fakegpu.NodeGroup, namespace string) fakegpu.NodeGroup {
	return cluster.IsolateNodeGroup(g, namespace)
}

// AdminKubeconfig is KubeconfigPath.
func (e *Environment) AdminKubeconfig() string { return e.KubeconfigPath }

// Config returns the admin rest.Config of a started environment.
func (e *Environment) Config() *rest.Config { return rest.CopyConfig(e.cfg) }

// Scheme returns the scheme with every type the environment serves.
func (e *Environment) Scheme() *apiruntime.Scheme { return e.scheme }

// Client returns an admin client of a started environment.
func (e *Environment) Client() client.Client { return e.client }

// Timings returns the start time of each component, in the order they
// became ready.
func (e *Environment) Timings() []cluster.StepTiming {
	return e.progress.Steps()
}

// LogDir is the directory that holds one log file per component.
func (e *Environment) LogDir() string { return filepath.Join(e.WorkDir, "logs") }

// ParentDeathProtected reports whether every child process dies with this
// process even on SIGKILL (Linux with setpriv(1)).
func (e *Environment) ParentDeathProtected() bool { return e.parentDeathProtected }

func (e *Environment) clock() clock.PassiveClock { return e.progress.Clock() }

func (e *Environment) now() time.Time { return e.progress.Now() }

func (e *Environment) ready(name string, since time.Time) { e.progress.Ready(name, since) }

// Start brings the environment up and returns once the webhook server
// answers TLS, the controllers' caches have synced, kube-controller-manager
// and kube-scheduler report healthy, the default StorageClass exists and its
// provisioner watches claims, and every node is Ready and schedulable.
// On error everything already started is stopped again.
func (e *Environment) Start(ctx context.Context) (err error) {
	// What the process logs through klog and its other global loggers
	// goes to logs/controllers.log while the in-process components run,
	// and nowhere otherwise.
	ctx, cancel := e.progress.Start(ctx, e.Clock, e.Progress, e.StartTimeout)
	defer cancel()
	defer func() {
		if err != nil {
			_ = e.Stop()
		}
	}()

	if e.release, err = releases.LookupTrainer(e.Trainer); err != nil {
		return err
	}
	if c, ok := releases.TrainerCheckout(); ok && e.release.InProcess() {
		if _, err := c.As(e.TrainerAs); err != nil {
			return err
		}
	} else if e.TrainerAs != "" {
		return fmt.Errorf("TrainerAs %s names the release of a Trainer checkout compiled in; this start runs the release %s", e.TrainerAs, e.release.Version)
	}
	if err := releases.ValidateComponents(e.Components); err != nil {
		return err
	}
	bins, err := assets.Find(e.AssetsDir)
	if err != nil {
		return err
	}
	if !e.release.InProcess() {
		if _, err := releaseBinaries(e.release); err != nil {
			return err
		}
	}
	if e.jobSetWebhookPort, err = controlplane.FreePort(); err != nil {
		return err
	}
	if e.WorkDir == "" {
		if e.WorkDir, err = startup.NewWorkDir(); err != nil {
			return err
		}
		e.ownWorkDir = true
	} else if entries, err := os.ReadDir(filepath.Join(e.WorkDir, "etcd")); err == nil && len(entries) > 0 {
		return fmt.Errorf("work directory %s holds the etcd data of an earlier cluster (%s): give a new or empty directory, or remove that one", e.WorkDir, filepath.Join(e.WorkDir, "etcd"))
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

	restored := false
	if !e.NoSnapshot && !e.snapshotBuild {
		if err := e.restoreSnapshot(ctx, bins); err != nil {
			return err
		}
		restored = true
	}
	if err := e.startAPIServer(bins); err != nil {
		return err
	}
	if len(e.Views) > 0 {
		// Before any component: those in this process wrap their
		// transports with it, the others are given a proxy of it.
		e.views = view.NewRegistry(nil)
	}
	if e.client, err = client.NewWithWatch(e.cfg, client.Options{Scheme: e.scheme}); err != nil {
		return fmt.Errorf("failed to create client: %w", err)
	}
	if err := e.adminKubeconfig("admin", e.KubeconfigPath); err != nil {
		return err
	}
	if err := e.openInProcessLog(); err != nil {
		return err
	}

	// Everything below needs only the API server; run it side by side. On
	// a snapshot the CRDs, runtimes, isolation policy and StorageClass exist already: the
	// steps only wait until the API server serves them, and the webhook
	// configurations are pointed at this start's webhook server.
	g, gctx := errgroup.WithContext(ctx)
	crdsReady := make(chan struct{})
	webhooksReady := make(chan struct{})
	rbacReady := make(chan struct{})
	g.Go(func() error { return e.installRBAC(gctx, rbacReady, restored) })
	g.Go(func() error { return e.installCRDs(crdsReady, restored) })
	g.Go(func() error { return e.installWebhookConfigs(webhooksReady) })
	// kube-controller-manager and kube-scheduler have the API server's
	// bootstrap roles; the others wait for theirs.
	afterRBAC := func(start func(context.Context) error) func() error {
		return func() error {
			if err := waitFor(gctx, rbacReady); err != nil {
				return err
			}
			return start(gctx)
		}
	}
	if !e.snapshotBuild {
		g.Go(func() error { return e.startControllerManager(gctx, bins[assets.ControllerManager]) })
		g.Go(func() error { return e.startScheduler(gctx, bins[assets.Scheduler]) })
		g.Go(afterRBAC(func(ctx context.Context) error { return e.startNodes(ctx, bins[assets.Kwok]) }))
		g.Go(afterRBAC(e.startProvisioner))
	}
	if slices.Contains(e.Components, releases.ComponentKueue) {
		// Kueue needs the Trainer's and JobSet's CRDs, not their
		// controllers.
		g.Go(func() error {
			if err := waitFor(gctx, crdsReady, rbacReady); err != nil {
				return err
			}
			return e.startKueue(gctx, restored)
		})
	}
	g.Go(func() error { return e.installIsolationPolicy(gctx, restored) })
	g.Go(func() error { return e.installStorageClass(gctx, restored) })
	g.Go(func() error {
		if err := waitFor(gctx, crdsReady, webhooksReady, rbacReady); err != nil {
			return err
		}
		if err := e.startControllers(gctx); err != nil {
			return err
		}
		if restored {
			return nil
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

// Stop stops every component and removes the work directory when Start
// created it. It is safe to call on a partly started environment and more
// than once.
//
// A cluster stops at once: nothing of it is kept but its logs and, with a
// work directory of the caller's, etcd's data, and a kill keeps both (etcd
// writes its log before it answers). So the in-process controllers are told
// to stop and every process is killed, all together; a graceful stop took
// 3.5 s after a corpus run, each component waiting about a second for its
// clients to close their connections. Only a snapshot's build, whose etcd
// data the next starts begin from, stops its processes gracefully.
func (e *Environment) Stop() error {
	var errs []error
	if e.lease != nil {
		ctx, cancel := context.WithTimeout(context.Background(), startup.StopGrace)
		if err := e.lease.Release(ctx); err != nil {
			errs = append(errs, err)
		}
		cancel()
		e.lease = nil
	}
	managers := e.inProcessManagers()
	for _, m := range managers {
		m.cancelRun()
	}
	e.mu.Lock()
	processes := e.processes
	e.processes = nil
	webhooks, gates, proxies := e.webhooks, e.gates, e.proxies
	e.webhooks, e.gates, e.proxies = nil, nil, nil
	e.mu.Unlock()
	apiServerLeft, etcdLeft := true, true
	if !e.snapshotBuild {
		var wg sync.WaitGroup
		for _, p := range processes {
			wg.Go(p.Kill)
		}
		if e.env != nil {
			apiServerLeft, etcdLeft = e.killControlPlane()
		}
		wg.Wait()
	}
	for _, m := range managers {
		if err := m.wait(startup.StopGrace); err != nil {
			errs = append(errs, err)
		}
	}
	e.setInProcessManagers(nil)
	if e.volumes != nil {
		e.volumes.halt()
		e.volumes = nil
	}
	if e.provisioner != nil {
		if err := e.provisioner.Stop(); err != nil {
			errs = append(errs, err)
		}
		e.provisioner = nil
	}
	if err := e.closeInProcessLog(); err != nil {
		errs = append(errs, err)
	}
	for _, p := range proxies {
		if err := p.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if webhooks != nil {
		if err := webhooks.Close(); err != nil {
			errs = append(errs, fmt.Errorf("scenario webhooks: %w", err))
		}
	}
	if gates != nil {
		if err := gates.Close(); err != nil {
			errs = append(errs, fmt.Errorf("gates: %w", err))
		}
	}
	if e.snapshotBuild {
		var wg sync.WaitGroup
		for _, p := range processes {
			wg.Go(func() { _ = p.Stop(startup.StopGrace) })
		}
		wg.Wait()
	}
	if e.env != nil {
		// envtest's Stop, for what was not killed.
		cp := &e.env.ControlPlane
		if apiServerLeft && cp.APIServer != nil {
			if err := cp.APIServer.Stop(); err != nil {
				errs = append(errs, fmt.Errorf("failed to stop kube-apiserver: %w", err))
			}
		}
		if etcdLeft && cp.Etcd != nil {
			if err := cp.Etcd.Stop(); err != nil {
				errs = append(errs, fmt.Errorf("failed to stop etcd: %w", err))
			}
		}
		if err := e.env.WebhookInstallOptions.Cleanup(); err != nil {
			errs = append(errs, err)
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

// killControlPlane kills envtest's kube-apiserver and etcd through their
// wrappers, together, and says which are left (a wrapper that wrote no pid,
// a process that already exited or was not reaped in time): Stop stops
// those as envtest does, and reports what that stop finds.
func (e *Environment) killControlPlane() (apiServerLeft, etcdLeft bool) {
	var wg sync.WaitGroup
	left := make([]bool, 2)
	for i, name := range []string{assets.APIServer, assets.Etcd} {
		wg.Go(func() {
			left[i] = proc.KillWrapped(filepath.Join(e.WorkDir, "bin", name), startup.StopGrace) != nil
		})
	}
	wg.Wait()
	return left[0], left[1]
}
