package e2e_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/trainersim/trainersim/cmd/simctl/app"
	"github.com/trainersim/trainersim/results"
	"github.com/trainersim/trainersim/sim/explain"
	"github.com/trainersim/trainersim/sim/runner"
	"github.com/trainersim/trainersim/sim/scenario"
)

// jobSetTimeout bounds TrainJob create -> JobSet.
const jobSetTimeout = 30 * time.Second

var _ = Describe("overlapping runtimePatches entries", func() {
	It("fail strict: true and expect.noOverlaps, naming both managers and the field", func(ctx SpecContext) {
		files, err := scenario.LoadPaths([]string{"testdata/overlaps"}, scenario.Options{})
		Expect(err).NotTo(HaveOccurred())
		r := &runner.Runner{Cluster: env, Parallel: 2}
		done, complete := r.Run(ctx, files)
		Expect(complete).To(BeTrue())
		failures := map[string]string{}
		for _, res := range done {
			Expect(res.Passed).To(BeFalse(), "%s passed", res.Name)
			failures[res.Name] = res.Failure
		}
		Expect(failures).To(HaveKeyWithValue("strict-same-tolerations", And(
			ContainSubstring(`step "Kueue adds an entry with the GPU toleration": strict: TrainJob llm`),
			ContainSubstring("spec.replicatedJobs[name=node].template.spec.template.spec.tolerations is set by trainer.kubeflow.org/kubeflow-sdk and kueue.x-k8s.io/manager"),
		)))
		Expect(failures).To(HaveKeyWithValue("no-overlaps-node-selector-key", And(
			ContainSubstring(`step "the platform pins another accelerator and a pool": not true within 2s: noOverlaps: TrainJob llm`),
			ContainSubstring(`spec.replicatedJobs[name=node].template.spec.template.spec.nodeSelector["cloud.google.com/gke-accelerator"] is set by trainer.kubeflow.org/kubeflow-sdk and platform.example.com/placement`),
		)))
		Expect(failures["no-overlaps-node-selector-key"]).NotTo(ContainSubstring("team"), "keys set by one manager only are no overlap")
	}, NodeTimeout(2*time.Minute))
})

var _ = Describe("simctl explain --kubeconfig", func() {
	It("explains a running TrainJob with the trainer's snapshot and changes nothing on the cluster", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		job := toleratedGPUJob(ns)
		Expect(k8s.Create(ctx, job)).To(Succeed())
		js := &jobsetv1alpha2.JobSet{}
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(job), js)).To(Succeed())
			g.Expect(ptr.Deref(js.Spec.Suspend, false)).To(BeFalse())
		}).WithTimeout(jobSetTimeout).WithPolling(pollInterval).Should(Succeed())
		snapshot := &corev1.ConfigMap{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: job.Name + "-runtime-snapshot"}, snapshot)).To(Succeed())
		var before corev1.ConfigMapList
		Expect(k8s.List(ctx, &before, client.InNamespace(ns))).To(Succeed())

		var out, errOut bytes.Buffer
		err := app.Run(ctx, app.Streams{In: strings.NewReader(""), Out: &out, Err: &errOut},
			[]string{"explain", "--kubeconfig", env.KubeconfigPath, "-n", ns, job.Name, "-o", "json"})
		Expect(err).NotTo(HaveOccurred(), errOut.String())

		var res explain.Result
		Expect(json.Unmarshal(out.Bytes(), &res)).To(Succeed())
		Expect(res.TrainJob).To(Equal(explain.ObjectRef{Namespace: ns, Name: job.Name}))
		Expect(res.Runtime.Snapshot).To(Equal(snapshot.Name))
		Expect(res.Fields).To(ContainElement(And(
			HaveField("Path", "spec.replicatedJobs[name=node].template.spec.template.spec.tolerations"),
			HaveField("SetBy", kueueManager),
		)))
		Expect(res.JobSet).To(HaveKey("spec"), "a running TrainJob's JobSet is rendered")

		// Nothing was written: the JobSet and the snapshot are as they
		// were, and no ConfigMap came or went.
		after := &jobsetv1alpha2.JobSet{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(js), after)).To(Succeed())
		Expect(after.Generation).To(Equal(js.Generation))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(snapshot), snapshot)).To(Succeed())
		var cms corev1.ConfigMapList
		Expect(k8s.List(ctx, &cms, client.InNamespace(ns))).To(Succeed())
		Expect(len(cms.Items)).To(Equal(len(before.Items)))
		for _, cm := range cms.Items {
			for _, b := range before.Items {
				if b.Name == cm.Name {
					Expect(cm.ResourceVersion).To(Equal(b.ResourceVersion), "ConfigMap %s changed", cm.Name)
				}
			}
		}
	}, NodeTimeout(2*time.Minute))
})

var _ = Describe("the end state's JobSet check (runner.Runner.CheckJobSets)", func() {
	It("names the fields a suspended JobSet lacks while the Trainer's update is held, and none once it lands", func(ctx SpecContext) {
		files, err := scenario.LoadPaths([]string{"testdata/jobset-behind"}, scenario.Options{})
		Expect(err).NotTo(HaveOccurred())
		r := &runner.Runner{Cluster: env, Parallel: 2, CheckJobSets: true}
		done, complete := r.Run(ctx, files)
		Expect(complete).To(BeTrue())
		jobs := map[string]results.TrainJobState{}
		for _, res := range done {
			Expect(res.Passed).To(BeTrue(), "%s: %s", res.Name, res.Failure)
			Expect(res.FinalTrainJobs).To(HaveLen(1), res.Name)
			jobs[res.Name] = res.FinalTrainJobs[0]
		}
		held := jobs["trainer-apply-held"]
		Expect(held.JobSetUnchecked).To(BeEmpty())
		Expect(held.JobSetBehind).To(Equal([]string{"spec.replicatedJobs[name=node].template.spec.template.spec.nodeSelector.pool"}))
		landed := jobs["trainer-apply-lands"]
		Expect(landed.JobSetUnchecked).To(BeEmpty())
		Expect(landed.JobSetBehind).To(BeEmpty(), "the JobSet the Trainer applied, with the API server's and the webhooks' defaults, is what it builds")
	}, NodeTimeout(2*time.Minute))
})
