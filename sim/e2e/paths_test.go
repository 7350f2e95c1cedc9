package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
	"sigs.k8s.io/yaml"

	"github.com/trainersim/trainersim/cmd/simctl/app"
	"github.com/trainersim/trainersim/results"
	"github.com/trainersim/trainersim/sim/explain"
	"github.com/trainersim/trainersim/sim/runner"
	"github.com/trainersim/trainersim/sim/scenario"
)

// pathsSource is the scenario whose report and TrainJob the paths are
// copied from.
const pathsSource = "testdata/paths/source.yaml"

var _ = Describe("one spelling of a field path", func() {
	It("takes paths exactly as report.json and simctl explain print them into owners and exact, where they hold", func(ctx SpecContext) {
		// report.json of a run of the source scenario.
		simctl := buildSimctl()
		reportDir := GinkgoT().TempDir()
		session, err := gexec.Start(exec.Command(simctl, "run", "--kubeconfig", env.KubeconfigPath, "--report-dir", reportDir, pathsSource), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(0))
		run := readReport(reportDir)
		Expect(run.Scenarios).To(HaveLen(1))
		sc := run.Scenarios[0]

		// What the server changed in the SDK's create: a write's mutations.
		// The CRD's default for runtimeRef.kind is the creator's field; the
		// webhook's stamp on the entry is nobody's.
		var mutated []string
		for _, m := range sc.Steps[0].Writes[0].Mutations {
			mutated = append(mutated, m.Path)
		}
		defaulted := "spec.runtimeRef.kind"
		Expect(mutated).To(ContainElements(defaulted, "spec.runtimePatches[manager=trainer.kubeflow.org/kubeflow-sdk].time"))

		// The JobSet's changes on the timeline, one "path: before → after"
		// line each.
		var changed []string
		Expect(sc.Timeline).NotTo(BeNil())
		for _, e := range sc.Timeline.Entries {
			if e.Kind != results.EntryJobSetChanged {
				continue
			}
			for _, line := range strings.Split(e.Detail, "\n") {
				path, _, ok := strings.Cut(line, ": ")
				Expect(ok).To(BeTrue(), "timeline line %q", line)
				changed = append(changed, path)
			}
		}
		const podSpec = "spec.replicatedJobs[name=node].template.spec.template.spec"
		reportAccelerator := podSpec + `.nodeSelector["cloud.google.com/gke-accelerator"]`
		reportTolerationKey := podSpec + ".tolerations[0].key"
		Expect(changed).To(ConsistOf(reportAccelerator, reportTolerationKey))

		// simctl explain -o json of the TrainJob both writes leave: the SDK's
		// create with Kueue's entry added.
		f, err := scenario.LoadFile(pathsSource, scenario.Options{})
		Expect(err).NotTo(HaveOccurred())
		trainJob := f.Scenario.Spec.Steps[0].Create
		kueueEntry := f.Scenario.Spec.Steps[2].Apply["spec"].(map[string]any)["runtimePatches"].([]any)[0]
		spec := trainJob["spec"].(map[string]any)
		spec["runtimePatches"] = append(spec["runtimePatches"].([]any), kueueEntry)
		data, err := yaml.Marshal(map[string]any(trainJob))
		Expect(err).NotTo(HaveOccurred())
		jobFile := filepath.Join(GinkgoT().TempDir(), "llm.yaml")
		Expect(os.WriteFile(jobFile, data, 0o644)).To(Succeed())
		var out, errOut bytes.Buffer
		Expect(app.Run(ctx, app.Streams{In: strings.NewReader(""), Out: &out, Err: &errOut},
			[]string{"explain", jobFile, "-o", "json"})).To(Succeed(), errOut.String())
		var res explain.Result
		Expect(json.Unmarshal(out.Bytes(), &res)).To(Succeed())

		explainTolerations := podSpec + ".tolerations"
		Expect(res.Fields).To(ContainElement(SatisfyAll(HaveField("Path", explainTolerations), HaveField("SetBy", "kueue.x-k8s.io/manager"))))
		// Both print the accelerator key the same way.
		Expect(res.Fields).To(ContainElement(SatisfyAll(HaveField("Path", reportAccelerator), HaveField("SetBy", "kueue.x-k8s.io/manager"))))
		Expect(res.Overlaps).To(ConsistOf(SatisfyAll(
			HaveField("Path", explainTolerations),
			HaveField("Managers", []string{"trainer.kubeflow.org/kubeflow-sdk", "kueue.x-k8s.io/manager"}),
		)))
		// An overlap's path in entry M of the TrainJob, as docs/explain.md says.
		inEntry := func(manager, path string) string {
			return "spec.runtimePatches[manager=" + manager + "].trainingRuntimeSpec.template." + path
		}

		// The source scenario again, with one more step whose expectations
		// use the paths as they were printed. With tolerations: [] the
		// exact path makes the match fail, where a subset would hold.
		source, err := os.ReadFile(pathsSource)
		Expect(err).NotTo(HaveOccurred())
		q := strconv.Quote
		copied := func(name string, exact []string, tolerations string) string {
			body := strings.Replace(string(source), "name: paths-source", "name: "+name, 1)
			return body + fmt.Sprintf(`  - name: the paths copied from report.json and simctl explain
    expect:
      within: 5s
      objects:
      - target: {kind: JobSet, name: llm}
        exact: [%[8]s]
        match:
          spec:
            replicatedJobs:
            - name: node
              template:
                spec:
                  template:
                    spec:
                      nodeSelector: {node-pool: gpu-training, cloud.google.com/gke-accelerator: nvidia-h100-80gb}
                      tolerations: %[7]s
      owners:
      - {target: {kind: TrainJob, name: llm}, field: %[4]s, manager: kubeflow-sdk, only: true}
      - {target: {kind: JobSet, name: llm}, field: %[1]s, manager: trainer, only: true}
      - {target: {kind: JobSet, name: llm}, field: %[2]s, manager: trainer, only: true}
      - {target: {kind: JobSet, name: llm}, field: %[3]s, manager: trainer, only: true}
      - {target: {kind: TrainJob, name: llm}, field: %[5]s, manager: kueue-admission, only: true}
      - {target: {kind: TrainJob, name: llm}, field: %[6]s, manager: kubeflow-sdk, only: true}
`, q(explainTolerations), q(reportAccelerator), q(reportTolerationKey), q(defaulted),
				q(inEntry("kueue.x-k8s.io/manager", explainTolerations)), q(inEntry("trainer.kubeflow.org/kubeflow-sdk", explainTolerations)),
				tolerations, strings.Join(exact, ", "))
		}
		dir := GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(dir, "holds.yaml"), []byte(copied("paths-copied",
			[]string{q(explainTolerations), q(reportAccelerator), q(reportTolerationKey)}, "[{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]")), 0o644)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, "exact.yaml"), []byte(copied("paths-copied-exact-applies",
			[]string{q(explainTolerations)}, "[]")), 0o644)).To(Succeed())
		files, err := scenario.LoadPaths([]string{dir}, scenario.Options{})
		Expect(err).NotTo(HaveOccurred(), "the copied paths load and lint")
		done, complete := (&runner.Runner{Cluster: env, Parallel: 2}).Run(ctx, files)
		Expect(complete).To(BeTrue())
		byName := map[string]results.Scenario{}
		for _, r := range done {
			byName[r.Name] = r
		}
		Expect(byName["paths-copied"].Passed).To(BeTrue(), byName["paths-copied"].Failure)
		failed := byName["paths-copied-exact-applies"]
		Expect(failed.Passed).To(BeFalse())
		Expect(failed.Failure).To(ContainSubstring(`step "the paths copied from report.json and simctl explain": not true within 5s: JobSet llm does not match`))
		last := failed.Steps[len(failed.Steps)-1]
		Expect(last.Diff).To(ContainSubstring("nvidia.com/gpu"), "the diff shows the toleration the exact list does not want")
	}, NodeTimeout(runTimeout+2*time.Minute))
})
