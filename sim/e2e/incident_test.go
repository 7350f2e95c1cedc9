package e2e_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/trainersim/trainersim/sim/probe"
)

// incidentRuntime and incidentTrainJob are what a platform team and a user
// write on a kept cluster: a runtime of the team's namespace, and a
// TrainJob on it with the SDK's entry.
const (
	incidentRuntime = `
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata:
  name: team-runtime
  namespace: incident
  labels:
    trainer.kubeflow.org/framework: torch
spec:
  mlPolicy:
    numNodes: 1
    torch: {}
  template:
    spec:
      replicatedJobs:
      - name: node
        template:
          metadata:
            labels:
              trainer.kubeflow.org/trainjob-ancestor-step: trainer
          spec:
            template:
              spec:
                tolerations:
                - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
                containers:
                - name: node
                  image: pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime
                  resources:
                    limits:
                      nvidia.com/gpu: 8
`
	incidentTrainJob = `
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: llm
  namespace: incident
spec:
  runtimeRef:
    apiGroup: trainer.kubeflow.org
    kind: TrainingRuntime
    name: team-runtime
  runtimePatches:
  - manager: trainer.kubeflow.org/kubeflow-sdk
    trainingRuntimeSpec:
      template:
        spec:
          replicatedJobs:
          - name: node
            template:
              spec:
                template:
                  spec:
                    nodeSelector:
                      nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
`
)

// The contributor's path from a kept cluster (docs/record.md): writes made
// on a simctl up cluster with --audit-log, the log cut as a log that began
// later would be (without the runtime's create and the nodes'), imported
// with --from-cluster, which reads them back, and replayed on envtest.
// Without --from-cluster, the import has a placeholder for each, which
// lint names.
var _ = Describe("an incident on a kept cluster (simctl up --audit-log, import --from-cluster)", Ordered, func() {
	var simctl, dir, kubeconfig, cut string

	BeforeAll(func(ctx SpecContext) {
		simctl = buildSimctl()
		dir = GinkgoT().TempDir()
		kubeconfig = filepath.Join(dir, "kubeconfig")
		log := filepath.Join(dir, "audit.log")
		up := startSimctl(simctl, "up", "--kubeconfig", kubeconfig, "--nodes", "nvidia-h100-80gb=1", "--audit-log", log)
		Eventually(up).WithTimeout(simctlReadyTimeout).Should(gbytes.Say(`cluster ready in`))

		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		Expect(err).NotTo(HaveOccurred())
		c, err := client.New(cfg, client.Options{})
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "incident"}})).To(Succeed())
		runtime, trainJob := &unstructured.Unstructured{}, &unstructured.Unstructured{}
		Expect(yaml.Unmarshal([]byte(incidentRuntime), &runtime.Object)).To(Succeed())
		Expect(yaml.Unmarshal([]byte(incidentTrainJob), &trainJob.Object)).To(Succeed())
		Expect(c.Create(ctx, runtime, client.FieldOwner("kubeflow-sdk"))).To(Succeed())
		// The Trainer's TrainJob webhook reads runtimes from its
		// controller's cache: a create right after the runtime's can come
		// before the cache has it, and is refused ("must be created before
		// the TrainJob is created"), on any cluster. The incident is of a
		// runtime the Trainer knows, so that order is stated, as a
		// scenario's set-up states it (the dry runs are not in the import).
		Expect(probe.WaitRuntimesSeen(ctx, c, "incident", []*unstructured.Unstructured{runtime})).To(Succeed())
		Expect(c.Create(ctx, trainJob, client.FieldOwner("kubeflow-sdk"))).To(Succeed())
		Eventually(func(g Gomega) {
			var pods corev1.PodList
			g.Expect(c.List(ctx, &pods, client.InNamespace("incident"))).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(1))
			g.Expect(pods.Items[0].Status.Phase).To(Equal(corev1.PodRunning))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())

		// The log as it would be had it begun after the runtime and the
		// nodes were made.
		f, err := os.Open(log)
		Expect(err).NotTo(HaveOccurred())
		defer f.Close()
		cut = filepath.Join(dir, "cut.log")
		var kept []string
		dropped := map[string]int{}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var ev recordedEvent
			Expect(json.Unmarshal(sc.Bytes(), &ev)).To(Succeed())
			if r := ev.ObjectRef.Resource; ev.Verb == "create" && ev.ObjectRef.Subresource == "" && (r == "trainingruntimes" || r == "nodes") {
				dropped[r]++
				continue
			}
			kept = append(kept, sc.Text())
		}
		Expect(sc.Err()).NotTo(HaveOccurred())
		Expect(dropped).To(HaveKeyWithValue("trainingruntimes", 1))
		Expect(dropped).To(HaveKey("nodes"))
		Expect(os.WriteFile(cut, []byte(strings.Join(kept, "\n")+"\n"), 0o644)).To(Succeed())
	}, NodeTimeout(simctlReadyTimeout+2*time.Minute))

	It("writes a placeholder for the runtime and one for the nodes without --from-cluster, which lint names", func() {
		out := filepath.Join(dir, "placeholders.yaml")
		session := startSimctl(simctl, "import", "--audit-log", cut, "-o", out)
		Eventually(session).WithTimeout(time.Minute).Should(gexec.Exit(0))
		Expect(session.Err).To(gbytes.Say(`2 placeholder\(s\) to fill in`))
		lint := startSimctl(simctl, "lint", out)
		Eventually(lint).WithTimeout(time.Minute).Should(gexec.Exit(2))
		Expect(lint.Err).To(gbytes.Say(`spec.nodes\[0\].profile: a placeholder simctl import left: the profile of nodes`))
		Expect(lint.Err).To(gbytes.Say(`spec.setup\[0\].object.spec: a placeholder simctl import left: TrainingRuntime team-runtime's spec`))
	})

	It("reads them from the cluster with --from-cluster, and the import replays on envtest", func() {
		out := filepath.Join(dir, "imported.yaml")
		session := startSimctl(simctl, "import", "--audit-log", cut, "--from-cluster", kubeconfig, "-o", out)
		Eventually(session).WithTimeout(time.Minute).Should(gexec.Exit(0))
		Expect(session.Err).NotTo(gbytes.Say(`placeholder`))
		data, err := os.ReadFile(out)
		Expect(err).NotTo(HaveOccurred())
		var sc struct {
			Spec struct {
				Nodes []struct {
					Profile string `json:"profile"`
					Count   int    `json:"count"`
				} `json:"nodes"`
				Setup []struct {
					Object map[string]any `json:"object"`
				} `json:"setup"`
			} `json:"spec"`
		}
		Expect(yaml.Unmarshal(data, &sc)).To(Succeed())
		Expect(sc.Spec.Nodes).To(HaveLen(1))
		Expect(sc.Spec.Nodes[0].Profile).To(Equal("nvidia-h100-80gb"))
		Expect(sc.Spec.Nodes[0].Count).To(Equal(1))
		Expect(sc.Spec.Setup).NotTo(BeEmpty())
		Expect(sc.Spec.Setup[0].Object).To(HaveKeyWithValue("kind", "TrainingRuntime"))
		Expect(sc.Spec.Setup[0].Object).To(HaveKeyWithValue("spec", HaveKeyWithValue("template", HaveKey("spec"))), "the runtime's spec as the cluster has it, not a placeholder")
		Expect(string(data)).To(ContainSubstring("nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3"), "the SDK's entry, expected at the end")

		replay := startSimctl(simctl, "run", out)
		Eventually(replay).WithTimeout(3 * time.Minute).Should(gexec.Exit(0))
		Expect(replay.Out).To(gbytes.Say(`PASS  imported-llm`))
	})
})
