package e2e_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/trainersim/trainersim/results"
	"github.com/trainersim/trainersim/sim/gate"
	"github.com/trainersim/trainersim/sim/runner"
	"github.com/trainersim/trainersim/sim/scenario"
)

var _ = Describe("a component crashed with its write held (explore's intermediate plans)", func() {
	It("crash step ends once the API server stopped waiting for the held write, so the gate opening after it lets nothing of the crashed Trainer's through", func(ctx SpecContext) {
		files, err := scenario.LoadPaths([]string{"testdata/crash-cuts-held"}, scenario.Options{})
		Expect(err).NotTo(HaveOccurred())
		r := &runner.Runner{Cluster: env, Parallel: 1}
		done, complete := r.Run(ctx, files)
		Expect(complete).To(BeTrue())
		Expect(done).To(HaveLen(1))
		res := done[0]
		Expect(res.Passed).To(BeTrue(), res.Failure)
		// One request held, the crashed Trainer's, never answered: the
		// started Trainer's patch came after the gate opened.
		Expect(heldEntries(res)).To(HaveExactElements(And(ContainSubstring("gate trainer-reports-status held trainer's"), ContainSubstring(gate.Abandoned))))
	}, NodeTimeout(2*time.Minute))

	It("Kueue's crash step, a SIGKILL, ends once the API server stopped waiting for its held unsuspend, so the gate opening after it lets nothing of the killed Kueue's through", func() {
		out := GinkgoT().TempDir()
		session, err := gexec.Start(exec.Command(buildSimctl(), "run", "--report-dir", out, "testdata/crash-cuts-held-kueue"), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(0))
		data, err := os.ReadFile(filepath.Join(out, "report.json"))
		Expect(err).NotTo(HaveOccurred())
		var report results.Run
		Expect(json.Unmarshal(data, &report)).To(Succeed())
		Expect(report.Scenarios).To(HaveLen(1))
		Expect(heldEntries(report.Scenarios[0])).To(HaveExactElements(And(ContainSubstring("gate kueue-unsuspends held kueue's"), ContainSubstring(gate.Abandoned))))
	})

	It("simctl explore --kind intermediate crashes the Trainer and JobSet between two of their writes, each next write held, and the scenario ends as written", func() {
		out := GinkgoT().TempDir()
		session, err := gexec.Start(exec.Command(buildSimctl(), "explore", "--kind", "intermediate", "-o", out,
			"../../scenarios/examples/first-scenario.yaml"), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(0))
		Expect(session.Out).To(gbytes.Say(`explored 1 scenarios in .*: (\d+) plans run of (\d+) .*; (\d+) same, 0 refused while down, 0 not carried out, 0 found`))

		var report struct {
			Run []struct {
				Plan    string `json:"plan"`
				Does    string `json:"does"`
				Verdict struct {
					Kind string `json:"kind"`
				} `json:"verdict"`
			} `json:"run"`
		}
		data, err := os.ReadFile(filepath.Join(out, "explore.json"))
		Expect(err).NotTo(HaveOccurred())
		Expect(json.Unmarshal(data, &report)).To(Succeed())
		components := map[string]bool{}
		for _, r := range report.Run {
			Expect(r.Plan).To(MatchRegexp(`^first-scenario--intermediate-(trainer|jobset)-step-\d+-[0-9a-f]{8}$`))
			Expect(r.Does).To(MatchRegexp(`crashes after .*, with its next write, .*, held$`))
			Expect(r.Verdict.Kind).To(Equal("same"), r.Plan)
			components[strings.Split(strings.TrimPrefix(r.Plan, "first-scenario--intermediate-"), "-")[0]] = true
		}
		// The Trainer's JobSet apply and status patches, the JobSet
		// controller's status updates: each has a write after its first.
		Expect(components).To(Equal(map[string]bool{"trainer": true, "jobset": true}))
	})
})

// heldEntries are the summaries of a run's request-held timeline entries.
func heldEntries(res results.Scenario) []string {
	Expect(res.Timeline).NotTo(BeNil())
	var held []string
	for _, e := range res.Timeline.Entries {
		if e.Kind == results.EntryRequestHeld {
			held = append(held, e.Summary)
		}
	}
	return held
}
