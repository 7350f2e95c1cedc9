package runner

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/trainersim/trainersim/sim/cluster"
)

// settlePoll is how often settle asks a cluster.CatchUp whether its
// components have caught up, while they have not.
const settlePoll = 50 * time.Millisecond

// settle waits, at most max, until the run's namespace has settled
// (Runner.Settle): no change for d and, on a cluster that can say so
// (cluster.CatchUp), its components caught up with every change the
// watches saw there and done with the namespace for d (what their last
// reconcile wrote has reached the watches by then, as any write does
// within a quiet spell). A quiet spell alone is not enough: beside other
// runs the Trainer's one worker can be more than d behind, and writes
// nothing while it is. Returns "" once it has settled, else why not.
func (s *scenarioRun) settle(ctx context.Context, d, max time.Duration) string {
	deadline := time.Now().Add(max)
	catchUp, _ := s.cluster.(cluster.CatchUp)
	for {
		if !s.watch.quiet(ctx, d, time.Until(deadline)) {
			if err := ctx.Err(); err != nil {
				return "not caught up: " + err.Error()
			}
			return fmt.Sprintf("its namespace still changed %s after the last step, never quiet for %s", max, d)
		}
		if catchUp == nil {
			return ""
		}
		last := s.watch.lastChange()
		behind, idle := catchUp.Behind(s.ns, s.watch.resourceVersions())
		var wait time.Duration
		switch {
		case behind != "":
			wait = settlePoll
		case !idle.IsZero() && time.Since(idle) < d:
			wait = d - time.Since(idle)
		case s.watch.lastChange().Equal(last):
			return ""
		}
		if time.Now().Add(wait).After(deadline) {
			if behind == "" {
				behind = fmt.Sprintf("a component reconciled a request of it within %s", d)
			}
			return fmt.Sprintf("not caught up %s after the last step: %s", max, behind)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return "not caught up: " + ctx.Err().Error()
		case <-t.C:
		}
	}
}

// lastChange is when the watcher last observed a reaction (watcher.last).
func (w *watcher) lastChange() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// resourceVersions returns the objects the watcher was given, as cluster.CatchUp
// takes them: per GroupKind, name to resourceVersion.
func (w *watcher) resourceVersions() map[schema.GroupKind]map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[schema.GroupKind]map[string]string{}
	for key, obj := range w.delivered {
		kind, name, _ := strings.Cut(key, "/")
		gk := schema.GroupKind{Group: watched[kind].Group, Kind: kind}
		if out[gk] == nil {
			out[gk] = map[string]string{}
		}
		out[gk][name] = obj.GetResourceVersion()
	}
	return out
}
