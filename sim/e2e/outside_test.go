package e2e_test

import (
	"os"
	"os/exec"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
)

var _ = Describe("a run from outside the checkout", func() {
	It("finds the assets and fixtures of the checkout its binary belongs to", func() {
		// A checkout-shaped directory: the binary in bin/, the checkout's
		// bin/k8s, bin/trainer and fixtures/ beside it.
		repo, err := filepath.Abs("../..")
		Expect(err).NotTo(HaveOccurred())
		home := GinkgoT().TempDir()
		Expect(os.MkdirAll(filepath.Join(home, "bin"), 0o755)).To(Succeed())
		built := buildSimctl()
		data, err := os.ReadFile(built)
		Expect(err).NotTo(HaveOccurred())
		simctl := filepath.Join(home, "bin", "simctl")
		Expect(os.WriteFile(simctl, data, 0o755)).To(Succeed())
		for _, link := range []string{"bin/k8s", "bin/trainer", "fixtures"} {
			Expect(os.Symlink(filepath.Join(repo, link), filepath.Join(home, link))).To(Succeed())
		}
		elsewhere := GinkgoT().TempDir()

		// A scenario whose setup names a fixture.
		lint := exec.Command(simctl, "lint", filepath.Join(repo, "scenarios/docs/init-container-env.yaml"))
		lint.Dir = elsewhere
		session, err := gexec.Start(lint, GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(0), "lint resolves the fixture from the binary's checkout")

		run := exec.Command(simctl, "run", "--report-dir", filepath.Join(elsewhere, "reports"), filepath.Join(repo, "scenarios/timestamp/set-on-create.yaml"))
		run.Dir = elsewhere
		session, err = gexec.Start(run, GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { session.Kill() })
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(0), "run finds the control plane in the binary's checkout")
		Expect(string(session.Out.Contents())).To(ContainSubstring("1 passed, 0 failed"))
	})
})
