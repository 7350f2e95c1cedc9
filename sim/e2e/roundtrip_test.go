package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/trainersim/trainersim/sim/auditimport"
)

// roundTripDir keeps the round trip's audit log, imports and reports and,
// when an import does not replay to its run's verdict, differences.txt,
// which make test prints last when it fails: a replay that fails once is
// a harness bug to find, and its evidence must outlive the test. The log
// (the largest part) is removed when every trip agrees.
const roundTripDir = "../../reports/roundtrip"

// The corpus's round trip (docs/record.md): every scenario run of the
// corpus, recorded with simctl run --audit-log, imported from the log
// (as simctl import --namespace does) and replayed, keeps its verdict and
// ends with each entry owned as the run's did (Trip.Agrees).
var _ = Describe("the corpus's round trip (simctl run --audit-log, import, replay)", func() {
	It("replays the import of every scenario run of the corpus to the run's verdict", func() {
		simctl := buildSimctl()
		Expect(os.RemoveAll(roundTripDir)).To(Succeed())
		dir := roundTripDir
		log, original, imported, replay := filepath.Join(dir, "log"), filepath.Join(dir, "original"), filepath.Join(dir, "imported"), filepath.Join(dir, "replay")

		session := startSimctl(simctl, "run", "--audit-log", log, "--report-dir", original, "../../scenarios")
		Eventually(session).WithTimeout(6 * time.Minute).Should(gexec.Exit(0))
		trips, err := auditimport.ImportRuns(filepath.Join(log, "audit.log"), readReport(original), imported)
		Expect(err).NotTo(HaveOccurred())
		Expect(len(trips)).To(BeNumerically(">=", 90), "the corpus's runs on the pinned release")

		session = startSimctl(simctl, "run", "--report-dir", replay, imported)
		Eventually(session).WithTimeout(6*time.Minute).Should(Or(gexec.Exit(0), gexec.Exit(1)), "a replay that fails is a result")
		auditimport.Replayed(trips, readReport(replay))

		var differences []string
		for _, t := range trips {
			if !t.Agrees() {
				differences = append(differences, t.Difference()+replayDetail(t))
			}
		}
		if len(differences) == 0 {
			Expect(os.RemoveAll(log)).To(Succeed())
		} else {
			digest := "imports that do not replay to their run's verdict (the log, the imports and both runs' reports in reports/roundtrip/):\n" + strings.Join(differences, "\n") + "\n"
			Expect(os.WriteFile(filepath.Join(dir, "differences.txt"), []byte(digest), 0o644)).To(Succeed())
		}
		Expect(differences).To(BeEmpty(), "imports that do not replay to their run's verdict")
	})
})

// replayDetail is what CI's log needs to find why a replay went another
// way: its failing steps with their diffs, and the Pods it ended with.
func replayDetail(t *auditimport.Trip) string {
	if t.Replay == nil {
		return ""
	}
	var b strings.Builder
	for _, st := range t.Replay.Steps {
		if !st.Passed {
			fmt.Fprintf(&b, "\n    step %q: %s", st.Name, st.Failure)
			if st.Diff != "" {
				fmt.Fprintf(&b, "\n      %s", strings.ReplaceAll(st.Diff, "\n", "\n      "))
			}
		}
	}
	for _, p := range t.Replay.FinalPods {
		fmt.Fprintf(&b, "\n    pod %s %s on %q (%s) %s", p.Name, p.Phase, p.Node, p.NodeProfile, p.Scheduling)
	}
	return b.String()
}
