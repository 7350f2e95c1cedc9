// Package e2e_test proves, on a real trainersim cluster, that a TrainJob with
// runtime patches becomes Pods created by the Job controller, placed by the
// scheduler on simulated GPU nodes and moved to Running by KWOK; and that
// simctl up serves a usable cluster and leaves nothing behind when killed.
package e2e_test

import (
	"context"
	"os/exec"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/trainersim/trainersim/fakegpu"
	"github.com/trainersim/trainersim/sim"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/providers/envtest"
	"github.com/trainersim/trainersim/sim/view"
)

// Named timeouts, long enough for a loaded 2-core CI machine.
const (
	// podsRunningTimeout bounds TrainJob create -> Pods Running.
	podsRunningTimeout = 90 * time.Second
	// unschedulableTimeout bounds TrainJob create -> scheduler verdict.
	unschedulableTimeout = 90 * time.Second
	// consistentlyPending is how long Pending Pods must stay Pending.
	consistentlyPending = 3 * time.Second
	// simctlReadyTimeout bounds simctl up's start.
	simctlReadyTimeout = 3 * time.Minute
	// processExitTimeout bounds how long children may outlive a killed simctl.
	processExitTimeout = 15 * time.Second
	pollInterval       = 250 * time.Millisecond
)

var (
	env *envtest.Environment
	k8s client.Client
)

// otherPaths labels the specs of the paths make test leaves to make
// test-paths: other Trainer releases, local checkouts (TRAINER_DIR,
// KUEUE_DIR), the corpus's round trip and an import's minimisation (record,
// import, replay or minimize). Each takes half a minute to minutes of a
// 2-core machine and tests a path a contributor's change seldom touches
// (their units are tested in make test); the specs of the tool's contract
// stay in make test.
const otherPaths = "other-paths"

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	suiteConfig, reporterConfig := GinkgoConfiguration()
	if suiteConfig.LabelFilter == "" {
		// go test ./sim/e2e, as make test runs it: the contract's specs.
		// make test-paths gives -ginkgo.label-filter=other-paths, make
		// test-kubelet kubelet-differential.
		suiteConfig.LabelFilter = "!" + otherPaths + " && !" + kubeletDifferential
	}
	RunSpecs(t, "trainersim e2e suite", suiteConfig, reporterConfig)
}

var _ = BeforeSuite(func(ctx context.Context) {
	sim.RouteProcessLogs() // as simctl: the libraries' loggers off the terminal
	// Views on: every component's watches through the views' registry (a
	// proxy for those that run as processes), as in a run that declares a
	// view of each.
	env = &envtest.Environment{Views: view.Components(), Nodes: []fakegpu.NodeGroup{
		{Profile: "nvidia-h100-80gb", Count: 2},
		{Profile: "cpu", Count: 1},
	}}
	Expect(env.Start(ctx)).To(Succeed())
	k8s = env.Client()
	for _, t := range env.Timings() {
		GinkgoWriter.Printf("%-28s ready at %s\n", t.Name, t.ReadyAt)
	}
}, NodeTimeout(cluster.DefaultStartTimeout+time.Minute))

var _ = AfterSuite(func() {
	gexec.CleanupBuildArtifacts()
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

// builtSimctl is simctl built from this tree, once for the suite's process
// (the first buildSimctl), removed after the suite.
var builtSimctl string

// buildSimctl returns the path of simctl built from this tree: built at the
// first call of the suite's process, the same binary for every later spec.
func buildSimctl() string {
	if builtSimctl == "" {
		simctl, err := gexec.Build("github.com/trainersim/trainersim/cmd/simctl")
		Expect(err).NotTo(HaveOccurred())
		builtSimctl = simctl
	}
	return builtSimctl
}

// startSimctl starts simctl with args for the spec it is called in, its
// output in the spec's log; it is killed when the spec ends.
func startSimctl(simctl string, args ...string) *gexec.Session {
	session, err := gexec.Start(exec.Command(simctl, args...), GinkgoWriter, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { session.Kill() })
	return session
}
