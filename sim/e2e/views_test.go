package e2e_test

import (
	"fmt"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/trainersim/trainersim/sim/probe"
	"github.com/trainersim/trainersim/sim/view"
)

var _ = Describe("views of the components' watches", func() {
	It("see every resource the components watch, and nothing lint does not let a view name", func(ctx SpecContext) {
		reg, components := env.ViewRegistry()
		Expect(reg).NotTo(BeNil())
		// Kueue does not run here: the corpus's views/ scenarios see it.
		Expect(components).To(ConsistOf("trainer", "jobset", "kube-controller-manager", "kube-scheduler", "kwok"))
		// A TrainJob to Running Pods: every informer the managers start
		// lazily has started by then.
		ns := newNamespace(ctx)
		job := toleratedGPUJob(ns)
		Expect(k8s.Create(ctx, job)).To(Succeed())
		Eventually(func(g Gomega) {
			pods, err := probe.TrainJobPods(ctx, k8s, ns, job.Name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pods).To(HaveLen(2))
			for _, p := range pods {
				g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning))
			}
		}).WithContext(ctx).WithTimeout(podsRunningTimeout).WithPolling(pollInterval).Should(Succeed())
		for _, c := range components {
			switch c {
			case "kube-controller-manager":
				// Its garbage collector watches what discovery finds:
				// every resource lint lets a view name, and more.
				Expect(reg.Watched(c)).To(ContainElements(view.Watches(c)), "the watches of %s, against what sim/view lets a view of it name", c)
			default:
				Expect(reg.Watched(c)).To(Equal(view.Watches(c)), "the watches of %s, against what sim/view lets a view of it name", c)
			}
		}
	})

	It("a coalescing view makes the Trainer act once on the last state: a TrainJob suspended and resumed while held never suspends its JobSet", func(ctx SpecContext) {
		reg, _ := env.ViewRegistry()
		ns := newNamespace(ctx)
		job := toleratedGPUJob(ns)
		Expect(k8s.Create(ctx, job)).To(Succeed())
		js := &jobset.JobSet{}
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: job.Name}, js)).To(Succeed())
		}).WithContext(ctx).WithTimeout(podsRunningTimeout).WithPolling(pollInterval).Should(Succeed())
		generation := js.Generation

		name := fmt.Sprintf("e2e-%s", ns)
		Expect(reg.Register(view.View{Name: name, Component: "trainer", Group: trainer.GroupVersion.Group, Resource: "trainjobs", Namespace: ns, ObjectName: job.Name, Coalesce: true})).To(Succeed())
		DeferCleanup(func() { reg.Unregister(name, "the spec ended") })
		for _, suspend := range []bool{true, false} {
			patch := client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"spec":{"suspend":%t}}`, suspend))
			Expect(k8s.Patch(ctx, job.DeepCopy(), patch)).To(Succeed())
		}
		// The two patches, and the Trainer's status patches of the TrainJob
		// as its JobSet's status changes.
		Eventually(func() int { return len(reg.Holding(name)) }).WithTimeout(10 * time.Second).Should(BeNumerically(">=", 2))
		// The Trainer has seen neither write: its JobSet is as it was.
		Consistently(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: job.Name}, js)).To(Succeed())
			g.Expect(js.Generation).To(Equal(generation))
		}).WithContext(ctx).WithTimeout(time.Second).WithPolling(pollInterval).Should(Succeed())
		Expect(reg.Release(name, "the spec released it")).To(BeNumerically(">=", 2))
		events := reg.Events(name)
		for _, e := range events[:len(events)-1] {
			Expect(e.Fate).To(Equal(view.Coalesced), "event %+v", e)
		}
		Expect(events[len(events)-1].Delivered).NotTo(BeZero())
		// One MODIFIED with suspend false: the JobSet is never suspended,
		// and its Pods are never deleted.
		Consistently(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: job.Name}, js)).To(Succeed())
			g.Expect(js.Spec.Suspend).NotTo(HaveValue(BeTrue()))
			var pods corev1.PodList
			g.Expect(k8s.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
			g.Expect(slices.ContainsFunc(pods.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })).To(BeFalse())
		}).WithContext(ctx).WithTimeout(3 * time.Second).WithPolling(pollInterval).Should(Succeed())
	})

	It("a view of kube-scheduler, behind its proxy, holds its protobuf Pod watch: the Pods wait unbound until the release, then the scheduler binds them as itself", func(ctx SpecContext) {
		reg, _ := env.ViewRegistry()
		ns := newNamespace(ctx)
		name := fmt.Sprintf("e2e-scheduler-%s", ns)
		Expect(reg.Register(view.View{Name: name, Component: "kube-scheduler", Resource: "pods", Namespace: ns})).To(Succeed())
		DeferCleanup(func() { reg.Unregister(name, "the spec ended") })
		job := toleratedGPUJob(ns)
		Expect(k8s.Create(ctx, job)).To(Succeed())
		Eventually(func() int { return len(reg.Holding(name)) }).WithContext(ctx).WithTimeout(podsRunningTimeout).Should(BeNumerically(">=", 2))
		for _, e := range reg.Holding(name) {
			Expect(e.Object).To(HavePrefix("Pod/"), "a protobuf event read: %+v", e)
		}
		// The scheduler has seen no Pod of the namespace: none is bound.
		Consistently(func(g Gomega) {
			var pods corev1.PodList
			g.Expect(k8s.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
			g.Expect(pods.Items).NotTo(BeEmpty())
			for _, p := range pods.Items {
				g.Expect(p.Spec.NodeName).To(BeEmpty(), "Pod %s", p.Name)
			}
		}).WithContext(ctx).WithTimeout(2 * time.Second).WithPolling(pollInterval).Should(Succeed())
		Expect(reg.Release(name, "the spec released it")).To(BeNumerically(">=", 2))
		// Its bindings go through the proxy with its certificate: the API
		// server lets system:kube-scheduler bind them, and they run.
		Eventually(func(g Gomega) {
			pods, err := probe.TrainJobPods(ctx, k8s, ns, job.Name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pods).To(HaveLen(2))
			for _, p := range pods {
				g.Expect(p.Spec.NodeName).NotTo(BeEmpty())
				g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning))
			}
		}).WithContext(ctx).WithTimeout(podsRunningTimeout).WithPolling(pollInterval).Should(Succeed())
	})
})
