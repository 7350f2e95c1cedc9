package e2e_test

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/trainersim/trainersim/results"
)

// junitSkips is the part of junit.xml that says which scenarios were
// skipped and why.
type junitSkips struct {
	Suites []struct {
		Properties []struct {
			Name  string `xml:"name,attr"`
			Value string `xml:"value,attr"`
		} `xml:"properties>property"`
		Skipped int `xml:"skipped,attr"`
		Cases   []struct {
			Name    string `xml:"name,attr"`
			Skipped *struct {
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// stepNames lists the steps a scenario of the report ran.
func stepNames(run results.Run, scenario string) []string {
	var names []string
	for _, sc := range run.Scenarios {
		if sc.Name == scenario {
			for _, st := range sc.Steps {
				names = append(names, st.Name)
			}
		}
	}
	return names
}

// The corpus files each release case runs: one whose outcome differs
// between v2.2.0 and later (a step per release), one whose JobSet refusal
// reads differently on v2.2.1, and one that holds for v2.3.0 only.
var releaseScenarios = []string{
	"../../scenarios/suspension/change-and-unsuspend-in-one-request.yaml",
	"../../scenarios/suspension/jobset-refuses-volume-before-start.yaml",
	"../../scenarios/restrictions/immutable-fields-while-suspended.yaml",
}

var _ = Describe("simctl run --trainer", func() {
	var simctl string

	BeforeEach(func() { simctl = buildSimctl() })

	DescribeTable("runs another Trainer release with the JobSet it pins, and the scenarios that hold for it", Label(otherPaths),
		func(version, jobset string, ranStep, leftOut string) {
			dir := GinkgoT().TempDir()
			session := startSimctl(simctl, append([]string{"run", "--trainer", version, "--report-dir", dir}, releaseScenarios...)...)
			Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(0))
			Expect(session.Out.Contents()).To(ContainSubstring("Trainer " + version + ", JobSet " + jobset))

			run := readReport(dir)
			Expect(run.TrainerVersion).To(Equal(version))
			Expect(run.JobSetVersion).To(Equal(jobset))
			steps := stepNames(run, "suspension-change-and-unsuspend-at-once")
			Expect(steps).To(ContainElement(ranStep))
			Expect(steps).NotTo(ContainElement(leftOut))

			data, err := os.ReadFile(filepath.Join(dir, "junit.xml"))
			Expect(err).NotTo(HaveOccurred())
			var junit junitSkips
			Expect(xml.Unmarshal(data, &junit)).To(Succeed())
			Expect(junit.Suites).To(HaveLen(1))
			suite := junit.Suites[0]
			props := map[string]string{}
			for _, p := range suite.Properties {
				props[p.Name] = p.Value
			}
			Expect(props).To(HaveKeyWithValue("trainerVersion", version))
			Expect(props).To(HaveKeyWithValue("jobSetVersion", jobset))
			Expect(suite.Skipped).To(Equal(1))
			for _, tc := range suite.Cases {
				if tc.Name == "restrictions-immutable-fields-while-suspended" {
					Expect(tc.Skipped).NotTo(BeNil())
					Expect(tc.Skipped.Message).To(Equal("holds for Trainer >=v2.3.0; the cluster runs " + version))
				} else {
					Expect(tc.Skipped).To(BeNil(), tc.Name)
				}
			}
		},
		Entry("v2.2.0 refuses a change of runtimePatches and suspend: false in one request", "v2.2.0", "v0.11.1",
			"on v2.2.0 the same request is refused, and the job stays suspended", "change the entry and unsuspend in one merge patch"),
		Entry("v2.2.1 accepts it (trainer #3469)", "v2.2.1", "v0.11.1",
			"change the entry and unsuspend in one merge patch", "on v2.2.0 the same request is refused, and the job stays suspended"),
	)

	It("runs v2.1.0 with podTemplateOverrides: the legacy side of a scenario pair passes, the runtimePatches side is skipped", Label(otherPaths), func() {
		dir := GinkgoT().TempDir()
		session := startSimctl(simctl, "run", "--trainer", "v2.1.0", "--report-dir", dir, "../../scenarios/migration/")
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(0))
		run := readReport(dir)
		Expect(run.TrainerVersion).To(Equal("v2.1.0"))
		Expect(run.JobSetVersion).To(Equal("v0.10.1"))
		Expect(skipReasons(run)).To(Equal(map[string]string{
			"migration-seed-000-before": "",
			"migration-seed-000-after":  "holds for Trainer >=v2.2.0; the cluster runs v2.1.0",
		}))
	})

	It("smokes v2.1.0 with the toleration as a podTemplateOverrides entry", Label(otherPaths), func() {
		session := startSimctl(simctl, "smoke", "--trainer", "v2.1.0")
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(0))
		out := string(session.Out.Contents())
		Expect(out).To(ContainSubstring("Trainer v2.1.0, JobSet v0.10.1"))
		Expect(out).To(ContainSubstring("GPU toleration from podTemplateOverrides"))
		Expect(out).To(ContainSubstring("smoke check passed: 2 pods Running on H100 nodes"))
	})

	It("refuses a release it does not run, naming the ones it does (exit 2)", func() {
		session := startSimctl(simctl, "run", "--trainer", "v2.0.1", "../../scenarios/suspension/")
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(2))
		Expect(string(session.Err.Contents())).To(ContainSubstring("invalid --trainer: unsupported Trainer version v2.0.1: trainersim runs v2.1.0, v2.2.0, v2.2.1, v2.3.0"))
	})
})

var _ = Describe("simctl run with real managers", func() {
	var simctl string

	BeforeEach(func() { simctl = buildSimctl() })

	It("starts Kueue for the scenarios that ask for it and puts its writes and the scenario webhook's calls in lanes of their own", func() {
		dir := GinkgoT().TempDir()
		session := startSimctl(simctl, "run", "--report-dir", dir, "../../scenarios/real-kueue/sdk-webhook-and-kueue.yaml")
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(0))
		Expect(string(session.Out.Contents())).To(MatchRegexp("\n  kueue +ready in"), "the start prints Kueue's line")
		run := readReport(dir)
		Expect(run.Scenarios).To(HaveLen(1))
		sc := run.Scenarios[0]
		Expect(sc.Passed).To(BeTrue(), sc.Failure)
		Expect(sc.Timeline.Lanes).To(ContainElements("sdk", "kueue", "platform-defaults"))
		var kueueWrites, webhookCalls int
		for _, e := range sc.Timeline.Entries {
			// The SDK's own create is its write's entry, not also a
			// managedFields one.
			Expect(e.Kind == results.EntryManagerWrite && e.Lane == "kubeflow-sdk").To(BeFalse(), "%s: %s", e.Lane, e.Summary)
			switch {
			case e.Lane == "kueue" && e.Kind == results.EntryManagerWrite:
				kueueWrites++
			case e.Lane == "platform-defaults" && e.Kind == results.EntryWebhookCall:
				webhookCalls++
				Expect(e.Summary).To(ContainSubstring("called on CREATE of TrainJob/three: added its entry"))
				Expect(e.Detail).To(ContainSubstring(`"manager":"platform.example.com/defaults"`))
				Expect(e.Detail).To(ContainSubstring(`"platform.example.com/cost-center":"ml-research"`))
			}
		}
		Expect(kueueWrites).To(BeNumerically(">=", 2), "Kueue's admission update and its unsuspend")
		Expect(webhookCalls).To(Equal(1))
	})

	It("lands a write between Kueue's two requests with a webhook that holds the second, and shows the API server's refusal on Kueue's lane", func() {
		dir := GinkgoT().TempDir()
		session := startSimctl(simctl, "run", "--report-dir", dir, "../../scenarios/real-kueue/user-write-between-requests.yaml")
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(0))
		Expect(string(session.Out.Contents())).To(MatchRegexp(`cluster ready in .*, JobSet v[0-9.]+, Kueue v0\.19\.1\n`))
		// No scenario of the run takes a node unreachable: the cluster runs
		// the Kubernetes defaults' heartbeat (runner.HeartbeatFor).
		Expect(string(session.Out.Contents())).To(ContainSubstring("node heartbeat: Kubernetes defaults (Lease renewed every 10s, 50s of grace)\n"))
		run := readReport(dir)
		Expect(run.KueueVersion).To(Equal("v0.19.1"), "the report says which Kueue ran")
		junit, err := os.ReadFile(filepath.Join(dir, "junit.xml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(junit)).To(ContainSubstring(`<property name="kueueVersion" value="v0.19.1">`))
		Expect(run.Scenarios).To(HaveLen(1))
		sc := run.Scenarios[0]
		Expect(sc.Passed).To(BeTrue(), sc.Failure)
		var held, refused []results.TimelineEntry
		var labelled time.Time
		for _, e := range sc.Timeline.Entries {
			switch {
			case e.Lane == "platform-policy" && e.Kind == results.EntryRequestHeld:
				held = append(held, e)
			case e.Lane == "kueue" && e.Kind == results.EntryRequestRefused && strings.HasPrefix(e.Summary, "kueue's patch "):
				// Kueue's unsuspend; its first request, an update, may
				// be refused too, by a status write of the Trainer.
				refused = append(refused, e)
			case e.Lane == "user" && e.Kind == results.EntryWrite:
				labelled = e.At
			}
		}
		Expect(held).To(HaveLen(1), "one unsuspend held")
		Expect(held[0].Summary).To(ContainSubstring(`gate platform-policy-hold held kueue's update of TrainJob/llm (trainjobs)`), "the webhook's hold is a gate")
		Expect(held[0].Summary).To(ContainSubstring(`step "the user labels the TrainJob while Kueue's unsuspend waits" ran (its until)`))
		Expect(refused).NotTo(BeEmpty())
		Expect(refused[0].Summary).To(Equal("kueue's patch of TrainJob/llm refused: 409 Conflict"))
		Expect(refused[0].Detail).To(ContainSubstring("the object has been modified"))
		Expect(refused[0].Detail).To(MatchRegexp(`\nthe object changed since resourceVersion \d+: .*actor user's patch \(resourceVersion \d+\)`), "the refusal names the write it lost to")
		Expect(held[0].At).To(BeTemporally("<", labelled), "the hold began before the user's write")
		Expect(labelled).To(BeTemporally("<", refused[0].At), "the refusal came after the user's write")
	})

	It("puts the real Kueue after the Trainer with a gate: Kueue's admission is held until the Job exists, and the job's Pod runs with both tolerations", func() {
		dir := GinkgoT().TempDir()
		session := startSimctl(simctl, "run", "--report-dir", dir, "../../scenarios/real-kueue/sdk-tolerations-and-kueues.yaml")
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(0))
		run := readReport(dir)
		Expect(run.Scenarios).To(HaveLen(1))
		sc := run.Scenarios[0]
		Expect(sc.Passed).To(BeTrue(), sc.Failure)
		var held []results.TimelineEntry
		var jobCreated time.Time
		for _, e := range sc.Timeline.Entries {
			switch {
			case e.Kind == results.EntryRequestHeld:
				held = append(held, e)
			case e.Kind == results.EntryJobCreated && e.Object == "Job/first-node-0":
				jobCreated = e.At
			}
		}
		Expect(held).NotTo(BeEmpty(), "the gate held Kueue's admission")
		Expect(held[0].Lane).To(Equal("kueue"))
		Expect(held[0].Summary).To(HavePrefix("gate kueue-admits held kueue's update of TrainJob/first (trainjobs); let through after "))
		Expect(held[0].Summary).To(HaveSuffix(`step "the Trainer makes the first job's JobSet and Job before Kueue admits it" ran (its until)`))
		Expect(jobCreated).NotTo(BeZero())
		// The step that opened the gate saw the Job while the gate held
		// Kueue's update: the order is the gate's, not the race's.
		Expect(sc.Steps[1].Passed).To(BeTrue())
	})
})
