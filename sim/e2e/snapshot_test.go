package e2e_test

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/providers/envtest"
	"github.com/trainersim/trainersim/sim/releases"
)

var _ = Describe("a start from the snapshot", Ordered, func() {
	var (
		root               string
		restored, complete *envtest.Environment
	)

	start := func(ctx context.Context, env *envtest.Environment) *envtest.Environment {
		Expect(env.Start(ctx)).To(Succeed())
		DeferCleanup(env.Stop)
		return env
	}
	snapshotDB := func() (string, time.Time) {
		dbs, err := filepath.Glob(filepath.Join(root, "envtest-*", "etcd", "member", "snap", "db"))
		Expect(err).NotTo(HaveOccurred())
		Expect(dbs).To(HaveLen(1), "one snapshot under %s", root)
		st, err := os.Stat(dbs[0])
		Expect(err).NotTo(HaveOccurred())
		return dbs[0], st.ModTime()
	}

	BeforeAll(func(ctx SpecContext) {
		root = GinkgoT().TempDir()
		GinkgoT().Setenv(envtest.EnvSnapshotDir, root)

		// With the Kueue component, whose CRDs are in the snapshot too.
		kueue := []string{releases.ComponentKueue}
		first := start(ctx, &envtest.Environment{Components: kueue})
		Expect(first.Timings()).To(ContainElement(HaveField("Name", envtest.StepSnapshot)))
		db, built := snapshotDB()
		Expect(first.Stop()).To(Succeed())

		restoredAt := time.Now()
		restored = start(ctx, &envtest.Environment{Components: kueue})
		// Kueue's CRDs came with the snapshot, made by the first start,
		// not created again by this one.
		flavors := &apiextensionsv1.CustomResourceDefinition{}
		Expect(restored.Client().Get(ctx, client.ObjectKey{Name: "resourceflavors.kueue.x-k8s.io"}, flavors)).To(Succeed())
		Expect(flavors.CreationTimestamp.Time).To(BeTemporally("<", restoredAt.Truncate(time.Second)), "Kueue's CRD was created by the restored start")
		again, used := snapshotDB()
		Expect(again).To(Equal(db), "the second start made a new snapshot")
		Expect(used).To(Equal(built), "the second start rewrote the snapshot")

		complete = start(ctx, &envtest.Environment{Components: kueue, NoSnapshot: true})
		Expect(complete.Timings()).NotTo(ContainElement(HaveField("Name", envtest.StepSnapshot)))
	}, NodeTimeout(3*cluster.DefaultStartTimeout))

	It("serves the same CRDs (Kueue's too), runtimes, webhook configurations, isolation policy and StorageClass as a start that installs them", func(ctx SpecContext) {
		for _, list := range []client.ObjectList{
			&apiextensionsv1.CustomResourceDefinitionList{},
			&trainer.ClusterTrainingRuntimeList{},
			&admissionv1.MutatingWebhookConfigurationList{},
			&admissionv1.ValidatingWebhookConfigurationList{},
			&admissionv1.MutatingAdmissionPolicyList{},
			&admissionv1.MutatingAdmissionPolicyBindingList{},
			&storagev1.StorageClassList{},
		} {
			Expect(cmp.Diff(installed(ctx, complete, list), installed(ctx, restored, list))).To(BeEmpty(), "%T: -installed +restored", list)
		}
		var classes storagev1.StorageClassList
		Expect(restored.Client().List(ctx, &classes)).To(Succeed())
		Expect(classes.Items).To(ConsistOf(And(
			HaveField("Name", "standard"),
			HaveField("Annotations", HaveKeyWithValue("storageclass.kubernetes.io/is-default-class", "true")))))
		var crds apiextensionsv1.CustomResourceDefinitionList
		Expect(restored.Client().List(ctx, &crds)).To(Succeed())
		Expect(crds.Items).To(ContainElement(HaveField("Name", "resourceflavors.kueue.x-k8s.io")))
		for _, crd := range crds.Items {
			Expect(crd.Status.Conditions).To(ContainElement(And(
				HaveField("Type", apiextensionsv1.Established),
				HaveField("Status", apiextensionsv1.ConditionTrue))), crd.Name)
		}
	})

	It("points the webhook configurations at its own webhook server", func(ctx SpecContext) {
		// A configuration left pointing at the snapshot build's server
		// would fail the call ("failed calling webhook"), not deny it.
		for _, env := range []*envtest.Environment{restored, complete} {
			probe := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "trainer.kubeflow.org/v1alpha1",
				"kind":       "TrainJob",
				"metadata":   map[string]any{"name": "probe", "namespace": metav1.NamespaceDefault},
				"spec": map[string]any{"runtimeRef": map[string]any{
					"apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime", "name": "no-such-runtime",
				}},
			}}
			err := env.Client().Create(ctx, probe, client.DryRunAll)
			Expect(err).To(MatchError(ContainSubstring(`admission webhook "validator.trainjob.trainer.kubeflow.org" denied the request`)))
			Expect(err).To(MatchError(ContainSubstring("must be created before the TrainJob is created")))
		}
	})
})

// installed lists what a start installed (the objects' names with their
// specs, without what differs between any two starts: metadata, status and
// where the webhooks are served).
func installed(ctx context.Context, env *envtest.Environment, list client.ObjectList) map[string]any {
	Expect(env.Client().List(ctx, list)).To(Succeed())
	items, err := meta.ExtractList(list)
	Expect(err).NotTo(HaveOccurred())
	Expect(items).NotTo(BeEmpty(), "%T", list)
	byName := map[string]any{}
	for _, item := range items {
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(item)
		Expect(err).NotTo(HaveOccurred())
		name := item.(client.Object).GetName()
		delete(obj, "metadata")
		delete(obj, "status")
		if hooks, ok := obj["webhooks"].([]any); ok {
			for _, h := range hooks {
				delete(h.(map[string]any), "clientConfig")
			}
		}
		byName[name] = obj
	}
	return byName
}
