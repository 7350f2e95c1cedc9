package runner

import (
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/trainersim/trainersim/sim/cluster"
)

// TestPodViewsOf: each object the watches hold is converted once (a check
// at every change of a fleet's namespace reuses the views of the Pods that
// did not change), a new object of a Pod (its next version) gets a new
// view, the views of objects no longer held are let go, and a view has
// the harness's isolation taken out, typed and as an object; the watches'
// object is left as it was.
func TestPodViewsOf(t *testing.T) {
	s := &scenarioRun{podViewsByObj: map[*unstructured.Unstructured]*podView{}}
	pod := func(name, rv string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": name, "namespace": "ns", "uid": "u-" + name, "resourceVersion": rv},
			"spec": map[string]any{
				"nodeSelector": map[string]any{cluster.IsolationKey: "ns", "gpu": "h100"},
				"tolerations":  []any{map[string]any{"key": cluster.IsolationKey, "operator": "Equal", "value": "ns", "effect": "NoSchedule"}},
				"containers":   []any{map[string]any{"name": "c"}},
			},
			"status": map[string]any{"phase": "Pending"},
		}}
	}
	viewsOf := func(items ...*unstructured.Unstructured) []*podView {
		t.Helper()
		views, err := s.podViewsOf(items)
		if err != nil {
			t.Fatal(err)
		}
		if len(views) != len(items) {
			t.Fatalf("%d views of %d objects", len(views), len(items))
		}
		for i, v := range views {
			if v.pod.Name != items[i].GetName() || v.pod.ResourceVersion != items[i].GetResourceVersion() {
				t.Errorf("view %d is of %s at %s, want %s at %s", i, v.pod.Name, v.pod.ResourceVersion, items[i].GetName(), items[i].GetResourceVersion())
			}
		}
		return views
	}
	first, other := pod("p", "1"), pod("q", "1")
	a := viewsOf(first, other)
	b := viewsOf(other, first)
	if a[0] != b[1] || a[1] != b[0] {
		t.Error("an object the watches still hold converted again")
	}
	v := a[0]
	if got := v.pod.Spec.NodeSelector; len(got) != 1 || got["gpu"] != "h100" || v.pod.Spec.Tolerations != nil {
		t.Errorf("view's spec %v / %v: want the isolation taken out", got, v.pod.Spec.Tolerations)
	}
	if sel, _, _ := unstructured.NestedStringMap(v.obj, "spec", "nodeSelector"); len(sel) != 1 {
		t.Errorf("view's object's node selector %v: want the isolation taken out", sel)
	}
	if sel, _, _ := unstructured.NestedStringMap(first.Object, "spec", "nodeSelector"); len(sel) != 2 {
		t.Errorf("the watches' object changed: node selector %v", sel)
	}
	next := pod("p", "2")
	_ = unstructured.SetNestedField(next.Object, string(corev1.PodRunning), "status", "phase")
	if c := viewsOf(next, other); c[0] == v || c[0].pod.Status.Phase != corev1.PodRunning || c[1] != a[1] {
		t.Errorf("after p's next version: p's view %+v, want a new one, Running; q's the same", c[0].pod.Status)
	}
	for i := range 500 {
		viewsOf(pod("p", strconv.Itoa(3+i)), other)
	}
	if n := len(s.podViewsByObj); n > 2*2+64 {
		t.Errorf("%d views kept for 2 Pods: the views of objects no longer held are not let go", n)
	}
}

// TestHasLabels: a Pod is selected when it has every label of the
// selector, with its value; an empty selector selects every Pod.
func TestHasLabels(t *testing.T) {
	pod := map[string]string{"app": "train", "role": "node"}
	for _, tc := range []struct {
		want map[string]string
		ok   bool
	}{
		{nil, true},
		{map[string]string{"app": "train"}, true},
		{map[string]string{"app": "train", "role": "node"}, true},
		{map[string]string{"app": "serve"}, false},
		{map[string]string{"app": "train", "zone": ""}, false},
	} {
		if got := hasLabels(pod, tc.want); got != tc.ok {
			t.Errorf("hasLabels(%v, %v) = %v, want %v", pod, tc.want, got, tc.ok)
		}
	}
}
