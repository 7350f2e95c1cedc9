package runner

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/internal/controllers"
)

// catchUpCluster says how far a controllers.Progress has got.
type catchUpCluster struct {
	cluster.Cluster
	p *controllers.Progress
}

func (c catchUpCluster) Behind(ns string, seen map[schema.GroupKind]map[string]string) (string, time.Time) {
	return c.p.Behind(ns, seen)
}

// TestSettle: a quiet namespace settles only once the component the
// cluster can say so of has reconciled its request, and the settle spell
// after that; one whose request is never reconciled does not settle, and
// says what it waited for; on a cluster that cannot say, quiet is settled.
func TestSettle(t *testing.T) {
	p := controllers.NewProgress(nil)
	q := p.NewQueue(config.Controller{})("trainjob_controller", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	run := func(c cluster.Cluster) *scenarioRun {
		return &scenarioRun{cluster: c, ns: "a", watch: &watcher{clock: clock.RealClock{}, step: setUpStep}}
	}
	x := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "a", Name: "x"}}
	q.Add(x)
	done := make(chan time.Time, 1)
	go func() {
		item, _ := q.Get()
		time.Sleep(300 * time.Millisecond) // a reconcile that takes a while
		done <- time.Now()
		q.Done(item)
	}()
	const d = 100 * time.Millisecond
	if why := run(catchUpCluster{p: p}).settle(t.Context(), d, 5*time.Second); why != "" {
		t.Fatalf("a request reconciled in 300ms: not settled within 5s: %s", why)
	}
	if since := time.Since(<-done); since < d {
		t.Errorf("settled %s after the reconcile ended, want at least the %s asked", since, d)
	}

	q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "a", Name: "never"}})
	want := "not caught up 300ms after the last step: its trainjob_controller has yet to reconcile never"
	if why := run(catchUpCluster{p: p}).settle(t.Context(), d, 300*time.Millisecond); why != want {
		t.Errorf("a request never reconciled: %q, want %q", why, want)
	}
	if why := run(catchUpCluster{}.Cluster).settle(t.Context(), d, 300*time.Millisecond); why != "" {
		t.Errorf("a quiet namespace on a cluster that cannot say more: %q", why)
	}

	// Ended while its namespace still changes: the end is why, not the
	// changes.
	changing := run(catchUpCluster{}.Cluster)
	changing.watch.last = time.Now()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	want = "not caught up: context canceled"
	if why := changing.settle(ctx, d, 5*time.Second); why != want {
		t.Errorf("ended while its namespace changed: %q, want %q", why, want)
	}
}
