package envtest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim/internal/assets"
	"github.com/trainersim/trainersim/sim/internal/proclog"
	"github.com/trainersim/trainersim/sim/internal/startup"
)

// BenchmarkStart starts bare envtest (kube-apiserver and etcd only) and the
// full Environment (plus CRDs, webhooks, kube-controller-manager,
// kube-scheduler, KWOK with the default nodes Ready, the Trainer and JobSet
// controllers and the default runtimes) b.N times each, alternating, and
// reports both median start times, their ratio and the per-component
// breakdown of the full start (each step's median ready time): on the small
// VMs the project runs on, one start in a few takes a second longer than
// the others, which a mean of a few carries into the ratio. The full start
// is from the snapshot, as every start but the first on a machine is: one
// start before the measured ones makes sure it exists, and its time (which
// includes building the snapshot when there was none) is reported apart.
// Target: full/bare <= 1.3. Run with `make bench` (five of each).
func BenchmarkStart(b *testing.B) {
	proclog.Install() // as simctl: the libraries' loggers off the terminal
	bins, err := assets.Find("")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	first := time.Now()
	env := &Environment{Nodes: fakegpu.DefaultNodeGroups()}
	if err := env.Start(ctx); err != nil {
		b.Fatalf("failed to start environment: %v", err)
	}
	firstStart := time.Since(first)
	if err := env.Stop(); err != nil {
		b.Fatalf("failed to stop environment: %v", err)
	}
	var bare, full []time.Duration
	components := map[string][]time.Duration{}
	runs := 0
	for b.Loop() {
		runs++
		start := time.Now()
		te := &envtest.Environment{ControlPlaneStopTimeout: startup.StopGrace}
		te.ControlPlane.GetAPIServer().Path = bins[assets.APIServer]
		te.ControlPlane.Etcd = &envtest.Etcd{Path: bins[assets.Etcd]}
		if _, err := te.Start(); err != nil {
			b.Fatalf("failed to start bare envtest: %v", err)
		}
		bare = append(bare, time.Since(start))
		if err := te.Stop(); err != nil {
			b.Fatalf("failed to stop bare envtest: %v", err)
		}

		start = time.Now()
		env := &Environment{Nodes: fakegpu.DefaultNodeGroups()}
		if err := env.Start(ctx); err != nil {
			b.Fatalf("failed to start environment: %v", err)
		}
		full = append(full, time.Since(start))
		for _, t := range env.Timings() {
			components[t.Name] = append(components[t.Name], t.ReadyAt)
		}
		if err := env.Stop(); err != nil {
			b.Fatalf("failed to stop environment: %v", err)
		}
	}
	bareMedian, fullMedian := median(bare), median(full)
	ratio := fullMedian.Seconds() / bareMedian.Seconds()
	b.ReportMetric(bareMedian.Seconds(), "bare-envtest-s")
	b.ReportMetric(fullMedian.Seconds(), "full-harness-s")
	b.ReportMetric(ratio, "full/bare")
	b.ReportMetric(0, "ns/op")

	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "\nstart times over %d runs each: median, and each run's\n", runs)
	fmt.Fprintf(w, "bare envtest (kube-apiserver+etcd)\t%s\t%s\n", bareMedian.Round(10*time.Millisecond), roundAll(bare))
	fmt.Fprintf(w, "full harness\t%s\t%s\n", fullMedian.Round(10*time.Millisecond), roundAll(full))
	fmt.Fprintf(w, "ratio full/bare\t%.2f\t(target <= 1.30)\n", ratio)
	fmt.Fprintf(w, "first full start (builds the snapshot if missing)\t%s\n", firstStart.Round(10*time.Millisecond))
	fmt.Fprintln(w, "full harness, median time since Start at which each component was ready:")
	names := make([]string, 0, len(components))
	for n := range components {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return median(components[names[i]]) < median(components[names[j]]) })
	for _, n := range names {
		fmt.Fprintf(w, "  %s\t%s\n", n, median(components[n]).Round(10*time.Millisecond))
	}
	_ = w.Flush()
}

// median is the middle of ds, or the mean of the two middle ones.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(ds))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func roundAll(ds []time.Duration) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = d.Round(10 * time.Millisecond).String()
	}
	return "[" + strings.Join(s, " ") + "]"
}
