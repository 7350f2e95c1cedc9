package e2e_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/runner"
	"github.com/trainersim/trainersim/sim/scenario"
)

var _ = Describe("a run on a cluster that is thrown away after it", func() {
	It("leaves the scenario's namespace, Pods and nodes to go with the cluster, and removes what it installed cluster-wide", func(ctx context.Context) {
		files, err := scenario.LoadPaths([]string{"../../scenarios/lifecycle/oomkilled-fails-jobset.yaml"}, scenario.Options{})
		Expect(err).NotTo(HaveOccurred())
		c := env.Client()
		discarded := &runner.Runner{Cluster: env, Discarded: true}
		res := discarded.RunPlan(ctx, runner.Plan{File: files[0]})
		Expect(res.Passed).To(BeTrue(), res.Failure)
		Expect(discarded.Teardowns()).To(Succeed())
		var nodes []string
		for _, p := range res.FinalPods {
			if p.Node != "" {
				nodes = append(nodes, p.Node)
			}
		}
		Expect(nodes).NotTo(BeEmpty(), "the scenario's Pods ran on no node")
		DeferCleanup(removeDiscarded, res.Namespace)

		ns := &corev1.Namespace{}
		Expect(c.Get(ctx, client.ObjectKey{Name: res.Namespace}, ns)).To(Succeed())
		Expect(ns.DeletionTimestamp).To(BeNil(), "namespace %s is being deleted", res.Namespace)
		var pods corev1.PodList
		Expect(c.List(ctx, &pods, client.InNamespace(res.Namespace))).To(Succeed())
		Expect(pods.Items).NotTo(BeEmpty())
		for _, name := range nodes {
			Expect(c.Get(ctx, client.ObjectKey{Name: name}, &corev1.Node{})).To(Succeed(), "node %s", name)
		}
		// The scenario's lifecycle rules, an admission policy of the whole
		// cluster, do not outlive it.
		err = c.Get(ctx, client.ObjectKey{Name: "trainersim-lifecycle-" + res.Namespace}, &admissionv1.MutatingAdmissionPolicy{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the scenario's lifecycle policy: %v", err)

		// The same scenario on a cluster that is kept: the namespace is
		// deleted, and its Pods and nodes are gone once the teardown is.
		kept := &runner.Runner{Cluster: env}
		again := kept.RunPlan(ctx, runner.Plan{File: files[0]})
		Expect(again.Passed).To(BeTrue(), again.Failure)
		Expect(kept.Teardowns()).To(Succeed())
		err = c.Get(ctx, client.ObjectKey{Name: again.Namespace}, ns)
		Expect(apierrors.IsNotFound(err) || ns.DeletionTimestamp != nil).To(BeTrue(), "namespace %s neither gone nor being deleted: %v", again.Namespace, err)
		Expect(c.List(ctx, &pods, client.InNamespace(again.Namespace))).To(Succeed())
		Expect(pods.Items).To(BeEmpty())
		for _, p := range again.FinalPods {
			if p.Node != "" {
				Expect(apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Name: p.Node}, &corev1.Node{}))).To(BeTrue(), "node %s of the kept run's scenario is still there", p.Node)
			}
		}
	})

	It("on a kept cluster, reports a refused deletion of a scenario's TrainJobs and still waits for its Pods before it deletes its nodes", func(ctx context.Context) {
		// The README's first scenario under a name of its own: the policy
		// below refuses the deletion of its TrainJob only, not of the
		// TrainJobs of the specs running beside it.
		data, err := os.ReadFile("../../scenarios/examples/first-scenario.yaml")
		Expect(err).NotTo(HaveOccurred())
		const name = "teardown-trainjob-delete-refused"
		path := filepath.Join(GinkgoT().TempDir(), name+".yaml")
		Expect(os.WriteFile(path, bytes.Replace(data, []byte("name: first-scenario"), []byte("name: "+name), 1), 0o644)).To(Succeed())
		files, err := scenario.LoadPaths([]string{path}, scenario.Options{FixturesDir: "../../fixtures"})
		Expect(err).NotTo(HaveOccurred())

		c := env.Client()
		policy := &admissionv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionv1.ValidatingAdmissionPolicySpec{
				FailurePolicy: ptr.To(admissionv1.Fail),
				MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionv1.RuleWithOperations{
						Operations: []admissionv1.OperationType{admissionv1.Delete},
						Rule:       admissionv1.Rule{APIGroups: []string{"trainer.kubeflow.org"}, APIVersions: []string{"*"}, Resources: []string{"trainjobs"}},
					},
				}}},
				Validations: []admissionv1.Validation{{
					Expression: "!oldObject.metadata.namespace.startsWith('" + name + "-')",
					Message:    "this spec's TrainJobs stay",
				}},
			},
		}
		binding := &admissionv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name, ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}},
		}
		Expect(c.Create(ctx, policy)).To(Succeed())
		Expect(c.Create(ctx, binding)).To(Succeed())
		// Gone, they let the namespace controller end the namespace.
		DeferCleanup(func(ctx context.Context) {
			Expect(client.IgnoreNotFound(c.Delete(ctx, binding))).To(Succeed())
			Expect(client.IgnoreNotFound(c.Delete(ctx, policy))).To(Succeed())
		})
		// The API server loads policies about once a second: the policy
		// holds once a dry-run deletion of a TrainJob is refused.
		probe := &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: name + "-probe"}}
		Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: probe.Namespace}})).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(client.IgnoreNotFound(c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: probe.Namespace}}))).To(Succeed())
		})
		probe.Spec.RuntimeRef.Name = "torch-distributed"
		probe.Spec.Suspend = ptr.To(true)
		Expect(c.Create(ctx, probe)).To(Succeed())
		Eventually(func() error {
			return c.Delete(ctx, probe, client.DryRunAll)
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(MatchError(ContainSubstring("this spec's TrainJobs stay")))

		kept := &runner.Runner{Cluster: env}
		res := kept.RunPlan(ctx, runner.Plan{File: files[0]})
		Expect(res.Steps).To(HaveEach(HaveField("Passed", BeTrue())), "the scenario's own steps")
		Expect(res.Passed).To(BeFalse())
		Expect(res.Failure).To(HavePrefix("clean-up: failed to delete the TrainJobs of namespace " + res.Namespace))
		Expect(res.Failure).To(ContainSubstring("this spec's TrainJobs stay"))
		// The Pods went all the same (their Jobs did), and the nodes after them.
		Expect(kept.Teardowns()).To(Succeed())
		var pods corev1.PodList
		Expect(c.List(ctx, &pods, client.InNamespace(res.Namespace))).To(Succeed())
		Expect(pods.Items).To(BeEmpty())
		Expect(res.FinalPods).NotTo(BeEmpty())
		for _, p := range res.FinalPods {
			Expect(p.Node).NotTo(BeEmpty())
			Expect(apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Name: p.Node}, &corev1.Node{}))).To(BeTrue(), "node %s is still there", p.Node)
		}
		var jobs trainer.TrainJobList
		Expect(c.List(ctx, &jobs, client.InNamespace(res.Namespace))).To(Succeed())
		Expect(jobs.Items).To(HaveLen(1), "the TrainJob whose deletion the policy refused")
	})

	It("deletes the Pods a scenario ends with still to schedule, and what makes them, so that the scheduler does not try them at every later node", func(ctx context.Context) {
		files, err := scenario.LoadPaths([]string{"../../scenarios/scheduling/not-enough-gpus.yaml"}, scenario.Options{})
		Expect(err).NotTo(HaveOccurred())
		c := env.Client()
		discarded := &runner.Runner{Cluster: env, Discarded: true}
		res := discarded.RunPlan(ctx, runner.Plan{File: files[0]})
		Expect(res.Passed).To(BeTrue(), res.Failure)
		Expect(res.FinalPods).To(ContainElement(HaveField("Phase", "Pending")))
		Expect(discarded.Teardowns()).To(Succeed())
		DeferCleanup(removeDiscarded, res.Namespace)
		// The namespace stays, as every scenario's on such a cluster; its
		// TrainJobs go at once, their JobSets, Jobs and Pods with them
		// (the garbage collector's work, hence Eventually).
		ns := &corev1.Namespace{}
		Expect(c.Get(ctx, client.ObjectKey{Name: res.Namespace}, ns)).To(Succeed())
		Expect(ns.DeletionTimestamp).To(BeNil(), "namespace %s is being deleted", res.Namespace)
		var jobs trainer.TrainJobList
		Expect(c.List(ctx, &jobs, client.InNamespace(res.Namespace))).To(Succeed())
		Expect(jobs.Items).To(Or(BeEmpty(), HaveEach(HaveField("DeletionTimestamp", Not(BeNil())))), "the scenario's TrainJobs")
		Eventually(func(g Gomega) {
			var pods corev1.PodList
			g.Expect(c.List(ctx, &pods, client.InNamespace(res.Namespace))).To(Succeed())
			g.Expect(pods.Items).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
	})
})

// removeDiscarded removes what a discarded run on the suite's shared
// cluster left to go with the cluster, which is not thrown away: its
// namespace, and its nodes, which every later spec's scheduler would count
// ("0/4 nodes are available" where a spec expects the suite's 3: a
// clean-clone make test, once, after this file's second spec).
func removeDiscarded(ctx context.Context, namespace string) {
	c := env.Client()
	Expect(client.IgnoreNotFound(c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}))).To(Succeed())
	var nodes corev1.NodeList
	Expect(c.List(ctx, &nodes, client.MatchingLabels{cluster.IsolationKey: namespace})).To(Succeed())
	var names []string
	for _, n := range nodes.Items {
		names = append(names, n.Name)
	}
	Expect(names).NotTo(BeEmpty(), "the scenario's nodes, labelled for its namespace")
	Expect(env.RemoveNodes(ctx, names)).To(Succeed())
}
