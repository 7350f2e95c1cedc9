// Package simginkgo plugs the scenario runner into ginkgo, so that
// `go test ./scenarios/...` and `ginkgo --junit-report` run every scenario
// file as a spec on one shared cluster. It is the only non-test package that
// imports ginkgo and gomega.
package simginkgo

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/trainersim/trainersim/sim"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/internal/suite"
	"github.com/trainersim/trainersim/sim/runner"
)

// startTimeout bounds the shared cluster's start.
const startTimeout = cluster.DefaultStartTimeout + time.Minute

// Scenarios declares one cluster for the suite (started in
// SynchronizedBeforeSuite, stopped in SynchronizedAfterSuite) and one spec
// per scenario file under paths (one per explored order for a scenario that
// explores interleavings), labelled with the scenario's labels. Under
// `ginkgo -p`, process 1 starts the cluster and the other processes run
// their specs on it through its admin kubeconfig, as simctl run
// --kubeconfig does on a kept cluster; the specs whose gates hold a
// component or that create cluster-scoped names another run of their
// scenario creates (runner.Exclusive), and those that hold on the
// clusters simctl starts only (spec.clusters.only without kubeconfig),
// are Serial: ginkgo runs them on process 1 after the parallel ones,
// alone. Call it at the top level of a _test.go file:
//
//	var _ = simginkgo.Scenarios(".")
//
// The cluster is a new envtest cluster, or the existing cluster whose
// kubeconfig $TRAINERSIM_KUBECONFIG names (sim.ClusterOptionsFromEnv).
//
// On a cluster whose Trainer runs in this process (envtest; under -p,
// process 1's specs), each spec also
// checks simctl explain against the trainer: for every JobSet
// the in-process trainer builds while the scenario runs, explain's final
// JobSet for the same TrainJob must be the same apply configuration, and at
// the last step every TrainJob of the scenario must have been checked at
// least once. Builds the trainer makes after the last step, while the
// scenario's namespace is being deleted, are not checked.
//
// Declaring the suite routes the process's global loggers to the cluster's
// log (sim.RouteProcessLogs): the suite's output is its verdicts.
func Scenarios(paths ...string) bool {
	// The suite's output is its scenarios' verdicts: the libraries' global
	// loggers write to the envtest cluster's logs/controllers.log.
	sim.RouteProcessLogs()
	opts := sim.ClusterOptionsFromEnv()
	// The components the scenarios ask for; a cluster simctl does not
	// start components on leaves them out (sim.ClusterOptions.Components).
	files, components, loadErr := suite.Load(paths, opts.Components, opts.Trainer)
	opts.Components = components
	opts.Heartbeat = runner.HeartbeatFor(files, opts.Trainer) // as simctl run's
	opts.Views = runner.ViewsFor(files, opts.Trainer)
	opts.Serve = runner.NeedsServing(files, opts.ClusterName(), opts.Trainer)
	// s is this process's suite: under `ginkgo -p`, process 1 starts the
	// cluster and every other process runs on it, as simctl run
	// --kubeconfig does on a kept cluster (one cluster, not one per
	// process); without -p there is only process 1.
	var s *suite.Suite
	ginkgo.SynchronizedBeforeSuite(func(ctx context.Context) []byte {
		s = suite.New(sim.NewCluster(opts))
		gomega.Expect(s.Start(ctx)).To(gomega.Succeed())
		ginkgo.AddReportEntry("cluster", s.Versions())
		return []byte(s.Cluster().AdminKubeconfig())
	}, func(ctx context.Context, kubeconfig []byte) {
		if s != nil {
			return // process 1: its own
		}
		shared := opts
		shared.Kubeconfig = string(kubeconfig)
		s = suite.New(sim.NewCluster(shared))
		gomega.Expect(s.Start(ctx)).To(gomega.Succeed())
		ginkgo.AddReportEntry("cluster", fmt.Sprintf("process 1's, through %s: %s", kubeconfig, s.Versions()))
	}, ginkgo.NodeTimeout(startTimeout))
	ginkgo.SynchronizedAfterSuite(func() {
		if ginkgo.GinkgoParallelProcess() != 1 && s != nil {
			gomega.Expect(s.Stop()).To(gomega.Succeed())
		}
	}, func() {
		// Process 1, once every process is done with the cluster.
		if s != nil {
			gomega.Expect(s.Stop()).To(gomega.Succeed())
		}
	})
	if loadErr != nil {
		ginkgo.It("loads the scenario files", func() {
			ginkgo.Fail(loadErr.Error())
		})
		return true
	}
	for _, p := range runner.Plans(files, nil) {
		var labels []string
		for k, v := range p.File.Scenario.Metadata.Labels {
			labels = append(labels, k+"="+v)
		}
		args := []any{ginkgo.Label(labels...)}
		if c := p.File.Scenario.Spec.Clusters; runner.Exclusive(p) || (c != nil && !slices.Contains(c.Only, cluster.Kubeconfig)) {
			// Runs of other processes do not take this process's locks,
			// and a scenario that holds on the clusters simctl starts
			// only (views, component steps) is skipped on the other
			// processes' cluster, process 1's reached through a
			// kubeconfig: with -p, ginkgo runs a Serial spec on process
			// 1 once every parallel spec is done, alone.
			args = append(args, ginkgo.Serial)
		}
		args = append(args, func(ctx context.Context) {
			v := s.Run(ctx, p)
			if v.Skipped != "" {
				ginkgo.Skip(v.Skipped)
			}
			if v.Failure != "" {
				ginkgo.Fail(v.Failure)
			}
			ginkgo.GinkgoWriter.Println(v.Log)
		}, ginkgo.NodeTimeout(runner.DefaultScenarioTimeout))
		ginkgo.It(p.Name(), args...)
	}
	return true
}
