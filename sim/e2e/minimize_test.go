package e2e_test

import (
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

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
