// Package scenarios_test runs every scenario file below this folder as an
// e2e-framework feature on one shared trainersim cluster, in parallel as
// simctl run runs them (sim/sime2e: at most its default --parallel at once,
// the runs that must not overlap apart, the explain agreement checked
// against the in-process Trainer on every one), and the smallest fleet of
// scale/ (which a walk skips), so that the fleets' format (four teams'
// queues on the real Kueue) and hack/scalegen's output are run by make
// test; the larger fleets are make bench-scale's. The cluster is envtest,
// or what $TRAINERSIM_KUBECONFIG, $TRAINERSIM_CLUSTER and
// $TRAINERSIM_TRAINER say (sim.ClusterOptionsFromEnv).
package scenarios_test

import (
	"os"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/envfuncs"

	"github.com/trainersim/trainersim/sim"
	"github.com/trainersim/trainersim/sim/sime2e"
)

var (
	testenv    env.Environment
	trainersim = sime2e.NewProvider(sim.ClusterOptionsFromEnv())
	// corpus is declared before the cluster starts, so that it starts what
	// the scenarios need (Kueue, views, the heartbeat) and a file that
	// does not load keeps it from starting.
	corpus = trainersim.Scenarios(".", "scale/fleet-10-nodes.yaml")
)

func TestMain(m *testing.M) {
	testenv = env.NewWithConfig(envconf.New().WithParallelTestEnabled())
	testenv.Setup(envfuncs.CreateCluster(trainersim, "trainersim"))
	testenv.Finish(envfuncs.DestroyCluster("trainersim"))
	os.Exit(testenv.Run(m))
}

func TestScenarios(t *testing.T) { testenv.TestInParallel(t, corpus...) }
