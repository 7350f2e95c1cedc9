package e2e_test

import (
	"os"
	"path/filepath"
	"regexp"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
)

var _ = Describe("simctl run --shake", func() {
	const scenario = "testdata/shake/order-dependent.yaml"
	var simctl string

	BeforeEach(func() { simctl = buildSimctl() })

	It("finds the scenario written to be order-dependent, names a passing and a failing seed, and each seed replays its verdict", func() {
		dir := GinkgoT().TempDir()
		// Seeds 18 and 19 delay the two creates 62 and 294 ms, then 237
		// and 5 ms: a margin far above the jitter of a loaded machine, so
		// that each seed's replay gives its verdict again (a margin of a
		// few milliseconds would leave the order to that jitter).
		session := startSimctl(simctl, "run", "--shake", "2", "--shake-seed", "18", "--report-dir", dir, scenario)
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(1), "an order-dependent scenario fails the run")
		out := string(session.Out.Contents())
		Expect(out).To(ContainSubstring("1 scenarios (2 runs: shaken with seeds 18 to 19, delays up to 300ms)"))
		m := regexp.MustCompile(`order-dependent: shake-order-dependent passed 1 of 2 shaken runs; passes with --shake-seed (\d+), fails with --shake-seed (\d+)`).FindStringSubmatch(out)
		Expect(m).NotTo(BeNil(), "the shaker's finding:\n%s", out)
		passing, failing := m[1], m[2]
		Expect(out).To(ContainSubstring("replay: simctl run --shake-seed " + failing + " --run '^shake-order-dependent$' " + scenario))
		junit, err := os.ReadFile(filepath.Join(dir, "junit.xml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(junit)).To(ContainSubstring(`<testcase name="shake-order-dependent [order-dependent]"`))
		Expect(string(junit)).To(ContainSubstring(`<property name="orderDependent" value="1">`))
		html, err := os.ReadFile(filepath.Join(dir, "report.html"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(html)).To(ContainSubstring("<strong>Order-dependent.</strong>"))

		for seed, code := range map[string]int{passing: 0, failing: 1} {
			replay := startSimctl(simctl, "run", "--shake-seed", seed, "--run", "^shake-order-dependent$", scenario)
			Eventually(replay).WithTimeout(runTimeout).Should(gexec.Exit(code), "seed %s replays its verdict", seed)
			Expect(string(replay.Out.Contents())).To(ContainSubstring("shake-order-dependent [shake seed " + seed + "]"))
		}
	})

	It("refuses --shake on a cluster simctl does not start, in one line, exit 2, before any start", func() {
		session := startSimctl(simctl, "run", "--shake", "2", "--kubeconfig", "/nonexistent/kubeconfig", scenario)
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(2))
		Expect(string(session.Err.Contents())).To(ContainSubstring("--shake needs a cluster simctl starts with envtest"))
		Expect(string(session.Out.Contents())).NotTo(ContainSubstring("starting"))
	})
})
