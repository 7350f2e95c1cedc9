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

	"github.com/trainersim/trainersim/reports"
	"github.com/trainersim/trainersim/sim"
	"github.com/trainersim/trainersim/sim/runner"
	"github.com/trainersim/trainersim/sim/scenario"
)

// startTimeout bounds the shared cluster's start.
const startTimeout = sim.DefaultStartTimeout + time.Minute

// Scenarios declares one cluster for the suite (started in BeforeSuite,
// stopped in AfterSuite) and one spec per scenario file under paths (one per
// explored order for a scenario that explores interleavings), labelled with
// the scenario's labels. Call it at the top level of a _test.go file:
//
//	var _ = simginkgo.Scenarios(".")
func Scenarios(paths ...string) bool {
	env := &sim.Environment{}
	ginkgo.BeforeSuite(func(ctx context.Context) {
		gomega.Expect(env.Start(ctx)).To(gomega.Succeed())
	}, ginkgo.NodeTimeout(startTimeout))
	ginkgo.AfterSuite(func() {
		gomega.Expect(env.Stop()).To(gomega.Succeed())
	})
	files, err := scenario.LoadPaths(paths, scenario.Options{})
	if err != nil {
		ginkgo.It("loads the scenario files", func() {
			ginkgo.Fail(err.Error())
		})
		return true
	}
	if dir, err := scenario.FindFixturesDir(); err == nil {
		runner.FixturesDir = dir
	}
	r := &runner.Runner{Env: env}
	for _, p := range runner.Plans(files, nil) {
		var labels []string
		for k, v := range p.File.Scenario.Metadata.Labels {
			labels = append(labels, k+"="+v)
		}
		name := p.File.Scenario.Metadata.Name
		if p.Interleaving != nil {
			name += " [" + p.Interleaving.Label() + "]"
		}
		ginkgo.It(name, ginkgo.Label(labels...), func(ctx context.Context) {
			res := r.RunPlan(ctx, p)
			if !res.Passed {
				ginkgo.Fail(Describe(&res))
			}
		}, ginkgo.NodeTimeout(runner.DefaultScenarioTimeout))
	}
	return true
}

// Describe renders a failed scenario: the failing step, its writes and its
// diff.
func Describe(res *reports.Scenario) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): %s\n", res.Name, res.File, res.Failure)
	for _, st := range res.Steps {
		if st.Passed {
			continue
		}
		fmt.Fprintf(&b, "step %q (%s):\n%s\n", st.Name, st.Kind, st.Failure)
		for _, w := range st.Writes {
			fmt.Fprintf(&b, "  %s %s as %s: HTTP %d %s %s\n", w.Verb, w.Target, w.FieldManager, w.Status, w.Reason, w.Message)
		}
		if st.Diff != "" {
			b.WriteString(st.Diff)
		}
	}
	return b.String()
}
