package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
	"sigs.k8s.io/yaml"

	"github.com/trainersim/trainersim/results"
	"github.com/trainersim/trainersim/sim/kubeletcases"
	"github.com/trainersim/trainersim/sim/scenario"
)

// kubeletDifferential labels the kubelet differential, make test-kubelet's:
// make test and make test-paths leave it out.
const kubeletDifferential = "kubelet-differential"

// kubeletDir keeps the differential's hollow copies and report and, when
// a verdict differs, differences.txt, which make test-kubelet prints last.
const kubeletDir = "../../reports/kubelet"

// hollowSuffix ends the name of a scenario's copy on hollow kubelets.
const hollowSuffix = "-hollow"

// The kubelet differential (docs/fidelity.md): every scenario of the corpus
// with kubelet behaviour (scenarios/kubelet/, and every scenario with a
// lifecycle rule or a kubelet step) runs as written, on simctl's simulated
// kubelet, and as a copy whose node groups are hollow (kubelet: hollow:
// the kubelet's own code over a fake container runtime), side by side in
// one run; a verdict that differs is a difference between the simulated
// kubelet and a kubelet. A copy that lint refuses (a lifecycle rule, a
// kubelet or node step: a hollow kubelet's containers run until deleted)
// is not comparable and is listed with the reason.
var _ = Describe("the kubelet differential (simulated and hollow kubelets)", Label(kubeletDifferential), func() {
	It("gives each scenario with kubelet behaviour the same verdict on hollow kubelets as on simctl's", func() {
		simctl := buildSimctl()
		Expect(os.RemoveAll(kubeletDir)).To(Succeed())
		hollowDir := filepath.Join(kubeletDir, "hollow")
		Expect(os.MkdirAll(hollowDir, 0o755)).To(Succeed())

		// The generated refusal cases (sim/kubeletcases) beside the corpus:
		// each expects what a kubelet answers, so on either kubelet a
		// case that fails is a difference too.
		generatedDir := filepath.Join(kubeletDir, "generated")
		Expect(os.MkdirAll(generatedDir, 0o755)).To(Succeed())
		generated, err := kubeletcases.Write(generatedDir)
		Expect(err).NotTo(HaveOccurred())
		files, err := scenario.LoadPaths([]string{"../../scenarios", generatedDir}, scenario.Options{})
		Expect(err).NotTo(HaveOccurred())
		var originals []string
		copies := map[string]string{} // the copy's name by the original's
		for _, f := range files {
			if !kubeletBehaviour(f) && !slices.Contains(generated, f.Path) {
				continue
			}
			copyPath := filepath.Join(hollowDir, filepath.Base(f.Path))
			Expect(writeHollowCopy(f.Path, copyPath)).To(Succeed())
			if _, err := scenario.LoadFile(copyPath, scenario.Options{FixturesDir: "../../fixtures"}); err != nil {
				first, _, _ := strings.Cut(err.Error(), "\n")
				GinkgoWriter.Printf("not comparable: %s: %s\n", f.Path, first)
				Expect(os.Remove(copyPath)).To(Succeed())
				continue
			}
			originals = append(originals, f.Path)
			copies[f.Scenario.Metadata.Name] = f.Scenario.Metadata.Name + hollowSuffix
		}
		GinkgoWriter.Printf("comparing %d scenarios on both kubelets (%d generated refusal cases)\n", len(copies), len(generated))
		Expect(len(copies)).To(BeNumerically(">=", 4+len(generated)), "the kubelet's family of scenarios/kubelet/ and the generated cases run on hollow kubelets")

		report := filepath.Join(kubeletDir, "report")
		session := startSimctl(simctl, append([]string{"run", "--report-dir", report, "--fixtures", "../../fixtures", hollowDir}, originals...)...)
		Eventually(session).WithTimeout(10*time.Minute).Should(Or(gexec.Exit(0), gexec.Exit(1)), "a scenario that fails is a result")
		byName := map[string]*results.Scenario{}
		run := readReport(report)
		for i := range run.Scenarios {
			byName[run.Scenarios[i].Name] = &run.Scenarios[i]
		}
		var differences []string
		for original, hollow := range copies {
			simulated, real := byName[original], byName[hollow]
			switch {
			case simulated == nil || real == nil:
				differences = append(differences, fmt.Sprintf("%s: no result on one of the two kubelets (simulated %t, hollow %t)", original, simulated != nil, real != nil))
			case simulated.Passed != real.Passed || simulated.Skipped != real.Skipped:
				differences = append(differences, fmt.Sprintf("%s: passed=%t on simctl's simulated kubelet, passed=%t on hollow kubelets\n    simulated: %s\n    hollow:    %s",
					original, simulated.Passed, real.Passed, firstLineOf(simulated.Failure), firstLineOf(real.Failure)))
			case strings.HasPrefix(original, kubeletcases.Prefix) && !simulated.Passed:
				// Both kubelets answered otherwise than the case says a
				// kubelet does: the case is wrong, and checks nothing.
				differences = append(differences, fmt.Sprintf("%s: the generated case fails on both kubelets (its expectation is not a kubelet's answer)\n    simulated: %s\n    hollow:    %s",
					original, firstLineOf(simulated.Failure), firstLineOf(real.Failure)))
			}
		}
		if len(differences) > 0 {
			digest := "verdicts that differ between simctl's simulated kubelet and hollow kubelets (both runs' reports in reports/kubelet/report):\n" + strings.Join(differences, "\n") + "\n"
			Expect(os.WriteFile(filepath.Join(kubeletDir, "differences.txt"), []byte(digest), 0o644)).To(Succeed())
		}
		Expect(differences).To(BeEmpty(), "verdicts that differ between the simulated kubelet and hollow kubelets")
	})
})

// kubeletBehaviour reports whether a scenario asserts what a kubelet does:
// it is in scenarios/kubelet/, or has a lifecycle rule or a kubelet step.
func kubeletBehaviour(f *scenario.File) bool {
	if filepath.Base(filepath.Dir(f.Path)) == "kubelet" || len(f.Scenario.Spec.Lifecycle) > 0 {
		return true
	}
	for _, st := range f.Scenario.Spec.Steps {
		if st.Kubelet != nil {
			return true
		}
	}
	return false
}

// writeHollowCopy writes the scenario at path to copyPath with every node
// group's kubelet hollow, on envtest (spec.clusters), named with
// hollowSuffix.
func writeHollowCopy(path, copyPath string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return err
	}
	meta, _ := doc["metadata"].(map[string]any)
	spec, _ := doc["spec"].(map[string]any)
	if meta == nil || spec == nil {
		return fmt.Errorf("%s: no metadata or spec", path)
	}
	meta["name"] = fmt.Sprint(meta["name"]) + hollowSuffix
	groups, _ := spec["nodes"].([]any)
	for _, g := range groups {
		if g, ok := g.(map[string]any); ok {
			g["kubelet"] = "hollow"
		}
	}
	spec["clusters"] = map[string]any{"only": []any{"envtest"}, "reason": "the kubelet differential: hollow kubelets run on envtest"}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return err
	}
	return os.WriteFile(copyPath, out, 0o644)
}

func firstLineOf(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
