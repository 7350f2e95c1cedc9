package runner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/trainersim/trainersim/results"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/gate"
	"github.com/trainersim/trainersim/sim/identity"
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
		if st.Action == v1alpha1.ComponentUpgrade {
			if _, ok := c.(cluster.TrainerUpgrade); !ok {
				return "upgrades the Trainer, which only a cluster simctl starts with envtest can do"
			}
			continue
		}
		if !ok || !slices.Contains(lc.LifecycleComponents(), st.Name) {
			return fmt.Sprintf("crashes, stops or starts %s, which this cluster does not run in simctl's process (envtest with the pinned Trainer release)", st.Name)
		}
	}
	return ""
}

// upgradesRefused says why an upgrade step of a scenario could not start on
// a cluster that can upgrade (a release not built, say): the scenario
// fails before it begins rather than at that step.
func upgradesRefused(sc *v1alpha1.Scenario, c cluster.Cluster) error {
	up, ok := c.(cluster.TrainerUpgrade)
	if !ok {
		return nil
	}
	for _, st := range componentSteps(sc) {
		if st.Action != v1alpha1.ComponentUpgrade {
			continue
		}
		if err := up.CanUpgrade(st.To); err != nil {
			return fmt.Errorf("cannot upgrade the Trainer to %s: %w", st.To, err)
		}
	}
	return nil
}

// componentWrite is the writer of a component step: an upgrade
// (upgrade), or a crash, stop, start or restart.
func componentWrite(s *scenarioRun, _ *actor, st *v1alpha1.Step, p *prepared) error {
	c := st.Component
	do := func(ctx context.Context) error { return s.componentAction(ctx, c) }
	if c.Action == v1alpha1.ComponentUpgrade {
		up, ok := s.cluster.(cluster.TrainerUpgrade)
		if !ok {
			return errors.New("this cluster cannot upgrade the Trainer")
		}
		do = func(ctx context.Context) error { return s.upgrade(ctx, up, st.Name, c.To) }
	} else if _, ok := s.cluster.(cluster.ComponentLifecycle); !ok {
		return errors.New("this cluster cannot crash, stop or start its components")
	}
	p.target = writeTarget{kind: c.Action, name: c.Name}
	p.sent = c
	p.do = func(ctx context.Context) (*unstructured.Unstructured, error) {
		if err := do(ctx); err != nil {
			return nil, err
		}
		recordStatus(ctx, http.StatusOK)
		return nil, nil
	}
	return nil
}

// componentAction crashes, stops, starts or restarts a component.
func (s *scenarioRun) componentAction(ctx context.Context, c *v1alpha1.ComponentAction) error {
	lc := s.cluster.(cluster.ComponentLifecycle) // componentWrite checked it
	s.mu.Lock()
	if s.actedOn == nil {
		s.actedOn = map[string]bool{}
	}
	s.actedOn[c.Name] = true
	s.mu.Unlock()
	if err := lc.ComponentAction(ctx, c.Name, c.Action); err != nil {
		return fmt.Errorf("failed to %s %s: %w", c.Action, c.Name, err)
	}
	if c.Action == v1alpha1.ComponentCrash {
		if err := s.waitHeldCut(ctx, c.Name); err != nil {
			return err
		}
	}
	if c.DownFor != nil {
		s.startAfter(lc, c.Name, c.DownFor.Duration)
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
	s.mu.Unlock()
	if err := s.restoreRelease(); err != nil {
		errs = append(errs, err)
	}
	s.mu.Lock()
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

// upgrade upgrades the Trainer to release to, its parts on the timeline
// under step.
func (s *scenarioRun) upgrade(ctx context.Context, up cluster.TrainerUpgrade, step, to string) error {
	s.mu.Lock()
	if s.upgradedFrom == "" {
		s.upgradedFrom = up.TrainerRelease()
	}
	s.mu.Unlock()
	parts, err := up.UpgradeTrainer(ctx, to)
	s.addUpgradeParts(step, parts)
	s.renewWatches(ctx)
	if err != nil {
		return fmt.Errorf("failed to upgrade the Trainer to %s: %w", to, err)
	}
	return nil
}

// addUpgradeParts puts the parts of an upgrade on the Trainer's lane.
func (s *scenarioRun) addUpgradeParts(step string, parts []cluster.UpgradePart) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range parts {
		summary := fmt.Sprintf("%s (%s)", p.Name, p.End.Sub(p.Start).Round(time.Millisecond))
		s.upgradeParts = append(s.upgradeParts, results.TimelineEntry{At: p.End, Step: step, Lane: LaneTrainer, Kind: results.EntryUpgradePart, Summary: summary, Detail: p.Detail})
	}
}

// renewWatches gives the run new informers after an upgrade changed the
// CRDs (Watches.Renew): what the scenario reads next, and the scenarios
// after it, is what the API server serves now.
func (s *scenarioRun) renewWatches(ctx context.Context) {
	problems := s.watches.Renew(ctx)
	if s.watch == nil || len(problems) == 0 {
		return
	}
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	s.watch.problems = append(s.watch.problems, problems...)
}

// cleanUpStep is the step name of what the runner does after the last
// step.
const cleanUpStep = "clean-up"

// upgradeTimeout bounds the rollback of a scenario's upgrade: two managers
// stopped gracefully (stopTimeout each, at most), the CRDs, the new ones
// started.
const upgradeTimeout = 2 * time.Minute

// restoreRelease gets the run's Trainer release back when the scenario
// upgraded it: a rollback, on the timeline of the clean-up. Then, after any
// upgrade, it restarts the long-running components that watch the
// upgraded CRDs (kube-controller-manager's garbage collector, Kueue): each
// CRD update ends their watches of its resource, and client-go watches
// again after a back-off that doubles with every end within two minutes
// (up to 30 s), so scenarios that upgrade one after the other (a shaken
// run) would leave the next one a garbage collector that sees a TrainJob's
// deletion half a minute late. One upgrade on a real cluster costs a
// watch one short back-off, which the scenario itself still sees.
func (s *scenarioRun) restoreRelease() error {
	s.mu.Lock()
	from := s.upgradedFrom
	s.mu.Unlock()
	up, ok := s.cluster.(cluster.TrainerUpgrade)
	if from == "" || !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), upgradeTimeout)
	defer cancel()
	var errs []error
	if up.TrainerRelease() != from {
		parts, err := up.UpgradeTrainer(ctx, from)
		s.addUpgradeParts(cleanUpStep, parts)
		if err != nil {
			errs = append(errs, fmt.Errorf("failed to give the run its Trainer %s back: %w", from, err))
		}
	}
	if lc, ok := s.cluster.(cluster.ComponentLifecycle); ok {
		for _, c := range crdWatchers {
			if !slices.Contains(lc.LifecycleComponents(), c) || !lc.ComponentUp(c) {
				continue
			}
			start := s.clock.Now()
			err := lc.ComponentAction(ctx, c, cluster.ComponentRestart)
			p := cluster.UpgradePart{Name: c + " restarted, its watches of the CRDs without the back-off of their updates", Start: start, End: s.clock.Now()}
			if err != nil {
				p.Name += ": failed"
				p.Detail = err.Error()
				errs = append(errs, fmt.Errorf("failed to restart %s after the upgrade: %w", c, err))
			}
			s.addUpgradeParts(cleanUpStep, []cluster.UpgradePart{p})
		}
	}
	s.renewWatches(ctx)
	return errors.Join(errs...)
}

// crdWatchers are the long-running components that watch the Trainer's
// and JobSet's CRDs; the Trainer and JobSet start anew at each upgrade.
var crdWatchers = []string{identity.ControllerManager, identity.Kueue}

// heldCutWithin bounds waitHeldCut: the API server waits for a gate
// gate.Timeout at most, after which it stops waiting on its own.
const heldCutWithin = gate.Timeout + 5*time.Second

// waitHeldCut waits until no gate of the run holds a request of the
// component crashed (gate.Server.WaitUnheld). Until then a gate that opens
// (a later step's release, or the crash step's until) would let the
// crashed component's write land, as no killed process's does.
func (s *scenarioRun) waitHeldCut(ctx context.Context, component string) error {
	users, ok := identity.UsersOf(component)
	if !ok || s.gateServer == nil {
		return nil
	}
	var names []string
	for _, g := range s.gates {
		names = append(names, g.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, heldCutWithin)
	defer cancel()
	left, err := s.gateServer.WaitUnheld(ctx, names, users)
	if err == nil {
		return nil
	}
	var held []string
	for _, r := range left {
		held = append(held, fmt.Sprintf("%s's %s of %s", component, r.Verb, r.Object))
	}
	return fmt.Errorf("%s crashed, but the API server still waits for its held requests after %s: %s", component, heldCutWithin, strings.Join(held, "; "))
}
