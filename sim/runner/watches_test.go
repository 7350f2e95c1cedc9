package runner

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/clock"

	"github.com/trainersim/trainersim/results"
)

func pod(ns, name, resourceVersion string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod"}}
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetResourceVersion(resourceVersion)
	return u
}

func notified(w *watcher) bool {
	select {
	case <-w.changed:
		return true
	default:
		return false
	}
}

func TestWatchesDispatchToTheNamespacesWatcher(t *testing.T) {
	ws := &Watches{byNS: map[string]*watcher{}}
	a, b := ws.watch("a", clock.RealClock{}), ws.watch("b", clock.RealClock{})

	ws.dispatch("Pod", nil, pod("a", "p", "7"))
	if !notified(a) || notified(b) {
		t.Fatalf("a change in a woke a: %v, b: %v; want only a", !notified(a), notified(b))
	}
	if notified(a) {
		t.Errorf("one change woke a twice")
	}
	if !a.caughtUp(map[string]uint64{"Pod": 7}) || a.caughtUp(map[string]uint64{"Pod": 8}) {
		t.Errorf("a saw Pods up to %d, want 7", a.seen["Pod"])
	}
	if b.caughtUp(map[string]uint64{"Pod": 1}) {
		t.Errorf("b caught up with a Pod write it never saw")
	}

	// A deletion counts with the deleted object's resourceVersion; an older
	// one does not lower what was seen.
	ws.dispatch("Pod", pod("a", "p", "9"), nil)
	ws.dispatch("Pod", nil, pod("a", "q", "3"))
	if !a.caughtUp(map[string]uint64{"Pod": 9}) {
		t.Errorf("a saw Pods up to %d, want 9", a.seen["Pod"])
	}

	notified(a) // drain
	a.stop()
	ws.dispatch("Pod", nil, pod("a", "r", "11"))
	if notified(a) || a.caughtUp(map[string]uint64{"Pod": 11}) {
		t.Errorf("a stopped watcher still receives its namespace's changes")
	}
	if _, ok := ws.byNS["a"]; ok {
		t.Errorf("the stopped watcher is still registered")
	}
}

func TestLastLane(t *testing.T) {
	t0 := time.Now()
	w := &watcher{entries: []results.TimelineEntry{
		{At: t0.Add(1 * time.Millisecond), Lane: LaneTrainer},
		{At: t0.Add(5 * time.Millisecond), Lane: LaneScheduler},
		{At: t0.Add(9 * time.Millisecond), Lane: LaneKWOK},
	}}
	for _, tc := range []struct {
		since, until time.Duration
		want         string
	}{
		{0, 10 * time.Millisecond, LaneKWOK},
		{0, 6 * time.Millisecond, LaneScheduler},
		{2 * time.Millisecond, 4 * time.Millisecond, ""},
		{5 * time.Millisecond, 8 * time.Millisecond, ""}, // since is exclusive
	} {
		if got := w.lastLane(t0.Add(tc.since), t0.Add(tc.until)); got != tc.want {
			t.Errorf("lastLane(%s, %s) = %q, want %q", tc.since, tc.until, got, tc.want)
		}
	}
}

func TestWritesMustBeSeenBeforeTheWatchesAreRead(t *testing.T) {
	ws := &Watches{byNS: map[string]*watcher{}}
	s := &scenarioRun{clock: clock.RealClock{}, watches: ws, watch: ws.watch("ns", clock.RealClock{}), written: map[string]uint64{}}
	s.wrote("TrainJob", "12")
	s.wrote("TrainJob", "10")  // an older answer does not lower it
	s.wrote("ConfigMap", "40") // not watched: never read from the watches
	if s.written["TrainJob"] != 12 || len(s.written) != 1 {
		t.Fatalf("written = %v, want TrainJob at 12 only", s.written)
	}
	ws.dispatch("TrainJob", nil, pod("ns", "job", "11"))
	if s.watch.caughtUp(s.written) {
		t.Errorf("caught up at 11 with a write at 12")
	}
	ws.dispatch("TrainJob", nil, pod("ns", "job", "12"))
	if !s.watch.caughtUp(s.written) {
		t.Errorf("not caught up after seeing the write at 12")
	}
	s.wrote("Pod", "v1")
	if !s.unordered {
		t.Errorf("a resourceVersion that is not a number left the reads on the watches")
	}
}

// An informer stores a change before its handlers get it: the watcher
// holds what the store holds only once the handlers have delivered every
// change, an update, a new object and a deletion alike.
func TestWatcherHoldsWhatTheStoreHoldsOnceDelivered(t *testing.T) {
	ws := &Watches{byNS: map[string]*watcher{}}
	w := ws.watch("a", clock.RealClock{})
	store := []*unstructured.Unstructured{pod("a", "p", "7")}
	if w.holds("Pod", store) {
		t.Errorf("holds a Pod whose creation was never delivered")
	}
	ws.dispatch("Pod", nil, pod("a", "p", "7"))
	ws.dispatch("Pod", nil, pod("b", "p", "8")) // another namespace's
	if !w.holds("Pod", store) {
		t.Errorf("does not hold the Pod whose creation was delivered")
	}
	if w.holds("TrainJob", store) {
		t.Errorf("holds a Pod as a TrainJob")
	}
	store = []*unstructured.Unstructured{pod("a", "p", "9")}
	if w.holds("Pod", store) {
		t.Errorf("holds the Pod at 9 with its update to 9 not delivered")
	}
	ws.dispatch("Pod", pod("a", "p", "7"), pod("a", "p", "9"))
	if !w.holds("Pod", store) {
		t.Errorf("does not hold the Pod at 9 after its update was delivered")
	}
	store = nil
	if w.holds("Pod", store) {
		t.Errorf("holds no Pod with the deletion not delivered")
	}
	ws.dispatch("Pod", pod("a", "p", "9"), nil)
	if !w.holds("Pod", store) {
		t.Errorf("still holds the Pod after its deletion was delivered")
	}
}

// Renew's informers list every object again: the watcher gets an object
// it was given at the same resourceVersion no second time, one at a newer
// resourceVersion as a change from the state it was given, and the
// deletion of one it was given once only.
func TestWatcherIsGivenEachStateOnce(t *testing.T) {
	ws := &Watches{byNS: map[string]*watcher{}}
	w := ws.watch("a", clock.RealClock{})
	jobSet := func(rv, pool string) *unstructured.Unstructured {
		u := pod("a", "js", rv)
		u.SetKind("JobSet")
		u.SetGeneration(map[string]int64{"7": 1, "9": 2}[rv])
		_ = unstructured.SetNestedField(u.Object, pool, "spec", "pool")
		return u
	}
	ws.dispatch("JobSet", nil, jobSet("7", "a"))
	ws.dispatch("JobSet", nil, jobSet("7", "a")) // listed again
	if n := len(w.entries); n != 1 {
		t.Fatalf("%d entries after the same creation twice, want 1: %v", n, w.entries)
	}
	ws.dispatch("JobSet", nil, jobSet("9", "b")) // listed again, changed meanwhile
	if n := len(w.entries); n != 2 || w.entries[1].Kind != results.EntryJobSetChanged {
		t.Fatalf("entries %v, want the creation and a change", w.entries)
	}
	if got := w.entries[1].Detail; got != `spec.pool: "a" → "b"` {
		t.Errorf("the change's detail is %q, want it from the state given before", got)
	}
	ws.dispatch("JobSet", nil, jobSet("7", "a")) // an older informer, late
	ws.dispatch("JobSet", jobSet("9", "b"), nil)
	ws.dispatch("JobSet", jobSet("9", "b"), nil)
	if n := len(w.entries); n != 3 || w.entries[2].Kind != results.EntryJobSetDeleted {
		t.Fatalf("entries %v, want the creation, the change and one deletion", w.entries)
	}
}
