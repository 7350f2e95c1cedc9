package app

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/trainersim/trainersim/reports"
	"github.com/trainersim/trainersim/results"
	"github.com/trainersim/trainersim/sim"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/releases"
	"github.com/trainersim/trainersim/sim/runner"
	"github.com/trainersim/trainersim/sim/scenario"
	"github.com/trainersim/trainersim/sim/shake"
)

type runFlags struct {
	cluster   clusterFlags
	reportDir string
	parallel  int
	run       string
	labels    []string
	keep      bool
	timeout   time.Duration
	verbose   bool
	fixtures  string
	seed      uint64
	seedFlag  *uint64 // &seed when --seed was given
	shake     int
	shakeSeed uint64
	// shakeSeedFlag is &shakeSeed when --shake-seed was given.
	shakeSeedFlag *uint64
	shakeMaxDelay time.Duration
	// shard and shardDurations are --shard and --shard-durations.
	shard          string
	shardDurations string
	// auditDir is --audit-log: the recorded run's audit log goes to
	// auditDir/audit.log.
	auditDir string
	// oneCluster is --one-cluster: no second cluster for the runs that
	// keep other runs off a cluster.
	oneCluster bool
}

func newRunCommand(streams Streams) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run PATH... [--report-dir DIR] [--parallel N] [--run REGEX] [--label key=value] [--keep] [--timeout D]",
		Short: "Run scenarios on one local cluster and report what happened",
		Long: `run loads every scenario file named or found under PATH (*.yaml, recursively,
skipping the fleets of scale/ directories unless one is named), starts one
cluster, and runs each scenario in its own namespace on its own simulated
nodes, several at a time. It prints one line per scenario as it
finishes (-v: one per step), and with --report-dir writes junit.xml,
report.json and report.html.

With --report-dir, nothing that finished is lost if simctl is killed: once
the cluster is up, DIR/report.jsonl is started (the run's versions and the
runs it is to make), each scenario's result is appended to it and synced to
disk before its line is printed, and DIR/junit.xml is rewritten atomically;
a report.json and report.html of an earlier run are removed. report.json and
report.html are written when the run ends. After a SIGKILL, 'simctl report
DIR' writes them from report.jsonl.

A refused write is a result: a step asserts it with expectError, and a write
refused without one fails the step with the server's message. Nothing is
retried. Each scenario's Pods are kept on its own nodes through its
namespace's node selector and default toleration (key trainersim.dev/scenario),
which the assertions and reports remove from every Pod.

The server's warnings on a write (unknown field "..." for a field a non-strict
write had pruned, say) are recorded on that write: in the reports and, with
-v, under the write's line. Nothing else prints to the terminal: on envtest,
what client-go and the in-process Trainer, JobSet and provisioner log goes
to logs/controllers.log in the work directory (--work-dir keeps it).

--trainer VERSION runs another Kubeflow Trainer release (the releases and what
changes between them: docs/releases.md). A scenario whose
spec.trainer.versions leaves the release out is skipped, with its range, and
a step whose trainer.versions does is left out: a scenario carries one case
per release where the outcome differs. A scenario whose spec.clusters leaves
the cluster out is skipped too (views, component steps and upgrades hold on
envtest only). When every selected scenario would be skipped so, run refuses
before it starts a cluster (exit 2, a line per file saying why).

A concurrently group with interleavings is run once per explored order, each
order in a fresh namespace, its writes forced through one after the other.
Each order comes from a seed, printed with the result; --seed S runs only the
order of seed S in every such scenario, which replays a failing order exactly.

--shake N runs every scenario N times, each time with seeded delays (up to
--shake-max-delay, 300ms) added to every write in its namespace: the real
components' requests and the actors' alike, through an admission webhook
simctl serves (clusters simctl starts with envtest only). A scenario whose
verdict changes between its runs is reported as order-dependent, with a seed
that passes and one that fails; such a scenario fails the run. Seeds come in
mirrored pairs (the second delays each request by the most less the first's
delay), so a race of two requests is run both ways. --shake-seed S with
--shake N starts the seeds at S; alone, it runs each scenario once with the
delays of seed S, which replays a shaken run.

The runs start longest first, by the durations of an earlier run: the one
--report-dir holds (a CI job that keeps its report directory gets it for free),
or --shard-durations'; without one, by the timers each scenario waits on.
Runs that must have a component to themselves (a component step, a gate on
it) start before all. Those that keep every other run off the cluster (a
component step; a gate or a partition of JobSet or the Trainer) run, one
after another, on a second cluster started beside the first, while the
others run on the first: on envtest, at a --parallel above 1, unless --keep,
--audit-log or --one-cluster ask for one cluster.

--audit-log DIR records the run's requests in DIR/audit.log: who wrote what,
with the bodies and answers a scenario can be rebuilt from (docs/record.md).

Exit codes: 0 every scenario passed, 1 a scenario failed or the run was
interrupted, 2 invalid scenario or usage, 3 the cluster could not be started.
Ctrl-C stops the run and still writes the reports of finished scenarios.`,
		Example: `  simctl run scenarios/
  simctl run scenarios/ --report-dir reports/out --parallel 2
  simctl run scenarios/ --run 'kueue' --label area=multi-manager -v
  simctl run scenarios/examples/sdk-and-kueue-share-a-gpu-job.yaml --keep
  simctl run --trainer v2.1.0 scenarios/
  simctl run --seed 2 --run '^multi-manager-interleaved-read-modify-write$' scenarios/multi-manager/
  simctl run --shake 4 scenarios/real-kueue/
  simctl run --shake-seed 43 --run '^real-kueue-sdk-tolerations-and-kueues$' scenarios/real-kueue/
  simctl run --audit-log /tmp/recorded scenarios/multi-manager/lost-update.yaml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("seed") {
				f.seedFlag = &f.seed
			}
			if cmd.Flags().Changed("shake-seed") {
				f.shakeSeedFlag = &f.shakeSeed
			}
			if f.auditDir != "" {
				f.cluster.auditLog = filepath.Join(f.auditDir, "audit.log")
			}
			return runScenarios(cmd.Context(), streams, f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.reportDir, "report-dir", "", "write report.jsonl and junit.xml here as scenarios finish, report.json and report.html at the end")
	fl.IntVar(&f.parallel, "parallel", 0, "scenarios run at once; 0: six times the CPUs, chosen by measurement (see docs/performance.md), three times with --shake (its delays slow every component)")
	fl.StringVar(&f.run, "run", "", "run only scenarios whose name matches this regular expression")
	fl.StringArrayVar(&f.labels, "label", nil, "run only scenarios with this label (key=value; repeatable, all must match)")
	fl.BoolVar(&f.keep, "keep", false, "leave the cluster, namespaces and nodes up after the run: until Ctrl-C on envtest;\na kind cluster stays after simctl exits, until 'simctl clean --cluster kind'")
	fl.DurationVar(&f.timeout, "timeout", runner.DefaultScenarioTimeout, "time limit of each scenario")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "print every step and its writes, with the server's warnings")
	fl.Uint64Var(&f.seed, "seed", 0, "in scenarios that explore interleavings, run only the order of this seed")
	fl.IntVar(&f.shake, "shake", 0, "run every scenario this many times with seeded delays on its writes, and report those whose verdict changes (order-dependent)")
	fl.Uint64Var(&f.shakeSeed, "shake-seed", 0, "with --shake, the first seed; alone, run each scenario once with the delays of this seed (a replay)")
	fl.DurationVar(&f.shakeMaxDelay, "shake-max-delay", shake.DefaultMaxDelay, "the longest delay --shake adds to one write")
	fl.StringVar(&f.shard, "shard", "", "run the K-th of N slices of the selected scenarios (K/N, 1/3 say): one per CI machine, balanced by\n--shard-durations, merged afterwards with 'simctl report --merge'")
	fl.StringVar(&f.shardDurations, "shard-durations", "", "with --shard: the --report-dir (or its report.jsonl or report.json) of an earlier run, whose\nscenarios' durations balance the slices (default: every run weighs the same)")
	fl.BoolVar(&f.oneCluster, "one-cluster", false, "run every scenario on one cluster: no second cluster for the runs that keep other runs off a cluster")
	fl.StringVar(&f.fixtures, "fixtures", "", "directory that setup[].path is relative to (default: the nearest fixtures/ above the working directory)")
	fl.BoolVar(&f.cluster.unisolated, "unisolated", false, "with --kubeconfig, on a cluster that serves no MutatingAdmissionPolicy: run anyway, one scenario at a time,\nat the risk of scenario Pods landing on the cluster's own nodes")
	f.cluster.registerCluster(cmd)
	f.cluster.registerExisting(cmd)
	f.cluster.registerAuditLog(cmd, &f.auditDir, "to DIR/audit.log (a new file)")
	return cmd
}

// selectScenarios applies --run and --label.
func selectScenarios(files []*scenario.File, run string, labels []string) ([]*scenario.File, error) {
	var re *regexp.Regexp
	if run != "" {
		var err error
		if re, err = regexp.Compile(run); err != nil {
			return nil, fmt.Errorf("invalid --run: %w", err)
		}
	}
	want := map[string]string{}
	for _, l := range labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("invalid --label %q: want key=value", l)
		}
		want[k] = v
	}
	var out []*scenario.File
	for _, f := range files {
		if re != nil && !re.MatchString(f.Scenario.Metadata.Name) {
			continue
		}
		ok := true
		for k, v := range want {
			if f.Scenario.Metadata.Labels[k] != v {
				ok = false
			}
		}
		if ok {
			out = append(out, f)
		}
	}
	return out, nil
}

func runScenarios(ctx context.Context, streams Streams, f runFlags, paths []string) (err error) {
	f.cluster.keep = f.keep
	o, err := f.cluster.options("")
	if err != nil {
		return err
	}
	o.Nodes = nil // every scenario brings its own
	var shard *runner.Shard
	switch {
	case f.shard != "":
		s, err := runner.ParseShard(f.shard)
		if err != nil {
			return withCode(ExitUsage, fmt.Errorf("invalid --shard: %w", err))
		}
		shard = &s
	case f.shardDurations != "":
		return withCode(ExitUsage, errors.New("--shard-durations balances --shard's slices: give --shard K/N too"))
	}
	seeds, err := shakeSeeds(f, o)
	if err != nil {
		return err
	}
	load := scenario.Options{FixturesDir: f.fixtures}
	if o.ClusterName() == cluster.Envtest {
		// An upgrade runs on envtest only: elsewhere its scenario is
		// skipped, whatever this machine built.
		load.TrainerBuilt = sim.TrainerBuilt
	}
	files, err := scenario.LoadPaths(paths, load)
	if err != nil {
		return withCode(ExitUsage, fmt.Errorf("invalid scenarios:\n%w", err))
	}
	files, err = selectScenarios(files, f.run, f.labels)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	if len(files) == 0 {
		return withCode(ExitUsage, errors.New("no scenario selected"))
	}
	// Before the shard: a slice of skipped scenarios is a shard's lot.
	if err := refuseSkippedEverywhere(files, o); err != nil {
		return err
	}
	if shard != nil {
		if files, err = selectShard(streams, *shard, f.shardDurations, files); err != nil {
			return err
		}
	}
	with := o.Components // --with's
	if o.ClusterName() != cluster.Kubeconfig {
		o.Components = runner.WithComponents(o.Components, files, o.Trainer)
		o.Heartbeat = runner.HeartbeatFor(files, o.Trainer)
		o.Views = runner.ViewsFor(files, o.Trainer)
	}
	if o.ClusterName() != cluster.Envtest {
		o.Serve = runner.NeedsServing(files, o.ClusterName(), o.Trainer)
	}
	if f.reportDir != "" {
		if err := os.MkdirAll(f.reportDir, 0o755); err != nil {
			return withCode(ExitUsage, fmt.Errorf("invalid --report-dir: %w", err))
		}
	}
	// The longest runs start first, by an earlier run's durations: those
	// --shard-durations names, or the run whose reports --report-dir holds
	// (read before this run's replace them).
	durations := runner.Durations{}
	if from := cmp.Or(f.shardDurations, f.reportDir); from != "" {
		if prev, err := readEarlierRun(from); err == nil {
			for _, sc := range prev.Scenarios {
				durations.Add(sc.File, sc.Duration)
			}
		}
	}

	run := &results.Run{Started: time.Now()}
	if shard != nil {
		run.Shard = shard.String()
	}
	plans := runner.Plans(files, f.seedFlag)
	if len(seeds) > 0 {
		plans = runner.Shaken(plans, seeds)
	}
	runs := len(plans)
	if f.seedFlag != nil && !slices.ContainsFunc(plans, func(p runner.Plan) bool { return p.Interleaving != nil }) {
		fmt.Fprintln(streams.Err, "warning: --seed has no effect: no selected scenario explores interleavings")
	}
	switch {
	case len(seeds) > 0:
		fmt.Fprintf(streams.Out, "%d scenarios (%d runs: shaken with seeds %d to %d, delays up to %s) from %s\n", len(files), runs, seeds[0], seeds[len(seeds)-1], f.shakeMaxDelay, strings.Join(paths, " "))
	case runs == len(files):
		fmt.Fprintf(streams.Out, "%d scenarios from %s\n", len(files), strings.Join(paths, " "))
	default:
		fmt.Fprintf(streams.Out, "%d scenarios (%d runs: interleavings) from %s\n", len(files), runs, strings.Join(paths, " "))
	}
	// The runs that keep every other run off the cluster run on a second
	// cluster, started beside the first; the runs start once both are up.
	// (Started while the first cluster's first runs went on, it made a
	// view of the first cluster's Trainer miss a watch event in 3 of 14
	// corpus runs at 1e2dcdd, for a cause not found; at abfa705 it did not
	// in 18, and the corpus ended 1 s sooner of 54, within the spread of
	// four pairs: the cores, busy with the runs, are what the corpus
	// waits for, not the start.) It stops as soon as its runs are done
	// (the runner's ApartDone) or when the run ends.
	var apart cluster.Cluster
	stopApart := func() error { return nil }
	apartRuns, apartFiles, hereFiles := runsApart(plans, f, o)
	apartStarted := make(chan struct{})
	var apartErr error
	if apartRuns > 0 {
		// A scenario that takes a node unreachable needs the fast
		// heartbeat on the cluster it runs on only: Lease renewals of
		// the other's nodes are spared.
		o.Heartbeat = runner.HeartbeatFor(hereFiles, o.Trainer)
		apart = sim.NewCluster(apartOptions(o, with, apartFiles))
		go func() {
			defer close(apartStarted)
			apartErr = apart.Start(ctx)
		}()
		stopApart = sync.OnceValue(func() error {
			<-apartStarted
			return apart.Stop()
		})
		defer func() {
			if stopErr := stopApart(); stopErr != nil && err == nil {
				err = withCode(ExitCluster, fmt.Errorf("failed to stop the second cluster: %w", stopErr))
			}
		}()
	}
	env, err := startCluster(ctx, streams.Out, o)
	defer stopCluster(env, &err)
	if err != nil {
		return err
	}
	if apart != nil {
		since := time.Now()
		<-apartStarted
		if apartErr != nil {
			return withCode(ExitCluster, fmt.Errorf("failed to start the second cluster, for the %d runs that keep other runs off a cluster (--one-cluster runs them on the first): %w", apartRuns, apartErr))
		}
		fmt.Fprintf(streams.Out, "second cluster ready (%s after the first) for the %d runs that keep other runs off a cluster (component steps; gates and partitions of JobSet or the Trainer)\n", time.Since(since).Round(10*time.Millisecond), apartRuns)
	}
	v := env.Versions()
	run.Cluster, run.KubernetesVersion, run.TrainerVersion, run.JobSetVersion, run.KueueVersion = v.Cluster, v.Kubernetes, v.Trainer, v.JobSet, v.Kueue
	run.TrainerCheckout, run.KueueCheckout = v.TrainerCheckout, v.KueueCheckout
	parallel := f.parallel
	if i, ok := env.(cluster.Isolation); ok && !i.Isolated() {
		parallel = 1
	}

	// From here on, every finished scenario is on disk before it is
	// printed.
	var journal *reports.Journal
	var recordErr error
	if f.reportDir != "" {
		start := reports.JournalStart{
			Started:           run.Started,
			Cluster:           run.Cluster,
			KubernetesVersion: run.KubernetesVersion,
			TrainerVersion:    run.TrainerVersion,
			JobSetVersion:     run.JobSetVersion,
			KueueVersion:      run.KueueVersion,
			TrainerCheckout:   run.TrainerCheckout,
			KueueCheckout:     run.KueueCheckout,
			Paths:             paths,
		}
		if shard != nil {
			start.Shard = shard.String()
		}
		for _, p := range plans {
			start.Runs = append(start.Runs, reports.PlannedRun{Name: p.Name(), File: p.File.Path})
		}
		if journal, err = reports.CreateJournal(f.reportDir, start); err != nil {
			return withCode(ExitFailed, fmt.Errorf("failed to write reports: %w", err))
		}
		defer journal.Close()
	}

	r := &runner.Runner{
		Cluster:         env,
		Apart:           apart,
		ApartDone:       func() { _ = stopApart() }, // its error is the deferred call's
		Parallel:        parallel,
		Durations:       durations,
		ScenarioTimeout: f.timeout,
		Keep:            f.keep,
		// A cluster this run started goes when it ends, unless kept: the
		// scenarios' namespaces and nodes go with it.
		Discarded:     o.Kubeconfig == "" && !f.keep,
		Seed:          f.seedFlag,
		ShakeSeeds:    seeds,
		ShakeMaxDelay: f.shakeMaxDelay,
		OnScenario: func(sc *results.Scenario) {
			if journal != nil {
				if err := journal.Record(sc); err != nil {
					fmt.Fprintf(streams.Err, "warning: %v\n", err)
					recordErr = cmp.Or(recordErr, err)
				}
			}
			printScenario(streams.Out, sc, f.keep)
		},
	}
	if f.verbose {
		r.OnStep = func(sc *results.Scenario, st *results.Step) { printStep(streams.Out, sc, st) }
	}
	done, complete := r.Run(ctx, files)
	// A namespace or node of a scenario left behind stays on a cluster
	// simctl did not start: the run fails.
	leftovers := r.Teardowns()
	if leftovers != nil {
		fmt.Fprintf(streams.Err, "error: %v\n", leftovers)
	}
	run.Scenarios = done
	run.Interrupted = !complete
	run.Duration = time.Since(run.Started)
	finished := map[string]bool{}
	for _, sc := range done {
		finished[sc.Name] = true
	}
	for _, p := range plans {
		if !finished[p.Name()] {
			run.NotReported = append(run.NotReported, p.Name())
		}
	}

	summary := resultSummary(done)
	if run.Interrupted {
		summary += fmt.Sprintf(", %d not finished (interrupted)", runs-len(done))
	}
	fmt.Fprintf(streams.Out, "%s in %s\n", summary, run.Duration.Round(100*time.Millisecond))
	if f.shake > 0 {
		printShakeFindings(streams.Out, run)
	}
	if journal != nil {
		if err := errors.Join(recordErr, journal.Finish(run)); err != nil {
			return withCode(ExitFailed, fmt.Errorf("failed to write reports: %w", err))
		}
		abs, _ := filepath.Abs(f.reportDir)
		fmt.Fprintf(streams.Out, "reports: %s\n", filepath.Join(abs, "report.html"))
	}
	if o.AuditLog != "" {
		fmt.Fprintf(streams.Out, "audit log: %s\n", o.AuditLog)
	}
	if f.keep && ctx.Err() == nil {
		fmt.Fprintf(streams.Out, "cluster kept: kubectl --kubeconfig %s get pods -A\n", env.AdminKubeconfig())
		if o.Provider == sim.ClusterKind {
			fmt.Fprintf(streams.Out, "  simctl run --kubeconfig %s FILE re-runs on it; simctl clean --cluster kind --kind-name %s deletes it\n", env.AdminKubeconfig(), o.KindName)
		} else {
			fmt.Fprintln(streams.Out, "press Ctrl-C to stop")
			<-ctx.Done()
		}
	}
	if !run.Passed() {
		return withCode(ExitFailed, errors.New(summary))
	}
	if leftovers != nil {
		return withCode(ExitFailed, fmt.Errorf("the run left scenarios' objects behind: %w", leftovers))
	}
	return nil
}

// runsApart counts the plans that run on a second cluster (runner.Runner.Apart):
// those that keep every other run off the cluster while they run
// (runner.RunsApart) and are not skipped, when some other plan is left to
// run beside them, on a cluster simctl starts and discards with envtest, at
// a --parallel above 1, without --one-cluster. A kept cluster, a recorded
// audit log and a run of one scenario at a time are one cluster's.
// It returns too the files of those plans, apart, and of the others,
// here, each once.
func runsApart(plans []runner.Plan, f runFlags, o sim.ClusterOptions) (n int, apart, here []*scenario.File) {
	if f.oneCluster || f.keep || o.ClusterName() != cluster.Envtest || o.AuditLog != "" || f.parallel == 1 {
		return 0, nil, nil
	}
	trainer := cmp.Or(o.Trainer, releases.CompiledTrainerVersion(o.TrainerAs))
	add := func(files []*scenario.File, f *scenario.File) []*scenario.File {
		if slices.Contains(files, f) {
			return files
		}
		return append(files, f)
	}
	for _, p := range plans {
		switch {
		case runner.SkippedOn(p.File.Scenario, cluster.Envtest, trainer) != "":
		case runner.RunsApart(p):
			n++
			apart = add(apart, p.File)
		default:
			here = add(here, p.File)
		}
	}
	if len(here) == 0 {
		return 0, nil, nil
	}
	return n, apart, here
}

// apartOptions are the options of the second cluster: the first's, in a
// work directory of its own, writing no kubeconfig and printing nothing,
// with the components (beside with, those asked for), views and node
// heartbeat that files, the scenarios it runs, need.
func apartOptions(o sim.ClusterOptions, with []string, files []*scenario.File) sim.ClusterOptions {
	o.Progress, o.KubeconfigOut = nil, ""
	if o.WorkDir != "" {
		o.WorkDir = filepath.Join(o.WorkDir, "second-cluster")
	}
	o.Components = runner.WithComponents(with, files, o.Trainer)
	o.Heartbeat = runner.HeartbeatFor(files, o.Trainer)
	o.Views = runner.ViewsFor(files, o.Trainer)
	return o
}

// refuseSkippedEverywhere refuses a run of which no scenario can run on
// the cluster, by their spec.clusters (views, component steps and upgrades
// hold on envtest only) and spec.trainer, before the cluster starts: exit 2
// and a line per file saying why. A run of which some can run skips the
// others, and says so per scenario.
func refuseSkippedEverywhere(files []*scenario.File, o sim.ClusterOptions) error {
	name, trainer := o.ClusterName(), o.Trainer
	if trainer == "" && name != cluster.Kubeconfig {
		trainer = releases.CompiledTrainerVersion(o.TrainerAs) // what it will run
	}
	var why []string
	for _, f := range files {
		reason := runner.SkippedOn(f.Scenario, name, trainer)
		if reason == "" {
			return nil
		}
		why = append(why, fmt.Sprintf("  %s: %s", f.Path, reason))
	}
	where, hint := "kind", "--cluster envtest (the default) runs what holds on envtest"
	switch name {
	case cluster.Envtest:
		where, hint = "envtest", "--trainer picks the release envtest runs"
	case cluster.Kubeconfig:
		where, hint = "the cluster of --kubeconfig", "without --kubeconfig, simctl starts envtest"
	}
	if trainer != "" {
		where += " with Trainer " + trainer
	}
	return withCode(ExitUsage, fmt.Errorf("no selected scenario runs on %s, so the run would prove nothing:\n%s\n%s", where, strings.Join(why, "\n"), hint))
}

// selectShard returns --shard's slice of files, balanced by the durations
// of --shard-durations' run, and prints what it selected.
func selectShard(streams Streams, shard runner.Shard, durationsOf string, files []*scenario.File) ([]*scenario.File, error) {
	durations := runner.Durations{}
	by := "every run weighing the same"
	if durationsOf != "" {
		prev, err := readEarlierRun(durationsOf)
		if err != nil {
			return nil, withCode(ExitUsage, fmt.Errorf("invalid --shard-durations: %w", err))
		}
		for _, sc := range prev.Scenarios {
			durations.Add(sc.File, sc.Duration)
		}
		by = "by the durations of " + durationsOf
	}
	selected := shard.Select(files, durations)
	if len(selected) == 0 {
		return nil, withCode(ExitUsage, fmt.Errorf("shard %s holds no scenario: %d scenarios are selected, fewer than %d shards", shard, len(files), shard.N))
	}
	fmt.Fprintf(streams.Out, "shard %s: %d of %d scenarios, balanced %s\n", shard, len(selected), len(files), by)
	return selected, nil
}

// readEarlierRun reads the run of a report directory (its report.jsonl),
// of a report.jsonl, or of a report.json.
func readEarlierRun(path string) (*results.Run, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, reports.JSONLFile)
	}
	if strings.HasSuffix(path, ".jsonl") {
		return reports.ReadJournal(path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	run := &results.Run{}
	if err := json.Unmarshal(data, run); err != nil {
		return nil, fmt.Errorf("%s is not a simctl run's report.json: %w", path, err)
	}
	return run, nil
}

// shakeSeeds are the seeds of --shake and --shake-seed, none without
// either; a shake needs a cluster simctl starts with envtest, whose API
// server reaches the shaker's webhook in this process.
func shakeSeeds(f runFlags, o sim.ClusterOptions) ([]uint64, error) {
	switch {
	case f.shake < 0:
		return nil, withCode(ExitUsage, fmt.Errorf("invalid --shake %d: the number of runs of each scenario, 1 or more", f.shake))
	case f.shake == 0 && f.shakeSeedFlag == nil:
		return nil, nil
	case f.shakeMaxDelay <= 0:
		return nil, withCode(ExitUsage, fmt.Errorf("invalid --shake-max-delay %s: must be positive", f.shakeMaxDelay))
	case o.Provider == sim.ClusterKind || o.Kubeconfig != "":
		return nil, withCode(ExitUsage, errors.New("--shake needs a cluster simctl starts with envtest: its API server must reach the shaker's webhook in this process, which a kind or existing cluster cannot"))
	case f.shake == 0:
		return []uint64{*f.shakeSeedFlag}, nil
	}
	base := f.shakeSeed
	if f.shakeSeedFlag == nil {
		var b [8]byte
		_, _ = rand.Read(b[:])
		base = binary.LittleEndian.Uint64(b[:]) >> 16 // short enough to type
	}
	return shake.Seeds(base, f.shake), nil
}

// printShakeFindings prints what the shaker found: each order-dependent
// scenario with its replay, or that no verdict changed.
func printShakeFindings(out io.Writer, run *results.Run) {
	found := run.OrderDependent()
	if len(found) == 0 {
		fmt.Fprintln(out, "shaken: no scenario's verdict changed between its runs")
		return
	}
	for _, f := range found {
		fmt.Fprintf(out, "%s\n      %s\n", reports.OrderDependentLine(f), results.FirstLine(f.Failure))
		for _, sc := range run.Scenarios {
			if sc.Shake != nil && sc.Shake.Of == f.Scenario && sc.Shake.Seed == f.Failing {
				fmt.Fprintf(out, "      replay: %s\n", sc.Shake.Replay)
			}
		}
	}
}

// resultSummary counts results: "3 passed, 1 failed, 2 skipped", or "3
// passed, 2 failed (a behaviour change of the Trainer checkout against
// v2.3.0)".
func resultSummary(scenarios []results.Scenario) string {
	passed, skipped := 0, 0
	changed := map[string]int{}
	for _, sc := range scenarios {
		switch {
		case sc.Skipped != "":
			skipped++
		case sc.Passed:
			passed++
		case sc.BehaviourChange != "":
			changed[sc.BehaviourChange]++
		}
	}
	summary := fmt.Sprintf("%d passed, %d failed", passed, len(scenarios)-passed-skipped)
	for against, n := range changed { // one in a run
		what := "behaviour changes"
		if n == 1 {
			what = "a behaviour change"
		}
		if n > 1 {
			what = fmt.Sprintf("%d %s", n, what)
		}
		summary += fmt.Sprintf(" (%s of %s)", what, against)
	}
	if skipped > 0 {
		summary += fmt.Sprintf(", %d skipped", skipped)
	}
	return summary
}

// printScenario prints a finished scenario; with kept, its namespace too,
// where its objects stay to be looked at.
func printScenario(out io.Writer, sc *results.Scenario, kept bool) {
	status := "PASS"
	switch {
	case sc.Skipped != "":
		fmt.Fprintf(out, "SKIP  %s  %s\n      %s\n", sc.Name, sc.File, sc.Skipped)
		return
	case !sc.Passed:
		status = "FAIL"
	}
	fmt.Fprintf(out, "%s  %s (%s)  %s\n", status, sc.Name, sc.Duration.Round(100*time.Millisecond), sc.File)
	if kept {
		fmt.Fprintf(out, "      namespace %s\n", sc.Namespace)
	}
	if !sc.Passed {
		fmt.Fprintf(out, "      %s\n", sc.Failure)
	}
}

func printStep(out io.Writer, sc *results.Scenario, st *results.Step) {
	status := "ok  "
	if !st.Passed {
		status = "FAIL"
	}
	fmt.Fprintf(out, "  %s  %s / %s (%s, %s)\n", status, sc.Name, st.Name, st.Kind, st.Duration.Round(10*time.Millisecond))
	for _, w := range st.Writes {
		fmt.Fprintf(out, "          %s\n", w.String())
		for _, warning := range w.Warnings {
			fmt.Fprintf(out, "            warning: %s\n", warning)
		}
	}
}
