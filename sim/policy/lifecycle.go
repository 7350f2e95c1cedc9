package policy

// Pod lifecycles: a scenario's rules become lifecycle.trainersim.dev
// annotations on the Pods they select, put there at admission by a
// MutatingAdmissionPolicy of the scenario's namespace. The simulated kubelet
// acts on the annotations: fakegpu's KWOK stages pod-succeed, pod-fail and
// pod-restart are the behaviour, as data; this file only selects the Pods.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim/cluster"
)

// The annotations fakegpu's KWOK stages act on (fakegpu/kwok/config.yaml).
const (
	LifecycleSucceedAfter = "lifecycle.trainersim.dev/succeed-after"
	LifecycleFailAfter    = "lifecycle.trainersim.dev/fail-after"
	LifecycleExitCode     = "lifecycle.trainersim.dev/exit-code"
	LifecycleReason       = "lifecycle.trainersim.dev/reason"
	// LifecycleStartAfter holds a bound Pod in Pending this long before its
	// containers run, as a kubelet pulling their images would.
	LifecycleStartAfter = "lifecycle.trainersim.dev/start-after"
	// LifecycleBackOffInitial and LifecycleBackOffMax (whole seconds)
	// shorten the crash-loop back-off of a scenario's Pods
	// (spec.crashLoopBackOff); without them the kubelet's defaults hold
	// (fakegpu.CrashLoopBackOffInitial, CrashLoopBackOffMax).
	LifecycleBackOffInitial = "lifecycle.trainersim.dev/back-off-initial-seconds"
	LifecycleBackOffMax     = "lifecycle.trainersim.dev/back-off-max-seconds"
)

// CrashLoopBackOffOf returns the crash-loop back-off of a Pod: the kubelet's
// defaults, or what its lifecycle annotations shorten them to.
func CrashLoopBackOffOf(annotations map[string]string) (initial, max time.Duration) {
	initial, max = fakegpu.CrashLoopBackOffInitial, fakegpu.CrashLoopBackOffMax
	if n, err := strconv.Atoi(annotations[LifecycleBackOffInitial]); err == nil {
		initial = time.Duration(n) * time.Second
	}
	if n, err := strconv.Atoi(annotations[LifecycleBackOffMax]); err == nil {
		max = time.Duration(n) * time.Second
	}
	return initial, max
}

// lifecycleProbeTimeout bounds the wait until the API server applies a new
// lifecycle policy (it loads policies about once a second).
const lifecycleProbeTimeout = 30 * time.Second

// PodLifecycle is one rule: the Pods with all of MatchLabels get
// Annotations when they are created.
type PodLifecycle struct {
	MatchLabels map[string]string
	Annotations map[string]string
}

// SucceedAfter is the rule of Pods that succeed d after they start running.
func SucceedAfter(matchLabels map[string]string, d time.Duration) PodLifecycle {
	return PodLifecycle{MatchLabels: matchLabels, Annotations: map[string]string{LifecycleSucceedAfter: d.String()}}
}

// FailAfter is the rule of Pods whose containers fail d after they start
// running, with the exit code and reason (empty: Error).
func FailAfter(matchLabels map[string]string, d time.Duration, exitCode int32, reason string) PodLifecycle {
	a := map[string]string{LifecycleFailAfter: d.String(), LifecycleExitCode: strconv.Itoa(int(exitCode))}
	if reason != "" {
		a[LifecycleReason] = reason
	}
	return PodLifecycle{MatchLabels: matchLabels, Annotations: a}
}

// BackOff is the rule that shortens the crash-loop back-off of every Pod
// (whole seconds).
func BackOff(initial, max time.Duration) PodLifecycle {
	return PodLifecycle{Annotations: map[string]string{
		LifecycleBackOffInitial: strconv.Itoa(int(initial / time.Second)),
		LifecycleBackOffMax:     strconv.Itoa(int(max / time.Second)),
	}}
}

// LifecyclePolicy is the admission policy that gives a namespace's Pods
// their lifecycle annotations.
type LifecyclePolicy struct {
	// Namespace is the namespace whose Pods it annotates.
	Namespace string
	// Rules apply in order; a later rule's annotations win.
	Rules []PodLifecycle
	// Labels are added to the policy's and binding's cluster.ManagedByLabel: the
	// namespace's cluster.RunLabel, where it has one, so that Clean deletes the
	// policy of a killed run with the run's other objects.
	Labels map[string]string
}

func (p LifecyclePolicy) name() string { return "trainersim-lifecycle-" + p.Namespace }

// celString quotes s as a CEL string literal.
func celString(s string) string { return strconv.Quote(s) }

// expression is the mutation of one rule: the rule's annotations on a Pod
// whose labels match, nothing on any other.
func (r PodLifecycle) expression() string {
	var match []string
	for _, k := range slices.Sorted(maps.Keys(r.MatchLabels)) {
		// "in" first: reading a key the map lacks is an error, and an
		// error would refuse the Pod (failurePolicy Fail).
		match = append(match, fmt.Sprintf("%s in object.metadata.labels && object.metadata.labels[%s] == %s", celString(k), celString(k), celString(r.MatchLabels[k])))
	}
	var annotations []string
	for _, k := range slices.Sorted(maps.Keys(r.Annotations)) {
		annotations = append(annotations, celString(k)+": "+celString(r.Annotations[k]))
	}
	if len(match) == 0 {
		// Every Pod.
		return fmt.Sprintf(`Object{metadata: Object.metadata{annotations: {%s}}}`, strings.Join(annotations, ", "))
	}
	return fmt.Sprintf(`has(object.metadata.labels) && %s ?
  Object{metadata: Object.metadata{annotations: {%s}}} :
  Object{}`, strings.Join(match, " && "), strings.Join(annotations, ", "))
}

func (p LifecyclePolicy) objects() (*admissionv1.MutatingAdmissionPolicy, *admissionv1.MutatingAdmissionPolicyBinding) {
	labels := map[string]string{cluster.ManagedByLabel: cluster.ManagedByValue}
	maps.Copy(labels, p.Labels)
	var mutations []admissionv1.Mutation
	for _, r := range p.Rules {
		mutations = append(mutations, admissionv1.Mutation{
			PatchType:          admissionv1.PatchTypeApplyConfiguration,
			ApplyConfiguration: &admissionv1.ApplyConfiguration{Expression: r.expression()},
		})
	}
	// A Pod the policy cannot annotate is refused rather than left to run
	// for ever.
	return podCreatePolicy(p.name(), labels, mutations, map[string]string{corev1.LabelMetadataName: p.Namespace})
}

// Install creates the policy and waits until the API server applies it: a
// dry-run Pod with the first rule's labels comes back with its annotations.
// The namespace must exist and have its default ServiceAccount.
func (p LifecyclePolicy) Install(ctx context.Context, c client.Client) error {
	if len(p.Rules) == 0 {
		return nil
	}
	policy, binding := p.objects()
	first := p.Rules[0]
	return installAnnotating(ctx, c, policy, binding, p.Namespace, first.MatchLabels, first.Annotations)
}

// Uninstall deletes the policy and its binding.
func (p LifecyclePolicy) Uninstall(ctx context.Context, c client.Client) error {
	if len(p.Rules) == 0 {
		return nil
	}
	policy, binding := p.objects()
	return deletePolicy(ctx, c, policy, binding)
}

// DefaultLifecycle is how the Pods that no scenario owns end on a cluster
// simctl up keeps: those of every namespace that is not a scenario's (no
// cluster.IsolationKey label) nor kube-system, and that carry no
// lifecycle.trainersim.dev annotation of their own. A suite written for a
// real cluster (the Trainer's e2e suite) waits for its jobs to complete: on
// simulated nodes they complete only where such a rule says when.
type DefaultLifecycle struct {
	// StartAfter holds each bound Pod in Pending this long before its
	// containers run, as a kubelet pulling images does (zero: at once).
	StartAfter time.Duration
	// SucceedAfter makes every container exit 0 this long after it
	// started running (zero: the Pods run until deleted).
	SucceedAfter time.Duration
}

// defaultLifecycleName names the cluster-wide policy and its binding.
const defaultLifecycleName = "trainersim-lifecycle-default"

// Empty reports whether d changes no Pod.
func (d DefaultLifecycle) Empty() bool { return d.StartAfter == 0 && d.SucceedAfter == 0 }

// String is the rule in the words of simctl up's flags.
func (d DefaultLifecycle) String() string {
	var parts []string
	if d.StartAfter > 0 {
		parts = append(parts, "start after "+d.StartAfter.String())
	}
	if d.SucceedAfter > 0 {
		parts = append(parts, "succeed after "+d.SucceedAfter.String())
	}
	return strings.Join(parts, ", ")
}

func (d DefaultLifecycle) annotations() map[string]string {
	a := map[string]string{}
	if d.StartAfter > 0 {
		a[LifecycleStartAfter] = d.StartAfter.String()
	}
	if d.SucceedAfter > 0 {
		a[LifecycleSucceedAfter] = d.SucceedAfter.String()
	}
	return a
}

// expression annotates a Pod that has none of the lifecycle annotations:
// a Pod that says how it ends keeps its own word.
func (d DefaultLifecycle) expression() string {
	var own []string
	for _, k := range []string{LifecycleStartAfter, LifecycleSucceedAfter, LifecycleFailAfter} {
		own = append(own, celString(k)+" in object.metadata.annotations")
	}
	a := d.annotations()
	var annotations []string
	for _, k := range slices.Sorted(maps.Keys(a)) {
		annotations = append(annotations, celString(k)+": "+celString(a[k]))
	}
	return fmt.Sprintf(`!has(object.metadata.annotations) || !(%s) ?
  Object{metadata: Object.metadata{annotations: {%s}}} :
  Object{}`, strings.Join(own, " || "), strings.Join(annotations, ", "))
}

func (d DefaultLifecycle) objects() (*admissionv1.MutatingAdmissionPolicy, *admissionv1.MutatingAdmissionPolicyBinding) {
	policy, binding := podCreatePolicy(defaultLifecycleName, map[string]string{cluster.ManagedByLabel: cluster.ManagedByValue},
		[]admissionv1.Mutation{{
			PatchType:          admissionv1.PatchTypeApplyConfiguration,
			ApplyConfiguration: &admissionv1.ApplyConfiguration{Expression: d.expression()},
		}}, nil)
	binding.Spec.MatchResources.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: cluster.IsolationKey, Operator: metav1.LabelSelectorOpDoesNotExist},
		{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: []string{metav1.NamespaceSystem}},
	}}
	return policy, binding
}

// Install creates the policy and waits until the API server applies it: a
// dry-run Pod in the default namespace comes back with its annotations.
func (d DefaultLifecycle) Install(ctx context.Context, c client.Client) error {
	if d.Empty() {
		return nil
	}
	policy, binding := d.objects()
	return installAnnotating(ctx, c, policy, binding, metav1.NamespaceDefault, nil, d.annotations())
}

// installAnnotating creates a policy that annotates Pods and its binding,
// and waits until the API server applies them: a dry-run Pod in namespace
// with labels comes back with the annotations.
func installAnnotating(ctx context.Context, c client.Client, policy *admissionv1.MutatingAdmissionPolicy, binding *admissionv1.MutatingAdmissionPolicyBinding, namespace string, labels, annotations map[string]string) error {
	if err := c.Create(ctx, policy); err != nil {
		return fmt.Errorf("failed to create MutatingAdmissionPolicy %s: %w", policy.Name, err)
	}
	if err := c.Create(ctx, binding); err != nil {
		return fmt.Errorf("failed to create MutatingAdmissionPolicyBinding %s: %w", binding.Name, err)
	}
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "lifecycle-probe", Labels: labels},
		Spec: corev1.PodSpec{
			Containers:                   []corev1.Container{{Name: "probe", Image: "trainersim.dev/probe:none"}},
			AutomountServiceAccountToken: ptr.To(false),
		},
	}
	return waitForDryRunPod(ctx, c, probe, lifecycleProbeTimeout, func(pod *corev1.Pod) error {
		for k, v := range annotations {
			if pod.Annotations[k] != v {
				return fmt.Errorf("a dry-run Pod in %s came back without the annotation %s=%s", namespace, k, v)
			}
		}
		return nil
	})
}

// Uninstall deletes the policy and its binding.
func (d DefaultLifecycle) Uninstall(ctx context.Context, c client.Client) error {
	if d.Empty() {
		return nil
	}
	policy, binding := d.objects()
	return deletePolicy(ctx, c, policy, binding)
}

// deletePolicy deletes a binding and then its policy; either may be gone.
func deletePolicy(ctx context.Context, c client.Client, policy *admissionv1.MutatingAdmissionPolicy, binding *admissionv1.MutatingAdmissionPolicyBinding) error {
	var errs []error
	for _, o := range []client.Object{binding, policy} {
		if err := c.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("failed to delete %s: %w", o.GetName(), err))
		}
	}
	return errors.Join(errs...)
}

// waitForDryRunPod creates pod with dryRun=All until the Pod the API server
// returns passes check: the way to see that an admission policy applies.
// A refusal (a namespace's default ServiceAccount not yet made) is retried
// too; the last problem is in the error.
func waitForDryRunPod(ctx context.Context, c client.Client, pod *corev1.Pod, timeout time.Duration, check func(*corev1.Pod) error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		p := pod.DeepCopy()
		if last = c.Create(ctx, p, client.DryRunAll); last != nil {
			return false, nil
		}
		last = check(p)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("no dry-run Pod %s/%s came back as expected within %s: %v", pod.Namespace, pod.Name, timeout, last)
	}
	return nil
}
