// Package policy holds the MutatingAdmissionPolicies trainersim installs
// on a cluster: the isolation that keeps a scenario's Pods on the
// scenario's own nodes (isolation.go), and the Pod lifecycles a scenario
// declares (lifecycle.go).
package policy

// Scenario isolation on a cluster whose API server flags trainersim does not
// set: a MutatingAdmissionPolicy (admissionregistration.k8s.io/v1, GA and on
// by default since Kubernetes 1.36) gives every Pod created in a namespace of
// the run the node selector and the toleration of the namespace's own nodes,
// as the PodNodeSelector and PodTolerationRestriction plugins do on the
// envtest provider.

import (
	"context"
	"errors"
	"fmt"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/trainersim/trainersim/sim/cluster"
)

// isolationProbeTimeout bounds the wait until the API server applies a new
// isolation policy.
const isolationProbeTimeout = 30 * time.Second

// isolationMutations are the CEL expressions of the policy: add the
// namespace's toleration and node selector to the Pod, whether or not it
// already has tolerations or a node selector.
var isolationMutations = []string{
	`has(object.spec.tolerations) ?
  [JSONPatch{op: "add", path: "/spec/tolerations/-", value: Object.spec.tolerations{key: "` + cluster.IsolationKey + `", operator: "Equal", value: namespaceObject.metadata.name, effect: "NoSchedule"}}] :
  [JSONPatch{op: "add", path: "/spec/tolerations", value: [Object.spec.tolerations{key: "` + cluster.IsolationKey + `", operator: "Equal", value: namespaceObject.metadata.name, effect: "NoSchedule"}]}]`,
	`has(object.spec.nodeSelector) ?
  [JSONPatch{op: "add", path: "/spec/nodeSelector/" + jsonpatch.escapeKey("` + cluster.IsolationKey + `"), value: namespaceObject.metadata.name}] :
  [JSONPatch{op: "add", path: "/spec/nodeSelector", value: {"` + cluster.IsolationKey + `": namespaceObject.metadata.name}}]`,
}

// AdmissionPoliciesServed reports whether the API server serves
// MutatingAdmissionPolicies in admissionregistration.k8s.io/v1.
func AdmissionPoliciesServed(d discovery.DiscoveryInterface) (bool, error) {
	list, err := d.ServerResourcesForGroupVersion(admissionv1.SchemeGroupVersion.String())
	if err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("failed to discover %s: %w", admissionv1.SchemeGroupVersion, err)
	}
	for _, r := range list.APIResources {
		if r.Name == "mutatingadmissionpolicies" {
			return true, nil
		}
	}
	return false, nil
}

// Isolation is an isolation policy and its binding: the one of a run,
// or the one a cluster that trainersim started keeps for every run against
// it (ClusterIsolation).
type Isolation struct {
	name string
	// Namespaces selects the namespaces whose Pods it isolates; they are
	// the labels IsolateNamespace sets.
	Namespaces map[string]string
	// labels are the policy's and binding's own, besides cluster.ManagedByLabel.
	labels map[string]string
}

// Names and labels of the cluster-wide isolation policy.
const (
	clusterIsolationName = "trainersim-isolation"
	// IsolationPolicyLabel (value "cluster") puts a namespace under the
	// cluster-wide isolation policy.
	IsolationPolicyLabel = "trainersim.dev/isolation"
)

// ClusterIsolation is the policy a cluster trainersim starts (simctl
// up) installs for the runs against it, so that they need not wait for a
// policy of their own to take effect.
var ClusterIsolation = Isolation{
	name:       clusterIsolationName,
	Namespaces: map[string]string{IsolationPolicyLabel: "cluster"},
}

// RunIsolation is the policy of one run on a cluster without the
// cluster-wide one.
func RunIsolation(runID string) Isolation {
	return Isolation{
		name:       "trainersim-isolation-" + runID,
		Namespaces: map[string]string{cluster.RunLabel: runID},
		labels:     map[string]string{cluster.RunLabel: runID},
	}
}

// ClusterIsolationInstalled reports whether the cluster has the cluster-wide
// isolation policy and its binding, as trainersim installs them.
func ClusterIsolationInstalled(ctx context.Context, c client.Client) (bool, error) {
	policy, binding := ClusterIsolation.Objects()
	for _, o := range []client.Object{policy, binding} {
		err := c.Get(ctx, client.ObjectKeyFromObject(o), o)
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("failed to get %s: %w", o.GetName(), err)
		}
		if o.GetLabels()[cluster.ManagedByLabel] != cluster.ManagedByValue {
			return false, nil
		}
	}
	return true, nil
}

func (p Isolation) Objects() (*admissionv1.MutatingAdmissionPolicy, *admissionv1.MutatingAdmissionPolicyBinding) {
	labels := map[string]string{cluster.ManagedByLabel: cluster.ManagedByValue}
	for k, v := range p.labels {
		labels[k] = v
	}
	var mutations []admissionv1.Mutation
	for _, expr := range isolationMutations {
		mutations = append(mutations, admissionv1.Mutation{
			PatchType: admissionv1.PatchTypeJSONPatch,
			JSONPatch: &admissionv1.JSONPatch{Expression: expr},
		})
	}
	// A Pod the policy cannot isolate is refused rather than scheduled
	// onto the cluster's own nodes (failurePolicy Fail).
	return podCreatePolicy(p.name, labels, mutations, p.Namespaces)
}

// podCreatePolicy is a MutatingAdmissionPolicy that mutates every Pod
// created in the namespaces with the labels, and its binding, both named
// name. A Pod the policy cannot mutate is refused (failurePolicy Fail), and
// the policy is not invoked again after other mutations.
func podCreatePolicy(name string, labels map[string]string, mutations []admissionv1.Mutation, namespaces map[string]string) (*admissionv1.MutatingAdmissionPolicy, *admissionv1.MutatingAdmissionPolicyBinding) {
	policy := &admissionv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: admissionv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionv1.MatchResources{
				ResourceRules: []admissionv1.NamedRuleWithOperations{{RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				}}},
			},
			Mutations:          mutations,
			FailurePolicy:      ptr.To(admissionv1.Fail),
			ReinvocationPolicy: admissionv1.NeverReinvocationPolicy,
		},
	}
	binding := &admissionv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: admissionv1.MutatingAdmissionPolicyBindingSpec{
			PolicyName: name,
			MatchResources: &admissionv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: namespaces},
			},
		},
	}
	return policy, binding
}

// Install creates the policy and its binding and waits until they take
// effect.
func (p Isolation) Install(ctx context.Context, c client.Client, isolate func(*corev1.Namespace)) error {
	if err := p.Create(ctx, c); err != nil {
		return err
	}
	return p.WaitEffective(ctx, c, isolate)
}

// Create creates the policy and its binding.
func (p Isolation) Create(ctx context.Context, c client.Client) error {
	policy, binding := p.Objects()
	if err := c.Create(ctx, policy); err != nil {
		return fmt.Errorf("failed to create MutatingAdmissionPolicy %s: %w", p.name, err)
	}
	if err := c.Create(ctx, binding); err != nil {
		return fmt.Errorf("failed to create MutatingAdmissionPolicyBinding %s: %w", p.name, err)
	}
	return nil
}

// WaitEffective waits until the API server applies the policy (it loads
// policies once a second): a dry-run Pod in a probe namespace comes back
// isolated. isolate labels the probe namespace with cluster.IsolationKey and the
// policy's namespace labels.
func (p Isolation) WaitEffective(ctx context.Context, c client.Client, isolate func(*corev1.Namespace)) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.name + "-probe"}}
	isolate(ns)
	for k, v := range p.Namespaces {
		metav1.SetMetaDataLabel(&ns.ObjectMeta, k, v)
	}
	if err := c.Create(ctx, ns); err != nil {
		return fmt.Errorf("failed to create namespace %s: %w", ns.Name, err)
	}
	defer func() {
		_ = c.Delete(context.WithoutCancel(ctx), ns)
	}()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "isolation-probe"},
		Spec: corev1.PodSpec{
			Containers:                   []corev1.Container{{Name: "probe", Image: "trainersim.dev/probe:none"}},
			AutomountServiceAccountToken: ptr.To(false),
		},
	}
	err := waitForDryRunPod(ctx, c, pod, isolationProbeTimeout, func(pod *corev1.Pod) error {
		if pod.Spec.NodeSelector[cluster.IsolationKey] != ns.Name {
			return fmt.Errorf("a dry-run Pod in %s came back without the node selector %s=%s", ns.Name, cluster.IsolationKey, ns.Name)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("the isolation policy %s did not take effect: %w", p.name, err)
	}
	return nil
}

// Uninstall deletes the policy and its binding.
func (p Isolation) Uninstall(ctx context.Context, c client.Client) error {
	policy, binding := p.Objects()
	var errs []error
	for _, o := range []client.Object{binding, policy} {
		if err := c.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("failed to delete %s: %w", p.name, err))
		}
	}
	return errors.Join(errs...)
}
