package runner

import (
	"context"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/utils/clock"

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

// TestPodViewsKeepTheSelectionUntilAPodChanges: the watches' Pods a
// selector selects are kept while no Pod of the namespace changes (a
// check after a change of a TrainJob, say, selects nothing again) and
// selected again after a Pod changes; each selector keeps its own. The
// informer is not started: the test puts Pods in its store as a watch
// event would, and dispatches the event after, as the informer does.
func TestPodViewsKeepTheSelectionUntilAPodChanges(t *testing.T) {
	ws := &Watches{byNS: map[string]*watcher{}, factory: dynamicinformer.NewDynamicSharedInformerFactory(nil, 0)}
	store := ws.factory.ForResource(watched["Pod"]).Informer().GetStore()
	s := &scenarioRun{ns: "a", watches: ws, watch: ws.watch("a", clock.RealClock{}), podViewsByObj: map[*unstructured.Unstructured]*podView{}}
	add := func(name, role string) *unstructured.Unstructured {
		t.Helper()
		p := pod("a", name, "1")
		p.SetLabels(map[string]string{"role": role})
		if err := store.Add(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	names := func(selector map[string]string) []string {
		t.Helper()
		views, err := s.podViews(context.Background(), selector, true)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, v := range views {
			out = append(out, v.pod.Name)
		}
		return out
	}
	node := map[string]string{"role": "node"}
	ws.dispatch("Pod", nil, add("n-2", "node"))
	ws.dispatch("Pod", nil, add("n-1", "node"))
	ws.dispatch("Pod", nil, add("init", "initializer"))
	if diff := cmp.Diff([]string{"n-1", "n-2"}, names(node)); diff != "" {
		t.Errorf("the node Pods (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"init", "n-1", "n-2"}, names(nil)); diff != "" {
		t.Errorf("every Pod (-want +got):\n%s", diff)
	}

	// In the store, not yet dispatched: both selections are kept, also
	// after a change of another kind.
	late := add("n-0", "node")
	ws.dispatch("TrainJob", nil, &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "t", "namespace": "a", "resourceVersion": "2"}}})
	if diff := cmp.Diff([]string{"n-1", "n-2"}, names(node)); diff != "" {
		t.Errorf("after a TrainJob's change, the node Pods (-want +got):\n%s", diff)
	}
	ws.dispatch("Pod", nil, late)
	if diff := cmp.Diff([]string{"n-0", "n-1", "n-2"}, names(node)); diff != "" {
		t.Errorf("after a Pod's change, the node Pods (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"init", "n-0", "n-1", "n-2"}, names(nil)); diff != "" {
		t.Errorf("after a Pod's change, every Pod (-want +got):\n%s", diff)
	}
}
