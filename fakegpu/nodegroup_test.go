package fakegpu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// TestProfileNodesGolden compares the Node of a one-node group of every
// profile with testdata/profiles/<profile>.golden.yaml.
func TestProfileNodesGolden(t *testing.T) {
	want := map[string]bool{}
	for _, p := range Profiles() {
		path := filepath.Join("testdata", "profiles", p.Name+".golden.yaml")
		want[path] = true
		t.Run(p.Name, func(t *testing.T) {
			nodes, err := NodeGroup{Profile: p.Name, Count: 1}.Nodes()
			if err != nil {
				t.Fatalf("Nodes failed: %v", err)
			}
			got := encodeYAML(t, nodes[0])
			checkGolden(t, path, got)
			checkRoundTrip(t, got, nodes)
		})
	}
	checkNoStaleGolden(t, filepath.Join("testdata", "profiles", "*.golden.yaml"), want)
}

// TestNodeGroupsGolden builds the Nodes of each NodeGroup in
// testdata/nodegroups/<case>.input.yaml and compares them with
// <case>.golden.yaml.
func TestNodeGroupsGolden(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "nodegroups", "*.input.yaml"))
	if err != nil {
		t.Fatalf("failed to list inputs: %v", err)
	}
	if len(inputs) == 0 {
		t.Fatal("no testdata/nodegroups/*.input.yaml")
	}
	want := map[string]bool{}
	for _, input := range inputs {
		name := strings.TrimSuffix(filepath.Base(input), ".input.yaml")
		golden := filepath.Join("testdata", "nodegroups", name+".golden.yaml")
		want[golden] = true
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(input)
			if err != nil {
				t.Fatalf("failed to read input: %v", err)
			}
			var g NodeGroup
			if err := yaml.UnmarshalStrict(data, &g); err != nil {
				t.Fatalf("failed to decode input: %v", err)
			}
			nodes, err := g.Nodes()
			if err != nil {
				t.Fatalf("Nodes failed: %v", err)
			}
			objs := make([]runtime.Object, len(nodes))
			for i, n := range nodes {
				objs[i] = n
			}
			got := encodeYAML(t, objs...)
			checkGolden(t, golden, got)
			checkRoundTrip(t, got, nodes)
		})
	}
	checkNoStaleGolden(t, filepath.Join("testdata", "nodegroups", "*.golden.yaml"), want)
}

// checkRoundTrip decodes data strictly as Nodes and compares them with want,
// so a golden file is always a valid, exact Node manifest.
func checkRoundTrip(t *testing.T, data []byte, want []*corev1.Node) {
	t.Helper()
	docs := strings.Split(string(data), "\n---\n")
	var got []*corev1.Node
	for _, doc := range docs {
		obj, _, err := yamlSerializer.Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("failed to decode node: %v", err)
		}
		n, ok := obj.(*corev1.Node)
		if !ok {
			t.Fatalf("decoded %T, want *corev1.Node", obj)
		}
		got = append(got, n)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("round-tripped nodes mismatch (-want +got):\n%s", diff)
	}
}

func TestNodeGroupNodes(t *testing.T) {
	nodes, err := NodeGroup{
		Profile:    "nvidia-l4",
		Count:      3,
		Labels:     map[string]string{"accelerator": "l4", "pool": "inference"},
		Taints:     []corev1.Taint{{Key: "pool", Value: "inference", Effect: corev1.TaintEffectNoSchedule}},
		NamePrefix: "l4",
	}.Nodes()
	if err != nil {
		t.Fatalf("Nodes failed: %v", err)
	}
	var names []string
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	if diff := cmp.Diff([]string{"l4-0", "l4-1", "l4-2"}, names); diff != "" {
		t.Errorf("node names mismatch (-want +got):\n%s", diff)
	}
	for _, n := range nodes {
		for k, want := range map[string]string{
			corev1.LabelHostname:     n.Name,
			KwokNodeLabel:            KwokNodeLabelValue,
			ProfileLabel:             "nvidia-l4",
			"accelerator":            "l4",
			"pool":                   "inference",
			"nvidia.com/gpu.product": "NVIDIA-L4",
			corev1.LabelArchStable:   "amd64",
			"nvidia.com/gpu.present": "true",
		} {
			if got := n.Labels[k]; got != want {
				t.Errorf("%s: label %s = %q, want %q", n.Name, k, got, want)
			}
		}
		if got := n.Annotations[KwokNodeAnnotation]; got != KwokNodeAnnotationValue {
			t.Errorf("%s: annotation %s = %q, want %q", n.Name, KwokNodeAnnotation, got, KwokNodeAnnotationValue)
		}
		wantTaints := []corev1.Taint{
			{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule},
			{Key: "pool", Value: "inference", Effect: corev1.TaintEffectNoSchedule},
		}
		if diff := cmp.Diff(wantTaints, n.Spec.Taints); diff != "" {
			t.Errorf("%s: taints mismatch (-want +got):\n%s", n.Name, diff)
		}
		if gpus := n.Status.Allocatable[ResourceGPU]; gpus.Value() != 1 {
			t.Errorf("%s: allocatable %s = %s, want 1", n.Name, ResourceGPU, gpus.String())
		}
		if len(n.Status.Conditions) != 0 {
			t.Errorf("%s: has conditions %v, want none (kwok makes the node Ready)", n.Name, n.Status.Conditions)
		}
	}

	// Nodes share no memory with each other or with the profile registry.
	nodes[0].Labels["pool"] = "changed"
	nodes[0].Spec.Taints[0].Value = "changed"
	gpus := nodes[0].Status.Capacity[ResourceGPU]
	gpus.Add(gpus)
	nodes[0].Status.Capacity[ResourceGPU] = gpus
	if nodes[1].Labels["pool"] != "inference" || nodes[1].Spec.Taints[0].Value != "present" {
		t.Errorf("changing one node changed another: %v %v", nodes[1].Labels, nodes[1].Spec.Taints)
	}
	p, err := LookupProfile("nvidia-l4")
	if err != nil {
		t.Fatal(err)
	}
	if p.Taints[0].Value != "present" || p.GPUs() != 1 {
		t.Errorf("changing a node changed the profile: %+v", p)
	}
}

func TestNodeGroupNodesDefaultPrefix(t *testing.T) {
	nodes, err := NodeGroup{Profile: "cpu", Count: 2}.Nodes()
	if err != nil {
		t.Fatalf("Nodes failed: %v", err)
	}
	if got, want := []string{nodes[0].Name, nodes[1].Name}, []string{"cpu-0", "cpu-1"}; !cmp.Equal(want, got) {
		t.Errorf("node names mismatch (-want +got):\n%s", cmp.Diff(want, got))
	}
	if len(nodes[0].Spec.Taints) != 0 {
		t.Errorf("cpu node has taints %v, want none", nodes[0].Spec.Taints)
	}
}

func TestNodeGroupNodesErrors(t *testing.T) {
	tests := []struct {
		name    string
		group   NodeGroup
		wantErr string
	}{
		{
			name:    "zero value",
			group:   NodeGroup{},
			wantErr: `failed to build nodes of profile "": count is 0, must be at least 1`,
		},
		{
			name:    "zero count",
			group:   NodeGroup{Profile: "cpu"},
			wantErr: "count is 0, must be at least 1",
		},
		{
			name:    "negative count",
			group:   NodeGroup{Profile: "cpu", Count: -1},
			wantErr: "count is -1, must be at least 1",
		},
		{
			name:    "unknown profile",
			group:   NodeGroup{Profile: "tpu-v5", Count: 1},
			wantErr: `failed to build nodes: unknown profile "tpu-v5" (known profiles: cpu, nvidia-a100-80gb`,
		},
		{
			name:    "invalid prefix",
			group:   NodeGroup{Profile: "cpu", Count: 1, NamePrefix: "CPU_pool"},
			wantErr: `name prefix "CPU_pool" gives invalid node names`,
		},
		{
			name:    "prefix too long for the last name",
			group:   NodeGroup{Profile: "cpu", Count: 10, NamePrefix: strings.Repeat("a", 252)},
			wantErr: "gives invalid node names: must be no more than 253 bytes",
		},
		{
			name:    "invalid label",
			group:   NodeGroup{Profile: "cpu", Count: 1, Labels: map[string]string{"pool": "a b"}},
			wantErr: `labels: Invalid value: "a b"`,
		},
		{
			name:    "hostname label",
			group:   NodeGroup{Profile: "cpu", Count: 1, Labels: map[string]string{corev1.LabelHostname: "x"}},
			wantErr: "labels[kubernetes.io/hostname]: Forbidden: always set to the node name",
		},
		{
			name:    "kwok marker label",
			group:   NodeGroup{Profile: "cpu", Count: 1, Labels: map[string]string{KwokNodeLabel: "real"}},
			wantErr: `labels[type]: Invalid value: "real": must be kwok`,
		},
		{
			name:    "profile label",
			group:   NodeGroup{Profile: "cpu", Count: 1, Labels: map[string]string{ProfileLabel: "nvidia-l4"}},
			wantErr: `labels[trainersim.dev/profile]: Invalid value: "nvidia-l4": must be the profile name cpu`,
		},
		{
			name:    "invalid taint",
			group:   NodeGroup{Profile: "cpu", Count: 1, Taints: []corev1.Taint{{Key: "a", Effect: "Never"}}},
			wantErr: `taints[0].effect: Unsupported value: "Never"`,
		},
		{
			name: "duplicate taints in group",
			group: NodeGroup{Profile: "cpu", Count: 1, Taints: []corev1.Taint{
				{Key: "a", Effect: corev1.TaintEffectNoSchedule},
				{Key: "a", Value: "b", Effect: corev1.TaintEffectNoSchedule},
			}},
			wantErr: "taints[1]: Duplicate value",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.group.Nodes()
			if err == nil {
				t.Fatal("Nodes succeeded, want error")
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Nodes error %q does not contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestNodeGroupKwokMarkerLabelAllowed(t *testing.T) {
	nodes, err := NodeGroup{Profile: "cpu", Count: 1, Labels: map[string]string{KwokNodeLabel: KwokNodeLabelValue}}.Nodes()
	if err != nil {
		t.Fatalf("Nodes failed: %v", err)
	}
	if got := nodes[0].Labels[KwokNodeLabel]; got != KwokNodeLabelValue {
		t.Errorf("label %s = %q, want %q", KwokNodeLabel, got, KwokNodeLabelValue)
	}
}

func TestBuildNodes(t *testing.T) {
	nodes, err := BuildNodes(DefaultNodeGroups())
	if err != nil {
		t.Fatalf("BuildNodes failed: %v", err)
	}
	var names []string
	var gpus int64
	for _, n := range nodes {
		names = append(names, n.Name)
		q := n.Status.Allocatable[ResourceGPU]
		gpus += q.Value()
	}
	byProfile := map[string]int{}
	for _, n := range nodes {
		byProfile[n.Labels[ProfileLabel]]++
	}
	if diff := cmp.Diff(map[string]int{"nvidia-h100-80gb": 2, "cpu": 1}, byProfile); diff != "" {
		t.Errorf("default nodes by profile mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"nvidia-h100-80gb-0", "nvidia-h100-80gb-1", "cpu-0"}, names); diff != "" {
		t.Errorf("default node names mismatch (-want +got):\n%s", diff)
	}
	if gpus != 16 {
		t.Errorf("default nodes have %d GPUs, want 16", gpus)
	}

	_, err = BuildNodes([]NodeGroup{
		{Profile: "cpu", Count: 2},
		{Profile: "nvidia-l4", Count: 1, NamePrefix: "cpu"},
	})
	if want := `failed to build node group 1: node "cpu-0" is also in node group 0`; err == nil || err.Error() != want {
		t.Errorf("BuildNodes error = %v, want %q", err, want)
	}

	_, err = BuildNodes([]NodeGroup{{Profile: "cpu", Count: 1}, {Profile: "gpu", Count: 1}})
	if want := `failed to build node group 1: failed to build nodes: unknown profile "gpu"`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("BuildNodes error = %v, want one starting with %q", err, want)
	}

	nodes, err = BuildNodes(nil)
	if err != nil || len(nodes) != 0 {
		t.Errorf("BuildNodes(nil) = %v, %v, want no nodes and no error", nodes, err)
	}
}

func TestParseNodeGroups(t *testing.T) {
	tests := []struct {
		in   string
		want []NodeGroup
	}{
		{
			in:   DefaultNodeGroupsSpec,
			want: DefaultNodeGroups(),
		},
		{
			in:   "nvidia-h100-80gb=2,cpu=1",
			want: []NodeGroup{{Profile: "nvidia-h100-80gb", Count: 2}, {Profile: "cpu", Count: 1}},
		},
		{
			in:   "nvidia-tesla-v100=1",
			want: []NodeGroup{{Profile: "nvidia-tesla-v100", Count: 1}},
		},
		{
			in:   " nvidia-l4 = 4 , nvidia-a100-80gb=16 ,cpu=3 ",
			want: []NodeGroup{{Profile: "nvidia-l4", Count: 4}, {Profile: "nvidia-a100-80gb", Count: 16}, {Profile: "cpu", Count: 3}},
		},
		{
			in:   "cpu=007",
			want: []NodeGroup{{Profile: "cpu", Count: 7}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseNodeGroups(tt.in)
			if err != nil {
				t.Fatalf("ParseNodeGroups(%q) failed: %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseNodeGroups(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestParseNodeGroupsErrors(t *testing.T) {
	tests := []struct {
		in      string
		wantErr string
	}{
		{in: "", wantErr: "failed to parse node groups: empty"},
		{in: "  ", wantErr: "failed to parse node groups: empty"},
		{in: "cpu", wantErr: `failed to parse node group "cpu": missing "=<count>"`},
		{in: "cpu=", wantErr: `failed to parse node group "cpu=": count "" is not an integer`},
		{in: "cpu=two", wantErr: `failed to parse node group "cpu=two": count "two" is not an integer`},
		{in: "cpu=1.5", wantErr: `failed to parse node group "cpu=1.5": count "1.5" is not an integer`},
		{in: "cpu=0", wantErr: `failed to parse node group "cpu=0": count is 0, must be at least 1`},
		{in: "cpu=-2", wantErr: `failed to parse node group "cpu=-2": count is -2, must be at least 1`},
		{in: "=1", wantErr: `failed to parse node group "=1": missing profile name`},
		{in: "cpu=1=2", wantErr: `failed to parse node group "cpu=1=2": count "1=2" is not an integer`},
		{in: "h100=2", wantErr: `failed to parse node group "h100=2": unknown profile "h100" (known profiles: cpu, nvidia-a100-80gb, nvidia-h100-80gb, nvidia-l4, nvidia-tesla-v100)`},
		{in: "cpu=1,", wantErr: `failed to parse node group "": empty element`},
		{in: "cpu=1,,nvidia-l4=1", wantErr: `failed to parse node group "": empty element`},
		{in: "cpu=1,nvidia-l4=x", wantErr: `failed to parse node group "nvidia-l4=x": count "x" is not an integer`},
		{in: "cpu=1;nvidia-l4=1", wantErr: `failed to parse node group "cpu=1;nvidia-l4=1": count "1;nvidia-l4=1" is not an integer`},
		{in: "cpu=1,cpu=2", wantErr: `failed to parse node group "cpu=2": profile "cpu" is listed more than once`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseNodeGroups(tt.in)
			if err == nil {
				t.Fatalf("ParseNodeGroups(%q) = %v, want error", tt.in, got)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseNodeGroups(%q) error %q does not contain %q", tt.in, err, tt.wantErr)
			}
		})
	}
}
