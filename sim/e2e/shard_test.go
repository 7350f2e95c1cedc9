package e2e_test

import (
	"os/exec"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/trainersim/trainersim/results"
)

// shardedCorpus has scenarios of one run and scenarios that explore
// interleavings (several runs each): a part of multi-manager/, enough runs
// for 3 shards.
var shardedCorpus = []string{
	"../../scenarios/multi-manager/interleaved-apply.yaml",
	"../../scenarios/multi-manager/interleaved-read-modify-write.yaml",
	"../../scenarios/multi-manager/lost-update.yaml",
	"../../scenarios/multi-manager/concurrent-apply.yaml",
	"../../scenarios/multi-manager/map-union-later-wins.yaml",
}

// verdicts are a run's verdicts by run name: passed, failed or the skip
// reason.
func verdicts(run results.Run) map[string]string {
	out := map[string]string{}
	for _, sc := range run.Scenarios {
		switch {
		case sc.Skipped != "":
			out[sc.Name] = "skipped: " + sc.Skipped
		case sc.Passed:
			out[sc.Name] = "passed"
		default:
			out[sc.Name] = "failed"
		}
	}
	return out
}

var _ = Describe("simctl run --shard and simctl report --merge", func() {
	var simctl string

	BeforeEach(func() { simctl = buildSimctl() })

	simctlRun := func(args ...string) *gexec.Session {
		session, err := gexec.Start(exec.Command(simctl, args...), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit())
		return session
	}

	It("splits a corpus into 3 shards balanced by an earlier run whose merged report has the unsharded run's verdicts", func() {
		tmp := GinkgoT().TempDir()
		whole := filepath.Join(tmp, "whole")
		Expect(simctlRun(append([]string{"run", "--kubeconfig", env.KubeconfigPath, "--report-dir", whole}, shardedCorpus...)...).ExitCode()).To(Equal(0))
		want := readReport(whole)

		var dirs []string
		total := 0
		for _, k := range []string{"1/3", "2/3", "3/3"} {
			dir := filepath.Join(tmp, "shard-"+k[:1])
			dirs = append(dirs, dir)
			s := simctlRun(append([]string{"run", "--kubeconfig", env.KubeconfigPath, "--shard", k, "--shard-durations", whole, "--report-dir", dir}, shardedCorpus...)...)
			Expect(s.ExitCode()).To(Equal(0))
			Expect(string(s.Out.Contents())).To(ContainSubstring("shard " + k + ": "))
			run := readReport(dir)
			Expect(run.Shard).To(Equal(k))
			Expect(run.Scenarios).NotTo(BeEmpty(), "shard %s ran nothing", k)
			total += len(run.Scenarios)
		}
		Expect(total).To(Equal(len(want.Scenarios)), "the shards ran every run of the corpus once")

		merged := filepath.Join(tmp, "merged")
		s := simctlRun(append([]string{"report", "--merge", "--report-dir", merged}, dirs...)...)
		Expect(s.ExitCode()).To(Equal(0))
		got := readReport(merged)
		Expect(got.Shards).To(Equal([]string{"1/3", "2/3", "3/3"}))
		Expect(verdicts(got)).To(Equal(verdicts(want)))
		Expect(filepath.Join(merged, "junit.xml")).To(BeAnExistingFile())
		Expect(filepath.Join(merged, "report.html")).To(BeAnExistingFile())

		// Without shard 2 the merged run fails and says so; a whole run
		// is no shard.
		s = simctlRun("report", "--merge", "--report-dir", filepath.Join(tmp, "partial"), dirs[0], dirs[2])
		Expect(s.ExitCode()).To(Equal(1))
		Expect(string(s.Out.Contents())).To(ContainSubstring("merged run lacks shard 2/3"))
		s = simctlRun("report", "--merge", "--report-dir", filepath.Join(tmp, "mixed"), dirs[0], whole)
		Expect(s.ExitCode()).To(Equal(2))
		Expect(string(s.Err.Contents())).To(ContainSubstring(whole + " is not a shard's run"))
	})
})
