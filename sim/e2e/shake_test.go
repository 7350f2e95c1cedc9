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
		// With delays up to 2 s, seeds 30 and 31 delay the two creates
		// 1866 and 435 ms, then 134 and 1565 ms: a margin of 1.4 s, far
		// above what else decides an order on a loaded machine (the other
		// webhooks the API server calls beside the delayer, the client's
		// first discovery), so that each seed's replay gives its verdict
		// again. Seeds 18 and 19 at the default 300 ms (62 and 294 ms,
		// then 237 and 5) replayed the wrong verdict 1 run in 3.
		session := startSimctl(simctl, "run", "--shake", "2", "--shake-seed", "30", "--shake-max-delay", "2s", "--report-dir", dir, scenario)
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(1), "an order-dependent scenario fails the run")
		out := string(session.Out.Contents())
		Expect(out).To(ContainSubstring("1 scenarios (2 runs: shaken with seeds 30 to 31, delays up to 2s)"))
		m := regexp.MustCompile(`order-dependent: shake-order-dependent passed 1 of 2 shaken runs; passes with --shake-seed (\d+), fails with --shake-seed (\d+)`).FindStringSubmatch(out)
		Expect(m).NotTo(BeNil(), "the shaker's finding:\n%s", out)
		passing, failing := m[1], m[2]
		Expect(out).To(ContainSubstring("replay: simctl run --shake-seed " + failing + " --shake-max-delay 2s --run '^shake-order-dependent$' " + scenario))
		junit, err := os.ReadFile(filepath.Join(dir, "junit.xml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(junit)).To(ContainSubstring(`<testcase name="shake-order-dependent [order-dependent]"`))
		Expect(string(junit)).To(ContainSubstring(`<property name="orderDependent" value="1">`))
		html, err := os.ReadFile(filepath.Join(dir, "report.html"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(html)).To(ContainSubstring("<strong>Order-dependent.</strong>"))

		for seed, code := range map[string]int{passing: 0, failing: 1} {
			replay := startSimctl(simctl, "run", "--shake-seed", seed, "--shake-max-delay", "2s", "--run", "^shake-order-dependent$", scenario)
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
