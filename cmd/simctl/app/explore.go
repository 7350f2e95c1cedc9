package app

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/trainersim/trainersim/reports"
	"github.com/trainersim/trainersim/results"
	"github.com/trainersim/trainersim/sim"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/explore"
	"github.com/trainersim/trainersim/sim/minimize"
	"github.com/trainersim/trainersim/sim/runner"
	"github.com/trainersim/trainersim/sim/scenario"
)

// defaultConfirmRuns is how many times explore runs a finding's plan again
// to confirm it unless told.
const defaultConfirmRuns = 2

type exploreFlags struct {
	cluster  clusterFlags
	out      string
	plans    int
	budget   time.Duration
	confirm  int
	parallel int
	timeout  time.Duration
	run      string
	plan     string
	labels   []string
	fixtures string
	known    string
	found    string
	settle   time.Duration
	kinds    []string
	minimize int
}

func newExploreCommand(streams Streams) *cobra.Command {
	var f exploreFlags
	cmd := &cobra.Command{
		Use:   "explore [SCENARIO|DIR]... [--plans N] [--budget DURATION] [-o DIR]",
		Short: "Crash and restart the components around each write of scenarios that pass, and report what ends otherwise",
		Long: `explore looks for what no scenario states: for each scenario that passes, it
runs it again with one component crashed around one of its writes, and reports
every such run that ends otherwise than the scenario as written, as a scenario
file that replays it.

1. Reference runs: each scenario runs twice as written, on one cluster it
   starts. A scenario that fails either run is not explored (said once, with
   the failure); one this cluster skips is skipped. What the two runs end with
   differently (a Pod's phase the scenario does not decide) is masked from
   the comparison below; the generated suffixes of Pod names always are,
   and the owners of entries in a scenario with a concurrently group (a
   race it leaves to the API server).
2. Plans, for each write step of a scenario (a create, apply, patch, update,
   delete or concurrently group), each component (Kueue when the scenario
   runs it, the Trainer, JobSet, kube-controller-manager, kube-scheduler and
   KWOK, in that order) and each kind:
     restart  the component restarts right after the step (a crash, then a
              start: its caches empty, what the others did meanwhile reaches
              it only through its relist);
     down     the component is crashed before the step's write and started
              again once the write is answered, before the step's
              expectations: the write lands while it is down (its webhooks
              fail closed, as a cluster's do);
     stale    as restart, and the component's list of the resource of the
              step's object (one it watches) is served as of before the
              step's write: it starts on the state from before the write,
              and the events since reach it once it is up (a stale-list
              view; explore stands between the component and the API server);
     flip     from what the reference runs recorded (who wrote what to each
              TrainJob): for a component's write and a later write of
              another component or actor to the same TrainJob, in the order
              both runs showed, a gate holds the first until the second has
              landed, so the other order runs every time; the expectations
              that read what the first changes are checked after it goes on.
              A flip of a write to a TrainJob's status has a twin that holds
              too the JobSet controller's write of its JobSet's active count,
              which the Trainer copies (Kueue reads the TrainJob's, the
              Trainer's webhook the JobSet's).
              A scenario's flips come before its other plans: two managers'
              writes to one TrainJob are what this tool is for. Only with
              --kind flip: each flip holds a write of a component that has
              one worker, so flips run one at a time, and a flip whose
              second write never comes waits 30s before it says so. A
              flip's run in which the API server stopped waiting for the
              held write (30s) is not carried out: that write never
              landed, and the run went on from the timeout.
     coalesce from the reference runs too: for Kueue's or the Trainer's
              write to a TrainJob, the last two changes of others to it
              before (since its own write before), which a view shows it as
              one: it never observes the state between them (an unobserved
              state), as a component whose watch fell behind. Only with
              --kind coalesce; a coalesce plan whose second change waits on
              the component's reaction to the first waits 30s.
     intermediate  from the reference runs too: for a write of Kueue, the
              Trainer or JobSet to a TrainJob or JobSet that follows one of
              its own, a gate holds it; once it is held the component
              crashes (the held write is cut with its connection: it never
              lands) and starts again with empty caches. It must go on from
              what it had done (an intermediate state). Only with --kind
              intermediate; a plan whose held write never comes waits 30s.
   --kind chooses among them (restart, down and stale unless told).
   A scenario with a component step of its own states its lifecycle and gets
   no plan; nor does a component one of its views sees (a restart lists
   anew, which undoes what the view states), nor a scenario that explores
   the interleavings of a concurrently group. Plans are taken round robin
   over the scenarios (each scenario's first plan before any scenario's
   second), the managers of runtimePatches entries first: --plans and
   --budget cut the tail, not a scenario. Once a down plan's write was
   refused by the down component's webhook, the down plans left of that
   component and write (verb and kind) are merged into it, not run.
3. The oracle: a plan's run that fails an expectation of the scenario, or
   passes but ends otherwise than the reference is a finding. The end state
   is read once the namespace has had no change for --settle and the
   Trainer, when it runs in simctl's process, has reconciled every change
   of it (and none for --settle): its Pods
   (phase, node profile, the reason one is unscheduled), the owners of each runtimePatches
   entry, each TrainJob's suspend and True conditions, whether a suspended
   TrainJob has running Pods, and whether the namespace settled at all;
   a down plan whose write the down component's webhook refused is not
   (refused-while-down: what a cluster does), nor a crash's run that failed
   on a request the crashed component's webhook so refused, nor a run that failed at a
   step of the plan's own, named "explore: ..." (plan-not-carried-out: a
   component that did not start again says nothing of the scenario), nor
   a flip plan's run that failed before the held write went on (the second
   write did not come, or a step waited on the held component: the order
   could not be run). And no component logs a panic: the components' logs
   are read after the reference runs and after each batch of plans, and a
   line with "Observed a panic" (a panic the controller-runtime or
   client-go recovered) or "panic: " is printed with the plans that ran
   meanwhile, kept in explore.json, and fails explore.
4. Each finding's plan runs --confirm times more: a finding is confirmed
   when every run ends the same way (the same failed step, or the same end
   state); one that does not is a false positive, counted and listed. A
   confirmed finding whose plan a scenario of --known states (its annotation
   trainersim.dev/explore-plan, which each finding's file carries) is known:
   listed, not written again, and it does not fail explore.

Output: a progress line per batch of plans (plans run, findings, time used of
--budget), then each finding with its replay line. Files in -o (default
reports/explore): findings/PLAN.yaml for each confirmed finding (the plan's
scenario, lint-clean; simctl run replays it, failing as found) written as it
is confirmed, explore.json (every plan's verdict, the scenarios not
explored and why), junit.xml (a test case per plan run, failed for a
confirmed finding not in --known's folder) and explore.html (the counts,
each finding with what differed and its replay line, every plan's verdict),
written after each batch, at the end and on Ctrl-C.

explore runs on envtest, the cluster it starts: the Trainer and JobSet it
crashes run in simctl's process there.

Exit codes: 0 no confirmed finding but known ones; 1 a confirmed finding
not known, a plan of a known finding that did not find it again (LOST), or
interrupted;
2 invalid scenario or usage, or no scenario to explore; 3 the cluster could
not be started.`,
		Example: `  simctl explore scenarios/real-kueue/ --budget 20m
  simctl explore scenarios/examples/first-trainjob.yaml --plans 6 -o /tmp/explore
  simctl run /tmp/explore/findings/*.yaml -v   # replay a finding
  simctl explore scenarios/ --found scenarios/found   # find each kept finding again`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				args = []string{"scenarios"}
			}
			return exploreScenarios(cmd.Context(), streams, f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.out, "output", "o", filepath.Join("reports", "explore"), "directory of findings/, explore.json, junit.xml and explore.html")
	fl.IntVar(&f.plans, "plans", 0, "run at most this many plans (0: every plan, within --budget)")
	fl.DurationVar(&f.budget, "budget", 30*time.Minute, "time for the whole explore, reference runs included: no batch of plans starts that would, at the average time of the batches so far, end after it (a batch longer than the average can)")
	fl.IntVar(&f.confirm, "confirm", defaultConfirmRuns, "runs of a finding's plan that confirm it")
	fl.IntVar(&f.minimize, "minimize", 8, "shorten each new confirmed finding that fails at a step with simctl minimize, at most this many runs each, verified --confirm times (findings/PLAN.min.yaml); 0: not at all")
	fl.IntVar(&f.parallel, "parallel", 0, "plans run at once; 0: six times the CPUs, as simctl run")
	fl.DurationVar(&f.timeout, "timeout", runner.DefaultScenarioTimeout, "time limit of each run")
	fl.StringVar(&f.run, "run", "", "explore only scenarios whose name matches this regular expression")
	fl.StringVar(&f.plan, "plan", "", "run only plans whose ID (a finding's file name, its annotation "+explore.PlanAnnotation+") matches this regular expression: replay one plan, or one kind")
	fl.StringArrayVarP(&f.labels, "label", "l", nil, "explore only scenarios with this label, key=value (repeatable: all must match)")
	fl.DurationVar(&f.settle, "settle", 2*time.Second, "before a run's end state is read, its namespace has had no change for this long, nor the Trainer in simctl's process a request of it to reconcile (at most 30s; one that never settles differs in that)")
	fl.StringSliceVar(&f.kinds, "kind", explore.DefaultKinds, "plan kinds to run (comma-separated, repeatable): "+strings.Join(explore.Kinds, ", ")+"; flip, coalesce and intermediate only when asked (made from the reference runs)")
	fl.StringVar(&f.known, "known", "", "a folder of findings kept as scenarios (scenarios/found): a confirmed finding whose plan one of them states (annotation "+explore.PlanAnnotation+": the IDs of the plans that found it, space-separated) is known and does not fail explore")
	fl.StringVar(&f.found, "found", "", "a folder of findings kept as scenarios (scenarios/found): run one plan of each, from the scenario it was found in (of those given): the first its annotation names that the reference runs make; with --known set to it; a finding not found again, or none of whose plans is made, fails explore (LOST)")
	fl.StringVar(&f.fixtures, "fixtures", "", "directory that setup[].path is relative to (default: the nearest fixtures/ above the working directory)")
	f.cluster.registerCluster(cmd)
	return cmd
}

// exploreReport is explore.json.
type exploreReport struct {
	Started time.Time `json:"started"`
	// Duration is the whole explore's, the cluster's start included.
	Duration time.Duration `json:"duration"`
	// Interrupted: Ctrl-C ended it before every plan ran.
	Interrupted bool `json:"interrupted,omitempty"`
	// NotExplored says, by scenario file, why one was not: skipped on
	// the cluster, or its reference run failed.
	NotExplored map[string]string `json:"notExplored,omitempty"`
	// Plans is how many plans the scenarios explored have; Run how many
	// ran (--plans and --budget cut the rest).
	Plans int `json:"plans"`
	// Merged is how many down plans were not run: their component's
	// webhook had refused the same write while it was down.
	Merged int `json:"merged,omitempty"`
	// References is how long each explored scenario's reference runs
	// took, their mean, by file: what a plan's run adds to it is the
	// plan's cost (make bench).
	References map[string]time.Duration `json:"references,omitempty"`
	Run        []exploredRun            `json:"run"`
	// Panics are the lines the components logged a panic with, and what
	// ran meanwhile (an oracle's invariant: no component logs one).
	Panics []explorePanic `json:"panics,omitempty"`
}

// explorePanic is what the components logged a panic with while some runs
// ran: the reference runs, or a batch of plans (their IDs).
type explorePanic struct {
	During string   `json:"during"`
	Plans  []string `json:"plans,omitempty"`
	Lines  []string `json:"lines"`
}

// exploredRun is one plan's run and its verdict.
type exploredRun struct {
	Plan string `json:"plan"`
	File string `json:"file"`
	Does string `json:"does"`
	// Duration is the plan's run's (its confirmations left out).
	Duration time.Duration   `json:"duration"`
	Verdict  explore.Verdict `json:"verdict"`
	Confirm  *exploreConfirm `json:"confirm,omitempty"`
	// JobSetUnchecked says, by TrainJob, why the oracle could not check
	// that its JobSet holds what the Trainer builds
	// (results.TrainJobState.JobSetUnchecked).
	JobSetUnchecked map[string]string  `json:"jobSetUnchecked,omitempty"`
	plan            explore.Plan       `json:"-"`
	sc              *v1alpha1.Scenario `json:"-"`
}

// exploreConfirm is how a finding's confirmation runs ended.
type exploreConfirm struct {
	Runs int `json:"runs"`
	// Same is how many ended as the finding (its signature).
	Same int `json:"same"`
	// Scenario is the finding's file, once confirmed.
	Scenario string `json:"scenario,omitempty"`
	// Known is the scenario of --known that states the finding's plan.
	Known string `json:"known,omitempty"`
	// Minimized is the finding's file shortened by --minimize, and
	// MinimizeProblem why it is not there or its verification failed.
	Minimized       string `json:"minimized,omitempty"`
	MinimizeProblem string `json:"minimizeProblem,omitempty"`
	// Others are the signatures of the runs that ended otherwise.
	Others []string `json:"others,omitempty"`
}

// reference is what a scenario's two runs as written ended with.
type exploreRef struct {
	file  *scenario.File
	want  explore.EndState
	noise map[string]bool
	// changes are the writes to TrainJobs each reference run recorded:
	// what flip plans come from.
	changes [2][]results.ObjectChange
}

func exploreScenarios(ctx context.Context, streams Streams, f exploreFlags, paths []string) (err error) {
	if f.plans < 0 || f.confirm < 1 || f.parallel < 0 || f.minimize < 0 || f.budget <= 0 {
		return withCode(ExitUsage, errors.New("--plans, --parallel and --minimize must be at least 0, --confirm at least 1, --budget more than 0"))
	}
	for _, k := range f.kinds {
		if !slices.Contains(explore.Kinds, k) {
			return withCode(ExitUsage, fmt.Errorf("--kind %q: the kinds of plan are %s", k, strings.Join(explore.Kinds, ", ")))
		}
	}
	kinds := f.kinds
	planRE, err := regexp.Compile(f.plan)
	if err != nil {
		return withCode(ExitUsage, fmt.Errorf("invalid --plan: %w", err))
	}
	var kept map[string]string
	var keptOrder map[string][]string
	if f.found != "" {
		if f.known != "" && filepath.Clean(f.known) != filepath.Clean(f.found) {
			return withCode(ExitUsage, errors.New("--found sets --known to its folder: give one of them"))
		}
		f.known = f.found
		if kept, keptOrder, err = knownFindings(f.found); err != nil {
			return withCode(ExitUsage, err)
		}
		kinds = keptKinds(kept)
		if len(kept) == 0 {
			return withCode(ExitUsage, fmt.Errorf("--found %s: no scenario there carries the annotation %s", f.found, explore.PlanAnnotation))
		}
	}
	// A flip's ID is known once its scenario's reference runs are: the
	// place-holding flip plan stays until then.
	chosen := func(p explore.Plan) bool {
		if placeHolder(p) {
			return kept == nil || keptFrom(kept, p.Scenario)
		}
		_, isKept := kept[p.ID()]
		return planRE.MatchString(p.ID()) && (kept == nil || isKept)
	}
	o, err := f.cluster.options("")
	if err != nil {
		return err
	}
	if o.ClusterName() != cluster.Envtest {
		return withCode(ExitUsage, fmt.Errorf("explore runs on envtest only: its plans crash the Trainer and JobSet, whose managers run in simctl's process there (not on %s)", o.ClusterName()))
	}
	o.Nodes = nil
	// An upgrade runs on envtest, on what this machine built (as simctl
	// run loads it).
	files, err := scenario.LoadPaths(paths, scenario.Options{FixturesDir: f.fixtures, TrainerBuilt: sim.TrainerBuilt})
	if err != nil {
		return withCode(ExitUsage, fmt.Errorf("invalid scenarios:\n%w", err))
	}
	if files, err = selectScenarios(files, f.run, f.labels); err != nil {
		return withCode(ExitUsage, err)
	}
	if len(files) == 0 {
		return withCode(ExitUsage, errors.New("no scenario selected"))
	}
	// The plans come from the scenarios as written, before any run:
	// those --plans keeps decide which scenarios the reference runs are
	// for.
	plans := roundRobin(files, func(f *scenario.File) []explore.Plan {
		return slices.DeleteFunc(stepPlans(f, kinds), func(p explore.Plan) bool { return !chosen(p) })
	})
	if len(plans) == 0 {
		return withCode(ExitUsage, errors.New("no plan: every scenario selected has a component step of its own, explores interleavings, or writes nothing, or no plan matches --plan"))
	}
	// Place-holding flip plans are not plans (withFlips).
	planned := len(plans) - flipHolders(plans)
	if f.plans > 0 && len(plans) > f.plans {
		plans = plans[:f.plans]
	}
	known, _, err := knownFindings(f.known)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	if err := os.MkdirAll(filepath.Join(f.out, "findings"), 0o755); err != nil {
		return withCode(ExitUsage, fmt.Errorf("invalid --output: %w", err))
	}
	o.Components = runner.WithComponents(o.Components, files, o.Trainer)
	o.Heartbeat = runner.HeartbeatFor(files, o.Trainer)
	o.Views = runner.UnionViews(runner.ViewsFor(files, o.Trainer), explore.Viewed(plans))
	env, err := startCluster(ctx, streams.Err, o)
	defer stopCluster(env, &err)
	if err != nil {
		return err
	}
	watches := runner.StartWatches(ctx, env.Config(), env.Client().RESTMapper())
	defer watches.Stop()
	x := &explorer{streams: streams, f: f, cluster: env, watches: watches, started: time.Now(), known: known,
		parallel: cmp.Or(f.parallel, runner.DefaultParallel()),
		report:   exploreReport{Started: time.Now(), NotExplored: map[string]string{}}}
	defer func() {
		x.report.Duration = time.Since(x.started)
		x.report.Interrupted = ctx.Err() != nil
		if werr := x.writeReport(); werr != nil && err == nil {
			err = withCode(ExitFailed, werr)
		}
	}()

	x.report.Plans = planned
	if logs, ok := env.(cluster.Logs); ok {
		x.logs = &explore.LogScan{Dir: logs.LogDir()}
	}
	if err := x.references(ctx, withPlans(files, plans)); err != nil {
		return err
	}
	x.checkPanics("the reference runs", nil)
	plans = slices.DeleteFunc(plans, func(p explore.Plan) bool { return x.refs[p.Scenario] == nil })
	if slices.ContainsFunc(plans, placeHolder) {
		// The flips, coalesce and intermediate plans, from what the
		// reference runs recorded, in the place of each scenario's
		// first plans.
		plans = slices.DeleteFunc(x.withFlips(files, plans), func(p explore.Plan) bool { return !chosen(p) })
		x.report.Plans = planned + len(slices.DeleteFunc(slices.Clone(plans), func(p explore.Plan) bool { return !slices.Contains(fromReferences, p.Kind) }))
		if f.plans > 0 && len(plans) > f.plans {
			plans = plans[:f.plans]
		}
	}
	if keptOrder != nil {
		// One plan of each kept finding: the first its scenario names
		// that the reference runs made (a flip's writes can come in
		// another number of patches), or none, which is LOST.
		plans, x.refind, x.unmade = refindPlans(plans, keptOrder)
		x.report.Plans = len(plans)
	}
	if len(x.refs) == 0 {
		return withCode(ExitUsage, errors.New("no scenario to explore: each was skipped on this cluster or failed its reference run (above)"))
	}
	fmt.Fprintf(streams.Err, "%d scenarios explored (%d not), %d plans, running %d, at most %d at once\n", len(x.refs), len(x.report.NotExplored), x.report.Plans, len(plans), x.parallel)
	// A batch is not started when, as long as the batches so far took
	// on average, it would end after the budget.
	var batches time.Duration
	ran := 0
	for len(plans) > 0 && ctx.Err() == nil {
		used, batch := time.Since(x.started), time.Duration(0)
		if ran > 0 {
			batch = batches / time.Duration(ran)
		}
		if used+batch > f.budget {
			fmt.Fprintf(streams.Err, "budget of %s: %s used, and a batch takes %s on average: %d plans left unrun\n", f.budget, used.Round(time.Second), batch.Round(time.Second), len(plans))
			break
		}
		n := min(x.parallel, len(plans))
		began := time.Now()
		if err := x.runPlans(ctx, plans[:n]); err != nil {
			return err
		}
		batches += time.Since(began)
		ran++
		plans = plans[n:]
		before := len(plans)
		plans = explore.Refused(plans, x.refused())
		x.report.Merged += before - len(plans)
	}
	return x.summary(ctx)
}

// explorer runs an explore's scenarios and plans on one cluster.
type explorer struct {
	streams  Streams
	f        exploreFlags
	cluster  cluster.Cluster
	watches  *runner.Watches
	started  time.Time
	parallel int
	report   exploreReport
	refs     map[string]*exploreRef
	// logs reads the components' logs for panics, when the cluster keeps
	// them.
	logs *explore.LogScan
	// known are the plans --known's scenarios state, by plan ID; refind,
	// with --found, the plan of each that runs and must find it again,
	// and unmade those none of whose plans the reference runs made.
	known, refind map[string]string
	unmade        []string

	mu sync.Mutex
	n  int
}

// load lints a scenario as simctl lint does, under a path of its own (what
// the runner keys its results by).
func (x *explorer) load(sc *v1alpha1.Scenario, what, fixtures string) (*scenario.File, error) {
	data, err := yaml.Marshal(sc)
	if err != nil {
		return nil, err
	}
	x.mu.Lock()
	x.n++
	name := fmt.Sprintf("%s (%s %d)", sc.Metadata.Name, what, x.n)
	x.mu.Unlock()
	return scenario.Load(name, data, scenario.Options{FixturesDir: fixtures})
}

// runAll runs files at once, each in its own namespace, and returns their
// results by path; a plan's run (not record) says when it ends.
func (x *explorer) runAll(ctx context.Context, files []*scenario.File, record bool) (map[string]results.Scenario, error) {
	// Not Discarded: an explore runs thousands of scenarios on one
	// cluster, whose nodes (each renewing its Lease) and namespaces would
	// pile up and slow every later run; each run's are deleted as on a
	// kept cluster.
	r := &runner.Runner{Cluster: x.cluster, Parallel: x.parallel, ScenarioTimeout: x.f.timeout, Watches: x.watches, Settle: x.f.settle, RecordChanges: record, CheckJobSets: true}
	if !record {
		// A plan's run can take a minute, and a batch of plans that
		// take their component to themselves runs one after another:
		// a line as each ends, not only at the batch's end.
		ended := 0
		r.OnScenario = func(sc *results.Scenario) {
			ended++
			fmt.Fprintf(x.streams.Err, "    %d of %d ended: %s (%s)\n", ended, len(files), sc.Name, sc.Duration.Round(time.Second))
		}
	}
	done, err := runFiles(ctx, r, files)
	if err != nil {
		return nil, err
	}
	out := map[string]results.Scenario{}
	for _, sc := range done {
		out[sc.File] = sc
	}
	return out, nil
}

// references runs each scenario twice as written and keeps in x.refs those
// that passed both times, with their end state and noise.
func (x *explorer) references(ctx context.Context, files []*scenario.File) error {
	var runs []*scenario.File
	pairs := map[*scenario.File][2]string{}
	for _, file := range files {
		var pair [2]string
		for i := range pair {
			rf, err := x.load(file.Scenario, "reference", file.FixturesDir)
			if err != nil {
				return withCode(ExitFailed, fmt.Errorf("%s does not load again (a bug of explore): %w", file.Path, err))
			}
			pair[i] = rf.Path
			runs = append(runs, rf)
		}
		pairs[file] = pair
	}
	fmt.Fprintf(x.streams.Err, "reference runs: %d scenarios, twice each\n", len(files))
	done, err := x.runAll(ctx, runs, true)
	if err != nil {
		return withCode(ExitFailed, fmt.Errorf("the reference runs did not finish: %w", err))
	}
	x.refs = map[string]*exploreRef{}
	for _, file := range files {
		pair := pairs[file]
		a, b := done[pair[0]], done[pair[1]]
		switch {
		case a.Skipped != "":
			x.report.NotExplored[file.Path] = "skipped on this cluster: " + a.Skipped
		case !a.Passed || !b.Passed:
			failed := a
			if a.Passed {
				failed = b
			}
			step, failure := explore.FailedStep(failed)
			why := fmt.Sprintf("its reference run failed at step %q: %s", step, results.FirstLine(failure))
			x.report.NotExplored[file.Path] = why
			fmt.Fprintf(x.streams.Err, "not explored: %s: %s\n", file.Path, why)
		default:
			if x.report.References == nil {
				x.report.References = map[string]time.Duration{}
			}
			x.report.References[file.Path] = (a.Duration + b.Duration) / 2
			noise := explore.Races(file.Scenario, explore.Noise(explore.EndStateOf(a), explore.EndStateOf(b)))
			x.refs[file.Scenario.Metadata.Name] = &exploreRef{file: file, want: explore.EndStateOf(a), noise: noise, changes: [2][]results.ObjectChange{a.Changes, b.Changes}}
		}
	}
	return nil
}

// refindPlans keeps, of plans, one plan of each kept finding (order: its
// scenario's plan IDs, by path): the first it names that plans has. It
// returns them, with the finding's path by plan ID, and the paths of the
// findings none of whose plans are among plans.
func refindPlans(plans []explore.Plan, order map[string][]string) (out []explore.Plan, refind map[string]string, unmade []string) {
	made := map[string]explore.Plan{}
	for _, p := range plans {
		made[p.ID()] = p
	}
	refind = map[string]string{}
	for _, path := range slices.Sorted(maps.Keys(order)) {
		i := slices.IndexFunc(order[path], func(id string) bool { _, ok := made[id]; return ok })
		if i < 0 {
			unmade = append(unmade, path)
			continue
		}
		id := order[path][i]
		refind[id] = path
		out = append(out, made[id])
	}
	return out, refind, unmade
}

// keptKinds returns the kinds of the kept plans: a plan's ID is its
// scenario's name, "--", its kind, "-", and the rest.
func keptKinds(kept map[string]string) []string {
	var out []string
	for id := range kept {
		_, plan, _ := strings.Cut(id, "--")
		for _, k := range explore.Kinds {
			if strings.HasPrefix(plan, k+"-") && !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	return out
}

// keptFrom reports whether a kept finding's plan is of the scenario named
// name: a plan's ID is the scenario's name, "--", and the plan's.
func keptFrom(kept map[string]string, name string) bool {
	for id := range kept {
		if strings.HasPrefix(id, name+"--") {
			return true
		}
	}
	return false
}

// fromReferences are the kinds of plan made from what the reference runs
// recorded, not from the steps.
var fromReferences = []string{explore.Flip, explore.Coalesce, explore.Intermediate}

// stepPlans returns the plans of kinds a scenario has as written; with
// Flip among kinds, a Flip plan without writes first, in the place of the
// flips its reference runs will give; with Intermediate, likewise an
// Intermediate plan; and with Coalesce, a Coalesce plan
// without writes for each component whose TrainJob events a coalesce plan
// can hold (its view must be in place from the cluster's start), in the
// place of its coalesce plans (withFlips).
func stepPlans(f *scenario.File, kinds []string) []explore.Plan {
	out := slices.DeleteFunc(explore.Plans(f.Scenario, explore.Components(f.Scenario, true)), func(p explore.Plan) bool { return !slices.Contains(kinds, p.Kind) })
	if !explore.Flippable(f.Scenario) {
		return out
	}
	var first []explore.Plan
	if slices.Contains(kinds, explore.Flip) {
		first = append(first, explore.Plan{Scenario: f.Scenario.Metadata.Name, Kind: explore.Flip})
	}
	if slices.Contains(kinds, explore.Intermediate) {
		first = append(first, explore.Plan{Scenario: f.Scenario.Metadata.Name, Kind: explore.Intermediate})
	}
	if slices.Contains(kinds, explore.Coalesce) {
		for _, c := range explore.Components(f.Scenario, false) {
			if slices.Contains(explore.CoalesceComponents, c) && !slices.ContainsFunc(f.Scenario.Spec.Views, func(v v1alpha1.View) bool { return v.Component == c }) {
				first = append(first, explore.Plan{Scenario: f.Scenario.Metadata.Name, Kind: explore.Coalesce, Component: c})
			}
		}
	}
	return append(first, out...)
}

// placeHolder reports whether a plan of stepPlans holds the place of the
// plans the reference runs will give (withFlips).
func placeHolder(p explore.Plan) bool {
	return slices.Contains(fromReferences, p.Kind) && p.Held == nil
}

// flipHolders counts the place-holding plans of stepPlans.
func flipHolders(plans []explore.Plan) int {
	n := 0
	for _, p := range plans {
		if placeHolder(p) {
			n++
		}
	}
	return n
}

// withFlips returns plans with each scenario's place-holding Flip,
// Intermediate and Coalesce plans replaced by the plans of those kinds its
// reference runs give (a Coalesce holder's, of its component), round robin
// again.
func (x *explorer) withFlips(files []*scenario.File, plans []explore.Plan) []explore.Plan {
	return roundRobin(files, func(f *scenario.File) []explore.Plan {
		name := f.Scenario.Metadata.Name
		ref := x.refs[name]
		var out []explore.Plan
		for _, p := range plans {
			switch {
			case p.Scenario != name:
			case placeHolder(p) && ref == nil:
			case p.Kind == explore.Flip && p.Held == nil:
				out = append(out, explore.Flips(f.Scenario, ref.changes[0], ref.changes[1])...)
			case p.Kind == explore.Intermediate && p.Held == nil:
				out = append(out, explore.Intermediates(f.Scenario, ref.changes[0], ref.changes[1], explore.Components(f.Scenario, false))...)
			case p.Kind == explore.Coalesce && p.Held == nil:
				out = append(out, slices.DeleteFunc(explore.Coalesces(f.Scenario, ref.changes[0], ref.changes[1]), func(c explore.Plan) bool { return c.Component != p.Component })...)
			default:
				out = append(out, p)
			}
		}
		return out
	})
}

// roundRobin returns the scenarios' plans in turn: every scenario's first,
// then every scenario's second, ...
func roundRobin(files []*scenario.File, plansOf func(*scenario.File) []explore.Plan) []explore.Plan {
	each := make([][]explore.Plan, len(files))
	for i, f := range files {
		each[i] = plansOf(f)
	}
	var out []explore.Plan
	for i := 0; ; i++ {
		added := false
		for _, plans := range each {
			if i < len(plans) {
				out = append(out, plans[i])
				added = true
			}
		}
		if !added {
			return out
		}
	}
}

// withPlans returns the files some plan is of.
func withPlans(files []*scenario.File, plans []explore.Plan) []*scenario.File {
	return slices.DeleteFunc(slices.Clone(files), func(f *scenario.File) bool {
		return !slices.ContainsFunc(plans, func(p explore.Plan) bool { return p.Scenario == f.Scenario.Metadata.Name })
	})
}

// runPlans runs a batch of plans, judges each, and confirms the findings.
func (x *explorer) runPlans(ctx context.Context, plans []explore.Plan) error {
	var files []*scenario.File
	var batch, unrun []*exploredRun
	for _, p := range plans {
		ref := x.refs[p.Scenario]
		sc := p.Apply(ref.file.Scenario)
		run := &exploredRun{Plan: p.ID(), File: ref.file.Path, Does: p.String(), plan: p, sc: sc}
		file, err := x.load(sc, "plan", ref.file.FixturesDir)
		if err != nil {
			// Explore's bug, not the components': said, and the other
			// plans go on.
			run.Verdict = explore.Verdict{Kind: explore.NotCarriedOut, Failure: "the plan does not lint (a bug of explore): " + err.Error()}
			fmt.Fprintf(x.streams.Err, "    plan %s not run: it does not lint (a bug of explore): %v\n", p.ID(), err)
			unrun = append(unrun, run)
			continue
		}
		files = append(files, file)
		batch = append(batch, run)
	}
	done := map[string]results.Scenario{}
	if len(files) > 0 {
		var err error
		if done, err = x.runAll(ctx, files, false); err != nil {
			return withCode(ExitFailed, fmt.Errorf("plans did not finish: %w", err))
		}
	}
	var found []*exploredRun
	for i, run := range batch {
		ref := x.refs[run.plan.Scenario]
		run.Verdict = explore.Judge(run.plan, ref.want, ref.noise, done[files[i].Path])
		run.Duration = done[files[i].Path].Duration
		for _, tj := range done[files[i].Path].FinalTrainJobs {
			if tj.JobSetUnchecked != "" {
				if run.JobSetUnchecked == nil {
					run.JobSetUnchecked = map[string]string{}
				}
				run.JobSetUnchecked[tj.Name] = tj.JobSetUnchecked
			}
		}
		if run.Verdict.Kind == explore.Found {
			found = append(found, run)
		}
	}
	if len(found) > 0 {
		if err := x.confirm(ctx, found); err != nil {
			return err
		}
	}
	for _, run := range append(batch, unrun...) {
		x.report.Run = append(x.report.Run, *run)
	}
	var ids []string
	for _, p := range plans {
		ids = append(ids, p.ID())
	}
	x.checkPanics("a batch of plans", ids)
	// explore.json as it stands after each batch: a killed explore keeps
	// every verdict so far.
	x.report.Duration = time.Since(x.started)
	if err := x.writeReport(); err != nil {
		return withCode(ExitFailed, err)
	}
	confirmed, known, unconfirmed := x.counts()
	fmt.Fprintf(x.streams.Err, "  plans %d of %d run, %d found (%d confirmed, %d known, %d not), %s of %s\n", len(x.report.Run), x.report.Plans, confirmed+known+unconfirmed, confirmed, known, unconfirmed, time.Since(x.started).Round(time.Second), x.f.budget)
	return nil
}

// confirm runs each finding's plan --confirm times more, and writes the
// confirmed ones' scenarios.
func (x *explorer) confirm(ctx context.Context, found []*exploredRun) error {
	var files []*scenario.File
	owner := map[string]*exploredRun{}
	for _, run := range found {
		ref := x.refs[run.plan.Scenario]
		for range x.f.confirm {
			file, err := x.load(run.sc, "confirm", ref.file.FixturesDir)
			if err != nil {
				return withCode(ExitFailed, err)
			}
			files = append(files, file)
			owner[file.Path] = run
		}
	}
	done, err := x.runAll(ctx, files, false)
	if err != nil {
		return withCode(ExitFailed, fmt.Errorf("confirmation runs did not finish: %w", err))
	}
	for _, run := range found {
		run.Confirm = &exploreConfirm{}
	}
	for _, file := range files {
		run := owner[file.Path]
		ref := x.refs[run.plan.Scenario]
		v := explore.Judge(run.plan, ref.want, ref.noise, done[file.Path])
		run.Confirm.Runs++
		if v.Kind == run.Verdict.Kind && v.Signature() == run.Verdict.Signature() {
			run.Confirm.Same++
		} else {
			run.Confirm.Others = append(run.Confirm.Others, cmp.Or(v.Signature(), v.Kind))
		}
	}
	for _, run := range found {
		if run.Confirm.Same < run.Confirm.Runs {
			continue
		}
		if k, ok := x.known[run.Plan]; ok {
			run.Confirm.Known = k
			continue
		}
		path := filepath.Join(x.f.out, "findings", run.Plan+".yaml")
		if err := writeFinding(path, run); err != nil {
			return withCode(ExitFailed, err)
		}
		run.Confirm.Scenario = path
		if x.f.minimize > 0 && run.Verdict.FailedStep != "" && ctx.Err() == nil {
			x.minimizeFinding(ctx, run, x.refs[run.plan.Scenario].file.FixturesDir)
		}
	}
	return nil
}

// minimizeFinding shortens a confirmed finding's file with simctl
// minimize's search, on explore's cluster, and writes PLAN.min.yaml beside
// it; what went wrong is the finding's MinimizeProblem, not explore's
// failure (the finding stands).
func (x *explorer) minimizeFinding(ctx context.Context, run *exploredRun, fixtures string) {
	path := run.Confirm.Scenario
	out := strings.TrimSuffix(path, ".yaml") + ".min.yaml"
	problem := func(err error) { run.Confirm.MinimizeProblem = err.Error() }
	data, err := os.ReadFile(path)
	if err != nil {
		problem(err)
		return
	}
	file, err := scenario.Load(path, data, scenario.Options{FixturesDir: fixtures})
	if err != nil {
		problem(err)
		return
	}
	c := &candidates{path: path, fixtures: fixtures, cluster: x.cluster, timeout: x.f.timeout, watches: x.watches, startedAt: time.Now()}
	short, verifyErr, err := shorten(ctx, x.streams.Err, c, file, data, minimize.Options{Batch: x.parallel, MaxRuns: x.f.minimize}, x.f.confirm)
	if err != nil {
		problem(err)
		return
	}
	if err := os.WriteFile(out, short, 0o644); err != nil {
		problem(err)
		return
	}
	run.Confirm.Minimized = out
	if verifyErr != nil {
		problem(verifyErr)
	}
}

// writeFinding writes a confirmed finding's scenario, what it found in its
// header.
func writeFinding(path string, run *exploredRun) error {
	body, err := yaml.Marshal(run.sc)
	if err != nil {
		return err
	}
	header := fmt.Sprintf("# Found by simctl explore in %s: %s.\n# %s\n# Confirmed in %d of %d runs. Replay: simctl run %s\n",
		run.File, run.Does, findingLine(run.Verdict), run.Confirm.Same, run.Confirm.Runs, path)
	return os.WriteFile(path, append([]byte(header), body...), 0o644)
}

// findingLine says what a finding's run did otherwise, one line.
func findingLine(v explore.Verdict) string {
	if v.FailedStep != "" {
		return fmt.Sprintf("Failed at step %q: %s", v.FailedStep, results.FirstLine(v.Failure))
	}
	return "Ended otherwise: " + v.Signature()
}

// refused returns the "component write" pairs whose write a down
// component's webhook refused (explore.Refused).
func (x *explorer) refused() map[string]bool {
	out := map[string]bool{}
	for _, r := range x.report.Run {
		if r.Verdict.Kind == explore.Closed && r.plan.Kind == explore.Down {
			out[r.plan.Component+" "+r.plan.Write] = true
		}
	}
	return out
}

// counts returns how many findings were confirmed (new, and known to
// --known) and how many were not.
func (x *explorer) counts() (confirmed, known, unconfirmed int) {
	for _, r := range x.report.Run {
		switch {
		case r.Confirm == nil:
		case r.Confirm.Scenario != "":
			confirmed++
		case r.Confirm.Known != "":
			known++
		default:
			unconfirmed++
		}
	}
	return confirmed, known, unconfirmed
}

// knownFindings returns the plans the scenarios of a folder state (their
// annotation explore.PlanAnnotation: the IDs of the plans that found each,
// space-separated), by plan ID, with the scenario's path; and each
// scenario's IDs in their order, by path. None when dir is empty or does
// not exist.
func knownFindings(dir string) (known map[string]string, order map[string][]string, err error) {
	known, order = map[string]string{}, map[string][]string{}
	if dir == "" {
		return known, order, nil
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return known, order, nil
	}
	files, err := scenario.LoadPaths([]string{dir}, scenario.Options{})
	if err != nil {
		return nil, nil, fmt.Errorf("invalid --known scenarios:\n%w", err)
	}
	for _, f := range files {
		// The plans that found it, the first first: other plans that
		// end the same way are the same finding.
		for _, id := range strings.Fields(f.Scenario.Metadata.Annotations[explore.PlanAnnotation]) {
			known[id] = f.Path
			order[f.Path] = append(order[f.Path], id)
		}
	}
	return known, order, nil
}

// summary prints the verdicts and findings, and returns explore's exit.
func (x *explorer) summary(ctx context.Context) error {
	verdicts := map[string]int{}
	for _, r := range x.report.Run {
		verdicts[r.Verdict.Kind]++
	}
	confirmed, known, unconfirmed := x.counts()
	out := x.streams.Out
	took := time.Since(x.started)
	fmt.Fprintf(out, "explored %d scenarios in %s (%.1f plans a minute, reference runs and the cluster's start included): %d plans run of %d (%d down plans merged into one refused before); %d same, %d refused while down, %d not carried out, %d found: %d confirmed, %d known, %d not (false positives)\n",
		len(x.refs), took.Round(time.Second), float64(len(x.report.Run))/took.Minutes(), len(x.report.Run), x.report.Plans, x.report.Merged,
		verdicts[explore.Same], verdicts[explore.Closed], verdicts[explore.NotCarriedOut], verdicts[explore.Found], confirmed, known, unconfirmed)
	for _, r := range x.report.Run {
		if r.Confirm == nil {
			continue
		}
		state := fmt.Sprintf("not confirmed: %d of %d runs ended the same way", r.Confirm.Same, r.Confirm.Runs)
		switch {
		case r.Confirm.Scenario != "":
			state = "confirmed; replay: simctl run " + r.Confirm.Scenario
			if r.Confirm.Minimized != "" {
				state += "\n  shortened: " + r.Confirm.Minimized
			}
			if r.Confirm.MinimizeProblem != "" {
				state += "\n  minimize: " + r.Confirm.MinimizeProblem
			}
		case r.Confirm.Known != "":
			state = "confirmed, known: " + r.Confirm.Known
		}
		fmt.Fprintf(out, "FOUND %s: %s\n  %s\n  %s\n", r.File, r.Does, findingLine(r.Verdict), state)
	}
	lost := x.lost()
	for _, line := range lost {
		fmt.Fprintln(out, line)
	}
	for _, p := range x.report.Panics {
		fmt.Fprintf(out, "PANIC logged while %s ran %s:\n  %s\n", p.During, strings.Join(p.Plans, ", "), strings.Join(p.Lines, "\n  "))
	}
	switch {
	case ctx.Err() != nil:
		return withCode(ExitFailed, errors.New("interrupted: the findings confirmed so far are written"))
	case confirmed > 0:
		return withCode(ExitFailed, fmt.Errorf("%d confirmed findings not in --known's folder", confirmed))
	case len(lost) > 0:
		return withCode(ExitFailed, fmt.Errorf("%d findings kept in --known's folder were not found again by the plan that found them", len(lost)))
	case len(x.report.Panics) > 0:
		return withCode(ExitFailed, fmt.Errorf("components logged a panic (%d times; explore.json's panics say while which runs ran)", len(x.report.Panics)))
	}
	return nil
}

// checkPanics records and prints what the components logged a panic with
// since the last check, while the runs named by during and plans ran.
func (x *explorer) checkPanics(during string, plans []string) {
	if x.logs == nil {
		return
	}
	lines, err := x.logs.Panics()
	if err != nil {
		lines = append(lines, "the components' logs could not be read: "+err.Error())
	}
	if len(lines) == 0 {
		return
	}
	x.report.Panics = append(x.report.Panics, explorePanic{During: during, Plans: plans, Lines: lines})
	fmt.Fprintf(x.streams.Err, "  PANIC logged while %s ran (%s):\n    %s\n", during, strings.Join(plans, ", "), strings.Join(lines, "\n    "))
}

// lost says, a line each, which findings kept in --known's folder were not
// found again: a run of a plan one of them states that did not end as a
// confirmed finding, and (with --found) a kept plan that did not run at
// all (its scenario's reference runs did not give it, or --plans or
// --budget cut it). The components changed, or explore did.
func (x *explorer) lost() []string {
	var out []string
	ran := map[string]bool{}
	for _, r := range x.report.Run {
		ran[r.Plan] = true
		if _, kept := x.known[r.Plan]; kept && (r.Confirm == nil || r.Confirm.Known == "") {
			out = append(out, fmt.Sprintf("LOST %s: %s\n  kept in %s, this time %s", r.File, r.Does, x.known[r.Plan], r.Verdict.Kind))
		}
	}
	for _, id := range slices.Sorted(maps.Keys(x.refind)) {
		if !ran[id] {
			out = append(out, fmt.Sprintf("LOST %s: kept in %s, and the plan did not run (--plans or --budget cut it)", id, x.refind[id]))
		}
	}
	for _, path := range x.unmade {
		out = append(out, fmt.Sprintf("LOST %s: none of the plans it names was made (its scenario was not explored, or its reference runs did not give them)", path))
	}
	return out
}

// writeReport writes explore.json, junit.xml and explore.html.
func (x *explorer) writeReport() error {
	data, err := json.MarshalIndent(x.report, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(x.f.out, "explore.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	var junit bytes.Buffer
	if err := reports.WriteJUnitCases(&junit, "simctl explore", x.report.Started, x.report.Duration, exploreCases(x.report.Run)); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(x.f.out, "junit.xml"), junit.Bytes(), 0o644); err != nil {
		return err
	}
	var page bytes.Buffer
	if err := writeExploreHTML(&page, x.report); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(x.f.out, "explore.html"), page.Bytes(), 0o644)
}

// exploreCases are junit.xml's test cases, one per plan run, failed as
// explore's exit fails: on a confirmed finding not in --known's folder. A
// plan not carried out is skipped; a known finding and one a confirmation
// run did not repeat (a false positive) pass, and say so.
func exploreCases(runs []exploredRun) []reports.JUnitCase {
	var out []reports.JUnitCase
	for _, r := range runs {
		c := reports.JUnitCase{Name: r.Plan + ": " + r.Does, Classname: r.File, Duration: r.Duration, Out: "verdict: " + r.Verdict.Kind + "\n"}
		switch {
		case r.Verdict.Kind == explore.NotCarriedOut:
			c.Skipped = fmt.Sprintf("plan not carried out: step %q: %s", r.Verdict.FailedStep, results.FirstLine(r.Verdict.Failure))
		case r.Confirm == nil:
		case r.Confirm.Scenario != "":
			c.Failure = findingLine(r.Verdict)
			c.Text = fmt.Sprintf("%s\n%s\nconfirmed in %d of %d runs\nreplay: simctl run %s\n", r.Does, r.Verdict.Failure, r.Confirm.Same, r.Confirm.Runs, r.Confirm.Scenario)
			if r.Confirm.Minimized != "" {
				c.Text += "shortened: simctl run " + r.Confirm.Minimized + "\n"
			}
			if r.Confirm.MinimizeProblem != "" {
				c.Text += "minimize: " + r.Confirm.MinimizeProblem + "\n"
			}
		case r.Confirm.Known != "":
			c.Out += "found, known: " + r.Confirm.Known + "\n" + findingLine(r.Verdict) + "\n"
		default:
			c.Out += fmt.Sprintf("found, not confirmed (%d of %d runs ended the same way): %s\n", r.Confirm.Same, r.Confirm.Runs, findingLine(r.Verdict))
		}
		out = append(out, c)
	}
	return out
}
