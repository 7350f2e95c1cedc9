// Package runner replays scenarios (sim/apis/v1alpha1) on a started
// cluster.Cluster and records what happened in the reports model. Each
// scenario runs in its own namespace on its own simulated nodes; scenarios
// run in parallel. A refused write is a result, never retried.
package runner

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/semver"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/clock"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/results"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/explain"
	"github.com/trainersim/trainersim/sim/gate"
	"github.com/trainersim/trainersim/sim/identity"
	"github.com/trainersim/trainersim/sim/policy"
	"github.com/trainersim/trainersim/sim/probe"
	"github.com/trainersim/trainersim/sim/releases"
	"github.com/trainersim/trainersim/sim/scenario"
	"github.com/trainersim/trainersim/sim/shake"
	"github.com/trainersim/trainersim/sim/view"
	"github.com/trainersim/trainersim/sim/webhooks"
)

// IsolationKey is the node label, node taint, Pod nodeSelector key and Pod
// toleration key with which the cluster keeps each scenario's Pods on the
// scenario's own nodes (cluster.IsolationKey). The runner removes it from every
// Pod before the Pod is matched or reported.
const IsolationKey = cluster.IsolationKey

// settleMax bounds how long a run waits for its namespace to get quiet
// (Runner.Settle).
const settleMax = 30 * time.Second

// DefaultScenarioTimeout bounds one scenario when Runner.ScenarioTimeout is 0.
const DefaultScenarioTimeout = 5 * time.Minute

// cleanupTimeout bounds the deletes of a scenario's namespace and nodes.
const cleanupTimeout = 30 * time.Second

// safetyPollInterval is how often a pending expectation is checked when
// nothing in its namespace changed: it is re-checked at every change the
// run's watches see there, so this only catches what they do not watch
// (a PersistentVolumeClaim, a node).
const safetyPollInterval = time.Second

// DefaultParallel is how many scenarios run at once unless told otherwise:
// six times the number of CPUs. A scenario spends most of its time
// waiting, on controllers and on the cluster's timers (tolerationSeconds, a
// Job's back-off, Pods that end after a time), so more scenarios than cores
// keep the cores busy; BenchmarkCorpusParallel measures the corpus at 4 to
// 16 at once (see docs/performance.md: on 2 cores 12 ends the corpus
// 6 to 8 s before 6 does, and 16 is slower again).
func DefaultParallel() int { return 6 * runtime.NumCPU() }

// DefaultShakenParallel is DefaultParallel for a shaken run: half of it.
// The shaker delays every write, the components' too, and the Trainer
// reconciles every run's TrainJobs with one worker: in a shaken replay of
// the corpus's imports at twelve at once, its time from a TrainJob's
// create to the JobSet's ranged from 0.5 s to 30 s, past the waits of
// scenarios (the corpus's round trip); at six it stays well within them.
func DefaultShakenParallel() int { return DefaultParallel() / 2 }

// Runner runs scenarios on one cluster. The zero value of every field but
// Cluster is a documented default.
type Runner struct {
	// Cluster is a started cluster, shared by every scenario.
	Cluster cluster.Cluster
	// Apart, when set, is a second started cluster, like Cluster, for
	// Run's plans that keep every other run off the cluster while they
	// run (RunsApart): there they run one after another, beside the
	// other runs on Cluster, instead of every other run waiting for them.
	Apart cluster.Cluster
	// ApartDone, when set, is called once, from Run, when every plan it
	// runs on Apart has ended, if the cluster is Discarded (nothing of
	// those plans is left to do on it): its caller may stop it then.
	ApartDone func()
	// Parallel is how many scenarios run at once. Zero: DefaultParallel.
	Parallel int
	// Durations are how long each file's runs took in an earlier run:
	// the longest start first (startOrder). Nil: estimated by the
	// cluster's timers they wait on.
	Durations Durations
	// Settle, when set, makes each run wait after its last step, before
	// it records its end state (FinalPods, FinalOwners, FinalTrainJobs),
	// until its namespace has had no change for Settle and the components
	// the cluster can say so of have caught up with it (settle), at most
	// settleMax; a run that never settled says why in Unsettled.
	Settle time.Duration
	// RecordChanges, when set, gives each run's accepted writes to its
	// TrainJobs, with their writers and the fields they changed
	// (results.Scenario.Changes): what simctl explore flips the order of.
	RecordChanges bool
	// CheckJobSets, when set, checks at each run's end that each JobSet
	// the Trainer would apply now holds what it builds from its TrainJob
	// (results.TrainJobState.JobSetBehind): the JobSet against a dry run
	// of the Trainer's apply of explain's JobSet.
	CheckJobSets bool
	// ScenarioTimeout bounds each scenario. Zero: DefaultScenarioTimeout.
	ScenarioTimeout time.Duration
	// Keep leaves each scenario's namespace and nodes in place.
	Keep bool
	// Discarded says the cluster is thrown away once the run ends (one
	// its caller started for the run and does not keep): each scenario's
	// namespace, Pods and nodes are left to go with it rather than
	// deleted one by one, which cost more CPU than anything else a
	// scenario does (the namespace controller's 75 requests, the Pods'
	// ends, the nodes' deletions); what a scenario installed cluster-wide
	// (webhooks, gates, Kueue's queues, its admission policy) is still
	// removed, so that nothing of it acts on the scenarios after it, and
	// a scenario that ends with Pods still to schedule is torn down all
	// the same (leavesPodsToSchedule).
	Discarded bool
	// Seed, when set, replays one order in every scenario that explores
	// interleavings: the order of this seed, instead of the orders the
	// scenario asks for.
	Seed *uint64
	// ShakeSeeds, when set, runs every plan once per seed, with the delays
	// of that seed added to the writes in its namespace (sim/shake): a
	// scenario whose verdict changes is order-dependent. The cluster must
	// serve gates (cluster.GateServing).
	ShakeSeeds []uint64
	// ShakeMaxDelay bounds each delay. Zero: shake.DefaultMaxDelay.
	ShakeMaxDelay time.Duration
	// OnStep, when set, is called after every step, one call at a time.
	OnStep func(sc *results.Scenario, st *results.Step)
	// OnScenario, when set, is called as each scenario finishes, one call
	// at a time.
	OnScenario func(sc *results.Scenario)
	// Watches are the informers the scenarios share (StartWatches on
	// Cluster). Nil: Run starts them for its scenarios, RunPlan for its
	// one.
	Watches *Watches
	// Clock times the scenarios, their steps and writes, and stamps what
	// the watches observe for the timeline. Nil: the real clock.
	Clock clock.PassiveClock

	mu sync.Mutex
	// teardowns are the scenarios' teardowns still going (teardown.go),
	// leftovers what they left behind.
	teardowns sync.WaitGroup
	leftovers []error
	// engines are the explain engines of the clusters (CheckJobSets).
	engines map[cluster.Cluster]*explain.Engine
}

// clock is the Runner's Clock, or the real clock.
func (r *Runner) clock() clock.PassiveClock {
	if r.Clock == nil {
		return clock.RealClock{}
	}
	return r.Clock
}

// Run runs every file's scenario (every explored order of a scenario that
// explores interleavings, see Plans) and returns their results in the order
// of files, once their teardowns are done (Teardowns says what they left).
// When ctx ends, runs not yet finished are left out and the second result
// is false.
func (r *Runner) Run(ctx context.Context, files []*scenario.File) ([]results.Scenario, bool) {
	parallel := r.Parallel
	switch {
	case parallel > 0:
	case len(r.ShakeSeeds) > 0:
		parallel = DefaultShakenParallel()
	default:
		parallel = DefaultParallel()
	}
	plans := Plans(files, r.Seed)
	if len(r.ShakeSeeds) > 0 {
		plans = Shaken(plans, r.ShakeSeeds)
	}
	if r.Watches == nil {
		r.Watches = r.startWatches(ctx)
		defer func() {
			r.Watches.Stop()
			r.Watches = nil
		}()
	}
	// Each cluster admits its own plans: the runs apart wait for each
	// other only.
	onApart := func(p Plan) bool { return r.Apart != nil && RunsApart(p) }
	var here, there []Plan
	for _, p := range plans {
		if onApart(p) {
			there = append(there, p)
		} else {
			here = append(here, p)
		}
	}
	var apartWatches *Watches
	var apartLeft sync.WaitGroup
	if len(there) > 0 {
		apartWatches = StartWatches(ctx, r.Apart.Config(), r.Apart.Client().RESTMapper())
		apartLeft.Add(len(there))
		apartEnded := make(chan struct{})
		defer func() { <-apartEnded }()
		go func() {
			defer close(apartEnded)
			apartLeft.Wait()
			apartWatches.Stop()
			if r.ApartDone != nil && r.Discarded {
				r.ApartDone()
			}
		}()
	}
	admHere, admThere := newAdmission(here, parallel), newAdmission(there, parallel)
	byPlan := make([]*results.Scenario, len(plans))
	var wg sync.WaitGroup
	for rank, i := range startOrder(plans, r.Durations) {
		p := plans[i]
		c, watches, adm := r.Cluster, r.Watches, admHere
		if onApart(p) {
			c, watches, adm = r.Apart, apartWatches, admThere
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c == r.Apart {
				defer apartLeft.Done()
			}
			leave, ok := adm.enter(ctx, p, rank)
			defer leave()
			if !ok || ctx.Err() != nil {
				return
			}
			res := r.runPlan(ctx, p, c, watches)
			res.SecondCluster = c == r.Apart
			if ctx.Err() != nil {
				return // interrupted: not finished
			}
			byPlan[i] = &res
			if r.OnScenario != nil {
				r.mu.Lock()
				r.OnScenario(&res)
				r.mu.Unlock()
			}
		}()
	}
	wg.Wait()
	// The last teardowns look at the watches' Pods: done before they stop.
	r.teardowns.Wait()
	var done []results.Scenario
	for _, res := range byPlan {
		if res != nil {
			done = append(done, *res)
		}
	}
	return done, len(done) == len(plans)
}

// admission decides when Run's plans start: a run that only uses a
// component waits until the runs that gate it are done; then every run
// takes its Locks; then a --parallel place, by rank (slots).
type admission struct {
	places    *slots
	locks     *Locks
	gatesDone map[string]*sync.WaitGroup
}

func newAdmission(plans []Plan, parallel int) *admission {
	return &admission{places: newSlots(parallel), locks: &Locks{}, gatesDone: writersDone(plans)}
}

// enter waits until plan p, of start rank rank, may run. leave gives back
// what enter took and must be called whether or not it let p run; ok is
// false when ctx ended before p could run.
func (a *admission) enter(ctx context.Context, p Plan, rank int) (leave func(), ok bool) {
	var undo []func()
	leave = func() {
		for _, u := range slices.Backward(undo) {
			u()
		}
	}
	read, write := componentNeeds(p)
	for _, c := range write {
		undo = append(undo, a.gatesDone[c].Done)
	}
	// A run that gates a component waits for the runs that use it (a
	// read lock), and every run that asks for the lock after it waits
	// behind it (a waiting writer comes first): a run that uses
	// components starts once the runs that gate them are done, so that a
	// long run (a node that turns Unknown after half a minute) does not
	// keep a gating run and every run behind it waiting. A run that gates
	// a component every run uses (JobSet, the Trainer) waits for no
	// gates: every run waits for it. One that gates only Kueue waits, as
	// a run that uses them, for the gates of JobSet and the Trainer, and
	// then runs beside every run that does not use Kueue; were it to go
	// first, it would hold Kueue, which the runs gating JobSet and the
	// Trainer use too, while every other run waited for those (the
	// corpus's first 4 s, one run at a time). No cycle: the runs that
	// gate JobSet or the Trainer wait for no run's gates.
	if !slices.ContainsFunc(write, func(c string) bool { return slices.Contains(everyRunUses, c) }) {
		for _, c := range read {
			a.gatesDone[c].Wait()
		}
	}
	// The locks first, then a place: a run waiting for a component
	// another run gates holds no place meanwhile, and the runs of other
	// components start in the places. (Places first, the runs that gate
	// Kueue held the places while they waited for each other, and no
	// other run started.)
	undo = append(undo, a.locks.Lock(p))
	if !a.places.acquire(ctx, rank) {
		return leave, false
	}
	undo = append(undo, a.places.release)
	return leave, true
}

// writersDone returns, for each exclusive component, a WaitGroup of the
// plans whose gates hold it (componentNeeds' write locks): done when they
// all are.
func writersDone(plans []Plan) map[string]*sync.WaitGroup {
	done := map[string]*sync.WaitGroup{}
	for _, c := range exclusiveComponents {
		done[c] = &sync.WaitGroup{}
	}
	for _, p := range plans {
		_, write := componentNeeds(p)
		for _, c := range write {
			done[c].Add(1)
		}
	}
	return done
}

// clusterNames are the names of the cluster-scoped objects a plan creates
// under names its scenario gives (Kueue's WorkloadPriorityClasses, which
// its TrainJobs name in a label): two runs of one scenario, shaken or
// interleaved, must not hold them at once.
func clusterNames(p Plan) []string {
	var out []string
	if q := p.File.Scenario.Spec.Queues; q != nil {
		for _, pc := range q.PriorityClasses {
			out = append(out, "WorkloadPriorityClass/"+pc.Name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// InStartOrder returns plans in the order in which Run starts them
// (startOrder), for a test framework that runs them as parallel specs.
func InStartOrder(plans []Plan) []Plan {
	out := make([]Plan, 0, len(plans))
	for _, i := range startOrder(plans, nil) {
		out = append(out, plans[i])
	}
	return out
}

// startOrder is the order in which Run starts the plans (their results stay
// in the order of plans): first those whose gates keep other runs off a
// component, then the longest first, so that their waits overlap the
// other scenarios instead of ending the run. How long a plan takes is its
// file's share of durations (an earlier run's) when durations has the
// file, else an estimate by the cluster's own timers it waits on
// (timerEstimate); otherwise in the order of plans.
func startOrder(plans []Plan, durations Durations) []int {
	perFile := map[string]int{}
	for _, p := range plans {
		perFile[filepath.Clean(p.File.Path)]++
	}
	estimate := make([]time.Duration, len(plans))
	order := make([]int, len(plans))
	for i, p := range plans {
		order[i] = i
		estimate[i] = timerEstimate(p)
		if d, ok := durations[filepath.Clean(p.File.Path)]; ok {
			estimate[i] = d / time.Duration(perFile[filepath.Clean(p.File.Path)])
		}
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(exclusive(plans[b])-exclusive(plans[a]), cmp.Compare(estimate[b], estimate[a]))
	})
	return order
}

// timerEstimate is how long a plan of no earlier run is taken to last, by
// the cluster's timers it waits on (timerWeight): a node taken unreachable
// (the node-monitor grace and a Job's 10 s back-off after the eviction),
// 30 s; another node step (a toleration's seconds, a Job's back-off after a
// drain), 10 s; lifecycle rules or a crash-loop back-off (Pods that end, or
// restart, after a time), 5 s; otherwise 1 s.
func timerEstimate(p Plan) time.Duration {
	return [...]time.Duration{time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second}[timerWeight(p)]
}

// exclusive ranks a plan for startOrder: 1 when its gates keep other runs
// off a component (componentNeeds), so that it starts on an idle cluster
// instead of waiting for the runs before it to drain; 0 otherwise.
func exclusive(p Plan) int {
	if _, write := componentNeeds(p); len(write) > 0 {
		return 1
	}
	return 0
}

// timerWeight ranks a plan for startOrder: 3 with a node taken
// unreachable, 2 with another node step, 1 with lifecycle rules or a
// crash-loop back-off, 0 otherwise.
func timerWeight(p Plan) int {
	sc := p.File.Scenario
	weight := 0
	for _, st := range sc.Spec.Steps {
		switch {
		case st.Node == nil:
		case st.Node.Action == v1alpha1.NodeUnreachable:
			return 3
		default:
			weight = 2
		}
	}
	if weight == 0 && (len(sc.Spec.Lifecycle) > 0 || sc.Spec.CrashLoopBackOff != nil) {
		weight = 1
	}
	return weight
}

// SkippedOn is why a scenario is skipped on a cluster (cluster.Envtest,
// cluster.Kind, cluster.Kubeconfig) that runs a Trainer release, by its
// spec.clusters and spec.trainer, or "": known before the cluster starts.
// trainer "" (an existing cluster's, before it is asked) skips nothing.
func SkippedOn(sc *v1alpha1.Scenario, clusterName, trainer string) string {
	if c := sc.Spec.Clusters; c != nil && !slices.Contains(c.Only, clusterName) {
		return fmt.Sprintf("holds on %s only: %s", strings.Join(c.Only, ", "), strings.TrimSpace(c.Reason))
	}
	if trainer == "" {
		return ""
	}
	return skippedFor(sc, trainer)
}

// skippedFor is why a scenario is skipped on a cluster that runs a Trainer
// release, by its spec.trainer, or "".
func skippedFor(sc *v1alpha1.Scenario, trainer string) string {
	if t := sc.Spec.Trainer; t != nil && !TrainerHolds(t, trainer) {
		return fmt.Sprintf("holds for Trainer %s; the cluster runs %s", t.Versions, trainer)
	}
	return ""
}

// RunPlan runs one scenario, in one order of its interleavings if it
// explores them, to its end or its first failing step, on Cluster.
func (r *Runner) RunPlan(ctx context.Context, p Plan) results.Scenario {
	return r.runPlan(ctx, p, r.Cluster, r.Watches)
}

// RunsApart reports whether a plan keeps every other run off the cluster
// while it runs: its gates, component steps or partitions hold a
// component every run uses (JobSet, the Trainer), or one whose absence
// stops every run's Pods (componentNeeds). Run runs such plans on Apart
// when it has one.
func RunsApart(p Plan) bool {
	_, write := componentNeeds(p)
	return slices.ContainsFunc(write, func(c string) bool { return slices.Contains(everyRunUses, c) })
}

// runPlan is RunPlan on cluster c, whose watches are watches (nil: its
// own, for this plan).
func (r *Runner) runPlan(ctx context.Context, p Plan, c cluster.Cluster, watches *Watches) (res results.Scenario) {
	f := p.File
	sc := f.Scenario
	res = results.Scenario{
		Name:        p.Name(),
		File:        f.Path,
		Description: sc.Spec.Description,
		Labels:      sc.Metadata.Labels,
		Started:     r.clock().Now(),
	}
	if il := p.Interleaving; il != nil {
		res.Interleaving = &results.Interleaving{
			Step:   il.Step,
			Order:  il.Names,
			Seed:   il.Seed,
			Replay: fmt.Sprintf("simctl run --seed %d --run '^%s$' %s", il.Seed, regexp.QuoteMeta(sc.Metadata.Name), f.Path),
			Index:  il.Index,
			Of:     il.Of,
		}
	}
	if sh := p.Shake; sh != nil {
		seeds := fmt.Sprintf("--shake-seed %d", sh.Seed)
		if r.shakeMaxDelay() != shake.DefaultMaxDelay {
			seeds += " --shake-max-delay " + r.shakeMaxDelay().String() // the same seed, other delays
		}
		if il := p.Interleaving; il != nil {
			seeds += fmt.Sprintf(" --seed %d", il.Seed)
		}
		replay := fmt.Sprintf("simctl run %s --run '^%s$' %s", seeds, regexp.QuoteMeta(sc.Metadata.Name), f.Path)
		res.Shake = &results.Shake{Of: p.unshakenName(), Seed: sh.Seed, Index: sh.Index, Runs: sh.Of, MaxDelay: r.shakeMaxDelay(), Replay: replay}
	}
	if why := SkippedOn(sc, c.Versions().Cluster, ""); why != "" {
		res.Skipped = why
		return res
	}
	if usesKueue(sc) && c.Versions().Kueue == "" {
		res.Skipped = "needs component kueue, which this cluster does not run (simctl run starts it on the clusters it starts, envtest and kind, when a scenario asks for it; an existing cluster is used as it is, never installed into)"
		return res
	}
	if _, ok := c.(cluster.WebhookServing); len(sc.Spec.Webhooks) > 0 && !ok {
		res.Skipped = "declares webhooks, which this cluster cannot call (simctl serves them on the clusters it starts with envtest)"
		return res
	}
	if _, ok := c.(cluster.GateServing); len(sc.Spec.Gates) > 0 && !ok {
		res.Skipped = "declares gates, which this cluster cannot call (simctl serves them on the clusters it starts with envtest)"
		return res
	}
	if why := lifecycleSkipped(sc, c); why != "" {
		res.Skipped = why
		return res
	}
	if err := upgradesRefused(sc, c); err != nil {
		res.Failure = err.Error()
		return res
	}
	if why := viewsSkipped(sc, c); why != "" {
		res.Skipped = why
		return res
	}
	trainerVersion := c.Versions().Trainer
	if why := skippedFor(sc, trainerVersion); why != "" {
		res.Skipped = why
		return res
	}
	timeout := r.ScenarioTimeout
	if timeout == 0 {
		timeout = DefaultScenarioTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	clk := r.clock()
	defer func() { res.Duration = clk.Since(res.Started) }()

	if watches == nil {
		watches = StartWatches(ctx, c.Config(), c.Client().RESTMapper())
		defer func() {
			// The teardown looks at the watches' Pods: done before
			// they stop.
			r.teardowns.Wait()
			watches.Stop()
		}()
	}
	run := &scenarioRun{runner: r, clock: clk, cluster: c, sc: sc, fixturesDir: p.File.FixturesDir, interleaving: p.Interleaving, shake: p.Shake, shaken: res.Shake, objects: map[string]map[string]any{}, watches: watches, profiles: map[string]string{}, podViewsByObj: map[*unstructured.Unstructured]*podView{}, written: map[string]uint64{}}
	defer func() { res.Breakdown = run.breakdown }()
	run.ns = NamespaceName(sc.Metadata.Name)
	res.Namespace = run.ns
	if !r.Keep {
		defer func() {
			// A namespace or node left behind is a result too: on a
			// cluster simctl did not start, it stays there.
			start := clk.Now()
			err := run.cleanup()
			run.breakdown.Teardown = clk.Since(start)
			if err != nil && res.Passed {
				res.Passed = false
				res.Failure = "clean-up: " + err.Error()
			}
		}()
	}
	// Runs before cleanup: the namespace's deletion is not the scenario's.
	defer func() {
		res.Timeline = run.timeline(res.Setup, res.Steps)
		res.AbandonedHolds = run.abandonedHolds()
		if r.RecordChanges {
			var err error
			if res.Changes, err = run.changes(res.Setup, res.Steps); err != nil && res.Timeline != nil {
				res.Timeline.Problems = append(res.Timeline.Problems, fmt.Sprintf("the writers of the TrainJobs' changes are missing: failed to read the API server's audit log: %v", err))
			}
		}
	}()
	defer func() {
		if against := behaviourChange(sc, c.Versions()); against != "" && !res.Passed {
			res.BehaviourChange = against
			res.Failure = "behaviour change of " + against + ": " + res.Failure
		}
	}()
	// First of the ends: a component the scenario left down runs again
	// before its timeline is read and its namespace deleted.
	defer func() {
		if err := run.restoreComponents(); err != nil && res.Passed {
			res.Passed = false
			res.Failure = "clean-up: " + err.Error()
		}
	}()
	err := run.setUp(ctx)
	run.breakdown.SetUp = clk.Since(res.Started)
	res.Setup = run.setup
	if err != nil {
		res.Failure = "set-up: " + err.Error()
		res.Steps = append(res.Steps, results.Step{Name: setUpStep, Kind: "setup", Started: res.Started, Duration: clk.Since(res.Started), Failure: err.Error()})
		return res
	}
	res.Passed = true
	for i := range sc.Spec.Steps {
		if !TrainerHolds(sc.Spec.Steps[i].Trainer, trainerVersion) {
			// Another release's case; a gate or hold it ends opens here
			// all the same (lint refuses such an until, a loader's bug
			// must not keep requests waiting).
			run.openGates(sc.Spec.Steps[i].Name)
			run.openViews(sc.Spec.Steps[i].Name)
			run.endReaches(&sc.Spec.Steps[i])
			continue
		}
		run.watch.setStep(sc.Spec.Steps[i].Name)
		run.reachFrom(ctx, sc.Spec.Steps[i].Name)
		if err := run.startViews(ctx, sc.Spec.Steps[i].Name); err != nil {
			res.Passed = false
			res.Failure = fmt.Sprintf("step %q: %v", sc.Spec.Steps[i].Name, err)
			break
		}
		st := run.step(ctx, &sc.Spec.Steps[i])
		if held := run.viewsHolding(); !st.Passed && held != "" {
			// The verdict may be the view's doing: say what it kept
			// back, on the line the summary shows.
			first, rest, multi := strings.Cut(st.Failure, "\n")
			st.Failure = first + " (" + held + ")"
			if multi {
				st.Failure += "\n" + rest
			}
		}
		run.openGates(st.Name)
		run.openViews(st.Name)
		recording := clk.Now()
		// Only a write to a TrainJob can change who owns an entry: a step
		// without one of the actors keeps the owners of the step before,
		// unless Kueue runs, which writes its entry on its own.
		if written := run.tookTrainJobWrite(); len(res.Steps) == 0 || written || slices.Contains(sc.Spec.Components, identity.Kueue) {
			st.Owners = run.entryOwners(context.WithoutCancel(ctx))
		} else {
			st.Owners = res.Steps[len(res.Steps)-1].Owners
		}
		run.breakdown.Recording += clk.Since(recording)
		res.Steps = append(res.Steps, st)
		if r.OnStep != nil {
			r.mu.Lock()
			r.OnStep(&res, &res.Steps[len(res.Steps)-1])
			r.mu.Unlock()
		}
		if !st.Passed {
			res.Passed = false
			res.Failure = fmt.Sprintf("step %q: %s", st.Name, results.FirstLine(st.Failure))
			if il := res.Interleaving; il != nil {
				res.Failure += fmt.Sprintf(" [%s; replay: %s]", p.Interleaving.Label(), il.Replay)
			}
			break
		}
	}
	if r.Settle > 0 && run.watch != nil {
		res.Unsettled = run.settle(ctx, r.Settle, settleMax)
	}
	recording := clk.Now()
	res.FinalPods = run.finalPods(context.WithoutCancel(ctx))
	res.FinalOwners, res.FinalTrainJobs = run.finalTrainJobs(context.WithoutCancel(ctx))
	run.breakdown.Recording += clk.Since(recording)
	return res
}

// TrainerHolds reports whether a scenario's or step's trainer range (nil:
// every release) holds for the Trainer version a cluster runs.
//
// A Trainer built from a local checkout runs as a pseudo-version after the
// release it descends from (releases.Checkout.Version,
// v2.3.1-0.20260101000000-0123456789ab), compared as the version it is.
// Any other version that is no release's ("unknown") is in every range:
// nothing is left out when the version is not known.
func TrainerHolds(t *v1alpha1.Trainer, version string) bool {
	if t == nil {
		return true
	}
	if !semver.IsValid(version) || semver.Build(version) != "" {
		return true
	}
	r, err := v1alpha1.ParseVersionRange(t.Versions)
	return err != nil || r.Contains(version)
}

// behaviourChange says which local checkouts a verdict of sc that differs
// from the scenario's expectations is a behaviour change of, and against
// which releases: "the Trainer checkout against v2.3.0", "the Kueue
// checkout against v0.19.1", or both. A Trainer checkout counts when the
// release it descends from is one trainersim runs and the checkout runs the
// same steps of sc as that release (no range holds for one and not the
// other); a Kueue checkout when sc uses Kueue and it descends from the
// release trainersim runs. Empty when neither counts: the verdicts are not
// of the same scenario on a release, or the cluster runs releases only.
func behaviourChange(sc *v1alpha1.Scenario, v cluster.Versions) string {
	var of, against []string
	if trainerCheckoutComparable(sc, v) {
		of, against = append(of, "Trainer"), append(against, v.TrainerBase)
	}
	if v.KueueBase == releases.KueueVersion && usesKueue(sc) {
		of, against = append(of, "Kueue"), append(against, v.KueueBase)
	}
	switch len(of) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("the %s checkout against %s", of[0], against[0])
	}
	return fmt.Sprintf("the %s checkouts against %s", strings.Join(of, " and "), strings.Join(against, " and "))
}

// trainerCheckoutComparable reports whether a Trainer checkout runs and
// descends from a release trainersim runs, and runs the same steps of sc.
func trainerCheckoutComparable(sc *v1alpha1.Scenario, v cluster.Versions) bool {
	if v.TrainerBase == "" {
		return false
	}
	if _, err := releases.LookupTrainer(v.TrainerBase); err != nil {
		return false
	}
	if TrainerHolds(sc.Spec.Trainer, v.TrainerBase) != TrainerHolds(sc.Spec.Trainer, v.Trainer) {
		return false
	}
	for i := range sc.Spec.Steps {
		if t := sc.Spec.Steps[i].Trainer; TrainerHolds(t, v.TrainerBase) != TrainerHolds(t, v.Trainer) {
			return false
		}
	}
	return true
}

// scenarioRun is the state of one scenario while it runs.
type scenarioRun struct {
	runner  *Runner
	clock   clock.PassiveClock
	cluster cluster.Cluster
	sc      *v1alpha1.Scenario
	// fixturesDir is where the loader found the setup paths.
	fixturesDir string
	ns          string
	// interleaving is the order of the scenario's interleavings group.
	interleaving *Interleaving
	nodes        []string
	runLabel     string // the namespace's cluster.RunLabel, on a cluster simctl did not start
	// kueueWebhook is the namespace's own Kueue TrainJob webhook
	// configuration, once created.
	kueueWebhook string
	// webhookServer serves the scenario's webhooks, once installed, and
	// webhooks are the scenario's webhooks as it takes them, in the order
	// of spec.webhooks.
	webhookServer *webhooks.Server
	webhooks      []webhooks.Webhook
	// gateServer serves the scenario's gates, once installed; gateSpecs
	// are its gates, spec.gates and then one for each webhook's hold
	// (holdGates), gateLanes their timeline lanes, and gates the server's,
	// in the same order.
	gateServer *gate.Server
	gateSpecs  []v1alpha1.Gate
	gateLanes  []string
	gates      []gate.Gate
	// viewRegistry keeps back what the scenario's views match, once one
	// started, and viewsStarted are the names of those started.
	viewRegistry *view.Registry
	viewsStarted []string
	// actedOn are the components a component step acted on, guarded by
	// mu; autoStarts are the starts after a downFor under way, and
	// autoStartErrs their failures, guarded by mu.
	actedOn map[string]bool
	// upgradedFrom is the Trainer release before the scenario's first
	// upgrade step, "" without one; upgradeParts are the parts of its
	// upgrades on the timeline. Guarded by mu.
	upgradedFrom  string
	upgradeParts  []results.TimelineEntry
	autoStarts    sync.WaitGroup
	autoStartErrs []error
	// shake is the seed of a shaken run, and shaken its result, whose
	// delays the delayer's count ends up in.
	shake    *ShakeRun
	shaken   *results.Shake
	own      []ownWrite                // the accepted writes, for what a conflict lost to; guarded by mu
	objects  map[string]map[string]any // by step name: the object the server returned
	actors   map[string]*actor         // by actor name, "" for the admin
	watches  *Watches
	watch    *watcher          // the namespace's share of watches, from set-up on
	setup    []results.Write   // the creates of the setup objects
	profiles map[string]string // fakegpu profile by node name, guarded by mu
	// podViewsByObj are the views of the Pods the watches hold, by the
	// watches' object (podViewsOf); guarded by mu.
	podViewsByObj map[*unstructured.Unstructured]*podView
	// podLists are the Pods a selector selected at the last read of the
	// watches, by selector (podViews); guarded by mu.
	podLists  map[string]podList
	written   map[string]uint64 // by kind: the highest resourceVersion written, guarded by mu
	unordered bool              // a write returned a resourceVersion that is not a number, guarded by mu
	// trainJobWritten: a write went to a TrainJob since tookTrainJobWrite
	// last asked; guarded by mu.
	trainJobWritten bool
	// reaches are the reached object expectations being checked
	// (trackReached), or to be once their step comes (reachFrom), and
	// reachEnds what ends each; guarded by mu.
	reaches   map[*v1alpha1.ObjectExpectation]*reach
	reachEnds map[*v1alpha1.ObjectExpectation]func()
	breakdown results.Breakdown
	mu        sync.Mutex
}

// NamespaceName derives a unique, valid namespace from a name: the name
// (cut to fit) and a random suffix.
func NamespaceName(name string) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	suffix := hex.EncodeToString(b)
	const max = 63 - 7
	name = strings.Trim(regexp.MustCompile(`[^a-z0-9-]+`).ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(name) > max {
		name = strings.TrimRight(name[:max], "-")
	}
	return name + "-" + suffix
}

func (s *scenarioRun) setUp(ctx context.Context) error {
	c := s.cluster.Client()
	s.watch = s.watches.watch(s.ns, s.clock)
	if s.watch != nil {
		s.watch.mu.Lock()
		s.watch.recordChanges = s.runner.RecordChanges
		s.watch.mu.Unlock()
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns}}
	s.cluster.IsolateNamespace(ns)
	if usesKueue(s.sc) {
		// Kueue's webhooks see the TrainJobs of these namespaces only.
		metav1.SetMetaDataLabel(&ns.ObjectMeta, cluster.KueueNamespaceLabel, "true")
		if q := s.sc.Spec.Queues; q != nil && q.KueueWebhookReinvocation != "" {
			metav1.SetMetaDataLabel(&ns.ObjectMeta, cluster.KueueReinvocationLabel, q.KueueWebhookReinvocation)
		}
	}
	s.runLabel = ns.Labels[cluster.RunLabel]
	if err := c.Create(ctx, ns); err != nil {
		return fmt.Errorf("failed to create namespace %s: %w", s.ns, err)
	}
	if err := s.installDelayer(ctx); err != nil {
		return err
	}
	var groups []fakegpu.NodeGroup
	for i, g := range s.sc.Spec.Nodes {
		var taints []corev1.Taint
		for _, t := range g.Taints {
			taints = append(taints, corev1.Taint{Key: t.Key, Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
		}
		groups = append(groups, s.cluster.IsolateNodeGroup(fakegpu.NodeGroup{
			Profile:    g.Profile,
			Count:      g.Count,
			Labels:     g.Labels,
			Taints:     taints,
			NamePrefix: s.groupPrefix(i),
			Kubelet:    g.Kubelet,
		}, s.ns))
	}
	// The namespace's default ServiceAccount, kube-root-ca.crt and
	// lifecycle policy and the nodes are independent: wait for them side
	// by side.
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		if err := probe.WaitForNamespaceReady(gctx, c, s.ns); err != nil {
			return err
		}
		return s.lifecycle().Install(gctx, c)
	})
	g.Go(func() error { return s.createQueues(gctx) })
	var names []string
	g.Go(func() (err error) {
		names, err = s.cluster.AddNodes(gctx, groups)
		return err
	})
	err := g.Wait()
	s.nodes = names
	s.seedProfiles(names)
	if err != nil {
		return err
	}
	if err := s.installWebhooks(ctx); err != nil {
		return err
	}
	if err := s.installGates(ctx); err != nil {
		return err
	}
	if err := s.createSetup(ctx); err != nil {
		return err
	}
	return s.startViews(ctx, "")
}

// cleanup deletes what the scenario installed cluster-wide and, unless the
// cluster is Discarded, its namespace, and its nodes once its Pods are
// gone (removeNodesAfterPods), without waiting. On a Discarded cluster,
// a scenario that leaves Pods to schedule has them deleted with what makes
// them (deletePodsAndOwners).
func (s *scenarioRun) cleanup() error {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	var err error
	switch {
	case !s.runner.Discarded:
		err = s.deleteNamespaceAndNodes(ctx)
	case s.leavesPodsToSchedule():
		_, err = s.deletePodsAndOwners(ctx)
	}
	return errors.Join(err, s.uninstallWebhooks(ctx), s.uninstallGates(ctx), s.uninstallDelayer(ctx), s.deleteQueues(ctx), s.lifecycle().Uninstall(ctx, s.cluster.Client()))
}

// lifecycle is the admission policy of the scenario's spec.lifecycle and
// spec.crashLoopBackOff: its rules as the annotations fakegpu's KWOK stages
// act on.
func (s *scenarioRun) lifecycle() policy.LifecyclePolicy {
	p := policy.LifecyclePolicy{Namespace: s.ns}
	if s.runLabel != "" {
		p.Labels = map[string]string{cluster.RunLabel: s.runLabel}
	}
	if b := s.sc.Spec.CrashLoopBackOff; b != nil {
		p.Rules = append(p.Rules, policy.BackOff(b.Initial.Duration, b.Max.Duration))
	}
	for _, l := range s.sc.Spec.Lifecycle {
		switch {
		case l.SucceedAfter != nil:
			p.Rules = append(p.Rules, policy.SucceedAfter(l.Selector.MatchLabels, l.SucceedAfter.Duration))
		case l.Fail != nil:
			p.Rules = append(p.Rules, policy.FailAfter(l.Selector.MatchLabels, l.Fail.After.Duration, l.Fail.ExitCode, l.Fail.Reason))
		}
	}
	return p
}

// timeline stops the watches and puts the scenario's writes and what the
// watches observed on one timeline.
func (s *scenarioRun) timeline(setup []results.Write, steps []results.Step) *results.Timeline {
	s.openGates("")
	s.openViews("")
	s.watches.settle(s.watch, s.ns)
	observed, dropped, problems := s.watch.stop()
	observed = append(observed, s.webhookEntries()...)
	observed = append(observed, s.gateEntries()...)
	observed = append(observed, s.viewEntries()...)
	s.mu.Lock()
	observed = append(observed, s.upgradeParts...)
	s.mu.Unlock()
	s.forgetViews()
	refused, err := s.refusedRequests()
	observed = append(observed, refused...)
	if err != nil {
		problems = append(problems, fmt.Sprintf("the refusals of components' requests are missing: failed to read the API server's audit log: %v", err))
	}
	return buildTimeline(s.sc, setup, steps, observed, dropped, problems)
}

// startWatches starts the watches of the cluster.
func (r *Runner) startWatches(ctx context.Context) *Watches {
	return StartWatches(ctx, r.Cluster.Config(), r.Cluster.Client().RESTMapper())
}

// nodePrefix names a scenario's nodes after its namespace's random suffix:
// a node name is also its kubernetes.io/hostname label, at most 63
// characters, so the scenario name cannot be part of it.
func nodePrefix(namespace string) string { return "sim-" + namespaceSuffix(namespace) }

// namespaceSuffix is the random suffix NamespaceName gave a namespace.
func namespaceSuffix(namespace string) string {
	return namespace[strings.LastIndexByte(namespace, '-')+1:]
}
