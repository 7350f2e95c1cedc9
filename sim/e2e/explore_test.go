package e2e_test

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"
)

var _ = Describe("simctl explore", func() {
	It("runs each scenario twice as written, leaves out one that fails with its plans, runs the first four plans of the other, and reports a write refused while the Trainer is down as what a cluster does", func() {
		out := GinkgoT().TempDir()
		session, err := gexec.Start(exec.Command(buildSimctl(), "explore", "--plans", "8", "-o", out,
			"../../scenarios/examples/first-scenario.yaml", "testdata/fails/fails-on-purpose.yaml"), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(0))
		Expect(session.Err).To(gbytes.Say(`not explored: testdata/fails/fails-on-purpose.yaml: its reference run failed at step`))
		Expect(session.Out).To(gbytes.Say(`explored 1 scenarios in .*: 4 plans run of \d+ \(0 down plans merged into one refused before\); 3 same, 1 refused while down, 0 not carried out, 0 found`))

		var report struct {
			NotExplored map[string]string `json:"notExplored"`
			Run         []struct {
				Plan    string `json:"plan"`
				Verdict struct {
					Kind    string `json:"kind"`
					Failure string `json:"failure"`
				} `json:"verdict"`
			} `json:"run"`
		}
		data, err := os.ReadFile(filepath.Join(out, "explore.json"))
		Expect(err).NotTo(HaveOccurred())
		Expect(json.Unmarshal(data, &report)).To(Succeed())
		Expect(report.NotExplored).To(HaveKey("testdata/fails/fails-on-purpose.yaml"))
		kinds := map[string]string{}
		for _, r := range report.Run {
			kinds[r.Plan] = r.Verdict.Kind
			if r.Verdict.Kind == "refused-while-down" {
				Expect(r.Verdict.Failure).To(ContainSubstring(`failed calling webhook`))
			}
		}
		// The Trainer's webhooks fail closed while it is down: the
		// TrainJob's create is refused; a restart after it (onto a list
		// of TrainJobs from before the create, too), and JobSet
		// restarted, end as the scenario does.
		Expect(kinds).To(Equal(map[string]string{
			"first-scenario--restart-trainer-step-1": "same",
			"first-scenario--down-trainer-step-1":    "refused-while-down",
			"first-scenario--stale-trainer-step-1":   "same",
			"first-scenario--restart-jobset-step-1":  "same",
		}))
		// explore.html: the same counts, for a person.
		page, err := os.ReadFile(filepath.Join(out, "explore.html"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(page)).To(ContainSubstring("<th>same as written</th><td>3</td>"))
		Expect(string(page)).To(ContainSubstring("first-scenario--stale-trainer-step-1"))
		entries, err := os.ReadDir(filepath.Join(out, "findings"))
		Expect(err).NotTo(HaveOccurred())
		Expect(entries).To(BeEmpty())
		// junit.xml: a case per plan run, none failed.
		var junit struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
		}
		data, err = os.ReadFile(filepath.Join(out, "junit.xml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(xml.Unmarshal(data, &junit)).To(Succeed())
		Expect(junit.Tests).To(Equal(4), "junit.xml: %s", data)
		Expect(junit.Failures).To(BeZero(), "junit.xml: %s", data)
	})

	It("killed with SIGKILL after its first batch of plans, leaves no process behind and keeps the batch's verdicts in explore.json", func() {
		out := GinkgoT().TempDir()
		session, err := gexec.Start(exec.Command(buildSimctl(), "explore", "--plans", "12", "--parallel", "4", "-o", out,
			"../../scenarios/examples/first-scenario.yaml"), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { session.Kill() })
		pid := session.Command.Process.Pid
		Eventually(session.Err).WithTimeout(runTimeout).Should(gbytes.Say(`plans 4 of \d+ run`))
		children := childProcesses(pid)
		Expect(children).To(ContainElements("kube-apiserver", "etcd"), "simctl's children: %v", children)
		Expect(session.Command.Process.Signal(syscall.SIGKILL)).To(Succeed())
		Eventually(session).WithTimeout(processExitTimeout).Should(gexec.Exit(128 + int(syscall.SIGKILL)))
		Eventually(func() []string { return stillAlive(children) }).
			WithTimeout(processExitTimeout).WithPolling(pollInterval).Should(BeEmpty())

		var report struct {
			Run []struct {
				Plan string `json:"plan"`
			} `json:"run"`
		}
		data, err := os.ReadFile(filepath.Join(out, "explore.json"))
		Expect(err).NotTo(HaveOccurred())
		Expect(json.Unmarshal(data, &report)).To(Succeed())
		Expect(len(report.Run)).To(BeNumerically(">=", 4), "explore.json: %s", data)
	})
})
