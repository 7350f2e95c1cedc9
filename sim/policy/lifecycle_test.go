package policy

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trainersim/trainersim/sim/cluster"
)

// TestLifecyclePolicyObjects checks the policy a scenario's rules become:
// one mutation per rule, bound to the scenario's namespace, and labelled so
// that Clean (cluster.ManagedByLabel and cluster.RunLabel) deletes it after a killed run.
func TestLifecyclePolicyObjects(t *testing.T) {
	p := LifecyclePolicy{
		Namespace: "ns-1",
		Rules: []PodLifecycle{
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
