package e2e_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// buildTimeout bounds a build of simctl against a trainer checkout.
const buildTimeout = 10 * time.Minute

var _ = Describe("bringing your own trainer (make build TRAINER_DIR=...)", func() {
	It("builds simctl from the checkout, not the pinned module, without touching go.mod", func(ctx SpecContext) {
		root, err := filepath.Abs("../..")
		Expect(err).NotTo(HaveOccurred())
		goMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
		Expect(err).NotTo(HaveOccurred())

		// A "checkout": the pinned module copied from the module cache, with
		// one file added whose code only a build from the copy contains.
		out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/kubeflow/trainer/v2").Output()
		Expect(err).NotTo(HaveOccurred())
		checkout := filepath.Join(GinkgoT().TempDir(), "trainer")
		Expect(exec.CommandContext(ctx, "cp", "-r", strings.TrimSpace(string(out)), checkout).Run()).To(Succeed())
		Expect(exec.CommandContext(ctx, "chmod", "-R", "u+w", checkout).Run()).To(Succeed())
		probe := `package webhooks

import (
	"fmt"
	"os"
)

func init() {
	if os.Getenv("TRAINERSIM_CHECKOUT_PROBE") != "" {
		fmt.Println("probe: webhooks built from the local checkout")
	}
}
`
		Expect(os.WriteFile(filepath.Join(checkout, "pkg", "webhooks", "zz_checkout_probe.go"), []byte(probe), 0o644)).To(Succeed())

		bin := GinkgoT().TempDir()
		build := exec.CommandContext(ctx, "make", "-C", root, "build", "TRAINER_DIR="+checkout, "BIN_DIR="+bin)
		build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
		output, err := build.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(output))
		Expect(string(output)).To(ContainSubstring("building against the trainer in " + checkout))
		Expect(string(output)).To(MatchRegexp(`trainer\s+\(devel\)`))
		Expect(filepath.Join(bin, "trainer.go.work")).To(BeAnExistingFile())

		version := exec.CommandContext(ctx, filepath.Join(bin, "simctl"), "version")
		version.Env = append(os.Environ(), "TRAINERSIM_CHECKOUT_PROBE=1")
		output, err = version.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(output))
		Expect(string(output)).To(ContainSubstring("probe: webhooks built from the local checkout"))

		after, err := os.ReadFile(filepath.Join(root, "go.mod"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(after)).To(Equal(string(goMod)), "go.mod changed")
	}, NodeTimeout(buildTimeout))
})
