package e2e_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/trainersim/trainersim/sim/releases"
)

// buildTimeout bounds a build of simctl against a trainer checkout.
const buildTimeout = 10 * time.Minute

// The Trainer v2.3.0 refusal the checkout of the test rewords, and the new
// wording: the scenarios that expect the first fail on the checkout, with
// the second in their failure.
const (
	releaseMessage  = "RuntimePatches can only be modified when the TrainJob is suspended"
	checkoutMessage = "RuntimePatches may change only while the TrainJob is suspended"
)

// rangeNarrowerThanNewer finds a scenario or step range that leaves out a
// release newer than some it holds for ("<v2.2.0", "=v2.2.1", "<v2.2.1 ||
// >v2.2.1"): the files a checkout taken for the wrong version fails.
var rangeNarrowerThanNewer = regexp.MustCompile(`versions: "[<=]`)

// gitCheckout copies the module's directory in the module cache (as the
// main module, or the nested one in pinDir, of root pins it) into a new git
// repository named name, committed and tagged with release, and returns
// its directory and a function that runs git in it.
func gitCheckout(ctx context.Context, pinDir, module, name, release string) (string, func(args ...string)) {
	list := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", module)
	list.Dir = pinDir
	out, err := list.Output()
	Expect(err).NotTo(HaveOccurred())
	checkout := filepath.Join(GinkgoT().TempDir(), name)
	Expect(exec.CommandContext(ctx, "cp", "-r", strings.TrimSpace(string(out)), checkout).Run()).To(Succeed())
	Expect(exec.CommandContext(ctx, "chmod", "-R", "u+w", checkout).Run()).To(Succeed())
	git := func(args ...string) {
		cmd := exec.CommandContext(ctx, "git", append([]string{"-C", checkout}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		output, err := cmd.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "git %s: %s", strings.Join(args, " "), output)
	}
	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("commit", "-q", "-m", "release")
	git("tag", release)
	return checkout, git
}

var _ = Describe("bringing your own trainer (make build TRAINER_DIR=...)", Label(otherPaths), func() {
	It("runs a git checkout as newer than its release and reports the verdicts it changes as behaviour changes, without touching go.mod", func(ctx SpecContext) {
		root, err := filepath.Abs("../..")
		Expect(err).NotTo(HaveOccurred())
		goMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
		Expect(err).NotTo(HaveOccurred())

		// A checkout: the pinned module copied from the module cache into a
		// git repository, tagged v2.3.0, with one commit after the tag that
		// rewords one of the Trainer's refusals.
		checkout, git := gitCheckout(ctx, root, releases.TrainerModule, "trainer", releases.TrainerVersion)
		plugin := filepath.Join(checkout, "pkg", "runtime", "framework", "plugins", "jobset", "jobset.go")
		code, err := os.ReadFile(plugin)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(code)).To(ContainSubstring(releaseMessage))
		Expect(os.WriteFile(plugin, []byte(strings.ReplaceAll(string(code), releaseMessage, checkoutMessage)), 0o644)).To(Succeed())
		git("commit", "-q", "-a", "-m", "reword the refusal")

		bin := GinkgoT().TempDir()
		build := exec.CommandContext(ctx, "make", "-C", root, "build", "TRAINER_DIR="+checkout, "BIN_DIR="+bin)
		build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
		output, err := build.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(output))
		Expect(string(output)).To(ContainSubstring("building against the trainer in " + checkout))
		Expect(string(output)).To(MatchRegexp(`trainer\s+\(devel\)`))
		Expect(string(output)).To(MatchRegexp(`the Trainer checkout ` + regexp.QuoteMeta(checkout) + ` \(v2\.3\.0-1-g[0-9a-f]+\), run as newer than v2\.3\.0 \(from its git tags\)`))
		Expect(filepath.Join(bin, "trainer.go.work")).To(BeAnExistingFile())
		after, err := os.ReadFile(filepath.Join(root, "go.mod"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(after)).To(Equal(string(goMod)), "go.mod changed")

		// Every scenario whose range leaves out newer releases, the
		// suspension/ scenarios and the README's example.
		var paths []string
		Expect(filepath.WalkDir(filepath.Join(root, "scenarios"), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || filepath.Ext(path) != ".yaml" {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if rangeNarrowerThanNewer.Match(data) || strings.Contains(path, "/suspension/") || strings.HasSuffix(path, "/sdk-and-kueue-share-a-gpu-job.yaml") {
				paths = append(paths, path)
			}
			return nil
		})).To(Succeed())
		Expect(len(paths)).To(BeNumerically(">", 25))

		dir := GinkgoT().TempDir()
		session := startSimctl(filepath.Join(bin, "simctl"), append([]string{"run", "--report-dir", dir}, paths...)...)
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(1))
		Expect(string(session.Out.Contents())).To(MatchRegexp(`Trainer v2\.3\.1-0\.\d{14}-[0-9a-f]{12}, JobSet`))
		Expect(string(session.Out.Contents())).To(ContainSubstring("trainer: the Trainer checkout " + checkout))

		run := readReport(dir)
		Expect(run.TrainerCheckout).To(ContainSubstring("run as newer than v2.3.0 (from its git tags)"))
		// Only the reworded refusal fails, each time as a behaviour change.
		var changed, legacySkipped []string
		for _, sc := range run.Scenarios {
			switch {
			case sc.Skipped != "":
				if strings.Contains(sc.File, "/legacy/") {
					legacySkipped = append(legacySkipped, sc.Name)
				}
			case !sc.Passed:
				Expect(sc.Failure).To(ContainSubstring(checkoutMessage), "%s failed on the checkout for another reason", sc.Name)
				Expect(sc.BehaviourChange).To(Equal("the Trainer checkout against "+releases.TrainerVersion), sc.Name)
				Expect(sc.Failure).To(HavePrefix("behaviour change of the Trainer checkout against "+releases.TrainerVersion+": "), sc.Name)
				changed = append(changed, sc.Name)
			}
		}
		Expect(changed).To(ContainElements("sdk-and-kueue-share-a-gpu-job", "suspension-change-while-running"))
		Expect(legacySkipped).To(HaveLen(21), "the legacy/ scenarios (podTemplateOverrides) hold for releases before v2.2.0")
		Expect(string(session.Out.Contents())).To(MatchRegexp(`\d+ passed, %d failed \(%d behaviour changes of the Trainer checkout against v2\.3\.0\), \d+ skipped`, len(changed), len(changed)))
	}, NodeTimeout(buildTimeout+runTimeout))
})
