package e2e_test

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/trainersim/trainersim/results"
)

// runTimeout bounds one simctl run: a cluster start plus a few scenarios.
const runTimeout = 4 * time.Minute

type junitSuites struct {
	Suites []struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Cases    []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func readJUnit(dir string) junitSuites {
	data, err := os.ReadFile(filepath.Join(dir, "junit.xml"))
	Expect(err).NotTo(HaveOccurred())
	var s junitSuites
	Expect(xml.Unmarshal(data, &s)).To(Succeed())
	Expect(s.Suites).To(HaveLen(1))
	return s
}

func readReport(dir string) results.Run {
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	Expect(err).NotTo(HaveOccurred())
	var run results.Run
	Expect(json.Unmarshal(data, &run)).To(Succeed())
	return run
}

// skipReasons returns each scenario's reason to be skipped by name, ""
// for one that ran, and checks that every one that ran passed.
func skipReasons(run results.Run) map[string]string {
	out := map[string]string{}
	for _, sc := range run.Scenarios {
		out[sc.Name] = sc.Skipped
		if sc.Skipped == "" {
			Expect(sc.Passed).To(BeTrue(), "%s: %s", sc.Name, sc.Failure)
		}
	}
	return out
}

var _ = Describe("simctl run", func() {
	var simctl string

	BeforeEach(func() { simctl = buildSimctl() })

	start := func(args ...string) *gexec.Session { return startSimctl(simctl, append([]string{"run"}, args...)...) }
	// onSuiteCluster runs on the suite's cluster (simctl run --kubeconfig,
	// as on a kept cluster): for the specs whose subject is not the start.
	onSuiteCluster := func(args ...string) *gexec.Session {
		return start(append([]string{"--kubeconfig", env.KubeconfigPath}, args...)...)
	}

	It("exits 1 for a scenario written to fail, with the diff in the JUnit failure", func() {
		dir := GinkgoT().TempDir()
		session := onSuiteCluster("testdata/fails", "--report-dir", dir)
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(1))
		Expect(session.Out.Contents()).To(ContainSubstring("FAIL  fails-on-purpose"))
		junit := readJUnit(dir)
		Expect(junit.Suites[0].Tests).To(Equal(1))
		Expect(junit.Suites[0].Failures).To(Equal(1))
		failure := junit.Suites[0].Cases[0].Failure
		Expect(failure).NotTo(BeNil())
		// go-cmp varies its spacing on purpose (sometimes U+00A0).
		text := strings.ReplaceAll(failure.Text, "\u00a0", " ")
		Expect(text).To(ContainSubstring("(-want +got)"))
		Expect(text).To(MatchRegexp(`-\s+"nodeSelector":\s+map\[string\]any\{"zone":\s+string\("b"\)\}`))
		for _, f := range []string{"report.json", "report.html"} {
			Expect(filepath.Join(dir, f)).To(BeAnExistingFile())
		}
	})

	It("names the view that kept events back from a component when a step fails meanwhile", func() {
		dir := GinkgoT().TempDir()
		session := start("testdata/views-fail", "--report-dir", dir)
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(1))
		Expect(session.Out.Contents()).To(ContainSubstring("FAIL  fails-while-a-view-holds"))
		Expect(session.Out.Contents()).To(ContainSubstring("(meanwhile view trainer-blind keeps 1 event(s) back from trainer: ADDED TrainJob/llm)"))
	})

	It("runs two scenarios that each fill both H100 nodes in parallel, each on its own nodes", func() {
		dir := GinkgoT().TempDir()
		session := onSuiteCluster("testdata/parallel", "--parallel", "2", "--report-dir", dir)
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(0))
		run := readReport(dir)
		Expect(run.Scenarios).To(HaveLen(2))
		nodes := map[string]string{}
		for _, sc := range run.Scenarios {
			Expect(sc.Passed).To(BeTrue(), "%s: %s", sc.Name, sc.Failure)
			Expect(sc.FinalPods).To(HaveLen(2))
			for _, p := range sc.FinalPods {
				Expect(p.NodeProfile).To(Equal("nvidia-h100-80gb"))
				suffix := sc.Namespace[strings.LastIndexByte(sc.Namespace, '-')+1:]
				Expect(p.Node).To(HavePrefix("sim-"+suffix+"-"), "pod %s of %s on another scenario's node", p.Name, sc.Name)
				Expect(nodes).NotTo(HaveKey(p.Node))
				nodes[p.Node] = sc.Name
			}
		}
		Expect(nodes).To(HaveLen(4))
		// The scenarios overlapped in time: each started before the other ended.
		a, b := run.Scenarios[0], run.Scenarios[1]
		Expect(a.Started.Before(b.Started.Add(b.Duration)) && b.Started.Before(a.Started.Add(a.Duration))).To(BeTrue(), "scenarios did not overlap")
	})

	It("runs a scenario that keeps other runs off a cluster on a second cluster, beside the others", func() {
		dir := GinkgoT().TempDir()
		apart := "../../scenarios/components/scheduler-down-while-pods-wait.yaml"
		session := start(apart, "testdata/parallel/fill-both-h100-a.yaml", "--report-dir", dir)
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(0))
		Expect(session.Out.Contents()).To(ContainSubstring("for the 1 runs that keep other runs off a cluster"))
		second := map[string]bool{}
		for _, sc := range readReport(dir).Scenarios {
			Expect(sc.Passed).To(BeTrue(), "%s: %s", sc.Name, sc.Failure)
			second[sc.Name] = sc.SecondCluster
		}
		Expect(second).To(Equal(map[string]bool{"components-scheduler-down-while-pods-wait": true, "fill-both-h100-a": false}))
	})

	It("on Ctrl-C writes the reports of the finished scenarios and leaves no process behind", func() {
		dir := GinkgoT().TempDir()
		session := start("testdata/interrupt", "--parallel", "2", "--report-dir", dir)
		Eventually(session).WithTimeout(runTimeout).Should(gbytes.Say(`PASS  quick`))
		children := childProcesses(session.Command.Process.Pid)
		Expect(children).NotTo(BeEmpty())
		Expect(session.Command.Process.Signal(syscall.SIGINT)).To(Succeed())
		Eventually(session).WithTimeout(time.Minute).Should(gexec.Exit(1))
		Expect(string(session.Out.Contents())).To(ContainSubstring("interrupted"))
		run := readReport(dir)
		Expect(run.Interrupted).To(BeTrue())
		Expect(run.Scenarios).To(HaveLen(1))
		Expect(run.Scenarios[0].Name).To(Equal("quick"))
		Expect(readJUnit(dir).Suites[0].Tests).To(Equal(1))
		for pid, name := range children {
			Expect(processAlive(pid)).To(BeFalse(), "%s (pid %d) outlived simctl", name, pid)
		}
		Expect(strings.Count(string(session.Out.Contents()), "PASS")).To(Equal(1))
	})

	It("names the failing order and its seed, and --seed replays that order with the same outcome", func() {
		dir := GinkgoT().TempDir()
		session := onSuiteCluster("testdata/interleavings", "--report-dir", dir)
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(1))
		run := readReport(dir)
		Expect(run.Scenarios).To(HaveLen(2), "one run per order of two writes")
		var failed *results.Scenario
		for i, sc := range run.Scenarios {
			Expect(sc.Interleaving).NotTo(BeNil())
			if !sc.Passed {
				Expect(failed).To(BeNil(), "only the order with kueue first fails")
				failed = &run.Scenarios[i]
			}
		}
		Expect(failed).NotTo(BeNil())
		il := failed.Interleaving
		Expect(il.Order).To(Equal([]string{"kueue", "policy"}))
		seed := strconv.FormatUint(il.Seed, 10)
		Expect(il.Replay).To(HavePrefix("simctl run --seed " + seed + " "))
		junit := readJUnit(dir)
		var message string
		for _, c := range junit.Suites[0].Cases {
			if c.Failure != nil {
				message = c.Failure.Message
			}
		}
		Expect(message).To(ContainSubstring("seed " + seed))
		Expect(message).To(ContainSubstring(`case "wrong on purpose": outcomes: 1 succeeded, want 2`))

		// Two replays with the failing seed: the same order, the same
		// statuses, the same failure.
		outcome := func(sc results.Scenario) []string {
			var got []string
			for _, st := range sc.Steps {
				for _, w := range st.Writes {
					got = append(got, fmt.Sprintf("%s %s %d", st.Name, w.Actor, w.Status))
				}
			}
			return append(got, sc.Failure)
		}
		for range 2 {
			replay := GinkgoT().TempDir()
			session := onSuiteCluster("testdata/interleavings", "--seed", seed, "--report-dir", replay)
			Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(1))
			again := readReport(replay)
			Expect(again.Scenarios).To(HaveLen(1), "--seed runs the one order")
			Expect(again.Scenarios[0].Interleaving.Order).To(Equal(il.Order))
			Expect(again.Scenarios[0].Steps[len(again.Scenarios[0].Steps)-1].Order).To(Equal(il.Order))
			Expect(outcome(again.Scenarios[0])).To(Equal(outcome(*failed)))
		}
	})
})
