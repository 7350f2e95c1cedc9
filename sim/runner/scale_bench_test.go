package runner

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/trainersim/trainersim/sim/internal/proc"
	"github.com/trainersim/trainersim/sim/internal/proclog"
	"github.com/trainersim/trainersim/sim/providers/envtest"
	"github.com/trainersim/trainersim/sim/scenario"
)

// scaleRun is one measured run of a fleet scenario of scenarios/scale.
type scaleRun struct {
	nodes, jobs, pods int
	// setUp is the scenario's set-up (its nodes, queues and webhook),
	// toRunning from its first write to every Pod Running: the steps.
	setUp, toRunning time.Duration
	// cpu is each process's CPU seconds over the scenario (start
	// excluded), peak each process's peak resident memory (VmHWM) at its
	// end, in bytes: the harness's own is its peak since the benchmark
	// began, so of the largest fleet so far.
	cpu  map[string]float64
	peak map[string]uint64
	// requests the API server served for the scenario; conflicts those
	// it answered 409 Conflict, by "verb resource".
	requests             float64
	byRequest, conflicts map[string]float64
	// idle is the fleet at rest once its run is over: what its nodes and
	// Pods cost the cluster by themselves (fleetIdle).
	idle idleFleet
}

// renewals are the Lease renewals (PUT leases) the API server served for
// the run: the nodes' own, every 10 s on a fleet's cluster, and the
// components' leader elections.
func (r scaleRun) renewals() float64 { return r.byRequest["PUT leases"] }

// renewalsCPU is the CPU of every process the run's Lease renewals
// account for, at the CPU per renewal of the fleet at rest: what the
// cluster spends to keep its nodes, which grows with nodes times the
// run's time.
func (r scaleRun) renewalsCPU() float64 { return r.renewals() * r.idle.cpuPerRenewal() }

// BenchmarkScale runs each fleet of scenarios/scale (hack/scalegen: 10,
// 100 and 1,000 simulated GPU nodes with 10, 50 and 500 TrainJobs of three
// managers each, the real Kueue with four teams' queues) on a cluster of
// its own, smallest first, and prints the growth curve: set-up, the time
// from the first write to every Pod Running, the CPU of each process and
// the peak memory of the API server, etcd and the harness, and the cost
// per node from one fleet to the next; then each fleet at rest for
// idleWindow after its run, and the growth without the CPU the run's Lease
// renewals account for at the CPU per renewal at rest. Targets (issue 23): the
// 1,000-node fleet done within 10 minutes and 8 GiB on the 2-core machine,
// its cost growing no faster than linearly in nodes and jobs. make
// bench-scale runs it; a failing fleet fails the benchmark.
func BenchmarkScale(b *testing.B) {
	proclog.Install() // as simctl: the libraries' loggers off the terminal
	proc.TuneGC()     // and its garbage collector
	// A walk skips scale/ below the path it is given, not the path itself.
	files, err := scenario.LoadPaths([]string{"../../scenarios/" + scenario.ScaleDir}, scenario.Options{})
	if err != nil {
		b.Fatalf("%v (go run ./hack/scalegen writes the fleets)", err)
	}
	slices.SortFunc(files, func(x, y *scenario.File) int { return fleetNodes(x) - fleetNodes(y) })
	var runs []scaleRun
	for b.Loop() {
		runs = runs[:0]
		for _, f := range files {
			runs = append(runs, runFleet(b, f))
		}
	}
	printScale(runs)
	last := runs[len(runs)-1]
	b.ReportMetric(last.toRunning.Seconds(), "largest-to-running-s")
	b.ReportMetric(0, "ns/op")
}

// fleetNodes is the number of nodes a scenario asks for.
func fleetNodes(f *scenario.File) int {
	n := 0
	for _, g := range f.Scenario.Spec.Nodes {
		n += g.Count
	}
	return n
}

// runFleet starts a cluster with the components f asks for, runs f on it
// and measures the run.
func runFleet(b *testing.B, f *scenario.File) scaleRun {
	b.Helper()
	ctx := context.Background()
	files := []*scenario.File{f}
	env, stop := startCluster(b, files)
	defer stop()
	before, cpuBefore := scrapeAPIServer(b, env), processCPU(b)
	r := &Runner{Cluster: env, Discarded: true}
	res, complete := r.Run(ctx, files)
	after, cpuAfter := scrapeAPIServer(b, env), processCPU(b)
	if !complete || len(res) != 1 {
		b.Fatalf("%s did not finish", f.Scenario.Metadata.Name)
	}
	sc := res[0]
	if !sc.Passed {
		b.Fatalf("%s failed: %s", sc.Name, sc.Failure)
	}
	run := scaleRun{
		nodes:     fleetNodes(f),
		requests:  after.requests - before.requests,
		byRequest: delta(after.byRequest, before.byRequest),
		conflicts: delta(after.conflicts, before.conflicts),
		setUp:     sc.Breakdown.SetUp,
		cpu:       delta(cpuAfter, cpuBefore),
		peak:      peakMemory(b),
	}
	for _, st := range sc.Steps {
		run.toRunning += st.Duration
	}
	run.idle = fleetIdle(b, env)
	for _, st := range f.Scenario.Spec.Steps {
		if c := st.Concurrently; c != nil {
			run.jobs += len(c.Writes)
		}
		if e := st.Expect; e != nil && e.Pods != nil && e.Pods.Count != nil {
			run.pods += *e.Pods.Count
		}
	}
	return run
}

// idleWindow is how long fleetIdle measures a fleet at rest: three
// Lease renewals of the Kubernetes heartbeat a fleet's cluster gets
// (HeartbeatFor: every 10 s).
const idleWindow = 30 * time.Second

// idleFleet is what a fleet at rest costs the cluster over idleWindow.
type idleFleet struct {
	cpu      float64            // every process's CPU seconds
	byProc   map[string]float64 // each process's
	renewals float64            // Lease renewals (PUT leases) the API server served
}

// cpuPerRenewal is the CPU per Lease renewal of the fleet at rest: its
// renewals and everything else its nodes cost (KWOK's and the
// node-lifecycle controller's rounds over every node), and the cluster's
// own upkeep, counted by the renewals.
func (i idleFleet) cpuPerRenewal() float64 {
	if i.renewals == 0 {
		return 0
	}
	return i.cpu / i.renewals
}

// fleetIdle measures idleWindow of env once a fleet's run is over: on a
// Discarded cluster the fleet's nodes and its Running Pods stay, and
// nothing changes but what the cluster does to keep them (the nodes' Lease
// renewals, KWOK's and the node-lifecycle controller's rounds over every
// node), which the fleet's run spent too, for as long as it lasted.
func fleetIdle(b *testing.B, env *envtest.Environment) idleFleet {
	b.Helper()
	before, cpuBefore := scrapeAPIServer(b, env), processCPU(b)
	time.Sleep(idleWindow) // a window of measurement, not a wait for a state
	after, cpuAfter := scrapeAPIServer(b, env), processCPU(b)
	idle := idleFleet{byProc: delta(cpuAfter, cpuBefore), renewals: after.byRequest["PUT leases"] - before.byRequest["PUT leases"]}
	for _, v := range idle.byProc {
		idle.cpu += v
	}
	return idle
}

// peakMemory returns the peak resident memory (VmHWM) of this process
// (the harness, with the in-process Trainer and JobSet) and of each
// process it started, by command name.
func peakMemory(b *testing.B) map[string]uint64 {
	b.Helper()
	ps, err := listOwnProcesses()
	if err != nil {
		b.Fatal(err)
	}
	return sumByName(peaksByPID(ps))
}

// peaksByPID is the peak resident memory (VmHWM) of each of ps that is
// still there, by pid, with its name.
func peaksByPID(ps []ownProcess) map[int]namedBytes {
	out := map[int]namedBytes{}
	for _, p := range ps {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid))
		if err != nil {
			continue // exited
		}
		for line := range strings.SplitSeq(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				out[p.pid] = namedBytes{p.name, kb * 1024}
			}
		}
	}
	return out
}

// namedBytes is a process's name and a size.
type namedBytes struct {
	name  string
	bytes uint64
}

// sumByName sums sizes by process name, the last of snaps that has a pid
// counting for it.
func sumByName(snaps ...map[int]namedBytes) map[string]uint64 {
	last := map[int]namedBytes{}
	for _, snap := range snaps {
		maps.Copy(last, snap)
	}
	out := map[string]uint64{}
	for _, p := range last {
		out[p.name] += p.bytes
	}
	return out
}

// descends reports whether pid is a descendant of ancestor.
func descends(procs map[int]proc.CPU, pid, ancestor int) bool {
	for a := procs[pid].PPID; a > 1; a = procs[a].PPID {
		if a == ancestor {
			return true
		}
	}
	return false
}

// printScale prints the growth curve.
func printScale(runs []scaleRun) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "\nfleets of scenarios/scale, each on a cluster of its own (start excluded):")
	fmt.Fprintln(w, "nodes\tjobs\tPods\tset-up\tto every Pod Running\tAPI requests\tCPU all\tAPI server\tetcd\tsimctl\tpeak all\tAPI server\tetcd\tsimctl\t")
	for _, r := range runs {
		fmt.Fprintf(w, "%d\t%d\t%d\t%s\t%s\t%.0f\t%.1f s\t%.1f s\t%.1f s\t%.1f s\t%s\t%s\t%s\t%s\t\n",
			r.nodes, r.jobs, r.pods, r.setUp.Round(10*time.Millisecond), r.toRunning.Round(10*time.Millisecond), r.requests,
			r.allCPU(), r.cpu["kube-apiserver"], r.cpu["etcd"], r.cpu[selfName], mib(r.allPeak()), mib(r.peak["kube-apiserver"]), mib(r.peak["etcd"]), mib(r.peak[selfName]))
	}
	_ = w.Flush()
	fmt.Fprintln(w, "\ngrowth from one fleet to the next (1.0: linear in the fleet's nodes; CPU and time per node):")
	for i := 1; i < len(runs); i++ {
		p, r := runs[i-1], runs[i]
		fmt.Fprintf(w, "%d to %d nodes\tCPU per node x%.2f\ttime per node x%.2f\tset-up per node x%.2f\tAPI requests per node x%.2f\t\n", p.nodes, r.nodes,
			growth(p, r, scaleRun.allCPU),
			growth(p, r, func(x scaleRun) float64 { return x.toRunning.Seconds() }),
			growth(p, r, func(x scaleRun) float64 { return x.setUp.Seconds() }),
			growth(p, r, func(x scaleRun) float64 { return x.requests }))
	}
	_ = w.Flush()
	printRenewals(runs)
	last := runs[len(runs)-1]
	fmt.Printf("largest fleet: %d nodes, %d jobs: set-up and run %s (target 10m), peak memory of every process %s (target 8 GiB)\n",
		last.nodes, last.jobs, (last.setUp + last.toRunning).Round(100*time.Millisecond), mib(last.allPeak()))
	fmt.Printf("largest fleet's API requests, the most frequent (verb resource):")
	for i, k := range sortedByValue(last.byRequest) {
		if i == 8 {
			break
		}
		fmt.Printf(" %s %.0f;", k, last.byRequest[k])
	}
	fmt.Println()
	fmt.Printf("largest fleet's writes refused with 409 Conflict (each a retry of its writer, with its controller's back-off):")
	for _, k := range sortedByValue(last.conflicts) {
		fmt.Printf(" %s %.0f;", k, last.conflicts[k])
	}
	fmt.Println()
	fmt.Printf("largest fleet's CPU by process:")
	for _, k := range sortedByValue(last.cpu) {
		if last.cpu[k] >= 0.1 {
			fmt.Printf(" %s %.1f s;", k, last.cpu[k])
		}
	}
	fmt.Println()
	printPerJob(runs)
}

// growth is how much v per node grows from fleet p to fleet r: 1.0 when
// v grows as the nodes do.
func growth(p, r scaleRun, v func(scaleRun) float64) float64 {
	return (v(r) / float64(r.nodes)) / (v(p) / float64(p.nodes))
}

// printRenewals prints what each fleet costs at rest, the share of
// its run the Lease renewals account for, and the growth without them:
// the renewals grow with nodes times the run's time, and a run's time with
// its jobs on a machine whose cores are busy throughout.
func printRenewals(runs []scaleRun) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "\nthe fleets at rest (%s after the run, its nodes and Running Pods kept, nothing else changing), and the runs' Lease renewals at the CPU per renewal at rest:\n", idleWindow)
	fmt.Fprintln(w, "nodes\tCPU all at rest\trenewals at rest\tCPU per renewal\trun's renewals\ttheir CPU\trun's CPU all without them\t")
	for _, r := range runs {
		fmt.Fprintf(w, "%d\t%.1f s\t%.0f\t%.2f ms\t%.0f\t%.1f s\t%.1f s\t\n", r.nodes, r.idle.cpu, r.idle.renewals, 1000*r.idle.cpuPerRenewal(), r.renewals(), r.renewalsCPU(), r.allCPU()-r.renewalsCPU())
	}
	_ = w.Flush()
	last := runs[len(runs)-1]
	fmt.Printf("largest fleet at rest, CPU by process:")
	for _, k := range sortedByValue(last.idle.byProc) {
		if last.idle.byProc[k] >= 0.05 {
			fmt.Printf(" %s %.2f s;", k, last.idle.byProc[k])
		}
	}
	fmt.Println()
	for i := 1; i < len(runs); i++ {
		p, r := runs[i-1], runs[i]
		without := func(x scaleRun) float64 { return x.allCPU() - x.renewalsCPU() }
		fmt.Printf("%d to %d nodes: CPU per node without the Lease renewals x%.2f (with them x%.2f)\n", p.nodes, r.nodes, growth(p, r, without), growth(p, r, scaleRun.allCPU))
	}
}

// printPerJob prints, for each fleet, the CPU of each process and the API
// requests the largest fleet made most, per job: what grows faster than
// the jobs shows as a column rising to the right.
func printPerJob(runs []scaleRun) {
	last := runs[len(runs)-1]
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(w, "\nper job, by fleet (nodes/jobs)\t")
	for _, r := range runs {
		fmt.Fprintf(w, "%d/%d\t", r.nodes, r.jobs)
	}
	fmt.Fprintln(w)
	row := func(name string, v func(scaleRun) float64, format string) {
		fmt.Fprintf(w, "%s\t", name)
		for _, r := range runs {
			fmt.Fprintf(w, format+"\t", v(r)/float64(r.jobs))
		}
		fmt.Fprintln(w)
	}
	row("CPU s, all", scaleRun.allCPU, "%.3f")
	for _, k := range sortedByValue(last.cpu) {
		if last.cpu[k] >= 0.1 {
			row("CPU s, "+k, func(r scaleRun) float64 { return r.cpu[k] }, "%.3f")
		}
	}
	row("API requests, all", func(r scaleRun) float64 { return r.requests }, "%.1f")
	for i, k := range sortedByValue(last.byRequest) {
		if i == 12 {
			break
		}
		row(k, func(r scaleRun) float64 { return r.byRequest[k] }, "%.1f")
	}
	_ = w.Flush()
}

// allCPU is the CPU seconds of every process over the fleet's run.
func (r scaleRun) allCPU() float64 {
	var sum float64
	for _, v := range r.cpu {
		sum += v
	}
	return sum
}

// allPeak is the sum of every process's peak resident memory.
func (r scaleRun) allPeak() uint64 {
	var sum uint64
	for _, v := range r.peak {
		sum += v
	}
	return sum
}

// selfName is processCPU's and peakMemory's name of this process.
const selfName = "simctl (in-process Trainer, JobSet, runner)"

func mib(bytes uint64) string { return fmt.Sprintf("%d MiB", bytes>>20) }
