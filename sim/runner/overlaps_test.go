package runner

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
)

func podSpecEntry(manager string, spec trainer.PodSpecPatch) trainer.RuntimePatch {
	return trainer.RuntimePatch{Manager: manager, TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{
		Template: &trainer.JobSetTemplatePatch{Spec: &trainer.JobSetSpecPatch{ReplicatedJobs: []trainer.ReplicatedJobPatch{{
			Name:     "node",
			Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{Template: &trainer.PodTemplatePatch{Spec: &spec}}},
		}}}},
	}}
}

func TestOverlapProblem(t *testing.T) {
	gpu := []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}}
	tj := func(entries ...trainer.RuntimePatch) *trainer.TrainJob {
		return &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Name: "llm"}, Spec: trainer.TrainJobSpec{RuntimePatches: entries}}
	}
	for _, tc := range []struct {
		name string
		tj   *trainer.TrainJob
		want string
	}{
		{"disjoint fields", tj(
			podSpecEntry("a.io/sdk", trainer.PodSpecPatch{NodeSelector: map[string]string{"pool": "gpu"}}),
			podSpecEntry("b.io/kueue", trainer.PodSpecPatch{Tolerations: gpu}),
		), ""},
		{"one toleration list and one nodeSelector key set twice", tj(
			podSpecEntry("a.io/sdk", trainer.PodSpecPatch{Tolerations: gpu, NodeSelector: map[string]string{"cloud.google.com/gke-accelerator": "a"}}),
			podSpecEntry("b.io/kueue", trainer.PodSpecPatch{Tolerations: gpu, NodeSelector: map[string]string{"cloud.google.com/gke-accelerator": "b"}}),
		), `TrainJob llm: two runtimePatches entries set the same field: spec.replicatedJobs[name=node].template.spec.template.spec.nodeSelector["cloud.google.com/gke-accelerator"] is set by a.io/sdk and b.io/kueue
  and spec.replicatedJobs[name=node].template.spec.template.spec.tolerations is set by a.io/sdk and b.io/kueue`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := overlapProblem(tc.tj)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("problem mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
