package e2e_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
)

// tutorialBlock is a sh block of docs/tutorial.md and the text block after
// it: the output its commands print.
type tutorialBlock struct {
	commands []string
	output   []string
}

var (
	tutorialFence = regexp.MustCompile("(?ms)^```(sh|text)\n(.*?)^```")
	exitComment   = regexp.MustCompile(`\s+# exit (\d+)$`)
	// What differs from one run to the next: durations, the random
	// suffixes of namespaces, nodes and Pods.
	durations = regexp.MustCompile(`\b\d+(m\d+)?(\.\d+)?(ms|s)\b`)
	hexSuffix = regexp.MustCompile(`-[0-9a-f]{6}\b`)
	podSuffix = regexp.MustCompile(`(-\d+-\d+)-[a-z0-9]{5}\b`)
)

func normalizeRun(s string) string {
	s = durations.ReplaceAllString(s, "<d>")
	s = hexSuffix.ReplaceAllString(s, "-<x>")
	return podSuffix.ReplaceAllString(s, "$1-<p>")
}

// tutorialBlocks reads the page's sh blocks, each with the text block that
// follows it, if any, before the next sh block.
func tutorialBlocks(page string) []tutorialBlock {
	data, err := os.ReadFile(page)
	Expect(err).NotTo(HaveOccurred())
	var out []tutorialBlock
	for _, m := range tutorialFence.FindAllStringSubmatch(string(data), -1) {
		lines := strings.Split(strings.TrimSuffix(m[2], "\n"), "\n")
		if m[1] == "sh" {
			out = append(out, tutorialBlock{commands: lines})
			continue
		}
		Expect(out).NotTo(BeEmpty(), "%s: a text block before any sh block", page)
		out[len(out)-1].output = append(out[len(out)-1].output, lines...)
	}
	return out
}

var _ = Describe("docs/tutorial.md", func() {
	It("prints what the page says, command by command, exit codes included", func() {
		simctl := buildSimctl()
		root, err := filepath.Abs("../..")
		Expect(err).NotTo(HaveOccurred())
		// The page's my/ in a directory of the test's own, beside it (the
		// files' schema lines are relative), removed at the end.
		mine, err := os.MkdirTemp(root, "my-tutorial-")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(os.RemoveAll, mine)
		rel := filepath.Base(mine) + "/"

		blocks := tutorialBlocks(filepath.Join(root, "docs/tutorial.md"))
		Expect(len(blocks)).To(BeNumerically(">=", 4), "the tutorial's sh blocks")
		for _, b := range blocks {
			var printed strings.Builder
			for _, line := range b.commands {
				if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
					continue
				}
				want := 0
				if m := exitComment.FindStringSubmatch(line); m != nil {
					want, _ = strconv.Atoi(m[1])
					line = strings.TrimSuffix(line, m[0])
				}
				command := strings.ReplaceAll(strings.ReplaceAll(line, "my/", rel), "bin/simctl", simctl)
				cmd := exec.Command("bash", "-c", command)
				cmd.Dir = root
				out, err := cmd.CombinedOutput()
				fmt.Fprintf(GinkgoWriter, "$ %s\n%s", line, out)
				code := 0
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				} else {
					Expect(err).NotTo(HaveOccurred(), line)
				}
				Expect(code).To(Equal(want), "%s exits %d:\n%s", line, code, out)
				printed.Write(out)
			}
			got := normalizeRun(strings.ReplaceAll(printed.String(), rel, "my/"))
			for _, want := range b.output {
				Expect(got).To(ContainSubstring(normalizeRun(want)), "the output of\n  %s\nlacks the page's line", strings.Join(b.commands, "\n  "))
			}
		}
	})
})

var _ = Describe("simctl new", func() {
	It("writes scenarios that pass as written: the default, one from a TrainJob's file, one with Kueue", func() {
		simctl := buildSimctl()
		root, err := filepath.Abs("../..")
		Expect(err).NotTo(HaveOccurred())
		dir, err := os.MkdirTemp(root, "my-new-")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(os.RemoveAll, dir)
		job := filepath.Join(dir, "job.json")
		Expect(os.WriteFile(job, []byte(`{"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
  "metadata": {"name": "big", "namespace": "team-a", "resourceVersion": "12"},
  "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 2, "resourcesPerNode": {"limits": {"nvidia.com/gpu": "8"}}}}}`), 0o644)).To(Succeed())
		scenarios := filepath.Join(dir, "scenarios")
		for _, args := range [][]string{{"new", "new-default"}, {"new", "new-from-file", "--from", job}, {"new", "new-with-kueue", "--with", "kueue"}} {
			cmd := exec.Command(simctl, append(args, "--dir", scenarios)...)
			out, err := cmd.CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), "%v: %s", args, out)
		}
		reports := filepath.Join(dir, "reports")
		session := startSimctl(simctl, "run", "--report-dir", reports, scenarios)
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(0))
		Expect(skipReasons(readReport(reports))).To(Equal(map[string]string{"new-default": "", "new-from-file": "", "new-with-kueue": ""}))
	})
})
