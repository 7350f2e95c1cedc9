package e2e_test

import (
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/trainersim/trainersim/results"
)

// upgradeScenario is the upgrades corpus's scenario the spec copies.
const upgradeScenario = "../../scenarios/upgrades/from-v2-1-0-under-running-work.yaml"

var _ = Describe("a live upgrade of the Trainer", Label(otherPaths), func() {
	It("upgrades v2.1.0 to v2.3.0 under running work, part by part on the timeline, and gives the next scenario v2.1.0 back", func() {
		simctl := buildSimctl()
		dir := GinkgoT().TempDir()
		// The corpus's scenario without its rollback: the runner gives
		// the run's release back at its end, or the next scenarios find
		// v2.3.0 (the corpus's own upgrade to v2.3.0 would then fail:
		// "Trainer v2.3.0 runs already").
		source, err := os.ReadFile(upgradeScenario)
		Expect(err).NotTo(HaveOccurred())
		body, _, found := strings.Cut(string(source), "  - name: the Trainer is rolled back to v2.1.0\n")
		Expect(found).To(BeTrue())
		body = strings.Replace(body, "name: upgrade-from-v2-1-0-under-running-work\n", "name: upgrade-left-on-v2-3-0\n", 1)
		left := filepath.Join(dir, "left-on-v2-3-0.yaml")
		Expect(os.WriteFile(left, []byte(body), 0o644)).To(Succeed())

		reportDir := GinkgoT().TempDir()
		// One at a time, in start order: the two upgrades (each has the
		// cluster to itself), then the v2.1.0 webhook's refusal.
		session := startSimctl(simctl, "run", "--trainer", "v2.1.0", "--parallel", "1", "--report-dir", reportDir,
			left, upgradeScenario, "../../scenarios/legacy/immutable-while-running.yaml")
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(0))
		run := readReport(reportDir)
		Expect(run.Scenarios).To(HaveLen(3))
		byName := map[string]results.Scenario{}
		for _, sc := range run.Scenarios {
			Expect(sc.Passed).To(BeTrue(), "%s: %s", sc.Name, sc.Failure)
			byName[sc.Name] = sc
		}

		parts := func(sc results.Scenario, step string) []string {
			var out []string
			for _, e := range sc.Timeline.Entries {
				if e.Kind == results.EntryUpgradePart && e.Step == step {
					name, _, _ := strings.Cut(e.Summary, " (")
					out = append(out, name)
				}
			}
			return out
		}
		Expect(parts(byName["upgrade-left-on-v2-3-0"], "the Trainer is upgraded to v2.3.0")).To(Equal([]string{
			"CRDs of v2.3.0 applied",
			"the API server serves the new TrainJob schema",
			"RBAC of v2.3.0 applied",
			"default runtimes of v2.3.0 applied",
			"webhook configurations of v2.3.0 applied",
			"Trainer v2.1.0 and JobSet v0.10.1 stopped",
			"Trainer v2.3.0 and JobSet v0.12.0 started",
		}))
		restarted := "kube-controller-manager restarted, its watches of the CRDs without the back-off of their updates"
		Expect(parts(byName["upgrade-left-on-v2-3-0"], "clean-up")).To(ContainElements("Trainer v2.1.0 and JobSet v0.10.1 started", restarted))
		// The corpus's scenario rolls back itself: no release to give back,
		// kube-controller-manager restarted all the same.
		Expect(parts(byName["upgrade-from-v2-1-0-under-running-work"], "clean-up")).To(Equal([]string{restarted}))
		Expect(parts(byName["upgrade-from-v2-1-0-under-running-work"], "the Trainer is rolled back to v2.1.0")).To(ContainElement("Trainer v2.3.0 and JobSet v0.12.0 stopped"))
	})

	It("upgrades v2.2.1 to v2.3.0 with Kueue's queued job, and rolls back", func() {
		simctl := buildSimctl()
		reportDir := GinkgoT().TempDir()
		session := startSimctl(simctl, "run", "--trainer", "v2.2.1", "--report-dir", reportDir, "../../scenarios/upgrades/")
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(0))
		Expect(skipReasons(readReport(reportDir))).To(Equal(map[string]string{
			"upgrade-from-v2-2-1-with-kueue":         "",
			"upgrade-from-v2-1-0-under-running-work": "holds for Trainer v2.1.0; the cluster runs v2.2.1",
		}))
	})
})
