// Package cluster is the seam between what runs scenarios (the runner, the
// reports, simctl explain, the ginkgo adapter) and what provides a cluster
// (sim/providers/envtest, sim/providers/kubeconfig, sim/providers/kind): the
// Cluster interface and the capabilities a provider may add, found by type
// assertion, in this file; the labels and the isolation every provider
// gives a scenario's objects in labels.go. Nothing above it knows which
// provider it talks to.
package cluster

import (
	"context"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim/gate"
	"github.com/trainersim/trainersim/sim/view"
	"github.com/trainersim/trainersim/sim/webhooks"
)

// Provider names, as --cluster takes them and Versions.Cluster reports them.
const (
	Envtest    = "envtest"
	Kubeconfig = "kubeconfig"
	Kind       = "kind"
)

// DefaultStartTimeout bounds a provider's Start when its StartTimeout is
// zero.
const DefaultStartTimeout = 3 * time.Minute

// Start steps more than one provider reports (each provider names its
// others).
const (
	StepKwok      = "kwok"
	StepNodes     = "nodes"
	StepRuntimes  = "default-runtimes"
	StepIsolation = "isolation-policy"
)

// StepTiming says when one step of a provider's Start was done.
type StepTiming struct {
	// Name is one of the providers' Step* constants, with what it reused
	// in parentheses.
	Name string
	// Took is how long the step itself took, from its own start.
	Took time.Duration
	// ReadyAt is the time since Start began at which it was done.
	ReadyAt time.Duration
}

// Cluster is what the scenario runner, the reports, simctl explain and the
// ginkgo adapter need of a cluster that runs the Trainer and JobSet. Each
// provider (envtest.Environment: a control plane with the Trainer in this
// process; kubeconfig.Kubeconfig: any cluster a kubeconfig reaches;
// kind.Kind: a kind cluster it creates) implements it.
type Cluster interface {
	// Start brings the cluster up, or checks an existing one, and returns
	// once scenarios can run. On error nothing it created is left behind.
	Start(ctx context.Context) error
	// Stop releases what Start set up. Safe on a partly started cluster and
	// more than once.
	Stop() error

	// Config returns an admin rest.Config (a copy, the caller's to change).
	Config() *rest.Config
	// Client returns an admin client with Scheme's types.
	Client() client.Client
	// Scheme has every type the cluster serves that trainersim reads.
	Scheme() *apiruntime.Scheme

	// AddNodes creates simulated nodes and returns their names once each is
	// Ready and schedulable. Names are returned even on error, for removal.
	AddNodes(ctx context.Context, groups []fakegpu.NodeGroup) ([]string, error)
	// RemoveNodes deletes simulated nodes without waiting for them to go.
	RemoveNodes(ctx context.Context, names []string) error
	// IsolateNamespace prepares a namespace, before it is created, so that
	// its Pods land only on nodes labelled and tainted IsolationKey=<its
	// name> (see IsolateNodeGroup), and marks it as trainersim's.
	IsolateNamespace(ns *corev1.Namespace)
	// IsolateNodeGroup returns g as the nodes of the namespace's scenario:
	// the function IsolateNodeGroup on a cluster that isolates.
	IsolateNodeGroup(g fakegpu.NodeGroup, namespace string) fakegpu.NodeGroup

	// Versions says what runs; valid after Start.
	Versions() Versions
	// AdminKubeconfig is the path of a kubeconfig file for kubectl.
	AdminKubeconfig() string
}

// Versions says what a cluster runs.
type Versions struct {
	// Cluster names the provider: Envtest, Kubeconfig or Kind.
	Cluster string `json:"cluster"`
	// Kubernetes is the API server's version, e.g. v1.36.3.
	Kubernetes string `json:"kubernetes"`
	// Trainer and JobSet are the versions of the controllers that run, or
	// "unknown" when the cluster does not say.
	Trainer string `json:"trainer"`
	JobSet  string `json:"jobset"`
	// TrainerCheckout says in one line which local checkout of the Trainer
	// runs and as what (releases.Checkout.String), and TrainerBase is the
	// release it descends from, against which a changed verdict is a
	// behaviour change of the checkout; both empty for a release.
	TrainerCheckout string `json:"trainerCheckout,omitempty"`
	TrainerBase     string `json:"trainerBase,omitempty"`
	// Kueue is the version of the Kueue component that runs; empty: none.
	Kueue string `json:"kueue,omitempty"`
	// KueueCheckout and KueueBase are TrainerCheckout and TrainerBase of a
	// Kueue component built from a local checkout (make build KUEUE_DIR=...).
	KueueCheckout string `json:"kueueCheckout,omitempty"`
	KueueBase     string `json:"kueueBase,omitempty"`
}

// The capabilities a provider may add to Cluster. Code that needs one
// asserts it, and says plainly what the cluster cannot do when it is
// missing.

// TrainerBuildObserver is implemented by clusters whose Trainer may run in
// this process (envtest.Environment): ObserveTrainerBuilds, called before Start, has
// fn called for every TrainJob the Trainer builds (see
// envtest.Environment.OnTrainerBuild) and returns true, or returns false when the
// Trainer of this start runs elsewhere (another release, as a process).
// Other clusters cannot offer it.
type TrainerBuildObserver interface {
	ObserveTrainerBuilds(fn func(trainJob *trainer.TrainJob, objects []apiruntime.ApplyConfiguration)) bool
}

// GateServing is implemented by clusters whose API server can call the
// gates this process serves (envtest.Environment): scenarios' spec.gates.
type GateServing interface {
	// ServeGates starts (once) and returns the server of the gates.
	ServeGates() (*gate.Server, error)
}

// ViewServing is implemented by clusters that run components in simctl's
// process, whose watches a view (sim/view) can see.
type ViewServing interface {
	// ViewRegistry returns the registry of the views and the components
	// whose watches it sees: none when the cluster was started without
	// views or runs none of them in this process.
	ViewRegistry() (*view.Registry, []string)
}

// Actions of ComponentLifecycle.ComponentAction.
const (
	// ComponentCrash ends a component at once: no request of it goes out
	// after the crash, those in flight fail, and it shuts down nothing
	// gracefully (its webhooks stop answering).
	ComponentCrash = "crash"
	// ComponentStop stops it gracefully: what it is doing ends first.
	ComponentStop = "stop"
	// ComponentStart starts it again, with empty caches, and returns once
	// its caches have synced and its webhooks answer.
	ComponentStart = "start"
	// ComponentRestart is a stop, then a start.
	ComponentRestart = "restart"
)

// CatchUp is implemented by clusters that can say how far a component
// running in simctl's process has got with a namespace's changes
// (envtest.Environment: the Trainer, when it runs in this process). A
// quiet spell alone cannot: a component whose queue is behind under load
// writes nothing while it catches up.
type CatchUp interface {
	// Behind says what such a component has not yet caught up with in
	// namespace ns, given the objects the caller has seen there (per
	// GroupKind, name to resourceVersion): a version its informers have
	// not handed on, or a request of ns its queue holds or is reconciling.
	// "" when none (or no such component is up). idle is when it last
	// finished reconciling a request of ns (zero: never).
	Behind(ns string, seen map[schema.GroupKind]map[string]string) (behind string, idle time.Time)
}

// ComponentLifecycle is implemented by clusters that can crash, stop and
// start some of their components.
type ComponentLifecycle interface {
	// LifecycleComponents returns the components ComponentAction acts on.
	LifecycleComponents() []string
	// ComponentAction crashes, stops, starts or restarts a component and
	// returns once it is done.
	ComponentAction(ctx context.Context, component, action string) error
	// ComponentUp reports whether a component runs.
	ComponentUp(component string) bool
}

// TrainerUpgrade is implemented by clusters that can replace the Trainer
// release they run by another under running work.
type TrainerUpgrade interface {
	// TrainerRelease is the release that runs now.
	TrainerRelease() string
	// UpgradeTrainer replaces it by release to (an older one: a rollback)
	// as the release's own manifests would: its CRDs, then (once the API
	// server serves the new TrainJob schema) its RBAC and webhook
	// configurations, the old managers stopped, the new release's Trainer
	// and JobSet managers started, its default runtimes. It returns the
	// parts done, with their times, an error's part last.
	UpgradeTrainer(ctx context.Context, to string) ([]UpgradePart, error)
	// CanUpgrade says why UpgradeTrainer to a release could not start: it
	// is not supported, or its binaries are not built; nil if it could.
	CanUpgrade(to string) error
}

// UpgradePart is one part of an upgrade.
type UpgradePart struct {
	// Name says what was done, e.g. "CRDs of v2.3.0 applied".
	Name string
	// Detail adds what it was done to.
	Detail     string
	Start, End time.Time
}

// WebhookServing is implemented by clusters that can call webhooks served by
// this process (envtest.Environment): the API server trusts CA and reaches host.
type WebhookServing interface {
	// ServeWebhooks starts (once) and returns the server of scenario
	// webhooks.
	ServeWebhooks() (*webhooks.Server, error)
}

// RequestAuditing is implemented by clusters whose API server records the
// components' requests (envtest.Environment, kind.Kind).
type RequestAuditing interface {
	// ComponentRequests returns the writes of components to objects of a
	// namespace recorded so far, in the order they were answered.
	ComponentRequests(namespace string) ([]ComponentRequest, error)
}

// KueueWebhooks is implemented by clusters that may run the kueue component
// (envtest.Environment, which starts it; kind.Kind, which installs it;
// kubeconfig.Kubeconfig, which finds it running).
type KueueWebhooks interface {
	// KueueTrainJobWebhook returns a configuration, named after Kueue's own
	// with the suffix, holding Kueue's TrainJob defaulting webhook with
	// reinvocationPolicy policy, for the namespace only: operators set
	// IfNeeded so that Kueue sees what later webhooks add. It fails when
	// the cluster runs no Kueue.
	KueueTrainJobWebhook(ctx context.Context, namespace, suffix, policy string) (*admissionv1.MutatingWebhookConfiguration, error)
}

// Isolation is implemented by clusters that may run without isolation
// (kubeconfig.Kubeconfig with Unisolated): scenarios must then run one at a
// time. A cluster that does not implement it isolates.
type Isolation interface {
	// Isolated reports whether each scenario's Pods are kept on its own
	// nodes.
	Isolated() bool
}

// ParentDeath is implemented by clusters that start child processes
// (envtest.Environment): whether they die with this process when it is
// killed (Linux), or may be left running (elsewhere).
type ParentDeath interface {
	ParentDeathProtected() bool
}

// Logs is implemented by clusters that keep the logs of what they run in a
// directory (envtest.Environment).
type Logs interface {
	// LogDir is the directory of the components' logs.
	LogDir() string
}

// ComponentRequest is a write of a component to an object, as the API
// server's audit log recorded it.
type ComponentRequest struct {
	// At is when the API server answered.
	At time.Time
	// Component is the component that sent it (identity.Who: kueue,
	// trainer, kube-controller-manager/job-controller, ...); User is the
	// user the API server authenticated.
	Component, User string
	// Verb is the request's: create, update, patch or delete.
	Verb string
	// Resource and Subresource are the object's (trainjobs, pods and
	// binding, ...); Name is its name.
	Resource, Subresource, Name string
	// Code is the HTTP status code of the answer; Reason and Message are a
	// refusal's.
	Code            int
	Reason, Message string
	// SentResourceVersion is the resourceVersion the request carried (an
	// update's, a patch's that names one) and ResourceVersion the one it
	// wrote: recorded for TrainJobs only.
	SentResourceVersion, ResourceVersion string
}
