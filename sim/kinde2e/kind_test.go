//go:build kind

package kinde2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/trainersim/trainersim/results"
	"github.com/trainersim/trainersim/sim/runner"
	"github.com/trainersim/trainersim/sim/scenario"
)

// differentialDir keeps the reports of the differential's two runs
// (envtest/, kind/) and, when their verdicts differ, differences.txt, which
// make test-kind prints last when the suite fails.
const differentialDir = "../../reports/kind"

// verdicts runs the corpus with the extra arguments, its reports in
// differentialDir/name, and returns each run's verdict by name: PASS, FAIL,
// or SKIP with its reason.
func verdicts(name string, args ...string) (map[string]string, results.Run) {
	dir := filepath.Join(differentialDir, name)
	Expect(os.RemoveAll(dir)).To(Succeed())
	cmd := exec.Command(simctl, append([]string{"run", "../../scenarios", "--report-dir", dir}, args...)...)
	session, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	Eventually(session).WithTimeout(corpusTimeout).Should(gexec.Exit())
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	Expect(err).NotTo(HaveOccurred(), "simctl run %v wrote no report (exit %d)", args, session.ExitCode())
	var run results.Run
	Expect(json.Unmarshal(data, &run)).To(Succeed())
	out := map[string]string{}
	for _, sc := range run.Scenarios {
		switch {
		case sc.Skipped != "":
			out[sc.Name] = "SKIP " + sc.Skipped
		case sc.Passed:
			out[sc.Name] = "PASS"
		default:
			out[sc.Name] = "FAIL " + sc.Failure
		}
	}
	return out, run
}

var _ = Describe("the corpus on kind and on envtest", func() {
	It("has the same verdict for every scenario, but for those that say they hold on one cluster only", func() {
		Expect(os.RemoveAll(differentialDir)).To(Succeed())
		sampler := sampleCPU()
		onEnvtest, envtestRun := verdicts("envtest")
		envtestCPU, envtestAll := sampler.end()
		sampler = sampleCPU()
		onKind, kindRun := verdicts("kind", "--cluster", "kind", "--kind-name", "trainersim-differential")
		kindCPU, kindAll := sampler.end()
		// Where the CPU goes on each, as make bench prints it for envtest:
		// in reports/kind/cpu.txt and the spec's log.
		breakdown := fmt.Sprintf("envtest: %s\nkind: %s\n", cpuBreakdown(envtestCPU, envtestAll, len(envtestRun.Scenarios)), cpuBreakdown(kindCPU, kindAll, len(kindRun.Scenarios)))
		Expect(os.WriteFile(filepath.Join(differentialDir, "cpu.txt"), []byte(breakdown), 0o644)).To(Succeed())
		fmt.Fprint(GinkgoWriter, breakdown)
		Expect(envtestCPU).To(HaveKey("kube-apiserver"), "the envtest run's API server was sampled")
		Expect(kindCPU).To(HaveKey("kube-apiserver"), "the kind node's API server was sampled")
		Expect(envtestRun.Cluster).To(Equal("envtest"))
		Expect(kindRun.Cluster).To(Equal("kind"))
		Expect(kindRun.TrainerVersion).To(Equal(envtestRun.TrainerVersion), "the Deployment runs the Trainer simctl was built with")
		Expect(kindRun.JobSetVersion).To(Equal(envtestRun.JobSetVersion))
		Expect(kindContainers("trainersim-differential")).To(BeEmpty(), "the kind cluster is deleted at the end")

		// A scenario is skipped exactly where its spec.clusters or its
		// spec.trainer.versions (for the release both run) says, and every
		// other one has the same verdict on both.
		files, err := scenario.LoadPaths([]string{"../../scenarios"}, scenario.Options{})
		Expect(err).NotTo(HaveOccurred())
		plans := runner.Plans(files, nil)
		Expect(onEnvtest).To(HaveLen(len(plans)))
		Expect(onKind).To(HaveLen(len(plans)))
		var differences []string
		compared, skippedSomewhere := 0, 0
		for _, p := range plans {
			name, clusters := p.Name(), p.File.Scenario.Spec.Clusters
			v, k := onEnvtest[name], onKind[name]
			otherRelease := !runner.TrainerHolds(p.File.Scenario.Spec.Trainer, envtestRun.TrainerVersion)
			if otherRelease || clusters != nil && !(slices.Contains(clusters.Only, "envtest") && slices.Contains(clusters.Only, "kind")) {
				skippedSomewhere++
			}
			for cluster, got := range map[string]string{"envtest": v, "kind": k} {
				if want := otherRelease || clusters != nil && !slices.Contains(clusters.Only, cluster); want != isSkip(got) {
					differences = append(differences, fmt.Sprintf("%s on %s: %s, but spec.clusters and spec.trainer say skipped=%v", name, cluster, got, want))
				}
			}
			if isSkip(v) || isSkip(k) {
				continue
			}
			compared++
			if v != k {
				differences = append(differences, fmt.Sprintf("%s:\n    envtest: %s\n    kind:    %s", name, v, k))
			}
		}
		sort.Strings(differences)
		if len(differences) > 0 {
			digest := "verdicts that differ between envtest and kind (reports in reports/kind/envtest and reports/kind/kind):\n" + strings.Join(differences, "\n") + "\n"
			Expect(os.WriteFile(filepath.Join(differentialDir, "differences.txt"), []byte(digest), 0o644)).To(Succeed())
		}
		Expect(differences).To(BeEmpty(), "verdicts differ between envtest and kind: a bug in one of the two paths, or a fidelity gap to document with spec.clusters")
		Expect(compared).To(Equal(len(plans)-skippedSomewhere), "the verdicts of all but the scenarios that say otherwise are compared")
	})
})

func isSkip(v string) bool { return len(v) >= 4 && v[:4] == "SKIP" }

var _ = Describe("a kind run killed with SIGKILL", Ordered, func() {
	const name = "trainersim-killed"

	It("leaves its cluster, which simctl clean deletes", func() {
		example, err := filepath.Abs("../../scenarios/examples/sdk-and-kueue-share-a-gpu-job.yaml")
		Expect(err).NotTo(HaveOccurred())
		session, err := gexec.Start(exec.Command(simctl, "run", "--cluster", "kind", "--kind-name", name, example), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(session).WithTimeout(kindStartTimeout).Should(gbytes.Say(`kind-cluster +ready`))
		Expect(session.Command.Process.Signal(syscall.SIGKILL)).To(Succeed())
		Eventually(session).WithTimeout(exitTimeout).Should(gexec.Exit())
		Expect(kindContainers(name)).NotTo(BeEmpty(), "a SIGKILL leaves the node container")
	})

	It("refuses, while a live simctl claims it, to touch it: one line, exit 3", func() {
		claim := filepath.Join(os.TempDir(), "trainersim-kind", name+".json")
		old, err := os.ReadFile(claim)
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(claim, []byte(`{"pid":`+strconv.Itoa(os.Getpid())+`}`), 0o644)).To(Succeed())
		session, err := gexec.Start(exec.Command(simctl, "smoke", "--cluster", "kind", "--kind-name", name), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(session).WithTimeout(exitTimeout).Should(gexec.Exit(3))
		Expect(session.Err).To(gbytes.Say(`kind cluster "` + name + `" is in use by simctl pid ` + strconv.Itoa(os.Getpid())))
		Expect(kindContainers(name)).NotTo(BeEmpty(), "a cluster in use is left alone")
		Expect(os.WriteFile(claim, old, 0o644)).To(Succeed())
	})

	It("is deleted by simctl clean --cluster kind", func() {
		session, err := gexec.Start(exec.Command(simctl, "clean", "--cluster", "kind", "--kind-name", name), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(session).WithTimeout(exitTimeout).Should(gexec.Exit(0))
		Expect(session.Out).To(gbytes.Say(`deleted kind cluster ` + name))
		Expect(kindContainers(name)).To(BeEmpty())
	})
})

var _ = Describe("scenario webhooks and gates on a cluster in a container", Ordered, func() {
	const name = "trainersim-serving"
	var workDir string

	BeforeAll(func() { workDir = GinkgoT().TempDir() })

	It("serves them at the address of this machine the kind node reaches, found at preflight", func() {
		session, err := gexec.Start(exec.Command(simctl, "run", "--cluster", "kind", "--kind-name", name, "--keep", "--work-dir", workDir, "-v", "testdata/"), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(session).WithTimeout(kindStartTimeout).Should(gexec.Exit(0))
		Expect(session.Out).To(gbytes.Say(`webhook-serving \(\d+\.\d+\.\d+\.\d+\) +ready`))
		Expect(string(session.Out.Contents())).NotTo(ContainSubstring("webhook-serving (127.0.0.1)"), "the node's own loopback is not this machine's")
		Expect(string(session.Out.Contents())).To(ContainSubstring("PASS  served-webhook-and-gate"))
	})

	It("refuses at preflight, exit 3, an address the cluster's API server cannot reach", func() {
		session, err := gexec.Start(exec.Command(simctl, "run", "--kubeconfig", filepath.Join(workDir, "kubeconfig"), "--serve-host", "127.0.0.1", "testdata/"), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(session).WithTimeout(exitTimeout).Should(gexec.Exit(3))
		Expect(session.Err).To(gbytes.Say(`the cluster's API server cannot reach --serve-host 127\.0\.0\.1`))
		Expect(string(session.Out.Contents())).NotTo(ContainSubstring("served-webhook-and-gate ("), "no scenario ran")
	})

	It("runs them on the kept cluster through its kubeconfig, finding the address again", func() {
		session, err := gexec.Start(exec.Command(simctl, "run", "--kubeconfig", filepath.Join(workDir, "kubeconfig"), "testdata/"), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(session).WithTimeout(corpusTimeout).Should(gexec.Exit(0))
		Expect(string(session.Out.Contents())).To(ContainSubstring("PASS  served-webhook-and-gate"))
	})

	AfterAll(func() {
		session, err := gexec.Start(exec.Command(simctl, "clean", "--cluster", "kind", "--kind-name", name), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(session).WithTimeout(exitTimeout).Should(gexec.Exit(0))
		Expect(kindContainers(name)).To(BeEmpty())
	})
})

var _ = Describe("bad input to the kind provider", func() {
	It("refuses a Docker engine that does not answer in one line, exit 3, nothing created", func() {
		cmd := exec.Command(simctl, "smoke", "--cluster", "kind", "--kind-name", "trainersim-nodocker")
		cmd.Env = append(os.Environ(), "DOCKER_HOST=unix:///nonexistent/docker.sock")
		cmd.Dir = GinkgoT().TempDir() // no bin/kind-build/docker-host above it
		session, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(session).WithTimeout(exitTimeout).Should(gexec.Exit(3))
		Expect(session.Err).To(gbytes.Say(`docker is not running \(DOCKER_HOST="unix:///nonexistent/docker.sock"\)`))
		Expect(kindContainers("trainersim-nodocker")).To(BeEmpty())
	})
})
