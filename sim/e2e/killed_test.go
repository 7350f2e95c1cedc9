package e2e_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/trainersim/trainersim/reports"
	"github.com/trainersim/trainersim/results"
)

// killedCorpus is the part of the corpus the killed run runs: five
// scenarios that finish in seconds.
const killedCorpus = "../../scenarios/timestamp/"

// killedCorpusRuns is how many runs killedCorpus makes.
const killedCorpusRuns = 5

// journalRecords returns the records of the complete lines of
// dir/report.jsonl, by kind: the start record, the names of the scenario
// records in the order written, and whether there is an end record.
func journalRecords(dir string) (start *reports.JournalStart, scenarios []string, ended bool) {
	data, err := os.ReadFile(filepath.Join(dir, reports.JSONLFile))
	if os.IsNotExist(err) {
		return nil, nil, false
	}
	Expect(err).NotTo(HaveOccurred())
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var rec struct {
			Record   string                `json:"record"`
			Start    *reports.JournalStart `json:"start"`
			Scenario *results.Scenario     `json:"scenario"`
		}
		Expect(json.Unmarshal(sc.Bytes(), &rec)).To(Succeed(), "report.jsonl line %q", sc.Text())
		switch rec.Record {
		case reports.RecordStart:
			start = rec.Start
		case reports.RecordScenario:
			scenarios = append(scenarios, rec.Scenario.Name)
		case reports.RecordEnd:
			ended = true
		}
	}
	Expect(sc.Err()).NotTo(HaveOccurred())
	return start, scenarios, ended
}

// resultLine is a line simctl prints for a finished scenario.
var resultLine = regexp.MustCompile(`(?m)^(PASS|FAIL|SKIP)  (\S+)`)

var _ = Describe("simctl run killed with SIGKILL", func() {
	It("keeps every finished scenario in report.jsonl and junit.xml, and simctl report writes report.json and report.html of them", func() {
		simctl := buildSimctl()
		dir := GinkgoT().TempDir()
		// An earlier run's report must not pass for this run's.
		stale := filepath.Join(dir, reports.JSONFile)
		Expect(os.WriteFile(stale, []byte(`{"scenarios":[{"name":"from-an-earlier-run"}]}`), 0o644)).To(Succeed())

		// Every run at once: the five of the corpus finish in seconds,
		// slow waits five minutes for a Pod that never comes. When the
		// five have printed their result the run is killed in the
		// middle of slow, with no write under way.
		session, err := gexec.Start(exec.Command(simctl, "run", killedCorpus, "testdata/interrupt/slow.yaml",
			"--parallel", "6", "--report-dir", dir), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { session.Kill() })
		printed := func() []string {
			var names []string
			for _, m := range resultLine.FindAllStringSubmatch(string(session.Out.Contents()), -1) {
				names = append(names, m[2])
			}
			return names
		}
		Eventually(printed).WithTimeout(runTimeout).WithPolling(pollInterval).Should(HaveLen(killedCorpusRuns))
		Expect(printed()).NotTo(ContainElement("slow"))
		Expect(session.Command.Process.Signal(syscall.SIGKILL)).To(Succeed())
		Eventually(session).WithTimeout(processExitTimeout).Should(gexec.Exit(128 + int(syscall.SIGKILL)))
		finished := printed()

		// report.jsonl: the start record with the six runs planned,
		// one record per finished scenario, no end.
		start, recorded, ended := journalRecords(dir)
		Expect(start).NotTo(BeNil())
		Expect(start.KubernetesVersion).NotTo(BeEmpty())
		var planned []string
		for _, r := range start.Runs {
			planned = append(planned, r.Name)
		}
		Expect(planned).To(HaveLen(killedCorpusRuns + 1))
		Expect(planned).To(ContainElements(append(finished, "slow")))
		Expect(recorded).To(ConsistOf(finished))
		Expect(ended).To(BeFalse())

		// junit.xml: exactly the finished scenarios, marked unfinished.
		junit := readJUnit(dir)
		var cases []string
		for _, c := range junit.Suites[0].Cases {
			cases = append(cases, c.Name)
		}
		Expect(cases).To(ConsistOf(finished))
		data, err := os.ReadFile(filepath.Join(dir, reports.JUnitFile))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(data)).To(ContainSubstring(`<property name="unfinished" value="true"></property>`))
		Expect(string(data)).To(ContainSubstring("never reported: slow"))
		// The killed run wrote no report.json or report.html, and the
		// earlier run's is gone.
		Expect(stale).NotTo(BeAnExistingFile())
		Expect(filepath.Join(dir, reports.HTMLFile)).NotTo(BeAnExistingFile())

		// simctl report: report.json and report.html of the finished
		// scenarios, and it says that the run did not finish.
		report := func() *gexec.Session {
			s, err := gexec.Start(exec.Command(simctl, "report", dir), GinkgoWriter, GinkgoWriter)
			Expect(err).NotTo(HaveOccurred())
			Eventually(s).WithTimeout(time.Minute).Should(gexec.Exit(1))
			return s
		}
		s := report()
		incomplete := fmt.Sprintf("run did not finish: %d scenarios have results; 1 never reported", killedCorpusRuns)
		Expect(string(s.Out.Contents())).To(ContainSubstring(incomplete + "\n"))
		run := readReport(dir)
		Expect(run.Unfinished).To(BeTrue())
		Expect(run.NotReported).To(Equal([]string{"slow"}))
		var names []string
		for _, sc := range run.Scenarios {
			names = append(names, sc.Name)
			Expect(sc.Steps).NotTo(BeEmpty(), "%s: the whole result, not a name", sc.Name)
		}
		Expect(names).To(ConsistOf(finished))
		page, err := os.ReadFile(filepath.Join(dir, reports.HTMLFile))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(page)).To(ContainSubstring("<strong>Did not finish.</strong>"))
		Expect(string(page)).To(ContainSubstring(incomplete))
		for _, name := range finished {
			Expect(string(page)).To(ContainSubstring(">" + name + "</a>"))
		}
		Expect(readJUnit(dir).Suites[0].Cases).To(HaveLen(killedCorpusRuns))

		// A kill in the middle of a record: the cut line is named and
		// skipped, every result before it kept.
		f, err := os.OpenFile(filepath.Join(dir, reports.JSONLFile), os.O_APPEND|os.O_WRONLY, 0)
		Expect(err).NotTo(HaveOccurred())
		_, err = f.WriteString(`{"record":"scenario","scenario":{"name":"slow","fi`)
		Expect(err).NotTo(HaveOccurred())
		Expect(f.Close()).To(Succeed())
		s = report()
		Expect(string(s.Err.Contents())).To(ContainSubstring("warning: " + filepath.Join(dir, reports.JSONLFile) + ":7: record cut short"))
		Expect(string(s.Out.Contents())).To(ContainSubstring(incomplete + "\n"))
		Expect(readReport(dir).Scenarios).To(HaveLen(killedCorpusRuns))
	})
})

var _ = Describe("simctl run killed with SIGKILL while a component is down", func() {
	It("leaves no process of the cluster behind and keeps the scenarios that finished", func() {
		simctl := buildSimctl()
		dir := GinkgoT().TempDir()
		// On one cluster the Trainer's crash runs first (it keeps the
		// Trainer to itself), then Kueue's: simctl kills Kueue's process,
		// and while it is down (its first job's Pods being deleted) simctl
		// is killed.
		session, err := gexec.Start(exec.Command(simctl, "run", "--one-cluster",
			"../../scenarios/components/trainer-crashes-before-its-status-write.yaml",
			"../../scenarios/components/kueue-down-while-a-job-is-queued.yaml",
			"--report-dir", dir), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { session.Kill() })
		pid := session.Command.Process.Pid
		Eventually(func() string { return string(session.Out.Contents()) }).WithTimeout(runTimeout).WithPolling(pollInterval).
			Should(ContainSubstring("PASS  components-trainer-crashes-before-its-status-write"))
		children := childProcesses(pid)
		Expect(children).To(ContainElements("kube-apiserver", "etcd", "kueue"), "simctl's children: %v", children)
		// Kueue's process gone: the crash step ran, and Kueue is down.
		Eventually(func() []string { return slices.Collect(maps.Values(childProcesses(pid))) }).
			WithTimeout(runTimeout).WithPolling(50 * time.Millisecond).ShouldNot(ContainElement("kueue"))
		children = childProcesses(pid)
		Expect(session.Command.Process.Signal(syscall.SIGKILL)).To(Succeed())
		Eventually(session).WithTimeout(processExitTimeout).Should(gexec.Exit(128 + int(syscall.SIGKILL)))

		Eventually(func() []string { return stillAlive(children) }).
			WithTimeout(processExitTimeout).WithPolling(pollInterval).Should(BeEmpty())
		_, recorded, ended := journalRecords(dir)
		Expect(recorded).To(Equal([]string{"components-trainer-crashes-before-its-status-write"}))
		Expect(ended).To(BeFalse())
		var cases []string
		for _, c := range readJUnit(dir).Suites[0].Cases {
			cases = append(cases, c.Name)
		}
		Expect(cases).To(Equal([]string{"components-trainer-crashes-before-its-status-write"}))
	})
})
