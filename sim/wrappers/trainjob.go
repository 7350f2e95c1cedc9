// Package wrappers builds test objects by wrapping the real API types, in the
// style of Kueue's pkg/util/testingjobs:
//
//	wrappers.MakeTrainJob("ns", "llm").Runtime("torch-distributed").NumNodes(2).GPUs(8).Obj()
//
// It exists so that the smoke check, the proof suite and later the scenario
// runner build TrainJobs one way.
package wrappers

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	"github.com/trainersim/trainersim/fakegpu"
)

// TrainJobWrapper wraps a TrainJob under construction.
type TrainJobWrapper struct{ trainer.TrainJob }

// MakeTrainJob starts a TrainJob with the given namespace and name.
func MakeTrainJob(namespace, name string) *TrainJobWrapper {
	return &TrainJobWrapper{trainer.TrainJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: trainer.GroupVersion.String(), Kind: trainer.TrainJobKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
	}}
}

// Obj returns a copy of the TrainJob.
func (w *TrainJobWrapper) Obj() *trainer.TrainJob { return w.DeepCopy() }

// Runtime references a ClusterTrainingRuntime by name.
func (w *TrainJobWrapper) Runtime(name string) *TrainJobWrapper {
	w.Spec.RuntimeRef = trainer.RuntimeRef{
		APIGroup: ptr.To(trainer.GroupVersion.Group),
		Kind:     ptr.To(trainer.ClusterTrainingRuntimeKind),
		Name:     name,
	}
	return w
}

func (w *TrainJobWrapper) trainer() *trainer.Trainer {
	if w.Spec.Trainer == nil {
		w.Spec.Trainer = &trainer.Trainer{}
	}
	return w.Spec.Trainer
}

// NumNodes sets spec.trainer.numNodes.
func (w *TrainJobWrapper) NumNodes(n int32) *TrainJobWrapper {
	w.trainer().NumNodes = ptr.To(n)
	return w
}

// GPUs asks for n nvidia.com/gpu per node, as limits.
func (w *TrainJobWrapper) GPUs(n int64) *TrainJobWrapper {
	t := w.trainer()
	if t.ResourcesPerNode == nil {
		t.ResourcesPerNode = &corev1.ResourceRequirements{}
	}
	if t.ResourcesPerNode.Limits == nil {
		t.ResourcesPerNode.Limits = corev1.ResourceList{}
	}
	t.ResourcesPerNode.Limits[fakegpu.ResourceGPU] = *resource.NewQuantity(n, resource.DecimalSI)
	return w
}

// PodSpecPatch appends a runtime patch entry owned by manager that patches
// the Pod spec of one replicated job.
func (w *TrainJobWrapper) PodSpecPatch(manager, replicatedJob string, spec trainer.PodSpecPatch) *TrainJobWrapper {
	w.Spec.RuntimePatches = append(w.Spec.RuntimePatches, trainer.RuntimePatch{
		Manager: manager,
		TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{
			Template: &trainer.JobSetTemplatePatch{
				Spec: &trainer.JobSetSpecPatch{
					ReplicatedJobs: []trainer.ReplicatedJobPatch{{
						Name: replicatedJob,
						Template: &trainer.JobTemplatePatch{
							Spec: &trainer.JobSpecPatch{
								Template: &trainer.PodTemplatePatch{Spec: &spec},
							},
						},
					}},
				},
			},
		},
	})
	return w
}

// GPUToleration tolerates the nvidia.com/gpu=present:NoSchedule taint that
// fakegpu's GPU profiles carry, the way Kueue's flavors and the user docs
// write it.
func GPUToleration() corev1.Toleration {
	return corev1.Toleration{Key: string(fakegpu.ResourceGPU), Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
}
