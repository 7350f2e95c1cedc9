package runner

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/trainersim/trainersim/results"
	"github.com/trainersim/trainersim/sim/internal/proclog"
	"github.com/trainersim/trainersim/sim/providers/envtest"
	"github.com/trainersim/trainersim/sim/scenario"
)

// corpusRun is one measured run of the whole corpus.
type corpusRun struct {
	wall    time.Duration // cluster start included
	start   time.Duration
	results []results.Scenario
	// What the API server spent on the scenarios (start excluded).
	apiCPU   float64 // seconds of CPU
	requests float64
}

// runCorpus starts a cluster, runs every scenario at the given parallelism
// (0: the runner's default) and measures it.
func runCorpus(b *testing.B, files []*scenario.File, parallel int) corpusRun {
	b.Helper()
	ctx := context.Background()
	begin := time.Now()
	// The components the corpus asks for (Kueue), as simctl run starts them.
	env := &envtest.Environment{Components: WithComponents(nil, files, "")}
	if err := env.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			b.Fatal(err)
		}
	}()
	run := corpusRun{start: time.Since(begin)}
	before := scrapeAPIServer(b, env)
	r := &Runner{Cluster: env, Parallel: parallel}
	results, complete := r.Run(ctx, files)
	run.wall = time.Since(begin)
	after := scrapeAPIServer(b, env)
	run.apiCPU = after.cpu - before.cpu
	run.requests = after.requests - before.requests
	run.results = results
	if !complete {
		b.Fatal("the corpus run did not finish")
	}
	for _, sc := range results {
		if !sc.Passed && sc.Skipped == "" {
			b.Errorf("%s failed: %s", sc.Name, sc.Failure)
		}
	}
	return run
}

func loadCorpus(b *testing.B) []*scenario.File {
	b.Helper()
	proclog.Install() // as simctl: the libraries' loggers off the terminal
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
// excluded) and where the scenarios' time went (report.json's breakdown,
// summed). Target: under 20 s on the 2-core project machine. A failing
// scenario fails the benchmark.
func BenchmarkCorpus(b *testing.B) {
	files := loadCorpus(b)
	var runs []corpusRun
	for b.Loop() {
		runs = append(runs, runCorpus(b, files, 0))
	}
	var wall, start time.Duration
	var cpu, requests float64
	for _, r := range runs {
		wall += r.wall
		start += r.start
		cpu += r.apiCPU / float64(len(r.results))
		requests += r.requests / float64(len(r.results))
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
	fmt.Fprintf(w, "wall, cluster start included\t%s\t(target < 20s; start %s)\n", mean.Round(100*time.Millisecond), (start / time.Duration(n)).Round(10*time.Millisecond))
	fmt.Fprintf(w, "API server per scenario run\t%.3f s CPU, %.0f requests\n", cpu/float64(n), requests/float64(n))
	var total results.Breakdown
	for _, sc := range last {
		total.Add(sc.Breakdown)
	}
	fmt.Fprintf(w, "time of the last run's scenarios, summed\t%s\n", total.String())
	sort.Slice(last, func(i, j int) bool { return last[i].Duration > last[j].Duration })
	fmt.Fprintln(w, "slowest scenarios of the last run:")
	for i := 0; i < len(last) && i < 5; i++ {
		fmt.Fprintf(w, "  %s\t%s\t%s\n", last[i].Name, last[i].Duration.Round(10*time.Millisecond), last[i].Breakdown.String())
	}
	_ = w.Flush()
}

// BenchmarkCorpusParallel runs the corpus once at --parallel 2, 4, 6 and
// 8: the measurement DefaultParallel is chosen from.
func BenchmarkCorpusParallel(b *testing.B) {
	files := loadCorpus(b)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "\ncorpus wall time (cluster start included) by --parallel\n")
	for b.Loop() {
		for _, p := range []int{2, 4, 6, 8} {
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
}

func scrapeAPIServer(b *testing.B, env *envtest.Environment) apiServerMetrics {
	b.Helper()
	cs, err := kubernetes.NewForConfig(env.Config())
	if err != nil {
		b.Fatal(err)
	}
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatalf("failed to read the API server's metrics: %v", err)
	}
	var m apiServerMetrics
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
		}
	}
	return m
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
