package runner

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/trainersim/trainersim/sim/cluster"
)

// TestPodViewOf: a Pod the watches hold is converted once per
// resourceVersion (a check at every change of a fleet's namespace reuses
// the views of the Pods that did not change), a new version replaces the
// old view, and a view has the harness's isolation taken out, typed and
// as an object; the watches' object is left as it was.
func TestPodViewOf(t *testing.T) {
	s := &scenarioRun{podViewsSeen: map[string]*podView{}, podViewsKey: map[types.UID]string{}}
	pod := func(rv string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": "p", "namespace": "ns", "uid": "u1", "resourceVersion": rv},
			"spec": map[string]any{
				"nodeSelector": map[string]any{cluster.IsolationKey: "ns", "gpu": "h100"},
				"tolerations":  []any{map[string]any{"key": cluster.IsolationKey, "operator": "Equal", "value": "ns", "effect": "NoSchedule"}},
				"containers":   []any{map[string]any{"name": "c"}},
			},
			"status": map[string]any{"phase": "Pending"},
		}}
	}
	first := pod("1")
	a, err := s.podViewOf(first)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.podViewOf(pod("1"))
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Error("the same resourceVersion converted twice")
	}
	if got := a.pod.Spec.NodeSelector; len(got) != 1 || got["gpu"] != "h100" || a.pod.Spec.Tolerations != nil {
		t.Errorf("view's spec %v / %v: want the isolation taken out", got, a.pod.Spec.Tolerations)
	}
	if sel, _, _ := unstructured.NestedStringMap(a.obj, "spec", "nodeSelector"); len(sel) != 1 {
		t.Errorf("view's object's node selector %v: want the isolation taken out", sel)
	}
	if sel, _, _ := unstructured.NestedStringMap(first.Object, "spec", "nodeSelector"); len(sel) != 2 {
		t.Errorf("the watches' object changed: node selector %v", sel)
	}
	next := pod("2")
	_ = unstructured.SetNestedField(next.Object, string(corev1.PodRunning), "status", "phase")
	c, err := s.podViewOf(next)
	if err != nil {
		t.Fatal(err)
	}
	if c == a || c.pod.Status.Phase != corev1.PodRunning {
		t.Errorf("a new resourceVersion's view is %+v, want a new one, Running", c.pod.Status)
	}
	if len(s.podViewsSeen) != 1 {
		t.Errorf("%d views kept, want the latest version's alone", len(s.podViewsSeen))
	}
}
