package e2e_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/trainersim/trainersim/sim/releases"
)

var _ = Describe("bringing your own Kueue (make build KUEUE_DIR=...)", func() {
	It("refuses a directory that is not a Kueue checkout in one line, leaving nothing behind", func(ctx SpecContext) {
		root, err := filepath.Abs("../..")
		Expect(err).NotTo(HaveOccurred())
		bin := filepath.Join(GinkgoT().TempDir(), "bin")
		notKueue := GinkgoT().TempDir()
		build := exec.CommandContext(ctx, "make", "-s", "-C", root, "build", "KUEUE_DIR="+notKueue, "BIN_DIR="+bin)
		output, err := build.CombinedOutput()
		var exit *exec.ExitError
		Expect(err).To(BeAssignableToTypeOf(exit), string(output))
		Expect(string(output)).To(HavePrefix("KUEUE_DIR=" + notKueue + " is not a Kueue checkout: it has no go.mod of module sigs.k8s.io/kueue\n"))
		Expect(bin).NotTo(BeADirectory())
	})

	It("runs the Kueue component built from a git checkout as newer than its release, and says so", Label(otherPaths), func(ctx SpecContext) {
		root, err := filepath.Abs("../..")
		Expect(err).NotTo(HaveOccurred())

		// A checkout: the pinned Kueue module in a git repository, tagged
		// with its release, one commit after.
		checkout, git := gitCheckout(ctx, filepath.Join(root, "hack", "kueue", releases.KueueVersion), "sigs.k8s.io/kueue", "kueue", releases.KueueVersion)
		Expect(os.WriteFile(filepath.Join(checkout, "NOTES"), []byte("a commit after the release\n"), 0o644)).To(Succeed())
		git("add", "NOTES")
		git("commit", "-q", "-m", "after the release")

		bin := filepath.Join(GinkgoT().TempDir(), "bin")
		build := exec.CommandContext(ctx, "make", "-C", root, "build", "KUEUE_DIR="+checkout, "BIN_DIR="+bin)
		output, err := build.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(output))
		checkoutLine := `the Kueue checkout ` + regexp.QuoteMeta(checkout) + ` \(v0\.19\.1-1-g[0-9a-f]+\), run as newer than v0\.19\.1 \(from its git tags\)`
		Expect(string(output)).To(MatchRegexp(`kueue\s+v0\.19\.2-0\.\d{14}-[0-9a-f]{12} \(the component\)\n\s+` + checkoutLine))
		for _, f := range []string{"kueue", "webhooks.yaml", "rbac.yaml", "crds"} {
			Expect(filepath.Join(bin, "kueue", "checkout", f)).To(Or(BeAnExistingFile(), BeADirectory()))
		}

		dir := GinkgoT().TempDir()
		session := startSimctl(filepath.Join(bin, "simctl"), "run", "--report-dir", dir, filepath.Join(root, "scenarios", "real-kueue"))
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(0))
		Expect(string(session.Out.Contents())).To(MatchRegexp(`Kueue v0\.19\.2-0\.\d{14}-[0-9a-f]{12}\n`))
		Expect(string(session.Out.Contents())).To(MatchRegexp(`kueue: ` + checkoutLine))
		run := readReport(dir)
		Expect(run.KueueCheckout).To(MatchRegexp(checkoutLine))
		Expect(run.Scenarios).NotTo(BeEmpty())
		for _, sc := range run.Scenarios {
			Expect(sc.Passed).To(BeTrue(), "%s: %s", sc.Name, sc.Failure)
		}
	}, NodeTimeout(buildTimeout+runTimeout))
})
