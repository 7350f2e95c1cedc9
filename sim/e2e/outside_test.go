package e2e_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/trainersim/trainersim/sim/releases"
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

var _ = Describe("simctl installed with go install", func() {
	It("builds its assets into the user's cache and runs the examples from a directory with no checkout", func() {
		repo, err := filepath.Abs("../..")
		Expect(err).NotTo(HaveOccurred())
		home := GinkgoT().TempDir()
		// The binary alone in a GOBIN with no checkout above it, as
		// 'go install .../cmd/simctl@version' leaves it.
		data, err := os.ReadFile(buildSimctl())
		Expect(err).NotTo(HaveOccurred())
		simctl := filepath.Join(home, "go", "bin", "simctl")
		Expect(os.MkdirAll(filepath.Dir(simctl), 0o755)).To(Succeed())
		Expect(os.WriteFile(simctl, data, 0o755)).To(Succeed())

		// The user's cache: its assets what make assets built into the
		// checkout (each build's binaries and key), its port reservations
		// and snapshots the machine's, which every simctl shares.
		userCache, err := os.UserCacheDir()
		Expect(err).NotTo(HaveOccurred())
		cache := filepath.Join(home, "cache")
		Expect(os.MkdirAll(filepath.Join(cache, "trainersim", "bin"), 0o755)).To(Succeed())
		for _, link := range []string{"bin/k8s", "bin/kueue", "bin/trainer", "bin/jobset", "bin/.builds"} {
			Expect(os.Symlink(filepath.Join(repo, link), filepath.Join(cache, "trainersim", link))).To(Succeed())
		}
		for _, shared := range []string{"ports", "snapshots"} {
			Expect(os.MkdirAll(filepath.Join(userCache, "trainersim", shared), 0o755)).To(Succeed())
			Expect(os.Symlink(filepath.Join(userCache, "trainersim", shared), filepath.Join(cache, "trainersim", shared))).To(Succeed())
		}
		work := filepath.Join(home, "platform-repo")
		Expect(os.MkdirAll(filepath.Join(work, "my-scenarios"), 0o755)).To(Succeed())
		examples, err := filepath.Glob(filepath.Join(repo, "scenarios", "examples", "*.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(examples).NotTo(BeEmpty())
		for _, e := range examples {
			data, err := os.ReadFile(e)
			Expect(err).NotTo(HaveOccurred())
			Expect(os.WriteFile(filepath.Join(work, "my-scenarios", filepath.Base(e)), data, 0o644)).To(Succeed())
		}
		// go builds with the machine's build cache, which its default
		// (in the user's cache directory) would no longer be.
		goCache, err := exec.Command("go", "env", "GOCACHE").Output()
		Expect(err).NotTo(HaveOccurred())
		simctlIn := func(args ...string) *gexec.Session {
			cmd := exec.Command(simctl, args...)
			cmd.Dir = work
			cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache, "KUBEBUILDER_ASSETS=", "GOCACHE="+strings.TrimSpace(string(goCache)))
			session, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func() { session.Kill() })
			return session
		}

		// The corpus's builds are in the cache: a second call builds nothing.
		session := simctlIn("assets")
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(0))
		Expect(string(session.Out.Contents())).To(ContainSubstring("nothing to build: " + filepath.Join(cache, "trainersim", "bin")))

		// A real build from the module simctl carries, outside any checkout.
		fresh := filepath.Join(home, "fresh-bin")
		session = simctlIn("assets", "--dir", fresh, "--only", "etcd")
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(0))
		Expect(string(session.Out.Contents())).To(ContainSubstring("[0m00s, 1 of 1] building etcd"))
		Expect(filepath.Join(fresh, "k8s", releases.KubernetesVersion, "etcd")).To(BeAnExistingFile())
		session = simctlIn("assets", "--dir", fresh, "--only", "etcd")
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(0))
		Expect(string(session.Out.Contents())).To(ContainSubstring("nothing to build"))

		session = simctlIn("run", "./my-scenarios/", "--report-dir", filepath.Join(work, "reports"))
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(0), "run finds the control plane and Kueue in the user's cache, the fixtures in simctl")
		Expect(string(session.Out.Contents())).To(MatchRegexp(`\n%d passed, 0 failed`, len(examples)))
	})
})
