package e2e_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
)

var _ = Describe("the ginkgo adapter under ginkgo -p", func() {
	It("starts one cluster, in process 1, and runs the other process's specs on it", func() {
		report := filepath.Join(GinkgoT().TempDir(), "report.json")
		cmd := exec.Command("go", "run", "github.com/onsi/ginkgo/v2/ginkgo", "-p", "--procs=2", "--json-report="+report, "./testdata/ginkgo-parallel")
		session, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(session).WithTimeout(runTimeout).Should(gexec.Exit(0))

		data, err := os.ReadFile(report)
		Expect(err).NotTo(HaveOccurred())
		var reports []types.Report
		Expect(json.Unmarshal(data, &reports)).To(Succeed())
		Expect(reports).To(HaveLen(1))
		byProcess := map[int][]types.SpecReport{}
		var clusters []string
		for _, sr := range reports[0].SpecReports {
			if sr.LeafNodeType == types.NodeTypeSynchronizedBeforeSuite {
				for _, e := range sr.ReportEntries {
					clusters = append(clusters, e.Value.String())
				}
			}
			if sr.LeafNodeType != types.NodeTypeIt {
				continue
			}
			Expect(sr.State).To(Equal(types.SpecStatePassed), "%s: %s", sr.LeafNodeText, sr.Failure.Message)
			byProcess[sr.ParallelProcess] = append(byProcess[sr.ParallelProcess], sr)
		}
		Expect(byProcess).To(HaveKey(1))
		Expect(byProcess).To(HaveKey(2))
		// Process 1 started an envtest cluster, whose Trainer runs in it;
		// process 2 ran on that cluster through its kubeconfig.
		Expect(clusters).To(ContainElement(HavePrefix("envtest")))
		Expect(clusters).To(ContainElement(HavePrefix("process 1's, through ")))
		// The scenario that holds on envtest only is Serial (the suite's
		// BeforeEach reports it), so it ran on process 1, and passed.
		serial := map[string]string{}
		for _, sr := range reports[0].SpecReports {
			for _, e := range sr.ReportEntries {
				if sr.LeafNodeType == types.NodeTypeIt && e.Name == "serial" {
					serial[sr.LeafNodeText] = e.Value.String()
				}
			}
		}
		Expect(serial).To(HaveKeyWithValue("views-runtime-edited-before-first-reconcile", "true"))
		Expect(serial).To(HaveKeyWithValue("scheduling-gpu-toleration", "false"))
		Expect(byProcess[1]).To(ContainElement(HaveField("LeafNodeText", "views-runtime-edited-before-first-reconcile")))
		for _, sr := range byProcess[1] {
			Expect(sr.CapturedGinkgoWriterOutput).To(ContainSubstring("explain agreed with the trainer"), sr.LeafNodeText)
		}
		for _, sr := range byProcess[2] {
			Expect(sr.CapturedGinkgoWriterOutput).To(ContainSubstring("does not run in this process"), sr.LeafNodeText)
			Expect(strings.Contains(sr.CapturedGinkgoWriterOutput, "explain agreed")).To(BeFalse())
		}
	})
})
