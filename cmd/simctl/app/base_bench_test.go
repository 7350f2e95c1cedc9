package app

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/trainersim/trainersim/sim/scenario"
)

// defaultBenchBase is the commit BenchmarkCorpusAgainstBase compares with
// unless BENCH_BASE names another: main on 2026-11-26 before issue 23's
// work on the CPU per scenario (3b4e95a, the kind audit log; the corpus
// is the same file for file).
const defaultBenchBase = "3b4e95a"

// corpusProcessRun is one `simctl run` as a process.
type corpusProcessRun struct {
	wall, cpu time.Duration // cpu: the process and the children it waited for
	runs      int
}

// oneScenario is the run whose CPU stands for a run's start and stop: the
// README example alone.
const oneScenario = "scenarios/examples/sdk-and-kueue-share-a-gpu-job.yaml"

// BenchmarkCorpusAgainstBase runs the corpus as users do, `simctl run`
// end to end as a process (cluster start included, default --parallel), on
// the files this tree's walk of scenarios/ finds (the fleets of scale/ left
// out, which a base may not know), with this tree's simctl and with the simctl of an earlier
// commit (BENCH_BASE, default defaultBenchBase) built from a worktree of
// this repository, one after the other, b.N times each, on this tree's
// scenarios and assets. It prints both binaries' wall time and CPU
// (user and system time of simctl and of every process it started: the
// control plane, KWOK, Kueue) per scenario run, side by side, and their
// ratio; and, to leave the cluster's start and stop out, the same for the
// README example alone with each binary, whose CPU is taken from the
// corpus's: (corpus - one) / (runs - 1). Issue 23's target: this tree's
// CPU per scenario run at most half the base's. A failing scenario fails
// the benchmark.
func BenchmarkCorpusAgainstBase(b *testing.B) {
	base := benchBase()
	root, err := filepath.Abs("../../..")
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	head := filepath.Join(dir, "simctl-head")
	build := exec.Command("go", "build", "-o", head, "./cmd/simctl")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("failed to build this tree's simctl: %v\n%s", err, out)
	}
	old := buildAt(b, root, base, filepath.Join(dir, "simctl-base"))
	headRev := strings.TrimSpace(gitOutput(b, root, "rev-parse", "--short", "HEAD"))
	if dirty := gitOutput(b, root, "status", "--porcelain", "--untracked-files=no"); dirty != "" {
		headRev += " with uncommitted changes"
	}

	// The corpus as this tree walks scenarios/ (the fleets of scale/ left
	// out), named file by file to both binaries: the same files for each.
	corpus, err := scenario.FindFiles([]string{filepath.Join(root, "scenarios")})
	if err != nil {
		b.Fatal(err)
	}
	// The files added or changed since the base are left out for both:
	// the base may not load them (views, component steps) or not run
	// them as this tree does (a kubelet behaviour it lacks).
	corpus, leftOut := unchangedSince(b, root, base, corpus)
	var heads, bases, headOnes, baseOnes []corpusProcessRun
	for b.Loop() {
		n := len(bases)
		bases = append(bases, runCorpusProcess(b, old, root, filepath.Join(dir, fmt.Sprintf("base-%d", n)), corpus...))
		heads = append(heads, runCorpusProcess(b, head, root, filepath.Join(dir, fmt.Sprintf("head-%d", n)), corpus...))
		baseOnes = append(baseOnes, runCorpusProcess(b, old, root, filepath.Join(dir, fmt.Sprintf("base-one-%d", n)), oneScenario))
		headOnes = append(headOnes, runCorpusProcess(b, head, root, filepath.Join(dir, fmt.Sprintf("head-one-%d", n)), oneScenario))
	}
	headCPU, baseCPU := cpuPerRun(heads), cpuPerRun(bases)
	headNet, baseNet := cpuPerRunLessStart(heads, headOnes), cpuPerRunLessStart(bases, baseOnes)
	b.ReportMetric(headNet, "cpu-s/scenario")
	b.ReportMetric(baseNet, "base-cpu-s/scenario")
	b.ReportMetric(headNet/baseNet, "cpu-ratio")
	b.ReportMetric(0, "ns/op")

	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "\nsimctl run on the corpus (this tree's walk of scenarios/, less %d files added or changed since the base) as a process, cluster start included, this tree against %s, %d runs each, alternately\n", leftOut, base, len(heads))
	fmt.Fprintln(w, "binary\tcommit\tscenario runs\twall\tCPU (simctl and its children)\tper scenario run\tthe README example alone: wall, CPU\tper scenario run, start and stop left out")
	for _, row := range []struct {
		name, rev          string
		runs, ones         []corpusProcessRun
		perRun, perRunLess float64
	}{{"base", base, bases, baseOnes, baseCPU, baseNet}, {"this tree", headRev, heads, headOnes, headCPU, headNet}} {
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%.3f s\t%s\t%.3f s\n", row.name, row.rev, row.runs[0].runs, joinRuns(row.runs, corpusProcessRun.wallOf), joinRuns(row.runs, corpusProcessRun.cpuOf), row.perRun, joinRuns(row.ones, corpusProcessRun.wallOf)+"; "+joinRuns(row.ones, corpusProcessRun.cpuOf), row.perRunLess)
	}
	fmt.Fprintf(w, "CPU per scenario run, this tree / base\t%.2f start included, %.2f left out\t(target: at most 0.5)\n", headCPU/baseCPU, headNet/baseNet)
	w.Flush()
}

// unchangedSince returns the files (absolute, under root) that are the
// same at commit base as in the working tree, and how many it left out.
func unchangedSince(b *testing.B, root, base string, files []string) ([]string, int) {
	b.Helper()
	changed := map[string]bool{}
	for _, rel := range strings.Fields(gitOutput(b, root, "diff", "--name-only", base, "--", "scenarios")) {
		changed[filepath.Join(root, rel)] = true
	}
	var out []string
	for _, f := range files {
		if !changed[f] {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		b.Fatalf("every file of the corpus changed since %s: nothing to compare on", base)
	}
	return out, len(files) - len(out)
}

// benchBase is the commit the benchmarks compare with: BENCH_BASE, else
// defaultBenchBase.
func benchBase() string {
	if base := os.Getenv("BENCH_BASE"); base != "" {
		return base
	}
	return defaultBenchBase
}

// buildAt builds simctl of commit rev of the repository at root into out,
// from a worktree removed afterwards.
func buildAt(b *testing.B, root, rev, out string) string {
	b.Helper()
	tree := filepath.Join(b.TempDir(), "base")
	gitOutput(b, root, "worktree", "add", "--detach", tree, rev)
	defer gitOutput(b, root, "worktree", "remove", "--force", tree)
	build := exec.Command("go", "build", "-o", out, "./cmd/simctl")
	build.Dir = tree
	if o, err := build.CombinedOutput(); err != nil {
		b.Fatalf("failed to build simctl at %s: %v\n%s", rev, err, o)
	}
	return out
}

// gitOutput runs git in dir and returns its output.
func gitOutput(b *testing.B, dir string, args ...string) string {
	b.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("git %s: %v\n%s (BENCH_BASE must name a commit of this clone's history)", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (r corpusProcessRun) wallOf() time.Duration { return r.wall }
func (r corpusProcessRun) cpuOf() time.Duration  { return r.cpu }

// joinRuns lists one figure of each run.
func joinRuns(runs []corpusProcessRun, figure func(corpusProcessRun) time.Duration) string {
	var out []string
	for _, r := range runs {
		out = append(out, figure(r).Round(100*time.Millisecond).String())
	}
	return strings.Join(out, ", ")
}

// runCorpusProcess runs `simctl run PATH...` with the binary simctl in
// root, its reports in reportDir, and measures it.
func runCorpusProcess(b *testing.B, simctl, root, reportDir string, paths ...string) corpusProcessRun {
	b.Helper()
	cmd := exec.Command(simctl, append(append([]string{"run"}, paths...), "--report-dir", reportDir)...)
	path := strings.Join(paths, " ")
	if len(paths) > 1 {
		path = fmt.Sprintf("(%d files)", len(paths))
	}
	cmd.Dir = root
	start := time.Now()
	out, err := cmd.CombinedOutput()
	run := corpusProcessRun{wall: time.Since(start)}
	if err != nil {
		b.Fatalf("%s run %s: %v\n%s", simctl, path, err, out)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		b.Fatalf("%s run %s: no resource usage for the process (not Linux?)", simctl, path)
	}
	run.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	data, err := os.ReadFile(filepath.Join(reportDir, "report.json"))
	if err != nil {
		b.Fatal(err)
	}
	var report struct {
		Scenarios []struct {
			Name    string `json:"name"`
			Passed  bool   `json:"passed"`
			Skipped string `json:"skipped"`
		} `json:"scenarios"`
	}
	if err := json.Unmarshal(data, &report); err != nil {
		b.Fatalf("%s: %v", reportDir, err)
	}
	run.runs = len(report.Scenarios)
	for _, sc := range report.Scenarios {
		if !sc.Passed && sc.Skipped == "" {
			b.Errorf("%s: %s failed", simctl, sc.Name)
		}
	}
	return run
}

// cpuPerRun is the mean CPU per scenario run of runs, in seconds: every
// run of the report counted, the skipped ones too, as BenchmarkCorpus
// counts them.
func cpuPerRun(runs []corpusProcessRun) float64 {
	var sum float64
	for _, r := range runs {
		sum += r.cpu.Seconds() / float64(r.runs)
	}
	return sum / float64(len(runs))
}

// cpuPerRunLessStart is the mean CPU per scenario run of runs less the
// CPU of the run of one scenario beside it (ones[i] for runs[i]): the
// start and stop of the cluster left out, in seconds.
func cpuPerRunLessStart(runs, ones []corpusProcessRun) float64 {
	var sum float64
	for i, r := range runs {
		sum += (r.cpu - ones[i].cpu).Seconds() / float64(r.runs-ones[i].runs)
	}
	return sum / float64(len(runs))
}
