package e2e_test

import (
	"regexp"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/trainersim/trainersim/results"
)

// klogLine matches the header of a klog line (severity, month and day, as
// in "I1123 21:39:02.456647 7664 warnings.go:107] ..."), anywhere in an
// output.
const klogLine = `(?m)^[IWEF]\d{4} `

// prunedContainerField is the API server's warning about a container
// patch's field that ContainerPatch does not have, pruned from a non-strict
// write.
func prunedContainerField(field string) string {
	return `unknown field "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0].` + field + `"`
}

var _ = Describe("the API server's warnings", func() {
	var simctl string

	BeforeEach(func() { simctl = buildSimctl() })

	start := func(args ...string) *gexec.Session { return startSimctl(simctl, append([]string{"run"}, args...)...) }

	It("are recorded on the write that received them, each of two concurrent writes its own, and simctl run prints no klog line", func() {
		dir := GinkgoT().TempDir()
		session := start("testdata/warnings", "../../scenarios/restrictions/container-fields-pruned.yaml", "--report-dir", dir)
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(0))

		stdout, stderr := string(session.Out.Contents()), string(session.Err.Contents())
		Expect(stdout).NotTo(MatchRegexp(klogLine), "a klog line in simctl run's output")
		Expect(stderr).NotTo(MatchRegexp(klogLine), "a klog line in simctl run's output")
		Expect(stdout).NotTo(ContainSubstring("unknown field"), "a warning printed without -v")
		Expect(stderr).To(BeEmpty(), "simctl run wrote to stderr")
		Expect(stdout).To(ContainSubstring("PASS  server-warnings"))
		Expect(stdout).To(ContainSubstring("PASS  restrictions-container-fields-pruned"))

		run := readReport(dir)
		byName := map[string]results.Scenario{}
		for _, sc := range run.Scenarios {
			byName[sc.Name] = sc
		}
		Expect(byName).To(HaveKey("server-warnings"))
		sc := byName["server-warnings"]
		Expect(sc.Steps).To(HaveLen(4))
		// The two creates released together: the warning is on the SDK's
		// write, and Kueue's has none.
		race := sc.Steps[0].Writes
		Expect(race).To(HaveLen(2))
		Expect(race[0]).To(And(HaveField("Actor", "sdk"), HaveField("Status", 201),
			HaveField("Warnings", Equal([]string{prunedContainerField("image")}))))
		Expect(race[1]).To(And(HaveField("Actor", "kueue"), HaveField("Status", 201), HaveField("Warnings", BeEmpty())))
		Expect(sc.Steps[1].Writes[0].Warnings).To(BeEmpty(), "the get")
		Expect(sc.Steps[2].Writes[0]).To(And(HaveField("Verb", "update"), HaveField("Status", 200),
			HaveField("Warnings", Equal([]string{`unknown field "spec.suspended"`}))))
		Expect(sc.Steps[3].Writes[0]).To(And(HaveField("Verb", "patch"), HaveField("Status", 200),
			HaveField("Warnings", Equal([]string{`unknown field "spec.numNode"`}))))
		// The warning is on the write's timeline entry too.
		Expect(sc.Timeline.Entries).To(ContainElement(And(
			HaveField("Kind", results.EntryWrite),
			HaveField("Detail", ContainSubstring("warning: "+prunedContainerField("image"))))))

		// The corpus's pruned container fields: four warnings on the create.
		Expect(byName).To(HaveKey("restrictions-container-fields-pruned"))
		create := byName["restrictions-container-fields-pruned"].Steps[0].Writes[0]
		Expect(create.Warnings).To(ConsistOf(prunedContainerField("args"), prunedContainerField("command"),
			prunedContainerField("image"), prunedContainerField("resources")))
	})

	It("are printed under their write with -v, still without a klog line", func() {
		session := start("-v", "testdata/warnings")
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(0))
		stdout := string(session.Out.Contents())
		Expect(stdout).NotTo(MatchRegexp(klogLine))
		Expect(string(session.Err.Contents())).To(BeEmpty())
		Expect(stdout).To(MatchRegexp(`(?m)^ +update TrainJob server-warnings-\w+/clean as kueue-admission: HTTP 200 *\n +warning: unknown field "spec.suspended"$`))
		Expect(stdout).To(MatchRegexp(`(?m)^ +create TrainJob server-warnings-\w+/pruned as kubeflow-sdk: HTTP 201 *\n +warning: ` + regexp.QuoteMeta(prunedContainerField("image")) + `$`))
		Expect(stdout).To(MatchRegexp(`(?m)^ +create TrainJob server-warnings-\w+/clean as kueue-admission: HTTP 201 *\n +(create|ok) `), "a warning under the write that had none")
	})
})
