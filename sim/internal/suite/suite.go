// Package suite is what the test-framework adapters share (sim/simginkgo
// for ginkgo, sim/sime2e for sigs.k8s.io/e2e-framework): the scenario files
// of a test binary, the one cluster they run on with the watches they
// share, and each scenario's run as a spec, reported the same way by both:
// why it was skipped, the failure the spec reports, and, on a cluster whose
// Trainer runs in this process, the explain agreement (agreement.go).
package suite

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/trainersim/trainersim/results"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/runner"
	"github.com/trainersim/trainersim/sim/scenario"
)

// Load loads the scenario files under paths, as simctl run does, and
// returns them with the components they ask for added to have (those a
// cluster must start for them: runner.WithComponents, for the Trainer
// release trainer). The error, if any, is the loader's: one
// file:line:column line per problem.
func Load(paths []string, have []string, trainer string) ([]*scenario.File, []string, error) {
	files, err := scenario.LoadPaths(paths, scenario.Options{})
	return files, runner.WithComponents(have, files, trainer), err
}

// Suite runs scenario plans as specs on one cluster.
type Suite struct {
	cluster cluster.Cluster
	// agree checks explain against the in-process Trainer; nil when the
	// Trainer runs elsewhere.
	agree *agreement
	// locks keep apart the runs that must not overlap when specs run in
	// parallel (runner.Locks).
	locks runner.Locks
	// places bound the runs at once when specs run in parallel in one
	// process (e2e-framework's TestInParallel starts every feature at
	// once): half simctl run's default --parallel (runner.DefaultParallel),
	// since make test runs its packages' clusters side by side (go test's
	// packages, ginkgo's processes), where simctl run has one.
	places chan struct{}

	mu sync.Mutex
	// watches are the informers the scenarios share, as in simctl run.
	watches *runner.Watches
	// runners are the runs' runners, whose teardowns (which look at the
	// watches) Stop waits for.
	runners []*runner.Runner
}

// New returns the suite of a cluster that is not started yet: on a cluster
// whose Trainer runs in this process (cluster.TrainerBuildObserver) it
// records the Trainer's builds for the explain agreement.
func New(c cluster.Cluster) *Suite {
	s := &Suite{cluster: c, places: make(chan struct{}, max(1, runner.DefaultParallel()/2))}
	if obs, ok := c.(cluster.TrainerBuildObserver); ok {
		s.agree = newAgreement(c)
		if !obs.ObserveTrainerBuilds(s.agree.record) {
			s.agree = nil
		}
	}
	return s
}

// Cluster is the suite's cluster.
func (s *Suite) Cluster() cluster.Cluster { return s.cluster }

// Start starts the cluster, the watches the scenarios share and the
// explain engine. On error nothing it started is left running.
func (s *Suite) Start(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			err = errors.Join(err, s.Stop())
		}
	}()
	if err := s.cluster.Start(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	s.watches = runner.StartWatches(ctx, s.cluster.Config(), s.cluster.Client().RESTMapper())
	s.mu.Unlock()
	if s.agree != nil {
		return s.agree.start(ctx)
	}
	return nil
}

// Versions says in a line what the started cluster runs, and in one line
// more each local checkout it runs ("trainer: the Trainer checkout ...").
func (s *Suite) Versions() string {
	v := s.cluster.Versions()
	line := fmt.Sprintf("%s, Kubernetes %s, Trainer %s, JobSet %s", v.Cluster, v.Kubernetes, v.Trainer, v.JobSet)
	if v.Kueue != "" {
		line += ", Kueue " + v.Kueue
	}
	if v.TrainerCheckout != "" {
		line += "\ntrainer: " + v.TrainerCheckout
	}
	if v.KueueCheckout != "" {
		line += "\nkueue: " + v.KueueCheckout
	}
	return line
}

// Stop waits for the scenarios' teardowns, then stops the watches and the
// cluster; what a teardown left behind (a namespace or node of a scenario)
// is an error. It is safe on a suite that did not start, or did in part,
// and more than once.
func (s *Suite) Stop() error {
	s.mu.Lock()
	runners := s.runners
	s.runners = nil
	s.mu.Unlock()
	var errs []error
	for _, r := range runners {
		errs = append(errs, r.Teardowns())
	}
	s.mu.Lock()
	if s.watches != nil {
		s.watches.Stop()
		s.watches = nil
	}
	s.mu.Unlock()
	return errors.Join(append(errs, s.cluster.Stop())...)
}

// Verdict is how a spec reports one scenario run.
type Verdict struct {
	// Skipped says why the scenario did not run on this cluster; empty
	// when it ran.
	Skipped string
	// Failure is what the spec fails with: Describe of the failed scenario,
	// or how explain disagreed with the Trainer. Empty when it passed.
	Failure string
	// Log is a line for the spec's log: how the explain agreement went.
	Log string
}

// Run runs one plan on the started cluster, beside the suite's other runs
// (it takes the plan's runner.Locks, then one of runner.DefaultParallel
// places), and returns its verdict. On a
// cluster whose Trainer runs in this process, it also checks simctl
// explain against the Trainer: for every JobSet the Trainer builds while
// the scenario runs, explain's final JobSet for the same TrainJob must be
// the same apply configuration, and at the last step every TrainJob of the
// scenario must have been checked at least once. Builds the Trainer makes
// after the last step, while the scenario's namespace is being deleted,
// are not checked.
func (s *Suite) Run(ctx context.Context, p runner.Plan) Verdict {
	// The locks first, then a place, as simctl run's runs take them: a
	// run waiting for a component another run gates holds no place.
	defer s.locks.Lock(p)()
	select {
	case s.places <- struct{}{}:
		defer func() { <-s.places }()
	case <-ctx.Done():
		return Verdict{Failure: fmt.Sprintf("scenario %s: ended before a place to run it was free (%d scenarios run at once): %v", p.Name(), cap(s.places), ctx.Err())}
	}
	s.mu.Lock()
	watches := s.watches
	s.mu.Unlock()
	if watches == nil {
		return Verdict{Failure: fmt.Sprintf("scenario %s: the cluster is not started (or was stopped): start it before its scenarios run", p.Name())}
	}
	var v verdict
	steps := 0 // that run on this cluster's Trainer
	for i := range p.File.Scenario.Spec.Steps {
		if runner.TrainerHolds(p.File.Scenario.Spec.Steps[i].Trainer, s.cluster.Versions().Trainer) {
			steps++
		}
	}
	r := &runner.Runner{Cluster: s.cluster, Watches: watches}
	s.mu.Lock()
	s.runners = append(s.runners, r)
	s.mu.Unlock()
	if s.agree != nil {
		r.OnStep = func(sc *results.Scenario, st *results.Step) {
			s.agree.check(ctx, sc.Namespace, !st.Passed || len(sc.Steps) == steps, &v)
		}
	}
	res := r.RunPlan(ctx, p)
	name := p.Name()
	switch {
	case res.Skipped != "":
		return Verdict{Skipped: res.Skipped}
	case !res.Passed:
		return Verdict{Failure: Describe(&res)}
	case s.agree == nil:
		return Verdict{Log: fmt.Sprintf("explain agreement not checked: the Trainer of a %s cluster does not run in this process", s.cluster.Versions().Cluster)}
	case len(v.problems) > 0:
		return Verdict{Failure: fmt.Sprintf("scenario %s: simctl explain disagrees with the trainer:\n%s", name, strings.Join(v.problems, "\n"))}
	case v.checked < len(v.trainJobs):
		return Verdict{Failure: fmt.Sprintf("scenario %s: explain was checked against %d builds for TrainJobs %v, fewer than its %d TrainJobs", name, v.checked, v.trainJobs, len(v.trainJobs))}
	}
	return Verdict{Log: fmt.Sprintf("explain agreed with the trainer on %d JobSet builds of TrainJobs %v", v.checked, v.trainJobs)}
}

// Describe renders a failed scenario: the failing step, its writes and its
// diff.
func Describe(res *results.Scenario) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): %s\n", res.Name, res.File, res.Failure)
	for _, st := range res.Steps {
		if st.Passed {
			continue
		}
		fmt.Fprintf(&b, "step %q (%s):\n%s\n", st.Name, st.Kind, st.Failure)
		for _, w := range st.Writes {
			fmt.Fprintf(&b, "  %s\n", w.String())
		}
		if st.Diff != "" {
			b.WriteString(st.Diff)
		}
	}
	return b.String()
}
