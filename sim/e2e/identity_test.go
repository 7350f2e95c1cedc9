package e2e_test

import (
	"fmt"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/trainersim/trainersim/sim/identity"
)

// componentClient is a client with the kubeconfig a component process was
// given in the environment's work directory.
func componentClient(name string) client.Client {
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(env.WorkDir, name+".kubeconfig"))
	Expect(err).NotTo(HaveOccurred())
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	return c
}

var _ = Describe("every component acts as its own user", func() {
	It("the Trainer, JobSet, the Job controller, the scheduler and KWOK each write a TrainJob's objects as the user of their manifests, and the audit log names them", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		job := toleratedGPUJob(ns)
		Expect(k8s.Create(ctx, job)).To(Succeed())
		// Who wrote what, as "component verb resource[/subresource]".
		want := []string{
			identity.Trainer + " patch jobsets",                        // the JobSet, server-side applied
			identity.JobSet + " create jobs",                           // its Jobs
			identity.ControllerManager + "/job-controller create pods", // the Pods
			identity.Scheduler + " create pods/binding",                // bound
			identity.Kwok + " patch pods/status",                       // Running
			identity.Trainer + " patch trainjobs/status",               // the TrainJob's conditions
		}
		Eventually(func(g Gomega) {
			reqs, err := env.ComponentRequests(ns)
			g.Expect(err).NotTo(HaveOccurred())
			seen := map[string]bool{}
			for _, r := range reqs {
				what := r.Component + " " + r.Verb + " " + r.Resource
				if r.Subresource != "" {
					what += "/" + r.Subresource
				}
				seen[what] = true
			}
			for _, w := range want {
				g.Expect(seen).To(HaveKey(w), "no %s in the audit log; it has %v", w, seen)
			}
		}).WithTimeout(podsRunningTimeout).WithPolling(pollInterval).Should(Succeed())
	})

	It("refuses a component what its RBAC lacks, as on kind: KWOK may not create Pods, the scheduler may not create namespaces", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		kwok, _ := identity.Of(identity.Kwok)
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "not-kwoks"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}
		err := componentClient(identity.Kwok).Create(ctx, pod)
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "KWOK created a Pod: %v", err)
		Expect(err.Error()).To(ContainSubstring(fmt.Sprintf("User %q cannot create resource \"pods\"", kwok.User)))

		err = componentClient(identity.Scheduler).Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "not-the-schedulers-"}})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the scheduler created a namespace: %v", err)
		Expect(err.Error()).To(ContainSubstring(`User "system:kube-scheduler" cannot create resource "namespaces"`))
	}, NodeTimeout(time.Minute)) // two refusals: a write left unanswered fails here, not at the suite's timeout
})
