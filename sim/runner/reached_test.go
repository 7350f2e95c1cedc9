package runner

import (
	"context"
	"maps"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/clock"

	"github.com/trainersim/trainersim/sim/apis/v1alpha1"
)

// trainJob is TrainJob name of namespace ns at resourceVersion rv,
// reporting active Jobs of its replicated job node.
func trainJob(ns, name, rv string, active int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
		"status": map[string]any{"jobsStatus": []any{map[string]any{"name": "node", "active": active}}},
	}}
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetResourceVersion(rv)
	return u
}

// TestReached: an expectation with reached holds once the watches gave a
// state that matches, after the object has moved on from it; without
// such a state it does not, whatever came before the step began to check.
func TestReached(t *testing.T) {
	want := func() *v1alpha1.Expect {
		return &v1alpha1.Expect{Objects: []v1alpha1.ObjectExpectation{{
			Target:  v1alpha1.Target{Kind: "TrainJob", Name: "llm"},
			Match:   v1alpha1.Object{"status": map[string]any{"jobsStatus": []any{map[string]any{"name": "node", "active": int64(0)}}}},
			Reached: true,
		}}}
	}
	t.Run("passed through", func(t *testing.T) {
		ws := &Watches{byNS: map[string]*watcher{}}
		s := &scenarioRun{watch: ws.watch("a", clock.RealClock{}), watches: ws, ns: "a"}
		ws.dispatch("TrainJob", nil, trainJob("a", "llm", "1", 2)) // before the step
		e := want()
		end := s.trackReached(e)
		defer end()
		if s.hasReached(&e.Objects[0]) {
			t.Fatal("reached before the state came")
		}
		ws.dispatch("TrainJob", nil, trainJob("a", "llm", "2", 0))
		ws.dispatch("TrainJob", nil, trainJob("a", "llm", "3", 1)) // moved on
		if msg, _ := s.checkObject(context.Background(), &e.Objects[0], true); msg != "" {
			t.Errorf("checkObject: %s; want it to hold: the state was given, then moved on from", msg)
		}
	})
	t.Run("held when the step began", func(t *testing.T) {
		ws := &Watches{byNS: map[string]*watcher{}}
		s := &scenarioRun{watch: ws.watch("a", clock.RealClock{}), watches: ws, ns: "a"}
		ws.dispatch("TrainJob", nil, trainJob("a", "llm", "1", 0))
		e := want()
		defer s.trackReached(e)()
		if !s.hasReached(&e.Objects[0]) {
			t.Error("the state the watcher held when the step began to check is not reached")
		}
	})
	t.Run("another object, and after the step", func(t *testing.T) {
		ws := &Watches{byNS: map[string]*watcher{}}
		s := &scenarioRun{watch: ws.watch("a", clock.RealClock{}), watches: ws, ns: "a"}
		e := want()
		end := s.trackReached(e)
		ws.dispatch("TrainJob", nil, trainJob("a", "other", "1", 0))
		ws.dispatch("TrainJob", nil, trainJob("b", "llm", "2", 0)) // another namespace
		if s.hasReached(&e.Objects[0]) {
			t.Error("reached by another TrainJob's state")
		}
		end()
		ws.dispatch("TrainJob", nil, trainJob("a", "llm", "3", 0))
		if s.hasReached(&e.Objects[0]) {
			t.Error("reached by a state given after the step ended")
		}
		if n := len(s.watch.reaches); n != 0 {
			t.Errorf("%d reaches left after the step ended", n)
		}
	})
}

// TestWatchedKinds: the kinds the scenario format lets reached name are
// those the watches watch, at the same versions.
func TestWatchedKinds(t *testing.T) {
	if got, want := slices.Sorted(maps.Keys(watched)), slices.Sorted(maps.Keys(v1alpha1.WatchedKinds)); !slices.Equal(got, want) {
		t.Fatalf("watched kinds %v, v1alpha1.WatchedKinds %v", got, want)
	}
	for kind, gvr := range watched {
		if gv := gvr.GroupVersion().String(); gv != v1alpha1.WatchedKinds[kind] {
			t.Errorf("%s: watched at %s, v1alpha1.WatchedKinds says %s", kind, gv, v1alpha1.WatchedKinds[kind])
		}
	}
}
