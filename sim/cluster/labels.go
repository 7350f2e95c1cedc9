package cluster

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/trainersim/trainersim/fakegpu"
)

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

// IsolationToleration is the toleration every Pod of an isolated namespace
// gets.
func IsolationToleration(namespace string) corev1.Toleration {
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

// KueueManager is the field manager of Kueue's writes: it sets none, so the
// API server takes the first word of its user agent.
const KueueManager = "kueue"

// KueueNamespaceLabel marks the namespaces whose TrainJobs Kueue's webhooks
// see: Kueue's defaulting adds its entry to every TrainJob it is shown, with
// or without a queue, so only scenarios that ask for Kueue get it.
const KueueNamespaceLabel = "trainersim.dev/kueue"

// KueueReinvocationLabel on a namespace carries the reinvocationPolicy of
// its own copy of Kueue's TrainJob defaulting webhook, which the namespace
// gets instead of the shared one (KueueTrainJobWebhook).
const KueueReinvocationLabel = "trainersim.dev/kueue-reinvocation"
