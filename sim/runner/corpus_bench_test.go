package runner

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/trainersim/trainersim/results"
	"github.com/trainersim/trainersim/sim/internal/proc"
	"github.com/trainersim/trainersim/sim/internal/proclog"
	"github.com/trainersim/trainersim/sim/providers/envtest"
	"github.com/trainersim/trainersim/sim/scenario"
	"github.com/trainersim/trainersim/sim/view"
)

// corpusRun is one measured run of the whole corpus.
type corpusRun struct {
	wall    time.Duration // cluster start included
	start   time.Duration
	results []results.Scenario
	// What the API server spent on the scenarios (start excluded).
	apiCPU   float64 // seconds of CPU
	requests float64
	// byRequest are its requests by verb and resource, cpuOf the CPU
	// seconds of each process of the cluster (processCPU), both start
	// excluded.
	byRequest map[string]float64
	cpuOf     map[string]float64
	// peak is the peak resident memory of each process (peakMemory) at
	// the end of the run.
	peak map[string]uint64
}

// runCorpus starts a cluster, runs every scenario at the given parallelism
// (0: the runner's default) and measures it.
func runCorpus(b *testing.B, files []*scenario.File, parallel int) corpusRun {
	b.Helper()
	return runCorpusViews(b, files, parallel, ViewsFor(files, ""))
}

// runCorpusViews is runCorpus on a cluster whose components of views have
// viewable watches (envtest.Environment.Views).
func runCorpusViews(b *testing.B, files []*scenario.File, parallel int, views []string) corpusRun {
	b.Helper()
	ctx := context.Background()
	begin := time.Now()
	// As simctl run starts them: a second cluster, side by side with the
	// first, for the runs that keep other runs off a cluster.
	envs, stops := startClustersViews(b, files, views)
	defer func() {
		for _, stop := range stops {
			if err := stop(); err != nil {
				b.Error(err)
			}
		}
	}()
	run := corpusRun{start: time.Since(begin)}
	before, cpuBefore := scrapeAPIServer(b, envs[0]), cpuByPID(b)
	if len(envs) > 1 {
		before.add(scrapeAPIServer(b, envs[1]))
	}
	// As simctl run --report-dir reports/out: the cluster goes with the
	// run, and the longest start first by the last make run's durations.
	r := &Runner{Cluster: envs[0], Parallel: parallel, Discarded: true, Durations: lastRunDurations(b)}
	// The second cluster stops once its runs are done, as simctl run's
	// does: what it spent is read just before.
	var apartAfter *apiServerMetrics
	var cpuAtApartDone map[int]ownProcess
	var peakAtApartDone map[int]namedBytes
	var apartErr error
	if len(envs) > 1 {
		r.Apart = envs[1]
		r.ApartDone = func() {
			m, err := readAPIServerMetrics(envs[1])
			cpu, cpuErr := ownProcessesByPID()
			peakAtApartDone = peaksByPID(slices.Collect(maps.Values(cpu)))
			apartAfter, cpuAtApartDone, apartErr = &m, cpu, errors.Join(err, cpuErr, stops[1]())
		}
	}
	results, complete := r.Run(ctx, files)
	run.wall = time.Since(begin)
	if apartErr != nil {
		b.Fatal(apartErr)
	}
	after, cpuAfter := scrapeAPIServer(b, envs[0]), cpuByPID(b)
	switch {
	case apartAfter != nil:
		after.add(*apartAfter)
	case len(envs) > 1:
		after.add(scrapeAPIServer(b, envs[1]))
	}
	ps, err := listOwnProcesses()
	if err != nil {
		b.Fatal(err)
	}
	run.peak = sumByName(peakAtApartDone, peaksByPID(ps)) // the second cluster's too, read before it stopped
	run.apiCPU = after.cpu - before.cpu
	run.requests = after.requests - before.requests
	run.byRequest = delta(after.byRequest, before.byRequest)
	run.cpuOf = cpuDelta(cpuBefore, cpuAtApartDone, cpuAfter)
	run.results = results
	if !complete {
		b.Fatal("the corpus run did not finish")
	}
	for _, sc := range results {
		if !sc.Passed && sc.Skipped == "" {
			// The report is not kept: what the failed step saw goes
			// with its failure.
			var diffs []string
			for _, st := range sc.Steps {
				if st.Diff != "" {
					diffs = append(diffs, st.Diff)
				}
			}
			b.Errorf("%s failed: %s\n%s", sc.Name, sc.Failure, strings.Join(diffs, "\n"))
		}
	}
	return run
}

// startClustersViews starts the clusters simctl run starts for files,
// side by side: one, and a second when some of their runs keep other runs
// off a cluster (RunsApart) and others are left to run beside them. Its
// components of views are viewable. Each cluster's stop stops it once.
func startClustersViews(b *testing.B, files []*scenario.File, views []string) (envs []*envtest.Environment, stops []func() error) {
	b.Helper()
	apart, rest := 0, 0
	for _, p := range Plans(files, nil) {
		if RunsApart(p) {
			apart++
		} else {
			rest++
		}
	}
	envs = []*envtest.Environment{newCorpusCluster(files, views)}
	if apart > 0 && rest > 0 {
		envs = append(envs, newCorpusCluster(files, views))
	}
	errs := make([]error, len(envs))
	var wg sync.WaitGroup
	for i, env := range envs {
		stops = append(stops, sync.OnceValue(env.Stop))
		wg.Go(func() { errs[i] = env.Start(context.Background()) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, stop := range stops {
			_ = stop()
		}
		b.Fatal(err)
	}
	return envs, stops
}

// startCluster starts an envtest cluster with the components files ask
// for (Kueue) and the heartbeat they need, as simctl run starts them; stop
// stops it.
func startCluster(b *testing.B, files []*scenario.File) (env *envtest.Environment, stop func()) {
	b.Helper()
	return startClusterViews(b, files, ViewsFor(files, ""))
}

// startClusterViews is startCluster with the components of views viewable.
func startClusterViews(b *testing.B, files []*scenario.File, views []string) (env *envtest.Environment, stop func()) {
	b.Helper()
	env = newCorpusCluster(files, views)
	if err := env.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	return env, func() {
		if err := env.Stop(); err != nil {
			b.Fatal(err)
		}
	}
}

// newCorpusCluster is the envtest cluster simctl run starts for files
// (Kueue when they ask for it, their heartbeat), its components of views
// viewable; not started.
func newCorpusCluster(files []*scenario.File, views []string) *envtest.Environment {
	return &envtest.Environment{Components: WithComponents(nil, files, ""), Heartbeat: HeartbeatFor(files, ""), Views: views}
}

// lastRunDurations are the durations of the run make run left in
// reports/out, as simctl run --report-dir reports/out reads them; none
// when there is no such run.
func lastRunDurations(b *testing.B) Durations {
	b.Helper()
	data, err := os.ReadFile("../../reports/out/report.json")
	if err != nil {
		return nil
	}
	var run results.Run
	if err := json.Unmarshal(data, &run); err != nil {
		b.Fatalf("reports/out/report.json: %v", err)
	}
	d := Durations{}
	for _, sc := range run.Scenarios {
		d.Add(filepath.Join("../..", sc.File), sc.Duration) // the corpus as loadCorpus names it
	}
	return d
}

func loadCorpus(b *testing.B) []*scenario.File {
	b.Helper()
	proclog.Install() // as simctl: the libraries' loggers off the terminal
	proc.TuneGC()     // and its garbage collector
	files, err := scenario.LoadPaths([]string{"../../scenarios"}, scenario.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return files
}

// BenchmarkCorpus runs the whole scenario corpus the way `simctl run
// scenarios/` does, cluster start included, at the default --parallel, and
// reports the wall time of each run, what the API server spent per
// scenario run (CPU seconds and requests, from its /metrics, start
// excluded), the CPU per scenario run of each process of the cluster (from
// /proc: this process, with the in-process Trainer, JobSet and the runner,
// and each component's), the most frequent requests by verb and resource,
// and where the scenarios' time went (report.json's breakdown, summed),
// then runs the longest scenario alone and reports the corpus's wall time
// over its critical path, the start and that run (target: at most 1.10),
// and the CPU per scenario run (target: at most 0.2 s). A failing scenario
// fails the benchmark.
func BenchmarkCorpus(b *testing.B) {
	files := loadCorpus(b)
	var runs []corpusRun
	for b.Loop() {
		runs = append(runs, runCorpus(b, files, 0))
	}
	var wall, start time.Duration
	var cpu, requests float64
	cpuOf, byRequest := map[string]float64{}, map[string]float64{}
	for _, r := range runs {
		wall += r.wall
		start += r.start
		cpu += r.apiCPU / float64(len(r.results))
		requests += r.requests / float64(len(r.results))
		for k, v := range r.cpuOf {
			cpuOf[k] += v / float64(len(r.results))
		}
		for k, v := range r.byRequest {
			byRequest[k] += v / float64(len(r.results))
		}
	}
	n := len(runs)
	mean := wall / time.Duration(n)
	last := runs[n-1].results
	b.ReportMetric(mean.Seconds(), "corpus-s")
	b.ReportMetric(cpu/float64(n), "apiserver-cpu-s/scenario")
	b.ReportMetric(requests/float64(n), "requests/scenario")
	b.ReportMetric(float64(len(last)), "runs") // one per explored interleaving order
	b.ReportMetric(0, "ns/op")

	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "\ncorpus: %d scenarios (%d runs with the explored interleavings), --parallel %d (the default)\n", len(files), len(last), DefaultParallel())
	fmt.Fprintf(w, "wall, cluster start included\t%s\t(start %s)\n", mean.Round(100*time.Millisecond), (start / time.Duration(n)).Round(10*time.Millisecond))
	fmt.Fprintf(w, "API server per scenario run\t%.3f s CPU, %.0f requests\n", cpu/float64(n), requests/float64(n))
	fmt.Fprintln(w, "CPU per scenario run, by process (start excluded):")
	var cpuAll float64
	for _, v := range cpuOf {
		cpuAll += v / float64(n)
	}
	for _, name := range sortedByValue(cpuOf) {
		if v := cpuOf[name] / float64(n); v >= 0.001 {
			fmt.Fprintf(w, "  %s\t%.3f s\n", name, v)
		}
	}
	fmt.Fprintf(w, "  all\t%.3f s\t(target <= 0.2 s)\n", cpuAll)
	b.ReportMetric(cpuAll, "cpu-s/scenario")
	peak := runs[n-1].peak
	fmt.Fprintf(w, "peak memory of the last run, by process (simctl's since the benchmark began; GOMEMLIMIT %s each):\n", mib(uint64(proc.MemoryLimit())))
	var peakAll uint64
	for _, name := range sortedByValue(peak) {
		peakAll += peak[name]
		fmt.Fprintf(w, "  %s\t%s\n", name, mib(peak[name]))
	}
	fmt.Fprintf(w, "  all\t%s\n", mib(peakAll))
	fmt.Fprintln(w, "API requests per scenario run, the most frequent (verb resource):")
	for i, k := range sortedByValue(byRequest) {
		if i == 15 {
			break
		}
		fmt.Fprintf(w, "  %s\t%.1f\n", k, byRequest[k]/float64(n))
	}
	var total results.Breakdown
	for _, sc := range last {
		total.Add(sc.Breakdown)
	}
	fmt.Fprintf(w, "time of the last run's scenarios, summed\t%s\n", total.String())
	sort.Slice(last, func(i, j int) bool { return last[i].Duration > last[j].Duration })
	// What the slowest scenario's own timers hide: when the others were
	// done, from the start of the run (the cluster's start included).
	if len(last) > 1 {
		first, end := last[0].Started, time.Time{}
		for _, sc := range last {
			if sc.Started.Before(first) {
				first = sc.Started
			}
		}
		for _, sc := range last[1:] {
			if e := sc.Started.Add(sc.Duration); e.After(end) {
				end = e
			}
		}
		lastRun := runs[n-1]
		fmt.Fprintf(w, "every scenario but the slowest done at\t%s\t(cluster start included; the slowest, %s, ended at %s)\n", (lastRun.start + end.Sub(first)).Round(100*time.Millisecond), last[0].Name, (lastRun.start + last[0].Started.Add(last[0].Duration).Sub(first)).Round(100*time.Millisecond))
	}
	fmt.Fprintln(w, "slowest scenarios of the last run:")
	for i := 0; i < len(last) && i < 5; i++ {
		fmt.Fprintf(w, "  %s\t%s\t%s\n", last[i].Name, last[i].Duration.Round(10*time.Millisecond), last[i].Breakdown.String())
	}
	// The critical path: the corpus can end no sooner than its cluster's
	// start and its longest run, that run alone on a cluster of its own.
	// The start is that run's: one cluster's (the corpus's may be two's).
	aloneStart, alone := longestAlone(b, files, last[0])
	path := aloneStart + alone
	fmt.Fprintf(w, "critical path: start + %s alone\t%s\t(start %s, alone %s; the corpus is %.2f times it, target <= 1.10)\n", last[0].Name, path.Round(100*time.Millisecond), aloneStart.Round(10*time.Millisecond), alone.Round(100*time.Millisecond), mean.Seconds()/path.Seconds())
	b.ReportMetric(mean.Seconds()/path.Seconds(), "critical-path-ratio")
	_ = w.Flush()
}

// longestAlone runs the file of a corpus run alone, on a cluster of its
// own, and returns that cluster's start and how long the run took there.
func longestAlone(b *testing.B, files []*scenario.File, longest results.Scenario) (start, took time.Duration) {
	b.Helper()
	i := slices.IndexFunc(files, func(f *scenario.File) bool { return f.Path == longest.File })
	if i < 0 {
		b.Fatalf("no file %s in the corpus", longest.File)
	}
	run := runCorpus(b, files[i:i+1], 0)
	for _, sc := range run.results {
		if sc.Name == longest.Name {
			return run.start, sc.Duration
		}
	}
	b.Fatalf("the run of %s alone has no %s", longest.File, longest.Name)
	return 0, 0
}

// delta returns what grew from before to after, by key: counters or CPU
// seconds read twice. A key that did not grow (a process that exited) is
// left out.
func delta(after, before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// sortedByValue returns m's keys, the largest value first (ties by key).
func sortedByValue[V cmp.Ordered](m map[string]V) []string {
	keys := slices.Sorted(maps.Keys(m))
	slices.SortStableFunc(keys, func(a, b string) int { return cmp.Compare(m[b], m[a]) })
	return keys
}

// BenchmarkCorpusViews runs the corpus scenarios that declare no view three
// times: on a cluster started without views, on one with the components the
// corpus's views name viewable (what `simctl run scenarios/` starts), and on
// one with every component viewable (the in-process managers' transports
// wrapped, each process behind its proxy). It reports the CPU per scenario
// run of each (every process of the cluster, start excluded, by process)
// and their ratios to the first: what a run pays for declaring views,
// beyond what the views keep back. Target: at most 1.10.
func BenchmarkCorpusViews(b *testing.B) {
	corpus := loadCorpus(b)
	var plain []*scenario.File
	for _, f := range corpus {
		if len(f.Scenario.Spec.Views) == 0 {
			plain = append(plain, f)
		}
	}
	configs := []struct {
		name  string
		views []string
	}{{"without views", nil}, {"the corpus's views", ViewsFor(corpus, "")}, {"every component viewable", view.Components()}}
	cpu := make([]map[string]float64, len(configs))
	for i := range cpu {
		cpu[i] = map[string]float64{}
	}
	n := 0
	for b.Loop() {
		for i, c := range configs {
			r := runCorpusViews(b, plain, 0, c.views)
			for k, v := range r.cpuOf {
				cpu[i][k] += v / float64(len(r.results))
			}
		}
		n++
	}
	total := func(m map[string]float64) float64 {
		var all float64
		for _, v := range m {
			all += v
		}
		return all / float64(n)
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "\ncorpus without views (%d scenarios), CPU per scenario run by process (start excluded):\n", len(plain))
	fmt.Fprint(w, "process")
	for _, c := range configs {
		fmt.Fprintf(w, "\t%s", c.name)
	}
	fmt.Fprintln(w)
	for _, name := range sortedByValue(cpu[len(cpu)-1]) {
		fmt.Fprint(w, "  "+name)
		for i := range configs {
			fmt.Fprintf(w, "\t%.3f s", cpu[i][name]/float64(n))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprint(w, "  all")
	for i := range configs {
		fmt.Fprintf(w, "\t%.3f s", total(cpu[i]))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "ratio to a run without views\t\t%.2f\t%.2f\t(target <= 1.10; the corpus's views: %s)\n", total(cpu[1])/total(cpu[0]), total(cpu[2])/total(cpu[0]), strings.Join(configs[1].views, ", "))
	_ = w.Flush()
	b.ReportMetric(total(cpu[0]), "cpu-s/scenario-without-views")
	b.ReportMetric(total(cpu[1])/total(cpu[0]), "corpus-views-cpu-ratio")
	b.ReportMetric(total(cpu[2])/total(cpu[0]), "all-views-cpu-ratio")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkCorpusParallel runs the corpus once at --parallel 4, 6, 12 and
// 16: the measurement DefaultParallel is chosen from.
func BenchmarkCorpusParallel(b *testing.B) {
	files := loadCorpus(b)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "\ncorpus wall time (cluster start included) by --parallel\n")
	for b.Loop() {
		for _, p := range []int{4, 6, 12, 16} {
			r := runCorpus(b, files, p)
			fmt.Fprintf(w, "--parallel %d\t%s\tAPI server %.3f s CPU per scenario run\n", p, r.wall.Round(100*time.Millisecond), r.apiCPU/float64(len(r.results)))
		}
	}
	b.ReportMetric(0, "ns/op")
	_ = w.Flush()
}

// apiServerMetrics are the API server's counters this benchmark reads.
type apiServerMetrics struct {
	cpu      float64 // process_cpu_seconds_total
	requests float64 // apiserver_request_total, every label
	// byRequest is apiserver_request_total by "verb resource[/subresource]",
	// conflicts its requests answered 409 Conflict likewise.
	byRequest, conflicts map[string]float64
}

// add adds o's figures to m's.
func (m *apiServerMetrics) add(o apiServerMetrics) {
	m.cpu += o.cpu
	m.requests += o.requests
	for k, v := range o.byRequest {
		m.byRequest[k] += v
	}
	for k, v := range o.conflicts {
		m.conflicts[k] += v
	}
}

func scrapeAPIServer(b *testing.B, env *envtest.Environment) apiServerMetrics {
	b.Helper()
	m, err := readAPIServerMetrics(env)
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// readAPIServerMetrics is scrapeAPIServer, for any goroutine.
func readAPIServerMetrics(env *envtest.Environment) (apiServerMetrics, error) {
	m := apiServerMetrics{byRequest: map[string]float64{}, conflicts: map[string]float64{}}
	cs, err := kubernetes.NewForConfig(env.Config())
	if err != nil {
		return m, err
	}
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		return m, fmt.Errorf("failed to read the API server's metrics: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, value, ok := metricSample(line)
		if !ok {
			continue
		}
		switch name {
		case "process_cpu_seconds_total":
			m.cpu = value
		case "apiserver_request_total":
			m.requests += value
			labels := metricLabels(line)
			what := labels["resource"]
			if s := labels["subresource"]; s != "" {
				what += "/" + s
			}
			m.byRequest[labels["verb"]+" "+what] += value
			if labels["code"] == "409" {
				m.conflicts[labels["verb"]+" "+what] += value
			}
		}
	}
	return m, nil
}

// metricLabels returns the labels of a sample line of the Prometheus text
// format (values without escapes, as the API server's request labels are).
func metricLabels(line string) map[string]string {
	out := map[string]string{}
	open, end := strings.IndexByte(line, '{'), strings.LastIndexByte(line, '}')
	if open < 0 || end < open {
		return out
	}
	for _, kv := range strings.Split(line[open+1:end], ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			out[k] = strings.Trim(v, `"`)
		}
	}
	return out
}

// processCPU returns the CPU seconds (user and system) of this process,
// named selfName, and of each of its descendants, by command name
// (kube-apiserver, etcd, kwok, ...; the same name's processes summed), from
// /proc.
func processCPU(b *testing.B) map[string]float64 {
	out := map[string]float64{}
	for _, p := range ownProcesses(b) {
		out[p.name] += p.Seconds
	}
	return out
}

// cpuByPID is ownProcesses by pid.
func cpuByPID(b *testing.B) map[int]ownProcess {
	b.Helper()
	out, err := ownProcessesByPID()
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// ownProcessesByPID is ownProcesses by pid, for any goroutine.
func ownProcessesByPID() (map[int]ownProcess, error) {
	ps, err := listOwnProcesses()
	out := map[int]ownProcess{}
	for _, p := range ps {
		out[p.pid] = p
	}
	return out, err
}

// cpuDelta is the CPU each process (by name) spent from before to the
// last of later that still has it (nil ones skipped): a process that
// exited in between (a second cluster's, stopped once its runs were done)
// counts up to the snapshot taken before it stopped.
func cpuDelta(before map[int]ownProcess, later ...map[int]ownProcess) map[string]float64 {
	last := map[int]ownProcess{}
	for _, snap := range later {
		maps.Copy(last, snap)
	}
	out := map[string]float64{}
	for pid, p := range last {
		if d := p.Seconds - before[pid].Seconds; d > 0 {
			out[p.name] += d
		}
	}
	return out
}

// ownProcess is this process or one of its descendants.
type ownProcess struct {
	pid  int
	name string // selfName, or the command name
	proc.CPU
}

// ownProcesses returns, from /proc, this process and each of its
// descendants.
func ownProcesses(b *testing.B) []ownProcess {
	b.Helper()
	out, err := listOwnProcesses()
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// listOwnProcesses is ownProcesses, for any goroutine.
func listOwnProcesses() ([]ownProcess, error) {
	procs, err := proc.CPUTimes()
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var out []ownProcess
	for pid, p := range procs {
		switch {
		case pid == self:
			out = append(out, ownProcess{pid, selfName, p})
		case descends(procs, pid, self):
			out = append(out, ownProcess{pid, p.Comm, p})
		}
	}
	return out, nil
}

// metricSample parses a sample line of the Prometheus text format.
func metricSample(line string) (string, float64, bool) {
	if strings.HasPrefix(line, "#") {
		return "", 0, false
	}
	sp := strings.LastIndexByte(line, ' ')
	if sp < 0 {
		return "", 0, false
	}
	v, err := strconv.ParseFloat(line[sp+1:], 64)
	if err != nil {
		return "", 0, false
	}
	name := line[:sp]
	if i := strings.IndexByte(name, '{'); i >= 0 {
		name = name[:i]
	}
	return name, v, true
}
