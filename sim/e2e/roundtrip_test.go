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

	"github.com/trainersim/trainersim/results"
	"github.com/trainersim/trainersim/sim/auditimport"
)

// roundTripDir keeps the round trip's audit log, imports and reports and,
// when an import does not replay to its run's verdict, differences.txt,
// which make test-paths prints last when it fails: a replay that fails once
// is a harness bug to find, and its evidence must outlive the test. The log
// (the largest part) is removed when every trip agrees.
const roundTripDir = "../../reports/roundtrip"

// The corpus's round trip (docs/record.md): every scenario run of the
// corpus, recorded with simctl run --audit-log, imported from the log
// (as simctl import --namespace does) and replayed beside the rest of the
// corpus (under load), plain and shaken (a mirrored pair of seeds, fixed
// so that a red run replays: an import that holds only in the recording's
// timing differs under some seed's delays), keeps its verdict and ends
// with each entry owned as the run's did (Trip.Agrees).
var _ = Describe("the corpus's round trip (simctl run --audit-log, import, replay)", Label(otherPaths), func() {
	It("replays the import of every scenario run of the corpus to the run's verdict, plain and shaken", func() {
		roundTrip(roundTripDir)
	})
})

// roundTrip records the corpus, imports each run into dir and replays the
// imports, plain and shaken; it fails on a trip that does not agree, with
// dir/differences.txt.
func roundTrip(dir string) {
	simctl := buildSimctl()
	Expect(os.RemoveAll(dir)).To(Succeed())
	log, original, imported, replay := filepath.Join(dir, "log"), filepath.Join(dir, "original"), filepath.Join(dir, "imported"), filepath.Join(dir, "replay")

	session := startSimctl(simctl, "run", "--audit-log", log, "--report-dir", original, "../../scenarios")
	Eventually(session).WithTimeout(6 * time.Minute).Should(gexec.Exit(0))
	trips, leftOut, err := auditimport.ImportRuns(filepath.Join(log, "audit.log"), readReport(original), imported)
	Expect(err).NotTo(HaveOccurred())
	for name, why := range leftOut {
		GinkgoWriter.Printf("left out: %s: %s\n", name, why)
	}
	Expect(leftOut).To(HaveKey("views-preemption-seen-as-one-change"), "a run whose verdict a view decided is not in its log")
	Expect(leftOut).To(HaveKey("components-trainer-crashes-before-its-status-write"), "a run whose verdict a crash decided is not in its log")
	Expect(len(trips)).To(BeNumerically(">=", 90), "the corpus's runs on the pinned release")

	session = startSimctl(simctl, "run", "--report-dir", replay, imported)
	Eventually(session).WithTimeout(6*time.Minute).Should(Or(gexec.Exit(0), gexec.Exit(1)), "a replay that fails is a result")
	auditimport.Replayed(trips, readReport(replay))
	shakenReplay := filepath.Join(dir, "replay-shaken")
	session = startSimctl(simctl, "run", "--shake", "2", "--shake-seed", "100", "--report-dir", shakenReplay, imported)
	Eventually(session).WithTimeout(12*time.Minute).Should(Or(gexec.Exit(0), gexec.Exit(1)), "a replay that fails is a result")
	all := append(trips, auditimport.ReplayedShaken(trips, readReport(shakenReplay))...)

	var differences []string
	for _, t := range all {
		if !t.Agrees() {
			differences = append(differences, t.Difference()+replayDetail(t))
		}
	}
	if len(differences) == 0 {
		Expect(os.RemoveAll(log)).To(Succeed())
	} else {
		digest := "imports that do not replay to their run's verdict (the log, the imports and the runs' reports in " + filepath.Base(dir) + "/):\n" + strings.Join(differences, "\n") + "\n"
		Expect(os.WriteFile(filepath.Join(dir, "differences.txt"), []byte(digest), 0o644)).To(Succeed())
	}
	Expect(differences).To(BeEmpty(), "imports that do not replay to their run's verdict")
}

// The README's example, recorded, imported and replayed: each run's import
// keeps the run's verdict, and so does the import of a recording of it in
// which the Trainer lagged (sim/auditimport/testdata: its status after the
// resume reports no Job active, and the report that the Job is active came
// after the third manager's write, outside the log). The wait before that
// write asks for that status and for the Pods to run; on replay the Trainer
// reports the Job active before the Pods run, so the status must only have
// been reached on the way (reached), or the wait times out: a state the
// recording passed through for a moment is no fixed point.
var _ = Describe("the README's example recorded, imported and replayed", func() {
	It("replays each import to its run's verdict, that of a recording in which the Trainer lagged too", func() {
		simctl := buildSimctl()
		dir := GinkgoT().TempDir()
		log, original, imported, replay := filepath.Join(dir, "log"), filepath.Join(dir, "original"), filepath.Join(dir, "imported"), filepath.Join(dir, "replay")

		session := startSimctl(simctl, "run", "--audit-log", log, "--report-dir", original, "../../scenarios/examples")
		Eventually(session).WithTimeout(3 * time.Minute).Should(gexec.Exit(0))
		trips, leftOut, err := auditimport.ImportRuns(filepath.Join(log, "audit.log"), readReport(original), imported)
		Expect(err).NotTo(HaveOccurred())
		Expect(leftOut).To(BeEmpty())
		Expect(trips).To(HaveLen(2), "the two examples' runs")

		lagged := filepath.Join(imported, "trainer-lagged.yaml")
		session = startSimctl(simctl, "import", "--audit-log", "../auditimport/testdata/examples-status-moved-on.audit.log", "-o", lagged)
		Eventually(session).WithTimeout(time.Minute).Should(gexec.Exit(0))

		session = startSimctl(simctl, "run", "--report-dir", replay, imported)
		Eventually(session).WithTimeout(3*time.Minute).Should(Or(gexec.Exit(0), gexec.Exit(1)), "a replay that fails is a result")
		report := readReport(replay)
		auditimport.Replayed(trips, report)
		for _, t := range trips {
			Expect(t.Agrees()).To(BeTrue(), t.Difference()+replayDetail(t))
		}
		var laggedRun *results.Scenario
		for i := range report.Scenarios {
			if report.Scenarios[i].File == lagged {
				laggedRun = &report.Scenarios[i]
			}
		}
		Expect(laggedRun).NotTo(BeNil(), "the replay's report has the lagged recording's import")
		Expect(laggedRun.Passed).To(BeTrue(), "the lagged recording's import replays: %s", laggedRun.Failure)
	})
})

// replayDetail is what CI's log needs to find why a replay went another
// way, the most telling last (CI keeps the log's tail): the replay's
// timeline without the Events (its last timelineLines entries, each with
// its detail's first line), its
// failing steps with their diffs (diffLines lines each), and the Pods it
// ended with.
func replayDetail(t *auditimport.Trip) string {
	const timelineLines, diffLines = 40, 24
	if t.Replay == nil {
		return ""
	}
	var b strings.Builder
	if tl := t.Replay.Timeline; tl != nil {
		var lines []string
		for _, e := range tl.Entries {
			if e.Kind == "event" || e.Kind == "warning-event" {
				continue
			}
			summary := e.Summary
			if detail, _, _ := strings.Cut(e.Detail, "\n"); detail != "" {
				summary += " (" + detail + ")"
			}
			if len(summary) > 180 {
				summary = summary[:180] + "..."
			}
			lines = append(lines, fmt.Sprintf("\n      %s %s %s: %s", e.At.Format("15:04:05.000"), e.Lane, e.Kind, summary))
		}
		if len(lines) > timelineLines {
			fmt.Fprintf(&b, "\n    replay's timeline (the last %d of %d entries, Events left out):", timelineLines, len(lines))
			lines = lines[len(lines)-timelineLines:]
		} else {
			b.WriteString("\n    replay's timeline (Events left out):")
		}
		b.WriteString(strings.Join(lines, ""))
	}
	for _, st := range t.Replay.Steps {
		if !st.Passed {
			fmt.Fprintf(&b, "\n    step %q: %s", st.Name, st.Failure)
			if diff := strings.Split(st.Diff, "\n"); st.Diff != "" {
				if len(diff) > diffLines {
					diff = append(diff[:diffLines], fmt.Sprintf("(%d more lines in reports/roundtrip/replay)", len(diff)-diffLines))
				}
				fmt.Fprintf(&b, "\n      %s", strings.Join(diff, "\n      "))
			}
		}
	}
	for _, p := range t.Replay.FinalPods {
		fmt.Fprintf(&b, "\n    pod %s %s on %q (%s) %s", p.Name, p.Phase, p.Node, p.NodeProfile, p.Scheduling)
	}
	return b.String()
}
