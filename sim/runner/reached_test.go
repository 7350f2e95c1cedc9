package runner

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// server is a read of the API server that answers obj (nil: not found),
// after running during, which stands for what the watches give while the
// request is on its way.
func server(obj *unstructured.Unstructured, during func()) func(context.Context, v1alpha1.Target) (*unstructured.Unstructured, error) {
	return func(_ context.Context, t v1alpha1.Target) (*unstructured.Unstructured, error) {
		if during != nil {
			during()
		}
		if obj == nil {
			return nil, apierrors.NewNotFound(schema.GroupResource{Group: "trainer.kubeflow.org", Resource: "trainjobs"}, t.Name)
		}
		return obj, nil
	}
}

// TestReached: an expectation with reached holds once the object has
// matched in a state at or after the API server's when the step began to
// check it, after the object has moved on from it; without such a state
// it does not, whatever came before, however late the watches give it.
func TestReached(t *testing.T) {
	want := func() *v1alpha1.Expect {
		return &v1alpha1.Expect{Objects: []v1alpha1.ObjectExpectation{{
			Target:  v1alpha1.Target{Kind: "TrainJob", Name: "llm"},
			Match:   v1alpha1.Object{"status": map[string]any{"jobsStatus": []any{map[string]any{"name": "node", "active": int64(0)}}}},
			Reached: true,
		}}}
	}
	run := func() (*Watches, *scenarioRun) {
		ws := &Watches{byNS: map[string]*watcher{}}
		return ws, &scenarioRun{watch: ws.watch("a", clock.RealClock{}), watches: ws, ns: "a"}
	}
	ctx := context.Background()
	t.Run("passed through", func(t *testing.T) {
		ws, s := run()
		before := trainJob("a", "llm", "1", 2)
		ws.dispatch("TrainJob", nil, before)
		e := want()
		end := s.trackReached(ctx, e, server(before, nil))
		defer end()
		if reached(t, s, &e.Objects[0]) {
			t.Fatal("reached before the state came")
		}
		ws.dispatch("TrainJob", nil, trainJob("a", "llm", "2", 0))
		ws.dispatch("TrainJob", nil, trainJob("a", "llm", "3", 1)) // moved on
		if msg, _ := s.checkObject(ctx, &e.Objects[0], true); msg != "" {
			t.Errorf("checkObject: %s; want it to hold: the state was given, then moved on from", msg)
		}
	})
	t.Run("held when the step began", func(t *testing.T) {
		ws, s := run()
		now := trainJob("a", "llm", "1", 0)
		ws.dispatch("TrainJob", nil, now)
		e := want()
		defer s.trackReached(ctx, e, server(now, nil))()
		if !reached(t, s, &e.Objects[0]) {
			t.Error("the state the API server had when the step began to check is not reached")
		}
	})
	t.Run("watches that lag", func(t *testing.T) {
		// The watcher was last given active 0 (rv 1); the API server has
		// moved on to active 1 (rv 5), which the watches give late, after
		// a state older than it (rv 3).
		ws, s := run()
		ws.dispatch("TrainJob", nil, trainJob("a", "llm", "1", 0))
		e := want()
		defer s.trackReached(ctx, e, server(trainJob("a", "llm", "5", 1), nil))()
		if reached(t, s, &e.Objects[0]) {
			t.Fatal("reached by the watcher's state from before the API server's")
		}
		ws.dispatch("TrainJob", nil, trainJob("a", "llm", "3", 0))
		if reached(t, s, &e.Objects[0]) {
			t.Fatal("reached by a state older than the API server's, given late")
		}
		ws.dispatch("TrainJob", nil, trainJob("a", "llm", "5", 1))
		ws.dispatch("TrainJob", nil, trainJob("a", "llm", "6", 0))
		if !reached(t, s, &e.Objects[0]) {
			t.Error("not reached by a state after the API server's")
		}
	})
	t.Run("given while the API server is read", func(t *testing.T) {
		for _, c := range []struct {
			rv   string
			want bool
		}{{"4", false}, {"6", true}} {
			ws, s := run()
			e := want()
			end := s.trackReached(ctx, e, server(trainJob("a", "llm", "5", 1), func() {
				ws.dispatch("TrainJob", nil, trainJob("a", "llm", c.rv, 0))
			}))
			if got := reached(t, s, &e.Objects[0]); got != c.want {
				t.Errorf("active 0 at resourceVersion %s given during the read of 5: reached %v, want %v", c.rv, got, c.want)
			}
			end()
		}
	})
	t.Run("absent when the step began", func(t *testing.T) {
		ws, s := run()
		e := want()
		defer s.trackReached(ctx, e, server(nil, nil))()
		if reached(t, s, &e.Objects[0]) {
			t.Fatal("reached with no object")
		}
		ws.dispatch("TrainJob", nil, trainJob("a", "llm", "2", 0))
		if !reached(t, s, &e.Objects[0]) {
			t.Error("the object's first state is not reached")
		}
	})
	t.Run("the API server cannot say", func(t *testing.T) {
		ws, s := run()
		e := want()
		defer s.trackReached(ctx, e, func(context.Context, v1alpha1.Target) (*unstructured.Unstructured, error) {
			return nil, errors.New("connection refused")
		})()
		ws.dispatch("TrainJob", nil, trainJob("a", "llm", "1", 0))
		if hit, err := s.hasReached(&e.Objects[0]); hit || err == nil || !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("without the API server's state a given state counts (%t) or the read's error is not said (%v): it may be older than the step", hit, err)
		}
	})
	t.Run("another object, and after the step", func(t *testing.T) {
		ws, s := run()
		e := want()
		end := s.trackReached(ctx, e, server(nil, nil))
		ws.dispatch("TrainJob", nil, trainJob("a", "other", "1", 0))
		ws.dispatch("TrainJob", nil, trainJob("b", "llm", "2", 0)) // another namespace
		if reached(t, s, &e.Objects[0]) {
			t.Error("reached by another TrainJob's state")
		}
		end()
		ws.dispatch("TrainJob", nil, trainJob("a", "llm", "3", 0))
		if reached(t, s, &e.Objects[0]) {
			t.Error("reached by a state given after the step ended")
		}
		if n := len(s.watch.reaches); n != 0 {
			t.Errorf("%d reaches left after the step ended", n)
		}
	})
}

// TestReachedSince: an expectation whose reachedSince is an earlier step
// counts the states from that step's start (not the one the object had
// then), so a state passed through before its own step began holds it.
func TestReachedSince(t *testing.T) {
	ws := &Watches{byNS: map[string]*watcher{}}
	want := v1alpha1.ObjectExpectation{
		Target:       v1alpha1.Target{Kind: "TrainJob", Name: "llm"},
		Match:        v1alpha1.Object{"status": map[string]any{"jobsStatus": []any{map[string]any{"name": "node", "active": int64(0)}}}},
		Reached:      true,
		ReachedSince: "resume",
	}
	sc := &v1alpha1.Scenario{Spec: v1alpha1.ScenarioSpec{Steps: []v1alpha1.Step{
		{Name: "resume"},
		{Name: "wait", Expect: &v1alpha1.Expect{Objects: []v1alpha1.ObjectExpectation{want}}},
	}}}
	for _, c := range []struct {
		name    string
		between []*unstructured.Unstructured // given after resume began, before wait
		want    bool
	}{
		{"passed through before its step", []*unstructured.Unstructured{trainJob("a", "llm", "6", 0), trainJob("a", "llm", "7", 1)}, true},
		{"only the state when the earlier step began", []*unstructured.Unstructured{trainJob("a", "llm", "7", 1)}, false},
	} {
		s := &scenarioRun{watch: ws.watch("a", clock.RealClock{}), watches: ws, ns: "a", sc: sc}
		// At resume's start the object is at active 0 (rv 5): from before
		// the step's write, not counted.
		s.startReach(context.Background(), &sc.Spec.Steps[1].Expect.Objects[0], server(trainJob("a", "llm", "5", 0), nil), false)
		for _, obj := range c.between {
			ws.dispatch("TrainJob", nil, obj)
		}
		e := sc.Spec.Steps[1].Expect
		end := s.trackReached(context.Background(), e, server(trainJob("a", "llm", "7", 1), nil))
		if got := reached(t, s, &e.Objects[0]); got != c.want {
			t.Errorf("%s: reached %v, want %v", c.name, got, c.want)
		}
		end()
		if len(s.reaches) != 0 || len(s.watch.reaches) != 0 {
			t.Errorf("%s: reaches left after the step: %d, %d", c.name, len(s.reaches), len(s.watch.reaches))
		}
		ws = &Watches{byNS: map[string]*watcher{}}
	}
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

// reached is s.hasReached, which fails t when it cannot say.
func reached(t *testing.T, s *scenarioRun, want *v1alpha1.ObjectExpectation) bool {
	t.Helper()
	hit, err := s.hasReached(want)
	if err != nil {
		t.Fatal(err)
	}
	return hit
}
