package e2e_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/trainersim/trainersim/results"
	"github.com/trainersim/trainersim/sim/runner"
	"github.com/trainersim/trainersim/sim/scenario"
)

var _ = Describe("the write timeline", func() {
	It("holds the README example's writes, what the server changed in them and the reactions, in order and within the scenario", func(ctx context.Context) {
		files, err := scenario.LoadPaths([]string{"../../scenarios/examples/sdk-and-kueue-share-a-gpu-job.yaml"}, scenario.Options{})
		Expect(err).NotTo(HaveOccurred())
		res := (&runner.Runner{Cluster: env}).RunPlan(ctx, runner.Plan{File: files[0]})
		Expect(res.Passed).To(BeTrue(), res.Failure)
		tl := res.Timeline
		Expect(tl).NotTo(BeNil())
		Expect(tl.Lanes).To(Equal([]string{"sdk", "kueue", "policy", "trainer", "jobset", "job-controller", "scheduler", "kwok"}))
		Expect(tl.Truncated).To(BeFalse())
		Expect(tl.Problems).To(BeEmpty())

		kinds := map[string]int{}
		end := res.Started.Add(res.Duration)
		for i, e := range tl.Entries {
			kinds[e.Kind]++
			Expect(e.At).To(BeTemporally(">=", res.Started), "entry %d (%s) before the scenario", i, e.Summary)
			Expect(e.At).To(BeTemporally("<=", end), "entry %d (%s) after the scenario", i, e.Summary)
			if i > 0 {
				Expect(e.At).To(BeTemporally(">=", tl.Entries[i-1].At), "entry %d (%s) out of order", i, e.Summary)
			}
			Expect(tl.Lanes).To(ContainElement(e.Lane), "entry %d (%s)", i, e.Summary)
		}
		// Two node Pods: each created by the Job controller, bound, Running.
		// The namespace's deletion after the scenario is not recorded.
		got := map[string]int{}
		want := map[string]int{
			results.EntryWrite:         4,
			results.EntryJobSetCreated: 1,
			results.EntryJobCreated:    1,
			results.EntryPodCreated:    2,
			results.EntryPodBound:      2,
			results.EntryPodPhase:      2,
			results.EntryPodDeleted:    0,
			results.EntryJobDeleted:    0,
		}
		for k := range want {
			got[k] = kinds[k]
		}
		Expect(got).To(Equal(want), "all kinds: %v", kinds)
		Expect(kinds[results.EntryEvent]).To(BeNumerically(">", 0), "no event recorded")

		// Kueue's apply gets the trainer webhook's time stamp on its entry.
		Expect(res.Steps[1].Writes[0].Mutations).To(ContainElement(SatisfyAll(
			HaveField("Path", "spec.runtimePatches[manager=kueue.x-k8s.io/manager].time"),
			HaveField("Kind", results.FieldAdded),
			HaveField("Stored", Not(BeEmpty())),
		)))
	})

	It("records the creates of the setup objects, before the first step, on the admin's lane", func(ctx context.Context) {
		files, err := scenario.LoadPaths([]string{"../../scenarios/multi-manager/apply-conflict-force.yaml"}, scenario.Options{FixturesDir: "../../fixtures"})
		Expect(err).NotTo(HaveOccurred())
		res := (&runner.Runner{Cluster: env}).RunPlan(ctx, runner.Plan{File: files[0]})
		Expect(res.Passed).To(BeTrue(), res.Failure)
		Expect(res.Setup).To(HaveLen(1))
		Expect(res.Setup[0]).To(And(
			HaveField("Verb", "create"),
			HaveField("Target", HavePrefix("TrainingRuntime "+res.Namespace+"/torch-gpu")),
			HaveField("Status", 201),
			HaveField("Expected", true),
		))
		var setupEntries []results.TimelineEntry
		for _, e := range res.Timeline.Entries {
			if e.Write != nil && e.Write.Setup {
				setupEntries = append(setupEntries, e)
			}
		}
		Expect(setupEntries).To(HaveLen(1))
		Expect(setupEntries[0]).To(And(HaveField("Lane", "admin"), HaveField("Step", "set-up")))
		Expect(setupEntries[0].At).To(BeTemporally("<", res.Steps[0].Started))
	})
})
