package app

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/trainersim/trainersim/results"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/minimize"
	"github.com/trainersim/trainersim/sim/runner"
	"github.com/trainersim/trainersim/sim/scenario"
)

// defaultVerifyRuns is how many times minimize runs its result unless told.
const defaultVerifyRuns = 3

// A candidate's expectations are checked for at most waitFactor times what
// the original's took, and at least minWait (within their own within): a
// candidate that does not end the same way mostly fails by a wait that is
// never met, which would otherwise cost each such run its whole within.
const (
	waitFactor = 5
	minWait    = 2 * time.Second
)

type minimizeFlags struct {
	cluster      clusterFlags
	out          string
	keep         []string
	dropRefusals bool
	noFields     bool
	maxRuns      int
	verify       int
	parallel     int
	timeout      time.Duration
	fixtures     string
}

func newMinimizeCommand(streams Streams) *cobra.Command {
	var f minimizeFlags
	cmd := &cobra.Command{
		Use:   "minimize FILE [-o OUT] [--keep STEP]... [--drop-refusals] [--no-fields] [--max-runs N] [--verify N]",
		Short: "Shorten a scenario to what makes it end the way it does",
		Long: `minimize runs a scenario (an imported incident, say: simctl import) once to
learn how it ends, passing or failing at a step with a failure, then removes
what it can while it still ends that way, and writes the shortest scenario it
found: short enough to file upstream. Every candidate is a real run, each in a
namespace of its own on one cluster it starts (or --kubeconfig's), several at
a time (--parallel); a candidate that ran before is not run again, and one that
does not lint (a step another names was removed) is not run at all.

It removes, in turn (delta debugging: chunks of them, then smaller chunks):
- steps: a write (or a node, kubelet, release or concurrently step) with the
  expect-only steps just before it (an imported scenario's waits, which order
  the write after a component's work), which go only with it;
- set-up objects, node groups, then nodes of each group left (1, 2, 4, ...);
- fields of every body written (unless --no-fields), from the top down: a
  field, a list item or a whole subtree at a time; a body's apiVersion, kind
  and name stay.
What stays: the steps after the last write (what the scenario asserts), or
the step it fails at (the steps after it are dropped: they never ran); every
refused write, unless --drop-refusals; the steps --keep names; the actors a
step or gate still names.

A run decides each candidate, so a candidate that ends the same way by
chance (a race whose order the removed steps stated) can be taken: the
result is run --verify times at the end, and minimize says how many ended the
same way (exit 1 if not all: --keep the steps that order the race).

Progress goes to standard error, one line per batch of runs; the scenario to
-o, else to standard output. Ctrl-C, or --max-runs reached, stops the search
and still writes the shortest scenario found.

Exit codes: 0 written and every verification run ended the same way; 1
written, but a verification run ended otherwise or the search was
interrupted; 2 invalid scenario or usage, or a scenario this cluster skips;
3 the cluster could not be started.`,
		Example: `  simctl import --audit-log /tmp/recorded/audit.log -o incident.yaml
  simctl minimize incident.yaml -o incident-min.yaml
  simctl minimize incident.yaml --keep 'kueue applies its entry' --drop-refusals -o min.yaml
  simctl up --kubeconfig-out /tmp/kept.kubeconfig &
  simctl minimize --kubeconfig /tmp/kept.kubeconfig --no-fields incident.yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return minimizeScenario(cmd.Context(), streams, f, args[0])
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.out, "output", "o", "", "write the shortest scenario to this file (default: standard output)")
	fl.StringArrayVar(&f.keep, "keep", nil, "a step that stays, with the expect-only steps just before it (repeatable)")
	fl.BoolVar(&f.dropRefusals, "drop-refusals", false, "let refused writes (steps with expectError) go too when the scenario ends the same way without them")
	fl.BoolVar(&f.noFields, "no-fields", false, "leave the bodies whole: remove only steps, set-up objects and nodes")
	fl.IntVar(&f.maxRuns, "max-runs", minimize.DefaultMaxRuns, "stop after this many runs, with the shortest scenario found")
	fl.IntVar(&f.verify, "verify", defaultVerifyRuns, "run the result this many times at the end (0: not at all)")
	fl.IntVar(&f.parallel, "parallel", 0, "candidates run at once; 0: six times the CPUs, as simctl run")
	fl.DurationVar(&f.timeout, "timeout", runner.DefaultScenarioTimeout, "time limit of each run")
	fl.StringVar(&f.fixtures, "fixtures", "", "directory that setup[].path is relative to (default: the nearest fixtures/ above the working directory)")
	f.cluster.registerCluster(cmd)
	f.cluster.registerExisting(cmd)
	return cmd
}

func minimizeScenario(ctx context.Context, streams Streams, f minimizeFlags, path string) (err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	file, err := scenario.Load(path, data, scenario.Options{FixturesDir: f.fixtures})
	if err != nil {
		return withCode(ExitUsage, fmt.Errorf("invalid scenario:\n%w", err))
	}
	if f.maxRuns < 1 || f.verify < 0 || f.parallel < 0 {
		return withCode(ExitUsage, errors.New("--max-runs must be at least 1, --verify and --parallel at least 0"))
	}
	for _, k := range f.keep {
		if !slices.ContainsFunc(file.Scenario.Spec.Steps, func(st v1alpha1.Step) bool { return st.Name == k }) {
			return withCode(ExitUsage, fmt.Errorf("--keep %q: %s has no step of that name", k, path))
		}
	}
	o, err := f.cluster.options("")
	if err != nil {
		return err
	}
	o.Nodes = nil
	files := []*scenario.File{file}
	if o.ClusterName() != cluster.Kubeconfig {
		o.Components = runner.WithComponents(o.Components, files, o.Trainer)
		o.Heartbeat = runner.HeartbeatFor(files, o.Trainer)
		o.Views = runner.ViewsFor(files, o.Trainer)
	}
	if o.ClusterName() != cluster.Envtest {
		o.Serve = runner.NeedsServing(files, o.ClusterName(), o.Trainer)
	}
	env, err := startCluster(ctx, streams.Err, o)
	defer stopCluster(env, &err)
	if err != nil {
		return err
	}
	parallel := cmp.Or(f.parallel, runner.DefaultParallel())
	if i, ok := env.(cluster.Isolation); ok && !i.Isolated() {
		parallel = 1
	}
	watches := runner.StartWatches(ctx, env.Config(), env.Client().RESTMapper())
	defer watches.Stop()
	// A cluster minimize started goes when it ends: the candidates'
	// namespaces and nodes go with it, as simctl run's do.
	c := &candidates{path: path, fixtures: file.FixturesDir, cluster: env, timeout: f.timeout, discarded: o.Kubeconfig == "", watches: watches, startedAt: time.Now()}

	out, verifyErr, err := shorten(ctx, streams.Err, c, file, data, minimize.Options{
		Keep:         f.keep,
		DropRefusals: f.dropRefusals,
		NoFields:     f.noFields,
		Batch:        parallel,
		MaxRuns:      f.maxRuns,
	}, f.verify)
	if err != nil {
		if c.skipped != nil {
			return withCode(ExitUsage, c.skipped)
		}
		return withCode(ExitFailed, err)
	}
	if f.out == "" {
		if _, err := streams.Out.Write(out); err != nil {
			return err
		}
	} else {
		if err := os.WriteFile(f.out, out, 0o644); err != nil {
			return withCode(ExitFailed, err)
		}
		fmt.Fprintf(streams.Err, "scenario: %s\n", f.out)
	}
	switch {
	case verifyErr != nil:
		return withCode(ExitFailed, verifyErr)
	case ctx.Err() != nil:
		return withCode(ExitFailed, errors.New("interrupted: the scenario written is the shortest found so far"))
	}
	return nil
}

// shorten minimizes the scenario of file (read from data) with c's runs,
// printing its progress to w, then runs the result verify times; it
// returns the shortest scenario's file (the original's comments, then what
// minimize did) and, when a verification run ended otherwise or did not
// finish, why.
func shorten(ctx context.Context, w io.Writer, c *candidates, file *scenario.File, data []byte, o minimize.Options, verify int) (out []byte, verifyErr, err error) {
	path := file.Path
	fmt.Fprintf(w, "minimizing %s: %s\n", path, describeSize(minimize.SizeOf(file.Scenario)))
	o.Valid = func(sc *v1alpha1.Scenario) error { _, err := c.load(sc); return err }
	o.Progress = func(p minimize.Progress) {
		fmt.Fprintf(w, "  %-6s %4d runs (%d cached, %d not linted), %d steps, at %s\n", p.Phase, p.Runs, p.Cached, p.Invalid, p.Steps, time.Since(c.startedAt).Round(100*time.Millisecond))
	}
	res, err := minimize.Minimize(ctx, file.Scenario, c.test, o)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to run %s: %w", path, err)
	}
	fmt.Fprintf(w, "the original %s\n", res.Want)
	fmt.Fprintf(w, "%s -> %s; %d fields removed, in %d runs (%d more judged from an earlier run, %d not linted, never run) in %s\n",
		describeSize(res.Before), describeSize(res.After), res.FieldsRemoved, res.Runs, res.Cached, res.Invalid, time.Since(c.startedAt).Round(100*time.Millisecond))
	if res.Stopped != "" {
		fmt.Fprintf(w, "stopped before the search was done (%s): the scenario is shorter, not as short as it can be\n", res.Stopped)
	}
	verified := ""
	if verify > 0 && ctx.Err() == nil {
		others, err := c.verify(ctx, res.Scenario, verify, res.Want)
		same := verify - len(others)
		switch {
		case err != nil:
			verifyErr = fmt.Errorf("the verification runs did not finish: %w", err)
			verified = "not verified: " + err.Error()
		case same < verify:
			verifyErr = fmt.Errorf("the result ended as the original in %d of %d runs (the others: %s): a removed step stated an order it needs (--keep it), or the scenario does not always end the same way (simctl run --shake the original)", same, verify, outcomesText(others))
			verified = fmt.Sprintf("ended as the original in %d of %d verification runs", same, verify)
		default:
			verified = fmt.Sprintf("ended as the original in %d of %d verification runs", same, verify)
		}
		fmt.Fprintf(w, "the result %s\n", verified)
	}
	out, err = minimizedYAML(data, path, res, verified)
	return out, verifyErr, err
}

// candidates runs minimize's candidates on one cluster.
type candidates struct {
	path      string
	fixtures  string
	cluster   cluster.Cluster
	timeout   time.Duration
	discarded bool
	watches   *runner.Watches
	// skipped is set when a run was skipped: this cluster cannot run the
	// scenario.
	skipped   error
	startedAt time.Time

	// took is how long each expect step of the original's run took, by
	// name; nil until it ran. Candidates' waits are cut to it (cutWaits).
	took map[string]time.Duration
	// verifying runs the result with its own waits.
	verifying bool

	mu sync.Mutex
	n  int
}

// load lints a candidate as simctl lint does, under a name of its own.
func (c *candidates) load(sc *v1alpha1.Scenario) (*scenario.File, error) {
	data, err := yaml.Marshal(sc)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.n++
	name := fmt.Sprintf("%s (candidate %d)", c.path, c.n)
	c.mu.Unlock()
	return scenario.Load(name, data, scenario.Options{FixturesDir: c.fixtures})
}

// test runs cands at once, each in its own namespace.
func (c *candidates) test(ctx context.Context, cands []*v1alpha1.Scenario) ([]minimize.Outcome, error) {
	files := make([]*scenario.File, len(cands))
	for i, sc := range cands {
		f, err := c.load(sc)
		if err != nil {
			return nil, fmt.Errorf("a candidate does not lint (a bug of minimize): %w", err)
		}
		c.cutWaits(f.Scenario)
		files[i] = f
	}
	done, err := runFiles(ctx, &runner.Runner{Cluster: c.cluster, Parallel: len(files), ScenarioTimeout: c.timeout, Discarded: c.discarded, Watches: c.watches}, files)
	if err != nil {
		return nil, err
	}
	runs := map[string][]results.Scenario{}
	for _, sc := range done {
		runs[sc.File] = append(runs[sc.File], sc)
	}
	if c.took == nil && len(done) > 0 {
		c.took = map[string]time.Duration{}
		for _, st := range done[0].Steps {
			c.took[st.Name] = st.Duration
		}
	}
	out := make([]minimize.Outcome, len(files))
	for i, f := range files {
		for _, sc := range runs[f.Path] {
			if sc.Skipped != "" {
				c.skipped = fmt.Errorf("%s is skipped on this cluster: %s", c.path, sc.Skipped)
				return nil, c.skipped
			}
		}
		out[i] = outcomeOf(runs[f.Path], minimize.SizeOf(f.Scenario).Nodes)
	}
	return out, nil
}

// runFiles runs files with r, all of them to their end and their
// namespaces' teardowns: a run that did not finish is an error.
func runFiles(ctx context.Context, r *runner.Runner, files []*scenario.File) ([]results.Scenario, error) {
	done, complete := r.Run(ctx, files)
	if !complete {
		return nil, cmp.Or(ctx.Err(), errors.New("a run did not finish"))
	}
	if err := r.Teardowns(); err != nil {
		return nil, err
	}
	return done, nil
}

// cutWaits bounds each expect step of a candidate by what the original's
// took (waitFactor, minWait), once the original has run.
func (c *candidates) cutWaits(sc *v1alpha1.Scenario) {
	if c.took == nil || c.verifying {
		return
	}
	for i := range sc.Spec.Steps {
		e := sc.Spec.Steps[i].Expect
		took, ok := c.took[sc.Spec.Steps[i].Name]
		if e == nil || !ok {
			continue
		}
		within := cmp.Or(e.Within.Duration, v1alpha1.DefaultWithin)
		e.Within.Duration = min(within, max(minWait, waitFactor*took))
	}
}

// verify runs sc n times at once, with its own waits, and returns how the
// runs that did not end as want ended.
func (c *candidates) verify(ctx context.Context, sc *v1alpha1.Scenario, n int, want minimize.Outcome) ([]minimize.Outcome, error) {
	c.verifying = true
	cands := make([]*v1alpha1.Scenario, n)
	for i := range cands {
		cands[i] = sc
	}
	out, err := c.test(ctx, cands)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(out, func(o minimize.Outcome) bool { return o.Same(want) }), nil
}

// outcomesText says how runs ended, one clause each.
func outcomesText(outcomes []minimize.Outcome) string {
	texts := make([]string, len(outcomes))
	for i, o := range outcomes {
		texts[i] = o.String()
	}
	return strings.Join(texts, "; ")
}

// notTrueWithin is the start of a wait's failure, which names its within.
var notTrueWithin = regexp.MustCompile(`^not true within [^:]+: `)

// generatedSuffix ends a name the API server or a controller generated
// (generateName, a Pod of a Job): five characters of the alphabet of
// k8s.io/apimachinery/pkg/util/rand, other in every run.
var generatedSuffix = regexp.MustCompile(`-[bcdfghjklmnpqrstvwxz2456789]{5}\b`)

// outcomeOf is how the runs of one candidate (one per explored order)
// ended: passed, or the first failing run's step and failure, its
// namespace and nodes' names made the same for every run, and the
// scheduler's tallies of nodes counting only the scenario's own (nodes
// of them: ownNodesTally).
func outcomeOf(runs []results.Scenario, nodes int) minimize.Outcome {
	for _, sc := range runs {
		if sc.Passed {
			continue
		}
		o := minimize.Outcome{Failure: results.FirstLine(sc.Failure)}
		for _, st := range sc.Steps {
			if !st.Passed {
				o.Step = st.Name
				o.Failure = results.FirstLine(st.Failure)
			}
		}
		// A wait cut short (cutWaits) says so: "not true within 2s: ...".
		o.Failure = notTrueWithin.ReplaceAllString(o.Failure, "not true within its time: ")
		if ns := sc.Namespace; ns != "" {
			o.Failure = strings.ReplaceAll(o.Failure, ns, "<namespace>")
			o.Failure = strings.ReplaceAll(o.Failure, "sim-"+ns[strings.LastIndexByte(ns, '-')+1:], "<nodes>")
		}
		o.Failure = generatedSuffix.ReplaceAllString(o.Failure, "-<generated>")
		o.Failure = ownNodesTally(o.Failure, nodes)
		return o
	}
	return minimize.Outcome{Passed: len(runs) > 0}
}

// schedulerTally is the scheduler's count of the nodes a Pod fits none of,
// by reason: "0/4 nodes are available: 1 Insufficient nvidia.com/gpu, 3
// node(s) had untolerated taint(s)." (the end: a period before a space, a
// parenthesis or the end; a reason may hold one, nvidia.com).
var schedulerTally = regexp.MustCompile(`(\d+)/(\d+) nodes are available: (.*?)\.(\s|\)|$)`)

// othersReasons are what the scheduler says of another scenario's node,
// tainted and labelled for that scenario's Pods alone: in its tally, and
// in the preemption's.
var othersReasons = []string{"node(s) had untolerated taint(s)", "node(s) didn't match Pod's node affinity/selector", "Preemption is not helpful for scheduling"}

// ownNodesTally takes out of the scheduler's tallies in failure the nodes
// that are not the scenario's (it has own): the other runs' on a cluster
// they share, whose number changes from run to run (a discarded cluster
// keeps every run's). They count as untolerated taints, and in the
// preemption's tally as nodes where preemption does not help; a tally of
// no more nodes than own is left as it is.
func ownNodesTally(failure string, own int) string {
	return schedulerTally.ReplaceAllStringFunc(failure, func(m string) string {
		sub := schedulerTally.FindStringSubmatch(m)
		total, err := strconv.Atoi(sub[2])
		if err != nil || total <= own {
			return m
		}
		others := total - own
		var kept []string
		for _, clause := range strings.Split(sub[3], ", ") {
			count, reason, _ := strings.Cut(clause, " ")
			n, err := strconv.Atoi(count)
			if err == nil && others > 0 && slices.Contains(othersReasons, reason) {
				theirs := min(n, others)
				others -= theirs
				if n -= theirs; n == 0 {
					continue
				}
				clause = fmt.Sprintf("%d %s", n, reason)
			}
			kept = append(kept, clause)
		}
		return fmt.Sprintf("%s/%d nodes are available: %s.%s", sub[1], own, strings.Join(kept, ", "), sub[4])
	})
}

// describeSize says a scenario's size in a few words.
func describeSize(s minimize.Size) string {
	return fmt.Sprintf("%d steps, %d actors, %d set-up objects, %d node groups (%d nodes)", s.Steps, s.Actors, s.Setup, s.NodeGroups, s.Nodes)
}

// minimizedYAML is the result as a file: the original's leading comments
// (an import's notes), a line that says where it comes from, the scenario.
func minimizedYAML(original []byte, path string, res *minimize.Result, verified string) ([]byte, error) {
	body, err := yaml.Marshal(res.Scenario)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for _, line := range strings.SplitAfter(string(original), "\n") {
		if !strings.HasPrefix(line, "#") {
			break
		}
		b.WriteString(line)
	}
	fmt.Fprintf(&b, "# Minimized by simctl minimize from %s (%s) to %s in %d runs; the original %s", filepath.Base(path), describeSize(res.Before), describeSize(res.After), res.Runs, res.Want)
	if verified != "" {
		fmt.Fprintf(&b, "; the result %s", verified)
	}
	if res.Stopped != "" {
		fmt.Fprintf(&b, "; stopped early (%s)", res.Stopped)
	}
	b.WriteString(".\n")
	b.Write(body)
	return b.Bytes(), nil
}
