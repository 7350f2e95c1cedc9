package e2e_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/trainersim/trainersim/sim/explore"
	"github.com/trainersim/trainersim/sim/minimize"
	"github.com/trainersim/trainersim/sim/scenario"
)

// From a recorded run with a padded history to the steps that matter
// (docs/record.md#minimise): the run of testdata/minimize/padded-history.yaml
// is recorded, imported and minimized; the labeller's and the dashboard's
// writes go, the SDK's create, Kueue's entry and resume and the refused
// third manager stay.
var _ = Describe("simctl minimize", Label(otherPaths), func() {
	It("shortens an imported scenario with a padded history to the writes that decide how it ends", func() {
		simctl := buildSimctl()
		dir := GinkgoT().TempDir()
		recorded, imported, minimized := filepath.Join(dir, "recorded"), filepath.Join(dir, "imported.yaml"), filepath.Join(dir, "minimized.yaml")

		session := startSimctl(simctl, "run", "--audit-log", recorded, "testdata/minimize/padded-history.yaml")
		Eventually(session).WithTimeout(3 * time.Minute).Should(gexec.Exit(0))
		session = startSimctl(simctl, "import", "--audit-log", filepath.Join(recorded, "audit.log"), "-o", imported)
		Eventually(session).WithTimeout(time.Minute).Should(gexec.Exit(0))
		Expect(writers(imported)).To(Equal([]string{"kubeflow-sdk", "team-labeller", "cost-dashboard", "kueue-admission", "team-labeller", "kueue-admission", "cost-dashboard", "platform-policy"}))

		session = startSimctl(simctl, "minimize", "--no-fields", "-o", minimized, imported)
		Eventually(session).WithTimeout(5 * time.Minute).Should(gexec.Exit(0))
		Expect(session.Err).To(gbytes.Say(`the original passes`))
		Expect(session.Err).To(gbytes.Say(`\d+ steps, 5 actors, .* -> \d+ steps, 3 actors, .*, in \d+ runs`))
		Expect(session.Err).To(gbytes.Say(`the result ended as the original in 3 of 3 verification runs`))
		Expect(writers(minimized)).To(Equal([]string{"kubeflow-sdk", "kueue-admission", "kueue-admission", "platform-policy"}), "the writes that matter, in their order")

		data, err := os.ReadFile(minimized)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(data)).To(HavePrefix("# Imported by simctl import.\n"), "the import's notes are kept")
		Expect(string(data)).To(ContainSubstring("# Minimized by simctl minimize from imported.yaml"))
	})
})

// A new confirmed finding, end to end: a kept finding of scenarios/found is
// found again by one of its flip plans from the scenario it was found in,
// without --known, so explore takes it for new: it is confirmed, written as
// a scenario, shortened by --minimize and the shorter one verified. One
// plan (the first of the finding's the reference runs make: which they
// make varies), one confirmation: each run of the finding waits out the
// minute of the step it fails at.
var _ = Describe("simctl explore --minimize", Label(otherPaths), func() {
	It("writes a new confirmed finding as a scenario, shortens it within --minimize runs, and verifies the shorter one", func() {
		found := loadScenario("../../scenarios/found/preempted-while-both-statuses-lag.yaml")
		plans := strings.Fields(found.Scenario.Metadata.Annotations[explore.PlanAnnotation])
		Expect(plans).NotTo(BeEmpty(), "the kept finding names the plans that found it")
		quoted := make([]string, len(plans))
		for i, p := range plans {
			quoted[i] = regexp.QuoteMeta(p)
		}
		out := GinkgoT().TempDir()
		session := startSimctl(buildSimctl(), "explore", "--kind", "flip", "--confirm", "1", "--minimize", "3", "-o", out,
			"--plan", "^("+strings.Join(quoted, "|")+")$", "--plans", "1", "../../scenarios/real-kueue/preemption-by-higher-priority.yaml")
		// 1: a confirmed finding that --known does not hold.
		Eventually(session).WithTimeout(10 * time.Minute).Should(gexec.Exit(1))
		Expect(session.Err).To(gbytes.Say(`minimizing .*findings/.*\.yaml`))

		var report struct {
			Run []struct {
				Plan    string `json:"plan"`
				Confirm *struct {
					Runs            int    `json:"runs"`
					Same            int    `json:"same"`
					Scenario        string `json:"scenario"`
					Minimized       string `json:"minimized"`
					MinimizeProblem string `json:"minimizeProblem"`
				} `json:"confirm"`
			} `json:"run"`
		}
		data, err := os.ReadFile(filepath.Join(out, "explore.json"))
		Expect(err).NotTo(HaveOccurred())
		Expect(json.Unmarshal(data, &report)).To(Succeed())
		Expect(report.Run).To(HaveLen(1), "explore.json: %s", data)
		r := report.Run[0]
		Expect(plans).To(ContainElement(r.Plan))
		plan := r.Plan
		Expect(r.Confirm).NotTo(BeNil(), "the plan is a finding: explore.json: %s", data)
		c := r.Confirm
		Expect(c.Runs).To(Equal(1))
		Expect(c.Same).To(Equal(1), "confirmed")
		Expect(c.Scenario).To(Equal(filepath.Join(out, "findings", plan+".yaml")))
		Expect(c.MinimizeProblem).To(BeEmpty())
		Expect(c.Minimized).To(Equal(filepath.Join(out, "findings", plan+".min.yaml")))

		// Both lint clean; the shorter one says how it was made and that
		// it was verified, and is not larger.
		finding, short := loadScenario(c.Scenario), loadScenario(c.Minimized)
		text, err := os.ReadFile(c.Minimized)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(text)).To(MatchRegexp(`# Minimized by simctl minimize from ` + regexp.QuoteMeta(plan) + `\.yaml \(.*\) to .* in [1-3] runs; .*; the result ended as the original in 1 of 1 verification runs`))
		before, after := minimize.SizeOf(finding.Scenario), minimize.SizeOf(short.Scenario)
		Expect(after.Steps).To(BeNumerically("<=", before.Steps))
		Expect(after.Actors).To(BeNumerically("<=", before.Actors))
	})
})

// loadScenario loads and lints a scenario file.
func loadScenario(path string) *scenario.File {
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	f, err := scenario.Load(path, data, scenario.Options{FixturesDir: "../../fixtures"})
	Expect(err).NotTo(HaveOccurred(), "%s lints", path)
	return f
}

// writers lists the actors of a scenario file's steps, in order.
func writers(path string) []string {
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	f, err := scenario.Load(path, data, scenario.Options{})
	Expect(err).NotTo(HaveOccurred(), "the file lints")
	var out []string
	for _, st := range f.Scenario.Spec.Steps {
		if st.Actor != "" {
			out = append(out, st.Actor)
		}
	}
	return out
}
