// Package simginkgo plugs the scenario runner into ginkgo, so that
// `go test ./scenarios/...` and `ginkgo --junit-report` run every scenario
// file as a spec on one shared cluster. It is the only non-test package that
// imports ginkgo and gomega.
package simginkgo

import (
	"context"
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

// Scenarios declares one cluster for the suite (started in BeforeSuite,
// stopped in AfterSuite) and one spec per scenario file under paths (one per
// explored order for a scenario that explores interleavings), labelled with
// the scenario's labels. Call it at the top level of a _test.go file:
//
//	var _ = simginkgo.Scenarios(".")
//
// The cluster is a new envtest cluster, or the existing cluster whose
// kubeconfig $TRAINERSIM_KUBECONFIG names (sim.ClusterOptionsFromEnv).
//
// On a cluster whose Trainer runs in this process (envtest), each spec also
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
	opts.Serve = runner.NeedsServing(files, opts.ClusterName(), opts.Trainer)
	s := suite.New(sim.NewCluster(opts))
	ginkgo.BeforeSuite(func(ctx context.Context) {
		gomega.Expect(s.Start(ctx)).To(gomega.Succeed())
		ginkgo.AddReportEntry("cluster", s.Versions())
	}, ginkgo.NodeTimeout(startTimeout))
	ginkgo.AfterSuite(func() {
		gomega.Expect(s.Stop()).To(gomega.Succeed())
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
		ginkgo.It(p.Name(), ginkgo.Label(labels...), func(ctx context.Context) {
			v := s.Run(ctx, p)
			if v.Skipped != "" {
				ginkgo.Skip(v.Skipped)
			}
			if v.Failure != "" {
				ginkgo.Fail(v.Failure)
			}
			ginkgo.GinkgoWriter.Println(v.Log)
		}, ginkgo.NodeTimeout(runner.DefaultScenarioTimeout))
	}
	return true
}
