package explain

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	"github.com/trainersim/trainersim/sim/internal/smpmeta"
)

// entry is a runtimePatches entry whose Pod spec patch for replicated job rj
// is spec.
func entry(manager, rj string, spec trainer.PodSpecPatch) trainer.RuntimePatch {
	return trainer.RuntimePatch{Manager: manager, TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{
		Template: &trainer.JobSetTemplatePatch{Spec: &trainer.JobSetSpecPatch{ReplicatedJobs: []trainer.ReplicatedJobPatch{{
			Name: rj,
			Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{Template: &trainer.PodTemplatePatch{
				Spec: &spec,
			}}},
		}}}},
	}}
}

// labels is an entry that labels the JobSet.
func labels(manager string, l map[string]string) trainer.RuntimePatch {
	return trainer.RuntimePatch{Manager: manager, TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{
		Template: &trainer.JobSetTemplatePatch{Metadata: &metav1.ObjectMeta{Labels: l}},
	}}
}

const podSpec = "spec.replicatedJobs[name=node].template.spec.template.spec"

func TestOverlaps(t *testing.T) {
	gpu := corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	other := corev1.Toleration{Key: "example.com/reserved", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	volume := func(name string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	}
	for _, tc := range []struct {
		name    string
		entries []trainer.RuntimePatch
		want    []string // "path: manager, manager"
	}{
		{
			name: "the same toleration list is one field, whatever its items",
			entries: []trainer.RuntimePatch{
				entry("a.io/one", "node", trainer.PodSpecPatch{Tolerations: []corev1.Toleration{gpu}}),
				entry("b.io/two", "node", trainer.PodSpecPatch{Tolerations: []corev1.Toleration{other}}),
			},
			want: []string{podSpec + ".tolerations is set by a.io/one and b.io/two"},
		},
		{
			name: "nodeSelector keys are fields of their own",
			entries: []trainer.RuntimePatch{
				entry("a.io/one", "node", trainer.PodSpecPatch{NodeSelector: map[string]string{"cloud.google.com/gke-accelerator": "a100", "zone": "a"}}),
				entry("b.io/two", "node", trainer.PodSpecPatch{NodeSelector: map[string]string{"cloud.google.com/gke-accelerator": "h100", "pool": "b"}}),
			},
			want: []string{podSpec + `.nodeSelector["cloud.google.com/gke-accelerator"] is set by a.io/one and b.io/two`},
		},
		{
			name: "volumes of different names merge without overlapping",
			entries: []trainer.RuntimePatch{
				entry("a.io/one", "node", trainer.PodSpecPatch{Volumes: []corev1.Volume{volume("data")}}),
				entry("b.io/two", "node", trainer.PodSpecPatch{Volumes: []corev1.Volume{volume("scratch")}}),
			},
		},
		{
			name: "a volume of the same name overlaps on its fields",
			entries: []trainer.RuntimePatch{
				entry("a.io/one", "node", trainer.PodSpecPatch{Volumes: []corev1.Volume{volume("data")}}),
				entry("b.io/two", "node", trainer.PodSpecPatch{Volumes: []corev1.Volume{volume("data")}}),
			},
			want: []string{podSpec + ".volumes[name=data].emptyDir is set by a.io/one and b.io/two"},
		},
		{
			name: "env of one container: the same name overlaps, the container name alone does not",
			entries: []trainer.RuntimePatch{
				entry("a.io/one", "node", trainer.PodSpecPatch{InitContainers: []trainer.ContainerPatch{{Name: "init", Env: []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "1"}}}}}),
				entry("b.io/two", "node", trainer.PodSpecPatch{InitContainers: []trainer.ContainerPatch{{Name: "init", Env: []corev1.EnvVar{{Name: "B", Value: "2"}}}}}),
			},
			want: []string{podSpec + ".initContainers[name=init].env[name=B].value is set by a.io/one and b.io/two"},
		},
		{
			name: "a scheduling gate is nothing but its name",
			entries: []trainer.RuntimePatch{
				entry("a.io/one", "node", trainer.PodSpecPatch{SchedulingGates: []corev1.PodSchedulingGate{{Name: "example.com/gate"}}}),
				entry("b.io/two", "node", trainer.PodSpecPatch{SchedulingGates: []corev1.PodSchedulingGate{{Name: "example.com/gate"}}}),
				entry("c.io/three", "node", trainer.PodSpecPatch{SchedulingGates: []corev1.PodSchedulingGate{{Name: "example.com/other"}}}),
			},
			want: []string{podSpec + ".schedulingGates[name=example.com/gate] is set by a.io/one and b.io/two"},
		},
		{
			name: "different replicated jobs do not overlap",
			entries: []trainer.RuntimePatch{
				entry("a.io/one", "node", trainer.PodSpecPatch{ServiceAccountName: ptr.To("a")}),
				entry("b.io/two", "launcher", trainer.PodSpecPatch{ServiceAccountName: ptr.To("b")}),
			},
		},
		{
			name: "JobSet labels by key, three managers",
			entries: []trainer.RuntimePatch{
				labels("a.io/one", map[string]string{"team": "a"}),
				labels("b.io/two", map[string]string{"team": "b", "x": "1"}),
				labels("c.io/three", map[string]string{"team": "c", "y": "1"}),
			},
			want: []string{"metadata.labels.team is set by a.io/one and b.io/two and c.io/three"},
		},
		{
			name: "entries without content",
			entries: []trainer.RuntimePatch{
				{Manager: "kueue.x-k8s.io/manager"},
				{Manager: "a.io/one", TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{}},
				{Manager: "b.io/two", TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{Template: &trainer.JobSetTemplatePatch{Spec: &trainer.JobSetSpecPatch{}}}},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tj := &trainer.TrainJob{Spec: trainer.TrainJobSpec{RuntimePatches: tc.entries}}
			overlaps, err := Overlaps(tj)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range overlaps {
				got = append(got, o.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("overlaps mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFlattenKeyedLists(t *testing.T) {
	tmpl := map[string]any{
		"metadata": map[string]any{},
		"spec": map[string]any{
			"containers": []any{map[string]any{
				"name":         "node",
				"command":      []any{"a", "b"},
				"ports":        []any{map[string]any{"containerPort": 29500}},
				"volumeMounts": []any{map[string]any{"name": "data", "mountPath": "/data"}},
				"resources":    map[string]any{},
			}},
			"volumes": []any{map[string]any{"name": "data", "emptyDir": map[string]any{}}},
			"tolerations": []any{
				map[string]any{"key": "k", "operator": "Exists"},
			},
		},
	}
	f := newFlat()
	f.add("T", tmpl, smpmeta.PodTemplate)
	want := []string{
		"T.spec.containers[name=node].command",
		"T.spec.containers[name=node].ports[containerPort=29500]",
		"T.spec.containers[name=node].volumeMounts[mountPath=/data].name",
		"T.spec.tolerations",
		"T.spec.volumes[name=data].emptyDir",
	}
	if diff := cmp.Diff(want, f.order); diff != "" {
		t.Errorf("leaves mismatch (-want +got):\n%s", diff)
	}
	if got := f.lists["T.spec.containers"]; got == nil || got.key != "name" {
		t.Errorf("containers are not a list merged by name: %+v", got)
	}
	if _, keyed := f.lists["T.spec.tolerations"]; keyed {
		t.Error("tolerations are a keyed list, want atomic")
	}
}
