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

	"github.com/trainersim/trainersim/sim/cluster"
)

// The annotations fakegpu's KWOK stages act on (fakegpu/kwok/config.yaml).
const (
	LifecycleSucceedAfter = "lifecycle.trainersim.dev/succeed-after"
	LifecycleFailAfter    = "lifecycle.trainersim.dev/fail-after"
	LifecycleExitCode     = "lifecycle.trainersim.dev/exit-code"
	LifecycleReason       = "lifecycle.trainersim.dev/reason"
)

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
	if err := c.Create(ctx, policy); err != nil {
		return fmt.Errorf("failed to create MutatingAdmissionPolicy %s: %w", p.name(), err)
	}
	if err := c.Create(ctx, binding); err != nil {
		return fmt.Errorf("failed to create MutatingAdmissionPolicyBinding %s: %w", p.name(), err)
	}
	first := p.Rules[0]
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: "lifecycle-probe", Labels: first.MatchLabels},
		Spec: corev1.PodSpec{
			Containers:                   []corev1.Container{{Name: "probe", Image: "trainersim.dev/probe:none"}},
			AutomountServiceAccountToken: ptr.To(false),
		},
	}
	return waitForDryRunPod(ctx, c, probe, lifecycleProbeTimeout, func(pod *corev1.Pod) error {
		for k, v := range first.Annotations {
			if pod.Annotations[k] != v {
				return fmt.Errorf("a dry-run Pod in %s came back without the annotation %s=%s", p.Namespace, k, v)
			}
		}
		return nil
	})
}

// Uninstall deletes the policy and its binding.
func (p LifecyclePolicy) Uninstall(ctx context.Context, c client.Client) error {
	if len(p.Rules) == 0 {
		return nil
	}
	policy, binding := p.objects()
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
