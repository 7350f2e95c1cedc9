package controllers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
)

var trainJobs = schema.GroupKind{Group: trainer.GroupVersion.Group, Kind: "TrainJob"}

func request(ns, name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
}

// TestProgressQueue: a request of a namespace keeps it behind from its add
// until a worker that got it after the add is done with it; one added
// again while a worker has it keeps it behind until the worker after; one
// added with a delay is a timer, not work. The queue is controller-
// runtime's priority queue unless the manager turns it off, as without
// NewQueue.
func TestProgressQueue(t *testing.T) {
	for _, pq := range []*bool{nil, ptr.To(false)} {
		p := NewProgress(nil)
		q := p.NewQueue(config.Controller{UsePriorityQueue: pq})("trainjob_controller", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		defer q.ShutDown()
		if _, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); !ok {
			t.Fatalf("UsePriorityQueue %v: the queue has no priority queue's methods, which controller-runtime's handlers use", pq)
		}
		behind := func(ns string) string {
			b, _ := p.Behind(ns, nil)
			return b
		}
		if b := behind("a"); b != "" {
			t.Errorf("an empty queue: behind %q", b)
		}
		x := request("a", "x")
		q.Add(x)
		if b := behind("a"); b != "its trainjob_controller has yet to reconcile x" {
			t.Errorf("after an add: behind %q", b)
		}
		if b := behind("b"); b != "" {
			t.Errorf("another namespace: behind %q", b)
		}
		got, _ := q.Get()
		if b := behind("a"); got != x || b != "its trainjob_controller is reconciling x" {
			t.Errorf("after a worker got %v: behind %q", got, b)
		}
		q.Add(x) // a change while the worker reconciles
		q.Done(x)
		if b := behind("a"); b != "its trainjob_controller has yet to reconcile x" {
			t.Errorf("added while a worker had it, then done: behind %q", b)
		}
		if again, _ := q.Get(); again != x {
			t.Fatalf("the queue handed out %v, want %v again", again, x)
		}
		before := time.Now()
		q.Done(x)
		if b, idle := p.Behind("a", nil); b != "" || idle.Before(before) {
			t.Errorf("after the worker after the add: behind %q, idle %v (want at or after %v)", b, idle, before)
		}
		if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
			pq.AddWithOpts(priorityqueue.AddOpts{After: time.Hour}, request("a", "later"))
		}
		q.AddRateLimited(request("a", "retried"))
		if b := behind("a"); b != "" {
			t.Errorf("requeues with a delay: behind %q, want none (timers)", b)
		}
		if retried, _ := q.Get(); retried.Name != "retried" {
			t.Fatalf("the queue handed out %v, want the retried request once its back-off passed", retried)
		}
		if b := behind("a"); b != "its trainjob_controller is reconciling retried" {
			t.Errorf("a worker got a request only ever requeued with a delay: behind %q", b)
		}
	}
}

// recordingHandler records, at each call, what Behind said then.
type recordingHandler struct {
	p      *Progress
	seen   map[schema.GroupKind]map[string]string
	behind []string
}

func (h *recordingHandler) call() {
	b, _ := h.p.Behind("a", h.seen)
	h.behind = append(h.behind, b)
}
func (h *recordingHandler) OnAdd(any, bool)   { h.call() }
func (h *recordingHandler) OnUpdate(any, any) { h.call() }
func (h *recordingHandler) OnDelete(any)      { h.call() }
func job(name, rv string) *trainer.TrainJob {
	return &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name, ResourceVersion: rv}}
}

// TestProgressHandlers: a version counts as handed on once every handler
// registered for its kind has returned from it (not while one runs); a
// deletion, tombstone or not, likewise; kinds with no handler and versions
// older than the one handed on are not waited for.
func TestProgressHandlers(t *testing.T) {
	p := NewProgress(nil)
	seen := map[schema.GroupKind]map[string]string{trainJobs: {"x": "7"}, {Kind: "Pod"}: {"p": "9"}}
	first := &recordingHandler{p: p, seen: seen}
	h1 := p.handler(trainJobs, first)
	h2 := p.handler(trainJobs, &recordingHandler{p: p, seen: seen})
	behind := func(seen map[schema.GroupKind]map[string]string) string {
		b, _ := p.Behind("a", seen)
		return b
	}
	h1.OnAdd(job("x", "7"), false)
	if want := "its informers have not handed on TrainJob x as seen (resourceVersion 7)"; first.behind[0] != want || behind(seen) != want {
		t.Errorf("while the first handler ran, and after it alone: behind %q, %q; want %q (the second has not)", first.behind[0], behind(seen), want)
	}
	h2.OnAdd(job("x", "7"), false)
	if b := behind(seen); b != "" {
		t.Errorf("both handlers returned: behind %q", b)
	}
	if b := behind(map[schema.GroupKind]map[string]string{trainJobs: {"x": "6"}}); b != "" {
		t.Errorf("an older version seen: behind %q", b)
	}
	if b := behind(map[schema.GroupKind]map[string]string{trainJobs: {}}); b != "its informers have not handed on the deletion of TrainJob x" {
		t.Errorf("seen deleted: behind %q", b)
	}
	h1.OnDelete(job("x", "8"))
	h2.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "a/x", Obj: job("x", "8")})
	if b := behind(map[schema.GroupKind]map[string]string{trainJobs: {}}); b != "" {
		t.Errorf("deleted in both: behind %q", b)
	}
}

func TestOlderVersion(t *testing.T) {
	for _, tc := range []struct {
		a, b  string
		older bool
	}{{"9", "10", true}, {"10", "9", false}, {"10", "10", false}, {"x", "y", true}, {"x", "x", false}} {
		if got := olderVersion(tc.a, tc.b); got != tc.older {
			t.Errorf("olderVersion(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.older)
		}
	}
}
