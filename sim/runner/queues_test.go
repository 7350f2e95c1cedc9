package runner

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/trainersim/trainersim/fakegpu"
	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/cluster"
	"github.com/trainersim/trainersim/sim/scenario"
)

// TestWithComponents: a run starts the components its scenarios ask for,
// once each, but not for scenarios its Trainer release will skip.
func TestWithComponents(t *testing.T) {
	file := func(versions string, components ...string) *scenario.File {
		return &scenario.File{Scenario: &v1alpha1.Scenario{Spec: v1alpha1.ScenarioSpec{
			Trainer: &v1alpha1.Trainer{Versions: versions}, Components: components,
		}}}
	}
	files := []*scenario.File{file(">=v2.3.0", "kueue"), file(">=v2.2.0"), file(">=v2.3.0", "kueue")}
	for _, tc := range []struct {
		have    []string
		trainer string
		want    []string
	}{
		{nil, "", []string{"kueue"}},
		{nil, "v2.3.0", []string{"kueue"}},
		{nil, "v2.2.1", nil},
		{[]string{"kueue"}, "v2.2.1", []string{"kueue"}},
	} {
		if got := WithComponents(tc.have, files, tc.trainer); !slices.Equal(got, tc.want) {
			t.Errorf("WithComponents(%v, files, %q) = %v, want %v", tc.have, tc.trainer, got, tc.want)
		}
	}
}

// TestNeedsServing: a cluster must reach simctl's webhooks and gates when a
// scenario that will run on it declares either; not for scenarios its
// spec.clusters or its Trainer range leave out.
func TestNeedsServing(t *testing.T) {
	file := func(versions string, only []string, webhooks, gates bool) *scenario.File {
		spec := v1alpha1.ScenarioSpec{Trainer: &v1alpha1.Trainer{Versions: versions}}
		if only != nil {
			spec.Clusters = &v1alpha1.Clusters{Only: only}
		}
		if webhooks {
			spec.Webhooks = []v1alpha1.AdmissionWebhook{{Name: "w"}}
		}
		if gates {
			spec.Gates = []v1alpha1.Gate{{Name: "g"}}
		}
		return &scenario.File{Scenario: &v1alpha1.Scenario{Spec: spec}}
	}
	plain := file(">=v2.2.0", nil, false, false)
	for _, tc := range []struct {
		name    string
		files   []*scenario.File
		cluster string
		trainer string
		want    bool
	}{
		{"none declares", []*scenario.File{plain}, cluster.Kind, "", false},
		{"a webhook", []*scenario.File{plain, file(">=v2.2.0", nil, true, false)}, cluster.Kind, "", true},
		{"a gate", []*scenario.File{file(">=v2.2.0", nil, false, true)}, cluster.Kubeconfig, "", true},
		{"on envtest only", []*scenario.File{file(">=v2.2.0", []string{cluster.Envtest}, true, true)}, cluster.Kind, "", false},
		{"on kind too", []*scenario.File{file(">=v2.2.0", []string{cluster.Envtest, cluster.Kind}, true, false)}, cluster.Kind, "", true},
		{"another release's", []*scenario.File{file("<v2.2.0", nil, true, false)}, cluster.Kind, "v2.3.0", false},
	} {
		if got := NeedsServing(tc.files, tc.cluster, tc.trainer); got != tc.want {
			t.Errorf("%s: NeedsServing = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestQueueObjects: the queueing objects a scenario's spec.queues makes,
// field by field, from the profiles of its flavors.
func TestQueueObjects(t *testing.T) {
	profiles := map[string]fakegpu.Profile{
		"gpu": {
			Name:   "gpu",
			Labels: map[string]string{fakegpu.GPUProductLabel: "NVIDIA-H100", "node.kubernetes.io/instance-type": "p5.48xlarge"},
			Taints: []corev1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}},
		},
		"cpu": {Name: "cpu", Labels: map[string]string{"node.kubernetes.io/instance-type": "m5.4xlarge"}},
		"spot": {
			Name: "spot",
			Taints: []corev1.Taint{
				{Key: "spot", Effect: corev1.TaintEffectNoExecute},
				{Key: "pool", Value: "a", Effect: corev1.TaintEffectNoSchedule},
			},
		},
	}
	lookup := func(name string) (fakegpu.Profile, error) {
		p, ok := profiles[name]
		if !ok {
			return fakegpu.Profile{}, fmt.Errorf("unknown profile %q", name)
		}
		return p, nil
	}
	const ns = "sc-abc12"
	labels := map[string]any{cluster.ManagedByLabel: cluster.ManagedByValue, cluster.RunLabel: "run1"}
	kueue := func(kind, name string, fields map[string]any) *unstructured.Unstructured {
		o := map[string]any{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind, "metadata": map[string]any{"name": name, "labels": labels}}
		maps.Copy(o, fields)
		return &unstructured.Unstructured{Object: o}
	}
	flavor := func(name string, spec map[string]any) *unstructured.Unstructured {
		return kueue("ResourceFlavor", ns+"-"+name, map[string]any{"spec": spec})
	}
	quota := func(name, cpu, memory, gpu string) any {
		return map[string]any{"name": ns + "-" + name, "resources": []any{
			map[string]any{"name": "cpu", "nominalQuota": cpu},
			map[string]any{"name": "memory", "nominalQuota": memory},
			map[string]any{"name": "nvidia.com/gpu", "nominalQuota": gpu},
		}}
	}
	clusterQueueNamed := func(name, preemption string, quotas ...any) *unstructured.Unstructured {
		return kueue("ClusterQueue", name, map[string]any{"spec": map[string]any{
			"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": ns}},
			"preemption":        map[string]any{"withinClusterQueue": preemption},
			"resourceGroups": []any{map[string]any{
				"coveredResources": []any{"cpu", "memory", "nvidia.com/gpu"},
				"flavors":          quotas,
			}},
		}})
	}
	clusterQueue := func(preemption string, quotas ...any) *unstructured.Unstructured {
		return clusterQueueNamed(ns, preemption, quotas...)
	}
	localQueueOf := func(name, clusterQueue string) *unstructured.Unstructured {
		lq := kueue("LocalQueue", name, map[string]any{"spec": map[string]any{"clusterQueue": clusterQueue}})
		lq.SetNamespace(ns)
		return lq
	}
	localQueue := localQueueOf("lq", ns)
	gpuToleration := []any{map[string]any{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}}

	for _, tc := range []struct {
		name   string
		queues *v1alpha1.Queues
		want   *queueing
	}{
		{
			name: "no spec.queues",
		},
		{
			name:   "a GPU profile: its gpu.product label, its taint's value, the quotas given",
			queues: &v1alpha1.Queues{LocalQueue: "lq", Flavors: []v1alpha1.QueueFlavor{{Profile: "gpu", GPU: "16", CPU: "192", Memory: "2Ti"}}},
			want: &queueing{
				flavors:       []*unstructured.Unstructured{flavor("gpu", map[string]any{"nodeLabels": map[string]any{fakegpu.GPUProductLabel: "NVIDIA-H100"}, "tolerations": gpuToleration})},
				clusterQueues: []*unstructured.Unstructured{clusterQueue("Never", quota("gpu", "192", "2Ti", "16"))},
				localQueues:   []*unstructured.Unstructured{localQueue},
			},
		},
		{
			name:   "a profile without gpu.product: the profile label; no taints, no tolerations; quotas left out are 0",
			queues: &v1alpha1.Queues{LocalQueue: "lq", Flavors: []v1alpha1.QueueFlavor{{Name: "small", Profile: "cpu", CPU: "16"}}},
			want: &queueing{
				flavors:       []*unstructured.Unstructured{flavor("small", map[string]any{"nodeLabels": map[string]any{fakegpu.ProfileLabel: "cpu"}})},
				clusterQueues: []*unstructured.Unstructured{clusterQueue("Never", quota("small", "16", "0", "0"))},
				localQueues:   []*unstructured.Unstructured{localQueue},
			},
		},
		{
			name: "nodeLabel chooses the label; a taint without value is tolerated with Exists",
			queues: &v1alpha1.Queues{LocalQueue: "lq", Preemption: "LowerPriority", Flavors: []v1alpha1.QueueFlavor{
				{Profile: "gpu", NodeLabel: "node.kubernetes.io/instance-type", GPU: "8"},
				{Profile: "spot", NodeLabel: fakegpu.ProfileLabel},
			}},
			want: &queueing{
				flavors: []*unstructured.Unstructured{
					flavor("gpu", map[string]any{"nodeLabels": map[string]any{"node.kubernetes.io/instance-type": "p5.48xlarge"}, "tolerations": gpuToleration}),
					flavor("spot", map[string]any{"nodeLabels": map[string]any{fakegpu.ProfileLabel: "spot"}, "tolerations": []any{
						map[string]any{"key": "spot", "operator": "Exists", "effect": "NoExecute"},
						map[string]any{"key": "pool", "operator": "Equal", "value": "a", "effect": "NoSchedule"},
					}}),
				},
				clusterQueues: []*unstructured.Unstructured{clusterQueue("LowerPriority", quota("gpu", "0", "0", "8"), quota("spot", "0", "0", "0"))},
				localQueues:   []*unstructured.Unstructured{localQueue},
			},
		},
		{
			name: "priority classes carry their value at the top level, no spec",
			queues: &v1alpha1.Queues{LocalQueue: "lq", PriorityClasses: []v1alpha1.PriorityClass{{Name: "high", Value: 1000}, {Name: "low", Value: -5}},
				Flavors: []v1alpha1.QueueFlavor{{Profile: "cpu"}}},
			want: &queueing{
				priorityClasses: []*unstructured.Unstructured{
					kueue("WorkloadPriorityClass", "high", map[string]any{"value": int64(1000)}),
					kueue("WorkloadPriorityClass", "low", map[string]any{"value": int64(-5)}),
				},
				flavors:       []*unstructured.Unstructured{flavor("cpu", map[string]any{"nodeLabels": map[string]any{fakegpu.ProfileLabel: "cpu"}})},
				clusterQueues: []*unstructured.Unstructured{clusterQueue("Never", quota("cpu", "0", "0", "0"))},
				localQueues:   []*unstructured.Unstructured{localQueue},
			},
		},
		{
			name: "teams: a ClusterQueue and a LocalQueue each; a flavor of one name made once",
			queues: &v1alpha1.Queues{LocalQueue: "lq", Preemption: "LowerPriority", Flavors: []v1alpha1.QueueFlavor{{Profile: "gpu", GPU: "8"}},
				Teams: []v1alpha1.QueueTeam{
					{LocalQueue: "team-b", Flavors: []v1alpha1.QueueFlavor{{Profile: "cpu", CPU: "16"}}},
					{LocalQueue: "team-c", Flavors: []v1alpha1.QueueFlavor{{Profile: "gpu", GPU: "16"}}},
				}},
			want: &queueing{
				flavors: []*unstructured.Unstructured{
					flavor("gpu", map[string]any{"nodeLabels": map[string]any{fakegpu.GPUProductLabel: "NVIDIA-H100"}, "tolerations": gpuToleration}),
					flavor("cpu", map[string]any{"nodeLabels": map[string]any{fakegpu.ProfileLabel: "cpu"}}),
				},
				clusterQueues: []*unstructured.Unstructured{
					clusterQueue("LowerPriority", quota("gpu", "0", "0", "8")),
					clusterQueueNamed(ns+"-team-b", "LowerPriority", quota("cpu", "16", "0", "0")),
					clusterQueueNamed(ns+"-team-c", "LowerPriority", quota("gpu", "0", "0", "16")),
				},
				localQueues: []*unstructured.Unstructured{localQueue, localQueueOf("team-b", ns+"-team-b"), localQueueOf("team-c", ns+"-team-c")},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := queueObjects(tc.queues, ns, map[string]string{cluster.ManagedByLabel: cluster.ManagedByValue, cluster.RunLabel: "run1"}, lookup)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(queueing{})); diff != "" {
				t.Errorf("queueObjects mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestQueueObjectsUnknownProfile: a flavor of an unknown profile is an
// error, not an empty flavor.
func TestQueueObjectsUnknownProfile(t *testing.T) {
	q := &v1alpha1.Queues{LocalQueue: "lq", Flavors: []v1alpha1.QueueFlavor{{Profile: "nvidia-b300"}}}
	if _, err := queueObjects(q, "ns", nil, fakegpu.LookupProfile); err == nil {
		t.Error("queueObjects with an unknown profile: got no error")
	}
}

// TestQueueingOrder: what the ClusterQueue names is created before it and
// deleted after it; the LocalQueue, namespaced, is created last and left to
// the namespace's deletion.
func TestQueueingOrder(t *testing.T) {
	obj := func(name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetName(name)
		return u
	}
	q := &queueing{
		priorityClasses: []*unstructured.Unstructured{obj("pc1"), obj("pc2")},
		flavors:         []*unstructured.Unstructured{obj("f1"), obj("f2")},
		clusterQueues:   []*unstructured.Unstructured{obj("cq")},
		localQueues:     []*unstructured.Unstructured{obj("lq")},
	}
	names := func(objs []*unstructured.Unstructured) []string {
		var out []string
		for _, o := range objs {
			out = append(out, o.GetName())
		}
		return out
	}
	if diff := cmp.Diff([]string{"pc1", "pc2", "f1", "f2", "cq", "lq"}, names(q.created())); diff != "" {
		t.Errorf("created mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"cq", "f2", "f1", "pc2", "pc1"}, names(q.clusterScoped())); diff != "" {
		t.Errorf("clusterScoped mismatch (-want +got):\n%s", diff)
	}
}
