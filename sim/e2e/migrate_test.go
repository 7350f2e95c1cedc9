package e2e_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
)

var _ = Describe("simctl migrate --verify", func() {
	var simctl string

	BeforeEach(func() { simctl = buildSimctl() })

	It("passes on the guide's migration example: the same Pod templates and Pods on v2.1.0 and v2.3.0", func() {
		session := startSimctl(simctl, "migrate", "--verify", "../../fixtures/migrate/seed-000.yaml")
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(0))
		Expect(string(session.Out.Contents())).To(ContainSubstring("- manager: trainer.kubeflow.org/kubeflow-sdk"))
		Expect(string(session.Err.Contents())).To(ContainSubstring("Trainer v2.1.0, JobSet v0.10.1"))
		Expect(string(session.Err.Contents())).To(ContainSubstring("Trainer v2.3.0, JobSet v0.12.0"))
		// One TrainJob on torch-distributed, whose one replicated job (node)
		// has one Pod.
		Expect(string(session.Err.Contents())).To(ContainSubstring("verify: compared 1 Pod template and 1 Pod of 1 TrainJob\n"))
		Expect(string(session.Err.Contents())).To(ContainSubstring("verify: the JobSets' Pod templates and the Pods are the same on both releases"))
	})

	It("says why no Pod came on the guide's example without the ServiceAccount and claim it names, and suggests --create-missing", Label(otherPaths), func() {
		session := startSimctl(simctl, "migrate", "--verify", "../../fixtures/migrate/guide-trainjob-only.yaml")
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(1))
		stderr := string(session.Err.Contents())
		Expect(stderr).To(ContainSubstring("TrainJob pytorch-distributed: want 1 Pods, got 0 within 30s; the namespace's warnings: "))
		Expect(stderr).To(MatchRegexp(`Job pytorch-distributed-node-0: FailedCreate: .*serviceaccount "ml-training-sa" not found`))
		Expect(stderr).To(ContainSubstring("(--create-missing creates the ServiceAccounts, claims, ConfigMaps and Secrets the TrainJobs name)"))
	})

	It("verifies the same example with --create-missing, which creates and names what the TrainJob names", Label(otherPaths), func() {
		session := startSimctl(simctl, "migrate", "--verify", "--create-missing", "../../fixtures/migrate/guide-trainjob-only.yaml")
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(0))
		stderr := string(session.Err.Contents())
		Expect(stderr).To(ContainSubstring("verify: --create-missing: creating, empty, on both clusters what the TrainJobs name and FILE does not hold: PersistentVolumeClaim ml-team-training-pvc, ServiceAccount ml-training-sa\n"))
		Expect(stderr).To(ContainSubstring("verify: compared 1 Pod template and 1 Pod of 1 TrainJob\n"))
		Expect(stderr).To(ContainSubstring("verify: the JobSets' Pod templates and the Pods are the same on both releases"))
	})

	It("fails with the diff on a migration written to differ (two overrides adding volumes to a runtime that has one)", func() {
		session := startSimctl(simctl, "migrate", "--verify", "../../fixtures/migrate/differs.yaml")
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(1))
		// go-cmp varies its spacing on purpose (sometimes U+00A0).
		stderr := strings.ReplaceAll(string(session.Err.Contents()), "\u00a0", " ")
		Expect(stderr).To(ContainSubstring("warning: spec.podTemplateOverrides[0] and [1] both set spec.volumes of job node"))
		Expect(stderr).To(ContainSubstring("verify: what the TrainJobs render differs (-v2.1.0 +v2.3.0)"))
		// v2.1.0 put scratch first, the migrated entry last: in the JobSet's
		// template and in the Pod.
		Expect(stderr).To(MatchRegexp(`(?m)^-\s+map\[string\]any\{"emptyDir": map\[string\]any\{\}, "name": string\("scratch"\)\},$`))
		Expect(stderr).To(MatchRegexp(`(?m)^\+\s+map\[string\]any\{"emptyDir": map\[string\]any\{\}, "name": string\("scratch"\)\},$`))
		Expect(stderr).To(ContainSubstring("simctl: the migrated TrainJobs render differently"))
	})
})
