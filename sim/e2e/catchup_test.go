package e2e_test

import (
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime/schema"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	"github.com/trainersim/trainersim/sim/wrappers"
)

var _ = Describe("how far the in-process Trainer has got (cluster.CatchUp)", func() {
	It("is caught up once it reconciled a new TrainJob, and behind on a version its informers have not handed on or a deletion they have not", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		job := wrappers.MakeTrainJob(ns, "caught-up").Runtime("torch-distributed").Obj()
		job.Spec.Suspend = new(true)
		created := time.Now()
		Expect(k8s.Create(ctx, job)).To(Succeed())
		trainJobs := schema.GroupKind{Group: trainer.GroupVersion.Group, Kind: trainer.TrainJobKind}
		seen := func(versions map[string]string) map[schema.GroupKind]map[string]string {
			return map[schema.GroupKind]map[string]string{trainJobs: versions}
		}
		// The Trainer's queue says when it last finished a request of the
		// namespace: after the create, once it reconciled the TrainJob.
		Eventually(func(g Gomega) {
			behind, idle := env.Behind(ns, seen(map[string]string{job.Name: job.ResourceVersion}))
			g.Expect(behind).To(BeEmpty())
			g.Expect(idle).To(BeTemporally(">", created))
		}).WithTimeout(podsRunningTimeout).WithPolling(pollInterval).Should(Succeed())

		rv, err := strconv.ParseUint(job.ResourceVersion, 10, 64)
		Expect(err).NotTo(HaveOccurred())
		later := strconv.FormatUint(rv+1_000_000, 10)
		behind, _ := env.Behind(ns, seen(map[string]string{job.Name: later}))
		Expect(behind).To(Equal("trainer: its informers have not handed on TrainJob caught-up as seen (resourceVersion " + later + ")"))
		behind, _ = env.Behind(ns, seen(map[string]string{}))
		Expect(behind).To(Equal("trainer: its informers have not handed on the deletion of TrainJob caught-up"))
		behind, _ = env.Behind("another-"+ns, seen(map[string]string{}))
		Expect(behind).To(BeEmpty())
	})
})
