package sim

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	"github.com/trainersim/trainersim/fakegpu"
)

// Cluster is what the scenario runner, the reports, simctl explain and the
// ginkgo adapter need of a cluster that runs the Trainer and JobSet. Each
// provider (Environment: envtest with the Trainer in this process;
// Kubeconfig: any cluster a kubeconfig reaches) implements it, and nothing
// outside a provider knows which one it talks to.
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
	// the package's IsolateNodeGroup on a cluster that isolates.
	IsolateNodeGroup(g fakegpu.NodeGroup, namespace string) fakegpu.NodeGroup

	// Versions says what runs; valid after Start.
	Versions() Versions
	// AdminKubeconfig is the path of a kubeconfig file for kubectl.
	AdminKubeconfig() string
}

// TrainerBuildObserver is implemented by clusters whose Trainer may run in
// this process (Environment): ObserveTrainerBuilds, called before Start, has
// fn called for every TrainJob the Trainer builds (see
// Environment.OnTrainerBuild) and returns true, or returns false when the
// Trainer of this start runs elsewhere (another release, as a process).
// Other clusters cannot offer it.
type TrainerBuildObserver interface {
	ObserveTrainerBuilds(fn func(trainJob *trainer.TrainJob, objects []apiruntime.ApplyConfiguration)) bool
}

// Versions says what a cluster runs.
type Versions struct {
	// Cluster names the provider: "envtest" or "kubeconfig".
	Cluster string `json:"cluster"`
	// Kubernetes is the API server's version, e.g. v1.36.3.
	Kubernetes string `json:"kubernetes"`
	// Trainer and JobSet are the versions of the controllers that run, or
	// "unknown" when the cluster does not say.
	Trainer string `json:"trainer"`
	JobSet  string `json:"jobset"`
	// Kueue is the version of the Kueue component that runs; empty: none.
	Kueue string `json:"kueue,omitempty"`
}

// IsolationKey is the node label, node taint, Pod nodeSelector key and Pod
// toleration key with which a cluster keeps each scenario's Pods on the
// scenario's own nodes; its value is the scenario's namespace. The runner
// removes it from every Pod before the Pod is matched or reported.
const IsolationKey = "trainersim.dev/scenario"

// Labels that mark what trainersim creates in a cluster.
const (
	// ManagedByLabel (value ManagedByValue) is on every Node, Namespace and
	// cluster-scoped object trainersim creates.
	ManagedByLabel = fakegpu.ManagedByLabel
	ManagedByValue = fakegpu.ManagedByValue
	// RunLabel carries the id of the run that created an object in a cluster
	// trainersim did not start (Kubeconfig), so that `simctl clean` finds
	// what a killed run left behind.
	RunLabel = "trainersim.dev/run"
)

// IsolateNodeGroup returns g with the label and taint IsolationKey=namespace,
// so that only the namespace's Pods (see Cluster.IsolateNamespace) tolerate
// its nodes, and they tolerate no other scenario's.
func IsolateNodeGroup(g fakegpu.NodeGroup, namespace string) fakegpu.NodeGroup {
	labels := map[string]string{IsolationKey: namespace}
	for k, v := range g.Labels {
		labels[k] = v
	}
	g.Labels = labels
	g.Taints = append([]corev1.Taint{{Key: IsolationKey, Value: namespace, Effect: corev1.TaintEffectNoSchedule}}, g.Taints...)
	return g
}

// isolationToleration is the toleration every Pod of an isolated namespace
// gets.
func isolationToleration(namespace string) corev1.Toleration {
	return corev1.Toleration{Key: IsolationKey, Operator: corev1.TolerationOpEqual, Value: namespace, Effect: corev1.TaintEffectNoSchedule}
}

// StripIsolation removes from a Pod spec what an isolated namespace added
// to it (the node selector and toleration of IsolationKey), leaving what
// the Pod's own makers gave it.
func StripIsolation(spec *corev1.PodSpec) {
	delete(spec.NodeSelector, IsolationKey)
	if len(spec.NodeSelector) == 0 {
		spec.NodeSelector = nil
	}
	kept := spec.Tolerations[:0]
	for _, t := range spec.Tolerations {
		if t.Key != IsolationKey {
			kept = append(kept, t)
		}
	}
	spec.Tolerations = kept
	if len(kept) == 0 {
		spec.Tolerations = nil
	}
}
