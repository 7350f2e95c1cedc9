package runner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/cluster"
)

// Component steps: the cluster crashes, stops or starts a component
// (cluster.ComponentLifecycle).

// componentSteps returns the component steps of a scenario, a concurrently
// group's included.
func componentSteps(sc *v1alpha1.Scenario) []*v1alpha1.ComponentAction {
	var out []*v1alpha1.ComponentAction
	for _, st := range sc.Spec.Steps {
		if st.Component != nil {
			out = append(out, st.Component)
		}
		if st.Concurrently != nil {
			for _, w := range st.Concurrently.Writes {
				if w.Component != nil {
					out = append(out, w.Component)
				}
			}
		}
	}
	return out
}

// lifecycleSkipped is the reason a scenario's component steps cannot run
// on a cluster, or "".
func lifecycleSkipped(sc *v1alpha1.Scenario, c cluster.Cluster) string {
	steps := componentSteps(sc)
	if len(steps) == 0 {
		return ""
	}
	lc, ok := c.(cluster.ComponentLifecycle)
	for _, st := range steps {
		if !ok || !slices.Contains(lc.LifecycleComponents(), st.Name) {
			return fmt.Sprintf("crashes, stops or starts %s, which this cluster does not run in simctl's process (envtest with the pinned Trainer release)", st.Name)
		}
	}
	return ""
}

// componentWrite is the writer of a component step.
func componentWrite(s *scenarioRun, _ *actor, st *v1alpha1.Step, p *prepared) error {
	c := st.Component
	lc, ok := s.cluster.(cluster.ComponentLifecycle)
	if !ok {
		return errors.New("this cluster cannot crash, stop or start its components")
	}
	p.target = writeTarget{kind: c.Action, name: c.Name}
	p.sent = c
	p.do = func(ctx context.Context) (*unstructured.Unstructured, error) {
		s.mu.Lock()
		if s.actedOn == nil {
			s.actedOn = map[string]bool{}
		}
		s.actedOn[c.Name] = true
		s.mu.Unlock()
		if err := lc.ComponentAction(ctx, c.Name, c.Action); err != nil {
			return nil, fmt.Errorf("failed to %s %s: %w", c.Action, c.Name, err)
		}
		if c.DownFor != nil {
			s.startAfter(lc, c.Name, c.DownFor.Duration)
		}
		recordStatus(ctx, http.StatusOK)
		return nil, nil
	}
	return nil
}

// startAfter starts a component again on its own once it has been down
// for d (a component step's downFor), while the next steps run.
func (s *scenarioRun) startAfter(lc cluster.ComponentLifecycle, name string, d time.Duration) {
	s.autoStarts.Go(func() {
		<-time.After(d) // the downtime the scenario states, not a wait for a state
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if err := lc.ComponentAction(ctx, name, cluster.ComponentStart); err != nil {
			s.mu.Lock()
			s.autoStartErrs = append(s.autoStartErrs, fmt.Errorf("failed to start %s after its downFor (%s): %w", name, d, err))
			s.mu.Unlock()
		}
	})
}

// restoreComponents starts again the components the scenario left down,
// so that the next scenario finds them running, once the starts of their
// downFor are done (their errors are its own).
func (s *scenarioRun) restoreComponents() error {
	lc, ok := s.cluster.(cluster.ComponentLifecycle)
	if !ok {
		return nil
	}
	s.autoStarts.Wait()
	s.mu.Lock()
	errs := slices.Clone(s.autoStartErrs)
	var names []string
	for n := range s.actedOn {
		names = append(names, n)
	}
	s.mu.Unlock()
	slices.Sort(names)
	for _, n := range names {
		if lc.ComponentUp(n) {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		if err := lc.ComponentAction(ctx, n, cluster.ComponentStart); err != nil {
			errs = append(errs, fmt.Errorf("failed to start %s, which the scenario left down: %w", n, err))
		}
		cancel()
	}
	return errors.Join(errs...)
}
