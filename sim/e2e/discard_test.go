package e2e_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
