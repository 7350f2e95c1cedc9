package kubeconfig

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/internal/controllers"
	"github.com/trainersim/trainersim/sim/internal/proc"
	"github.com/trainersim/trainersim/sim/internal/startup"
	"github.com/trainersim/trainersim/sim/kwok"
	"github.com/trainersim/trainersim/sim/policy"
	"github.com/trainersim/trainersim/sim/releases"
)

// StepPreflight is the first step of the kubeconfig provider's Start (then
// cluster.StepIsolation, cluster.StepKwok and cluster.StepNodes).
const StepPreflight = "preflight"

// ErrNoIsolation is returned by Kubeconfig.Start when the cluster offers no
// way to keep scenario Pods off its own nodes and Unisolated is not set.
var ErrNoIsolation = errors.New("the cluster serves no admissionregistration.k8s.io/v1 MutatingAdmissionPolicy (Kubernetes 1.36 and later do), so scenario Pods could land on its real nodes; refusing to run scenarios (--unisolated runs them anyway, one at a time, at that risk)")

// TrainerMismatchError is returned by Kubeconfig.Start when the cluster runs
// another Trainer release than Kubeconfig.Trainer.
type TrainerMismatchError struct {
	// Running is the version the cluster runs ("unknown" when neither its
	// controller Deployment nor a kwok lease says).
	Running string
	// Want is the version Kubeconfig.Trainer asked for.
	Want string
}

func (e *TrainerMismatchError) Error() string {
	return fmt.Sprintf("the cluster runs the Trainer %s, not the %s asked for", e.Running, e.Want)
}

// Kubeconfig is a cluster that already runs the Trainer and JobSet, reached
// through a kubeconfig: a cluster kept by `simctl up`, a kind cluster, a
// staging cluster. Start checks it (preflight), installs the isolation
// policy of the run, and makes sure something plays the kubelet for
// trainersim's simulated nodes: the kwok of the cluster's `simctl up` when
// one holds the kwok lease, else a kwok of its own (the binary `make
// assets` builds) restricted to the nodes trainersim creates. Everything it
// creates carries cluster.ManagedByLabel and cluster.RunLabel and is deleted by Stop; Clean
// removes what a killed run left. The zero value of every field but Path is
// a documented default.
type Kubeconfig struct {
	// Path is the kubeconfig file. Required.
	Path string
	// Context is the kubeconfig context to use. Empty: its current context.
	Context string
	// AssetsDir is where to find kwok when the cluster has none for
	// trainersim's nodes. Empty: as Environment.AssetsDir.
	AssetsDir string
	// WorkDir receives kwok's configuration and log under logs/. Empty: a
	// new temporary directory that Stop removes.
	WorkDir string
	// Nodes are simulated node groups created by Start and deleted by Stop.
	Nodes []fakegpu.NodeGroup
	// Unisolated runs on a cluster that offers no isolation policy; the
	// caller must then run one scenario at a time. False: Start fails with
	// ErrNoIsolation on such a cluster.
	Unisolated bool
	// StartTimeout bounds Start. Zero: cluster.DefaultStartTimeout.
	StartTimeout time.Duration
	// Trainer is the release the cluster must run: Start checks for its
	// default runtimes and, when set, fails with a *TrainerMismatchError
	// if the cluster's Trainer is another. Empty: releases.TrainerVersion's runtimes,
	// whichever Trainer runs.
	Trainer string

	// Progress, when set, is called once per step of Start as it is done.
	Progress func(cluster.StepTiming)
	// Clock measures start times and the kwok lease. Nil: the real clock.
	Clock clock.PassiveClock
	// Provider names the cluster in Versions. Empty: cluster.Kubeconfig;
	// the kind provider, which runs scenarios through a Kubeconfig, gives
	// cluster.Kind.
	Provider string
	// Began is when the provider that brought the cluster up began its
	// Start: steps are timed from there. Zero: when this Start began.
	Began time.Time
	// Serve makes Start find, at preflight, an address of this machine
	// that the cluster's API server reaches, where ServeWebhooks and
	// ServeGates serve the scenarios' webhooks and gates, and fail with a
	// *PreflightError (ErrUnreachable) when there is none. False: the first
	// ServeWebhooks or ServeGates looks (serve.go).
	Serve bool
	// ServeHost is the address to serve at, checked the same way. Empty:
	// loopback, else an address of one of this machine's interfaces.
	ServeHost string

	runID string
	cfg   *rest.Config
	// volumes is the volume manager of the simulated kubelet when this run
	// starts kwok, or reuses the Deployment of a kept kind cluster.
	volumes   *kwok.Volumes
	client    client.WithWatch
	versions  cluster.Versions
	isolation *policy.Isolation
	// ownIsolation: the isolation policy is the run's, to delete on Stop.
	ownIsolation bool
	kwok         *proc.Process
	lease        *kwok.Lease
	nodes        *kwok.Pool
	startNodes   []string
	ownWorkDir   bool
	progress     startup.Progress
	serving      serving
}

var (
	_ cluster.Cluster   = (*Kubeconfig)(nil)
	_ cluster.Isolation = (*Kubeconfig)(nil)
)

// LoadKubeconfig returns the rest.Config of a kubeconfig file and context
// (empty: the current one).
func LoadKubeconfig(path, context string) (*rest.Config, error) {
	cfg, err := clientConfig(path, context).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("failed to load kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}

func clientConfig(path, context string) clientcmd.ClientConfig {
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: path},
		&clientcmd.ConfigOverrides{CurrentContext: context})
}

func (k *Kubeconfig) now() time.Time { return k.progress.Now() }

func (k *Kubeconfig) ready(name string, since time.Time) { k.progress.Ready(name, since) }

// Start checks the cluster and prepares it for scenarios; see Kubeconfig.
// Every failure is returned with nothing left behind: an unreachable or
// unauthorised cluster, a *PreflightError, a *TrainerMismatchError,
// ErrNoIsolation.
func (k *Kubeconfig) Start(ctx context.Context) (err error) {
	k.progress.BeganAt(k.Began)
	// As on kind: what this process logs through its global loggers is
	// dropped; the runner records the server's warnings on its writes.
	ctx, cancel := k.progress.Start(ctx, k.Clock, k.Progress, k.StartTimeout)
	defer cancel()
	defer func() {
		if err != nil {
			_ = k.Stop()
		}
	}()
	if k.Path == "" {
		return errors.New("no kubeconfig given")
	}
	since := k.now()
	if k.cfg, err = LoadKubeconfig(k.Path, k.Context); err != nil {
		return err
	}
	k.cfg.QPS, k.cfg.Burst = 200, 400
	dc, err := discovery.NewDiscoveryClientForConfig(k.cfg)
	if err != nil {
		return fmt.Errorf("failed to create discovery client: %w", err)
	}
	info, err := Reach(dc, k.cfg.Host)
	if err != nil {
		return err
	}
	if k.client, err = NewClient(k.cfg); err != nil {
		return err
	}
	release, err := releases.LookupTrainer(k.Trainer)
	if err != nil {
		return err
	}
	if err := preflight(ctx, k.client, k.cfg.Host, release); err != nil {
		return err
	}
	lease, err := kwok.LiveLease(ctx, k.client, k.progress.Clock())
	if err != nil {
		return fmt.Errorf("cannot use the cluster at %s: %w", k.cfg.Host, err)
	}
	k.versions = cluster.Versions{Cluster: cluster.Kubeconfig, Kubernetes: info.GitVersion}
	k.versions.Trainer, k.versions.JobSet = controllerVersions(ctx, k.client, lease)
	if k.versions.Kueue, err = runningKueue(ctx, k.client); err != nil {
		return err
	}
	if k.Trainer != "" && k.versions.Trainer != release.Version {
		return &TrainerMismatchError{Running: k.versions.Trainer, Want: release.Version}
	}
	if k.Provider != "" {
		k.versions.Cluster = k.Provider
	}
	served, err := policy.AdmissionPoliciesServed(dc)
	if err != nil {
		return err
	}
	if !served && !k.Unisolated {
		return ErrNoIsolation
	}
	k.ready(StepPreflight, since)
	if k.Serve {
		since = k.now()
		if err := k.findServeHost(ctx); err != nil {
			return err
		}
		k.ready(StepServe+" ("+k.serving.host+")", since)
	}

	k.runID = newRunID()
	if served {
		since = k.now()
		shared, err := policy.ClusterIsolationInstalled(ctx, k.client)
		if err != nil {
			return err
		}
		if shared {
			k.isolation = &policy.ClusterIsolation
			k.ready(cluster.StepIsolation+" (the cluster's, reused)", since)
		} else {
			p := policy.RunIsolation(k.runID)
			// Its own from the first create on, for Stop to delete.
			k.isolation, k.ownIsolation = &p, true
			if err := p.Install(ctx, k.client, k.IsolateNamespace); err != nil {
				return err
			}
			k.ready(cluster.StepIsolation, since)
		}
	}

	since = k.now()
	k.nodes = &kwok.Pool{Client: k.client, Labels: map[string]string{cluster.RunLabel: k.runID}}
	switch {
	case lease != nil:
		k.ready(cluster.StepKwok+" (the cluster's, reused)", since)
	case kwok.DeploymentRuns(ctx, k.client):
		// A kind cluster kept up after its run: its kwok runs in it, the
		// volume manager of its simulated kubelet ran in that run's simctl.
		if k.volumes, err = kwok.StartVolumes(ctx, k.cfg, ctrllog.Log.WithName("kwok-volumes")); err != nil {
			return err
		}
		k.ready(cluster.StepKwok+" (the cluster's Deployment, reused)", since)
	default:
		if err := k.startKwok(ctx); err != nil {
			return err
		}
		if k.volumes, err = kwok.StartVolumes(ctx, k.cfg, ctrllog.Log.WithName("kwok-volumes")); err != nil {
			return err
		}
		k.nodes.Kwok = k.kwok
		k.ready(cluster.StepKwok, since)
	}
	if len(k.Nodes) > 0 {
		since = k.now()
		k.startNodes, err = k.AddNodes(ctx, k.Nodes)
		if err != nil {
			return err
		}
		k.ready(cluster.StepNodes, since)
	}
	return nil
}

// newRunID returns a short random id for cluster.RunLabel and the names of the
// run's cluster-scoped objects.
func newRunID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Stop deletes the nodes Start created, the isolation policy and the kwok
// lease, stops kwok and removes the work directory when Start created it.
// Scenario namespaces and nodes are the runner's to delete.
func (k *Kubeconfig) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), startup.StopGrace)
	defer cancel()
	var errs []error
	errs = append(errs, k.serving.close())
	k.serving = serving{}
	if k.nodes != nil && len(k.startNodes) > 0 {
		errs = append(errs, k.nodes.Remove(ctx, k.startNodes))
		k.startNodes = nil
	}
	if k.isolation != nil && k.ownIsolation {
		errs = append(errs, k.isolation.Uninstall(ctx, k.client))
	}
	k.isolation, k.ownIsolation = nil, false
	if k.lease != nil {
		errs = append(errs, k.lease.Release(ctx))
		k.lease = nil
	}
	if k.volumes != nil {
		k.volumes.Stop()
		k.volumes = nil
	}
	if k.kwok != nil {
		_ = k.kwok.Stop(startup.StopGrace)
		k.kwok = nil
	}
	if k.ownWorkDir && k.WorkDir != "" {
		if err := os.RemoveAll(k.WorkDir); err != nil {
			errs = append(errs, fmt.Errorf("failed to remove work dir: %w", err))
		}
		k.WorkDir, k.ownWorkDir = "", false
	}
	return errors.Join(errs...)
}

// AdminKubeconfig is Path.
func (k *Kubeconfig) AdminKubeconfig() string { return k.Path }

// Config returns the admin rest.Config of the kubeconfig.
func (k *Kubeconfig) Config() *rest.Config { return rest.CopyConfig(k.cfg) }

// Client returns a client as the kubeconfig's user.
func (k *Kubeconfig) Client() client.Client { return k.client }

// Scheme returns the scheme of Client.
func (k *Kubeconfig) Scheme() *apiruntime.Scheme { return k.client.Scheme() }

// Versions says what the preflight found running.
func (k *Kubeconfig) Versions() cluster.Versions { return k.versions }

// Isolated reports whether the cluster keeps each scenario's Pods on its own
// nodes (false only with Unisolated on a cluster without the policy API).
func (k *Kubeconfig) Isolated() bool { return k.isolation != nil }

// IsolateNodeGroup is cluster.IsolateNodeGroup, but for a cluster without isolation
// (Unisolated): the nodes then carry the label and no taint, so that the
// scenario's Pods, which get no toleration, can land on them too.
func (k *Kubeconfig) IsolateNodeGroup(g fakegpu.NodeGroup, namespace string) fakegpu.NodeGroup {
	if k.isolation == nil {
		taints := g.Taints
		g = cluster.IsolateNodeGroup(g, namespace)
		g.Taints = taints
		return g
	}
	return cluster.IsolateNodeGroup(g, namespace)
}

// IsolateNamespace labels the namespace cluster.IsolationKey=<name>, ManagedBy,
// cluster.RunLabel=<run> and what the isolation policy selects: the policy then
// gives its Pods the node selector and toleration of cluster.IsolateNodeGroup's
// nodes.
func (k *Kubeconfig) IsolateNamespace(ns *corev1.Namespace) {
	metav1.SetMetaDataLabel(&ns.ObjectMeta, cluster.IsolationKey, ns.Name)
	metav1.SetMetaDataLabel(&ns.ObjectMeta, cluster.ManagedByLabel, cluster.ManagedByValue)
	metav1.SetMetaDataLabel(&ns.ObjectMeta, cluster.RunLabel, k.runID)
	if k.isolation != nil {
		for key, v := range k.isolation.Namespaces {
			metav1.SetMetaDataLabel(&ns.ObjectMeta, key, v)
		}
	}
}

// Reach asks the API server at host its version: the first request to a
// cluster, whose failure says in one line that it cannot be reached.
func Reach(dc discovery.ServerVersionInterface, host string) (*version.Info, error) {
	info, err := dc.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("cannot reach the cluster at %s: %w", host, err)
	}
	return info, nil
}

// NewClient returns a client of cfg with every type trainersim reads.
func NewClient(cfg *rest.Config) (client.WithWatch, error) {
	scheme, err := controllers.NewScheme()
	if err != nil {
		return nil, err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("failed to create a client of %s: %w", cfg.Host, err)
	}
	return c, nil
}
