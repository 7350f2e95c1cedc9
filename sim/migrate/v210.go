package migrate

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/trainersim/trainersim/sim/internal/smpmeta"
)

// The types of Trainer v2.1.0's spec.podTemplateOverrides, as its CRD keeps
// them. The trainer module of go.mod is v2.3.0, which no longer has them, so
// they are copied here from
// github.com/kubeflow/trainer/v2@v2.1.0/pkg/apis/trainer/v1alpha1/trainjob_types.go;
// the field types of k8s.io/api are those of go.mod. The json tags are the
// trainer's, so that encoding one of them gives the patch v2.1.0 applies.

// podTemplateOverride is PodTemplateOverride (trainjob_types.go:266-282).
type podTemplateOverride struct {
	TargetJobs []podTemplateOverrideTargetJob `json:"targetJobs,omitempty"`
	Metadata   *overrideMetadata              `json:"metadata,omitempty"`
	Spec       *podTemplateSpecOverride       `json:"spec,omitempty"`
}

// podTemplateOverrideTargetJob is PodTemplateOverrideTargetJob
// (trainjob_types.go:284-289).
type podTemplateOverrideTargetJob struct {
	Name string `json:"name,omitempty"`
}

// overrideMetadata is the metav1.ObjectMeta of an override as v2.1.0's CRD
// keeps it (manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml): the
// five fields controller-gen allows in an embedded ObjectMeta. Of them
// v2.1.0 applies labels and annotations (trainingruntime.go:200-211).
type overrideMetadata struct {
	Name        string            `json:"name,omitempty"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Finalizers  []string          `json:"finalizers,omitempty"`
}

// podTemplateSpecOverride is PodTemplateSpecOverride
// (trainjob_types.go:291-340).
type podTemplateSpecOverride struct {
	ServiceAccountName *string                       `json:"serviceAccountName,omitempty"`
	NodeSelector       map[string]string             `json:"nodeSelector,omitempty"`
	Affinity           *corev1.Affinity              `json:"affinity,omitempty"`
	Tolerations        []corev1.Toleration           `json:"tolerations,omitempty"`
	Volumes            []corev1.Volume               `json:"volumes,omitempty"`
	InitContainers     []containerOverride           `json:"initContainers,omitempty"`
	Containers         []containerOverride           `json:"containers,omitempty"`
	SchedulingGates    []corev1.PodSchedulingGate    `json:"schedulingGates,omitempty"`
	ImagePullSecrets   []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
}

// containerOverride is ContainerOverride (trainjob_types.go:342-363).
type containerOverride struct {
	Name         string               `json:"name,omitempty"`
	Env          []corev1.EnvVar      `json:"env,omitempty"`
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty"`
}

// overrideShape describes an override to the strategic merge's field
// lookups, for spelling paths with list keys: its metadata and spec have
// the merge keys of a Pod template's.
type overrideShape struct {
	TargetJobs []podTemplateOverrideTargetJob `json:"targetJobs,omitempty" patchStrategy:"merge" patchMergeKey:"name"`
	Metadata   overrideMetadata               `json:"metadata"`
	Spec       corev1.PodSpec                 `json:"spec"`
}

// overrideMeta describes overrideShape.
var overrideMeta = smpmeta.MustFromStruct(overrideShape{})

// appliedByV23 reports whether Trainer v2.3.0's runtimePatches has a field
// that v2.1.0's override does not (PodSpecPatch and ContainerPatch of its
// trainjob_types.go), given the path of the field in an override, with
// positions: v2.3.0 would apply what v2.1.0 never did.
func appliedByV23(p []pathSegment) bool {
	switch {
	case len(p) == 2 && p[0].name == "spec":
		return p[1].name == "securityContext" || p[1].name == "terminationGracePeriodSeconds"
	case len(p) == 4 && p[0].name == "spec" && (p[1].name == "containers" || p[1].name == "initContainers") && p[2].index >= 0:
		return p[3].name == "securityContext"
	}
	return false
}
