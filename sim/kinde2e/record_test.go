//go:build kind

package kinde2e_test

import (
	"os/exec"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/trainersim/trainersim/reports"
	"github.com/trainersim/trainersim/results"
	"github.com/trainersim/trainersim/sim/auditimport"
)

// start starts simctl with args, its output in the spec's log; it is
// killed when the spec ends.
func start(args ...string) *gexec.Session {
	session, err := gexec.Start(exec.Command(simctl, args...), GinkgoWriter, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { session.Kill() })
	return session
}

// readRun reads the run a --report-dir's journal holds.
func readRun(dir string) results.Run {
	run, err := reports.ReadJournal(filepath.Join(dir, "report.jsonl"))
	Expect(err).NotTo(HaveOccurred())
	return *run
}

// A run recorded on kind (simctl run --cluster kind --audit-log) imports
// into scenarios that replay on envtest to the same verdicts
// (docs/record.md): the kind node's API server writes the record policy's
// log where simctl reads it, and the kind cluster's admin is the replay's.
var _ = Describe("a run recorded on kind", func() {
	It("imports into scenarios that replay on envtest to the same verdicts", func() {
		dir := GinkgoT().TempDir()
		log, original, imported, replay := filepath.Join(dir, "log"), filepath.Join(dir, "original"), filepath.Join(dir, "imported"), filepath.Join(dir, "replay")
		session := start("run", "--cluster", "kind", "--kind-name", "trainersim-record", "--audit-log", log, "--report-dir", original,
			"../../scenarios/multi-manager/lost-update.yaml", "../../scenarios/examples/sdk-and-kueue-share-a-gpu-job.yaml", "../e2e/testdata/minimize/padded-history.yaml")
		Eventually(session).WithTimeout(10 * time.Minute).Should(gexec.Exit(0))
		Expect(session.Out).To(gbytes.Say("audit log: " + filepath.Join(log, "audit.log")))
		Expect(kindContainers("trainersim-record")).To(BeEmpty(), "the kind cluster is deleted at the end")

		trips, leftOut, err := auditimport.ImportRuns(filepath.Join(log, "audit.log"), readRun(original), imported)
		Expect(err).NotTo(HaveOccurred())
		Expect(leftOut).To(BeEmpty())
		Expect(trips).To(HaveLen(3))
		session = start("run", "--report-dir", replay, imported)
		Eventually(session).WithTimeout(5*time.Minute).Should(Or(gexec.Exit(0), gexec.Exit(1)), "a replay that fails is a result")
		auditimport.Replayed(trips, readRun(replay))
		for _, t := range trips {
			Expect(t.Difference()).To(BeEmpty())
			Expect(t.Replay.Passed).To(BeTrue(), "%s replays on envtest", t.Original.Name)
		}
	})
})
