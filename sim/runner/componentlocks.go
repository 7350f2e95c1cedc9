package runner

import (
	"slices"
	"strings"
	"sync"

	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/identity"
)

// Scenarios share the cluster's components. A gate that holds a request of
// a component with one worker (JobSet's controller, Kueue's TrainJob
// reconciler, the Trainer's TrainJob controller) holds that worker for every
// scenario running beside it, and the shaker in CI found such a scenario
// failing for another's gate (Kueue made no Workload for 20 s while a gate
// of another scenario held Kueue's update). So a run that gates such a
// component has it to itself: runs take a read lock on each one-worker
// component their scenario may use and a write lock on each their gates
// hold. The Trainer's manifests ask for five TrainJob workers
// (groupKindConcurrency), but its TrainJob controller is built without For
// (WatchesRawSource), so controller-runtime does not apply it: every
// release reconciles TrainJobs with one worker, and a held status patch of
// one TrainJob keeps every other waiting.

// exclusiveComponents are the components with one worker for the requests
// a gate can hold: a gate on one of them keeps other scenarios off it.
var exclusiveComponents = []string{"jobset", "kueue", "trainer"}

// everyRunUses are the exclusive components every run uses: each makes
// TrainJobs, which the Trainer makes into JobSets.
var everyRunUses = []string{"jobset", "trainer"}

// Locks are the read-write locks that keep runs apart: a cluster-scoped
// name a run creates (clusterNames, written) and the components it uses
// (read) or gates (written: componentNeeds). Run takes them for its plans;
// a caller that runs plans side by side with RunPlan (a test framework's
// parallel specs) takes them with Lock. The zero value is ready to use.
type Locks struct {
	mu    sync.Mutex
	locks map[string]*sync.RWMutex
}

// componentNeeds returns, for a plan, the components it uses (read) and
// those its gates hold (write), as lock names.
func componentNeeds(p Plan) (read, write []string) {
	sc := p.File.Scenario
	uses := append(slices.Clone(everyRunUses), sc.Spec.Components...)
	gated := map[string]bool{}
	for _, g := range sc.Spec.Gates {
		c := g.Component
		if c == "" && g.User != "" {
			c = identity.Who(g.User)
		}
		c, _, _ = strings.Cut(c, "/") // kube-controller-manager/<controller>
		gated[c] = true
	}
	for _, c := range componentSteps(sc) {
		// Down, its webhooks fail closed in every namespace.
		gated[c.Name] = true
		if !slices.Contains(exclusiveComponents, c.Name) {
			// kube-controller-manager, kube-scheduler, KWOK: every
			// run's Pods wait on them, and every run uses the Trainer.
			gated["trainer"] = true
		}
		if c.Action == v1alpha1.ComponentUpgrade {
			// The Trainer's CRDs are every run's, and JobSet is
			// replaced with it.
			gated["jobset"] = true
		}
	}
	for _, v := range sc.Spec.Views {
		if v.Partition != "" {
			// Every request of the component, every scenario's.
			gated[v.Component] = true
			if !slices.Contains(exclusiveComponents, v.Component) {
				gated["trainer"] = true
			}
		}
	}
	for _, w := range sc.Spec.Webhooks {
		if w.Hold != nil {
			// A hold holds anybody's unsuspend: the managers' the
			// scenario runs.
			for _, c := range sc.Spec.Components {
				gated[c] = true
			}
		}
	}
	for _, c := range exclusiveComponents {
		switch {
		case gated[c]:
			write = append(write, c)
		case slices.Contains(uses, c):
			read = append(read, c)
		}
	}
	return read, write
}

// Exclusive reports whether a plan must not run beside runs that do not
// take the same Locks, those of another process on the same cluster
// (`ginkgo -p`): its gates hold a component the others use, or it creates
// cluster-scoped objects under names another run of its scenario creates
// too.
func Exclusive(p Plan) bool {
	_, write := componentNeeds(p)
	return len(write) > 0 || len(clusterNames(p)) > 0
}

// Lock takes a plan's locks in one order for every plan (sorted by name),
// so that no two runs wait on each other, and returns what gives them back.
func (l *Locks) Lock(p Plan) (unlock func()) {
	read, write := componentNeeds(p)
	write = append(write, clusterNames(p)...)
	names := slices.Concat(read, write)
	slices.Sort(names)
	var undo []func()
	for _, n := range names {
		l.mu.Lock()
		if l.locks == nil {
			l.locks = map[string]*sync.RWMutex{}
		}
		m := l.locks[n]
		if m == nil {
			m = &sync.RWMutex{}
			l.locks[n] = m
		}
		l.mu.Unlock()
		if slices.Contains(write, n) {
			m.Lock()
			undo = append(undo, m.Unlock)
		} else {
			m.RLock()
			undo = append(undo, m.RUnlock)
		}
	}
	return func() {
		for _, u := range slices.Backward(undo) {
			u()
		}
	}
}
