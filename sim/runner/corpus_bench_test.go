package runner

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sort"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/trainersim/trainersim/reports"
	"github.com/trainersim/trainersim/sim"
	"github.com/trainersim/trainersim/sim/scenario"
)

// BenchmarkCorpus runs the whole scenario corpus the way `simctl run
// scenarios/` does, cluster start included, --parallel at the number of
// CPUs, and reports the wall time of each run. Target: under 3 minutes on
// the 2-core project machine. A failing scenario fails the benchmark.
func BenchmarkCorpus(b *testing.B) {
	files, err := scenario.LoadPaths([]string{"../../scenarios"}, scenario.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if dir, err := scenario.FindFixturesDir(); err == nil {
		FixturesDir = dir
	}
	var runs []time.Duration
	var last []reports.Scenario
	for b.Loop() {
		start := time.Now()
		env := &sim.Environment{}
		if err := env.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		r := &Runner{Cluster: env, Parallel: runtime.NumCPU()}
		results, complete := r.Run(context.Background(), files)
		runs = append(runs, time.Since(start))
		if err := env.Stop(); err != nil {
			b.Fatal(err)
		}
		if !complete {
			b.Fatal("the corpus run did not finish")
		}
		for _, sc := range results {
			if !sc.Passed {
				b.Errorf("%s failed: %s", sc.Name, sc.Failure)
			}
		}
		last = results
	}
	var sum time.Duration
	for _, d := range runs {
		sum += d
	}
	mean := sum / time.Duration(len(runs))
	b.ReportMetric(mean.Seconds(), "corpus-s")
	b.ReportMetric(float64(len(files)), "scenarios")
	b.ReportMetric(float64(len(last)), "runs") // one per explored interleaving order
	b.ReportMetric(0, "ns/op")

	sort.Slice(last, func(i, j int) bool { return last[i].Duration > last[j].Duration })
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "\ncorpus: %d scenarios (%d runs with the explored interleavings), cluster start included, --parallel %d: mean %s over %d runs %v (target < 3m)\n", len(files), len(last), runtime.NumCPU(), mean.Round(100*time.Millisecond), len(runs), runs)
	fmt.Fprintln(w, "slowest scenarios of the last run:")
	for i := 0; i < len(last) && i < 5; i++ {
		fmt.Fprintf(w, "  %s\t%s\n", last[i].Name, last[i].Duration.Round(100*time.Millisecond))
	}
	_ = w.Flush()
}
