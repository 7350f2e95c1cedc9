// Package simginkgo plugs the scenario runner into ginkgo, so that
// `go test ./scenarios/...` and `ginkgo --junit-report` run every scenario
// file as a spec on one shared cluster. It is the only non-test package that
// imports ginkgo and gomega.
package simginkgo

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/trainersim/trainersim/results"
	"github.com/trainersim/trainersim/sim"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/runner"
	"github.com/trainersim/trainersim/sim/scenario"
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
	files, loadErr := scenario.LoadPaths(paths, scenario.Options{})
	opts := sim.ClusterOptionsFromEnv()
	// The components the scenarios ask for; a cluster simctl does not
	// start components on leaves them out (sim.ClusterOptions.Components).
	opts.Components = runner.WithComponents(opts.Components, files, opts.Trainer)
	env := sim.NewCluster(opts)
	var agree *agreement
	if obs, ok := env.(cluster.TrainerBuildObserver); ok {
		agree = newAgreement(env)
		if !obs.ObserveTrainerBuilds(agree.record) {
			agree = nil
		}
	}
	var watches *runner.Watches // shared by the scenarios, as in simctl run
	ginkgo.BeforeSuite(func(ctx context.Context) {
		gomega.Expect(env.Start(ctx)).To(gomega.Succeed())
		watches = runner.StartWatches(ctx, env.Config(), env.Client().RESTMapper())
		if agree != nil {
			gomega.Expect(agree.start(ctx)).To(gomega.Succeed())
		}
	}, ginkgo.NodeTimeout(startTimeout))
	ginkgo.AfterSuite(func() {
		if watches != nil {
			watches.Stop()
		}
		gomega.Expect(env.Stop()).To(gomega.Succeed())
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
		name := p.Name()
		ginkgo.It(name, ginkgo.Label(labels...), func(ctx context.Context) {
			var v verdict
			steps := 0 // that run on this cluster's Trainer
			for i := range p.File.Scenario.Spec.Steps {
				if runner.TrainerHolds(p.File.Scenario.Spec.Steps[i].Trainer, env.Versions().Trainer) {
					steps++
				}
			}
			r := &runner.Runner{Cluster: env, Watches: watches}
			if agree != nil {
				r.OnStep = func(sc *results.Scenario, st *results.Step) {
					agree.check(ctx, sc.Namespace, !st.Passed || len(sc.Steps) == steps, &v)
				}
			}
			res := r.RunPlan(ctx, p)
			if res.Skipped != "" {
				ginkgo.Skip(res.Skipped)
			}
			if !res.Passed {
				ginkgo.Fail(Describe(&res))
			}
			if agree == nil {
				ginkgo.GinkgoWriter.Printf("explain agreement not checked: the Trainer of a %s cluster does not run in this process\n", env.Versions().Cluster)
				return
			}
			if len(v.problems) > 0 {
				ginkgo.Fail(fmt.Sprintf("scenario %s: simctl explain disagrees with the trainer:\n%s", name, strings.Join(v.problems, "\n")))
			}
			if len(v.trainJobs) > 0 {
				gomega.Expect(v.checked).To(gomega.BeNumerically(">=", len(v.trainJobs)),
					"scenario %s: explain was checked against %d builds for TrainJobs %v", name, v.checked, v.trainJobs)
			}
			ginkgo.GinkgoWriter.Printf("explain agreed with the trainer on %d JobSet builds of TrainJobs %v\n", v.checked, v.trainJobs)
		}, ginkgo.NodeTimeout(runner.DefaultScenarioTimeout))
	}
	return true
}

// Describe renders a failed scenario: the failing step, its writes and its
// diff.
func Describe(res *results.Scenario) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): %s\n", res.Name, res.File, res.Failure)
	for _, st := range res.Steps {
		if st.Passed {
			continue
		}
		fmt.Fprintf(&b, "step %q (%s):\n%s\n", st.Name, st.Kind, st.Failure)
		for _, w := range st.Writes {
			fmt.Fprintf(&b, "  %s\n", w.String())
		}
		if st.Diff != "" {
			b.WriteString(st.Diff)
		}
	}
	return b.String()
}
