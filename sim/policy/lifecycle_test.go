package policy

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trainersim/trainersim/sim/cluster"
)

// TestLifecyclePolicyObjects checks the policy a scenario's rules become:
// one mutation per rule (a rule without labels, the crash-loop back-off,
// annotates every Pod), bound to the scenario's namespace, and labelled so
// that Clean (cluster.ManagedByLabel and cluster.RunLabel) deletes it after a killed run.
func TestLifecyclePolicyObjects(t *testing.T) {
	p := LifecyclePolicy{
		Namespace: "ns-1",
		Rules: []PodLifecycle{
			BackOff(time.Second, 4*time.Second),
			SucceedAfter(map[string]string{"app": "a"}, 2*time.Second),
			FailAfter(map[string]string{"app": "b", "attempt": "0"}, time.Second, 137, "OOMKilled"),
		},
		Labels: map[string]string{cluster.RunLabel: "run-1"},
	}
	policy, binding := p.objects()
	wantLabels := map[string]string{cluster.ManagedByLabel: cluster.ManagedByValue, cluster.RunLabel: "run-1"}
	for _, got := range []map[string]string{policy.Labels, binding.Labels} {
		if diff := cmp.Diff(wantLabels, got); diff != "" {
			t.Errorf("labels mismatch (-want +got):\n%s", diff)
		}
	}
	if diff := cmp.Diff(map[string]string{"kubernetes.io/metadata.name": "ns-1"}, binding.Spec.MatchResources.NamespaceSelector.MatchLabels); diff != "" {
		t.Errorf("namespace selector mismatch (-want +got):\n%s", diff)
	}
	var got []string
	for _, m := range policy.Spec.Mutations {
		got = append(got, m.ApplyConfiguration.Expression)
	}
	want := []string{
		`Object{metadata: Object.metadata{annotations: {"lifecycle.trainersim.dev/back-off-initial-seconds": "1", "lifecycle.trainersim.dev/back-off-max-seconds": "4"}}}`,
		`has(object.metadata.labels) && "app" in object.metadata.labels && object.metadata.labels["app"] == "a" ?
  Object{metadata: Object.metadata{annotations: {"lifecycle.trainersim.dev/succeed-after": "2s"}}} :
  Object{}`,
		`has(object.metadata.labels) && "app" in object.metadata.labels && object.metadata.labels["app"] == "b" && "attempt" in object.metadata.labels && object.metadata.labels["attempt"] == "0" ?
  Object{metadata: Object.metadata{annotations: {"lifecycle.trainersim.dev/exit-code": "137", "lifecycle.trainersim.dev/fail-after": "1s", "lifecycle.trainersim.dev/reason": "OOMKilled"}}} :
  Object{}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mutations mismatch (-want +got):\n%s", diff)
	}
}

// TestDefaultLifecycleObjects checks simctl up's cluster-wide rule: bound
// to every namespace but kube-system and the scenarios', and annotating
// only Pods without a lifecycle annotation of their own.
func TestDefaultLifecycleObjects(t *testing.T) {
	d := DefaultLifecycle{StartAfter: 3 * time.Second, SucceedAfter: 20 * time.Second}
	if got, want := d.String(), "start after 3s, succeed after 20s"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	policy, binding := d.objects()
	if diff := cmp.Diff(map[string]string{cluster.ManagedByLabel: cluster.ManagedByValue}, policy.Labels); diff != "" {
		t.Errorf("labels mismatch (-want +got):\n%s", diff)
	}
	wantSelector := []metav1.LabelSelectorRequirement{
		{Key: cluster.IsolationKey, Operator: metav1.LabelSelectorOpDoesNotExist},
		{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system"}},
	}
	if diff := cmp.Diff(wantSelector, binding.Spec.MatchResources.NamespaceSelector.MatchExpressions); diff != "" {
		t.Errorf("namespace selector mismatch (-want +got):\n%s", diff)
	}
	if len(binding.Spec.MatchResources.NamespaceSelector.MatchLabels) != 0 {
		t.Errorf("namespace selector has labels %v, want none", binding.Spec.MatchResources.NamespaceSelector.MatchLabels)
	}
	want := `!has(object.metadata.annotations) || !("lifecycle.trainersim.dev/start-after" in object.metadata.annotations || "lifecycle.trainersim.dev/succeed-after" in object.metadata.annotations || "lifecycle.trainersim.dev/fail-after" in object.metadata.annotations) ?
  Object{metadata: Object.metadata{annotations: {"lifecycle.trainersim.dev/start-after": "3s", "lifecycle.trainersim.dev/succeed-after": "20s"}}} :
  Object{}`
	if len(policy.Spec.Mutations) != 1 {
		t.Fatalf("%d mutations, want 1", len(policy.Spec.Mutations))
	}
	if diff := cmp.Diff(want, policy.Spec.Mutations[0].ApplyConfiguration.Expression); diff != "" {
		t.Errorf("mutation mismatch (-want +got):\n%s", diff)
	}
	if !(DefaultLifecycle{}).Empty() || d.Empty() {
		t.Error("Empty() is wrong")
	}
}
