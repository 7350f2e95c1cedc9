package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trainersim/trainersim/reports"
	"github.com/trainersim/trainersim/results"
	"github.com/trainersim/trainersim/sim"
	"github.com/trainersim/trainersim/sim/runner"
	"github.com/trainersim/trainersim/sim/scenario"
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
}

func newRunCommand(streams Streams) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run PATH... [--report-dir DIR] [--parallel N] [--run REGEX] [--label key=value] [--keep] [--timeout D]",
		Short: "Run scenarios on one local cluster and report what happened",
		Long: `run loads every scenario file named or found under PATH (*.yaml, recursively),
starts one cluster, and runs each scenario in its own namespace on its own
simulated nodes, several at a time. It prints one line per scenario as it
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
changes between them: README, "Trainer releases"). A scenario whose
spec.trainer.versions leaves the release out is skipped, with its range, and
a step whose trainer.versions does is left out: a scenario carries one case
per release where the outcome differs.

A concurrently group with interleavings is run once per explored order, each
order in a fresh namespace, its writes forced through one after the other.
Each order comes from a seed, printed with the result; --seed S runs only the
order of seed S in every such scenario, which replays a failing order exactly.

Exit codes: 0 every scenario passed, 1 a scenario failed or the run was
interrupted, 2 invalid scenario or usage, 3 the cluster could not be started.
Ctrl-C stops the run and still writes the reports of finished scenarios.`,
		Example: `  simctl run scenarios/
  simctl run scenarios/ --report-dir reports/out --parallel 2
  simctl run scenarios/ --run 'kueue' --label area=multi-manager -v
  simctl run scenarios/examples/sdk-and-kueue-share-a-gpu-job.yaml --keep
  simctl run --trainer v2.1.0 scenarios/
  simctl run --seed 2 --run '^multi-manager-interleaved-read-modify-write$' scenarios/multi-manager/`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("seed") {
				f.seedFlag = &f.seed
			}
			return runScenarios(cmd.Context(), streams, f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.reportDir, "report-dir", "", "write report.jsonl and junit.xml here as scenarios finish, report.json and report.html at the end")
	fl.IntVar(&f.parallel, "parallel", 0, "scenarios run at once; 0: three times the CPUs, chosen by measurement (see the README)")
	fl.StringVar(&f.run, "run", "", "run only scenarios whose name matches this regular expression")
	fl.StringArrayVar(&f.labels, "label", nil, "run only scenarios with this label (key=value; repeatable, all must match)")
	fl.BoolVar(&f.keep, "keep", false, "leave the cluster, namespaces and nodes up after the run: until Ctrl-C on envtest;\na kind cluster stays after simctl exits, until 'simctl clean --cluster kind'")
	fl.DurationVar(&f.timeout, "timeout", runner.DefaultScenarioTimeout, "time limit of each scenario")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "print every step and its writes, with the server's warnings")
	fl.Uint64Var(&f.seed, "seed", 0, "in scenarios that explore interleavings, run only the order of this seed")
	fl.StringVar(&f.fixtures, "fixtures", "", "directory that setup[].path is relative to (default: the nearest fixtures/ above the working directory)")
	fl.BoolVar(&f.cluster.unisolated, "unisolated", false, "with --kubeconfig, on a cluster that serves no MutatingAdmissionPolicy: run anyway, one scenario at a time,\nat the risk of scenario Pods landing on the cluster's own nodes")
	f.cluster.registerCluster(cmd)
	f.cluster.registerExisting(cmd)
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
	files, err := scenario.LoadPaths(paths, scenario.Options{FixturesDir: f.fixtures})
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
	if o.Provider != sim.ClusterKind && o.Kubeconfig == "" {
		o.Components = runner.WithComponents(o.Components, files, o.Trainer)
	}
	if f.reportDir != "" {
		if err := os.MkdirAll(f.reportDir, 0o755); err != nil {
			return withCode(ExitUsage, fmt.Errorf("invalid --report-dir: %w", err))
		}
	}
	if f.fixtures != "" {
		runner.FixturesDir = f.fixtures
	} else if dir, err := scenario.FindFixturesDir(); err == nil {
		runner.FixturesDir = dir
	}

	run := &results.Run{Started: time.Now()}
	plans := runner.Plans(files, f.seedFlag)
	runs := len(plans)
	if f.seedFlag != nil && !slices.ContainsFunc(plans, func(p runner.Plan) bool { return p.Interleaving != nil }) {
		fmt.Fprintln(streams.Err, "warning: --seed has no effect: no selected scenario explores interleavings")
	}
	if runs == len(files) {
		fmt.Fprintf(streams.Out, "%d scenarios from %s\n", len(files), strings.Join(paths, " "))
	} else {
		fmt.Fprintf(streams.Out, "%d scenarios (%d runs: interleavings) from %s\n", len(files), runs, strings.Join(paths, " "))
	}
	env, err := startCluster(ctx, streams.Out, o)
	defer stopCluster(env, &err)
	if err != nil {
		return err
	}
	v := env.Versions()
	run.Cluster, run.KubernetesVersion, run.TrainerVersion, run.JobSetVersion, run.KueueVersion = v.Cluster, v.Kubernetes, v.Trainer, v.JobSet, v.Kueue
	parallel := f.parallel
	if i, ok := env.(interface{ Isolated() bool }); ok && !i.Isolated() {
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
			Paths:             paths,
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
		Parallel:        parallel,
		ScenarioTimeout: f.timeout,
		Keep:            f.keep,
		Seed:            f.seedFlag,
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
	if journal != nil {
		if err := errors.Join(recordErr, journal.Finish(run)); err != nil {
			return withCode(ExitFailed, fmt.Errorf("failed to write reports: %w", err))
		}
		abs, _ := filepath.Abs(f.reportDir)
		fmt.Fprintf(streams.Out, "reports: %s\n", filepath.Join(abs, "report.html"))
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
	return nil
}

// resultSummary counts results: "3 passed, 1 failed, 2 skipped".
func resultSummary(scenarios []results.Scenario) string {
	passed, skipped := 0, 0
	for _, sc := range scenarios {
		switch {
		case sc.Skipped != "":
			skipped++
		case sc.Passed:
			passed++
		}
	}
	summary := fmt.Sprintf("%d passed, %d failed", passed, len(scenarios)-passed-skipped)
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
		fmt.Fprintf(out, "          %s %s as %s: HTTP %d %s\n", w.Verb, w.Target, w.FieldManager, w.Status, firstLineOf(w.Message))
		for _, warning := range w.Warnings {
			fmt.Fprintf(out, "            warning: %s\n", warning)
		}
	}
}

func firstLineOf(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
