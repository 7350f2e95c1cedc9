package envtest

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim/internal/proc"
	"github.com/trainersim/trainersim/sim/internal/proclog"
)

// BenchmarkHollowNode adds a hollow node (kubelet: hollow, the nvidia-h100-80gb
// profile) to a started environment b.N times, removing each, and reports
// the mean time until it is Ready and schedulable; then it keeps one for
// hollowRest with no Pod and reports what it costs at rest: the hollow
// kubelet's CPU per second and its resident memory (what docs/fidelity.md
// says to weigh before choosing hollow nodes). Run with `make bench`.
func BenchmarkHollowNode(b *testing.B) {
	const hollowRest = 30 * time.Second
	proclog.Install()
	ctx := context.Background()
	env := &Environment{Nodes: []fakegpu.NodeGroup{{Profile: "cpu", Count: 1}}}
	if err := env.Start(ctx); err != nil {
		b.Fatalf("failed to start environment: %v", err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			b.Errorf("failed to stop environment: %v", err)
		}
	}()
	group := func(i int) []fakegpu.NodeGroup {
		return []fakegpu.NodeGroup{{Profile: "nvidia-h100-80gb", Count: 1, Kubelet: fakegpu.KubeletHollow, NamePrefix: "hollow-" + strconv.Itoa(i)}}
	}
	var ready time.Duration
	n := 0
	for b.Loop() {
		start := time.Now()
		names, err := env.AddNodes(ctx, group(n))
		if err != nil {
			b.Fatalf("hollow node: %v", err)
		}
		ready += time.Since(start)
		n++
		if err := env.RemoveNodes(ctx, names); err != nil {
			b.Fatalf("hollow node: %v", err)
		}
	}
	b.ReportMetric(ready.Seconds()/float64(n), "s-to-ready")

	if _, err := env.AddNodes(ctx, group(n)); err != nil {
		b.Fatalf("hollow node: %v", err)
	}
	before, err := hollowCPU()
	if err != nil {
		b.Fatal(err)
	}
	time.Sleep(hollowRest) // the measured rest itself, not a wait for a state
	after, err := hollowCPU()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric((after.seconds-before.seconds)/hollowRest.Seconds()*1000, "rest-cpu-ms/s")
	b.ReportMetric(float64(after.rssKiB)/1024, "rss-MiB")
}

// hollowUsage is the CPU time and resident memory of the hollow kubelets
// of this machine.
type hollowUsage struct {
	seconds float64
	rssKiB  int64
}

func hollowCPU() (hollowUsage, error) {
	procs, err := proc.CPUTimes()
	if err != nil {
		return hollowUsage{}, err
	}
	var u hollowUsage
	for pid, c := range procs {
		if c.Comm != HollowNodeBinary {
			continue
		}
		u.seconds += c.Seconds
		data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kib, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				u.rssKiB += kib
			}
		}
	}
	return u, nil
}
