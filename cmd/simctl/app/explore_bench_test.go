package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkExplore measures explore's rate and what a plan costs: simctl
// explore of three corpus scenarios, twelve plans (four each, every kind),
// as a process. It reports plans a minute, reference runs and the
// cluster's start included (as explore's summary prints it), and a plan's
// cost: the mean of each plan's run less its scenario's reference run, the
// component restart (or down time) the plan asks for. A confirmed finding
// is a result (exit 1); any other failure fails the benchmark. Run with
// `make bench`.
func BenchmarkExplore(b *testing.B) {
	simctl := buildSimctl(b)
	paths := []string{
		scenarioPath(b, "examples/first-scenario.yaml"),
		scenarioPath(b, "real-kueue/preemption-by-higher-priority.yaml"),
		scenarioPath(b, "multi-manager/lost-update.yaml"),
	}
	var plans, refs int
	var took, overhead time.Duration
	for b.Loop() {
		out := b.TempDir()
		cmd := exec.Command(simctl, append([]string{"explore", "--plans", "12", "-o", out}, paths...)...)
		cmd.Dir = "../../.." // the repository, whose fixtures/ explore finds
		if combined, err := cmd.CombinedOutput(); err != nil {
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != ExitFailed {
				b.Fatalf("simctl explore: %v\n%s", err, combined)
			}
		}
		data, err := os.ReadFile(filepath.Join(out, "explore.json"))
		if err != nil {
			b.Fatal(err)
		}
		var report exploreReport
		if err := json.Unmarshal(data, &report); err != nil {
			b.Fatal(err)
		}
		if len(report.Run) == 0 || len(report.References) != len(paths) {
			b.Fatalf("explore ran %d plans of %d scenarios explored, want 12 of %d:\n%s", len(report.Run), len(report.References), len(paths), data)
		}
		plans += len(report.Run)
		took += report.Duration
		for _, r := range report.Run {
			overhead += r.Duration - report.References[r.File]
			refs++
		}
	}
	rate := float64(plans) / took.Minutes()
	cost := overhead / time.Duration(refs)
	b.ReportMetric(rate, "plans/min")
	b.ReportMetric(cost.Seconds(), "plan-overhead-s")
	b.ReportMetric(0, "ns/op")
	fmt.Fprintf(os.Stdout, "\nsimctl explore of 3 scenarios, 12 plans: %.1f plans a minute (reference runs and the cluster's start included); a plan's run takes %s more than its scenario's reference run, on average\n", rate, cost.Round(10*time.Millisecond))
}
