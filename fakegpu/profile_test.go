package fakegpu

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestProfileNames(t *testing.T) {
	want := []string{"cpu", "nvidia-a100-80gb", "nvidia-h100-80gb", "nvidia-l4", "nvidia-tesla-v100"}
	var got []string
	for _, p := range Profiles() {
		got = append(got, p.Name)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Profiles() names mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, ProfileNames()); diff != "" {
		t.Errorf("ProfileNames() mismatch (-want +got):\n%s", diff)
	}
}

// TestProfileShapes pins the machine each profile imitates.
func TestProfileShapes(t *testing.T) {
	type shape struct {
		InstanceType string
		CPU          string
		Memory       string
		GPUs         int64
		Accelerator  string
	}
	want := map[string]shape{
		"nvidia-h100-80gb":  {InstanceType: "p5.48xlarge", CPU: "192", Memory: "2Ti", GPUs: 8, Accelerator: "nvidia-h100-80gb"},
		"nvidia-a100-80gb":  {InstanceType: "p4de.24xlarge", CPU: "96", Memory: "1152Gi", GPUs: 8, Accelerator: "nvidia-a100-80gb"},
		"nvidia-tesla-v100": {InstanceType: "p3.8xlarge", CPU: "32", Memory: "244Gi", GPUs: 4, Accelerator: "nvidia-tesla-v100"},
		"nvidia-l4":         {InstanceType: "g6.xlarge", CPU: "4", Memory: "16Gi", GPUs: 1, Accelerator: "nvidia-l4"},
		"cpu":               {InstanceType: "m5.4xlarge", CPU: "16", Memory: "64Gi", GPUs: 0},
	}
	got := map[string]shape{}
	for _, p := range Profiles() {
		cpu, mem := p.Capacity[corev1.ResourceCPU], p.Capacity[corev1.ResourceMemory]
		got[p.Name] = shape{
			InstanceType: p.Labels[corev1.LabelInstanceTypeStable],
			CPU:          cpu.String(),
			Memory:       mem.String(),
			GPUs:         p.GPUs(),
			Accelerator:  p.Labels["accelerator"],
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("profile shapes mismatch (-want +got):\n%s", diff)
	}
}

// TestProfileInvariants checks what every profile must state, so that a new
// profile file cannot forget it.
func TestProfileInvariants(t *testing.T) {
	gpuTaint := corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}
	for _, p := range Profiles() {
		t.Run(p.Name, func(t *testing.T) {
			for k, v := range map[string]string{
				corev1.LabelArchStable: "amd64",
				corev1.LabelOSStable:   "linux",
			} {
				if got := p.Labels[k]; got != v {
					t.Errorf("label %s = %q, want %q", k, got, v)
				}
			}
			if p.Labels[corev1.LabelInstanceTypeStable] == "" {
				t.Errorf("label %s is missing", corev1.LabelInstanceTypeStable)
			}
			if p.Description == "" {
				t.Error("description is empty")
			}
			for _, list := range []corev1.ResourceList{p.Capacity, p.Allocatable} {
				if pods := list[corev1.ResourcePods]; pods.Value() != 110 {
					t.Errorf("pods = %s, want 110", pods.String())
				}
				if _, ok := list[corev1.ResourceEphemeralStorage]; !ok {
					t.Error("ephemeral-storage is missing")
				}
			}

			gpus, hasGPU := p.Capacity[ResourceGPU]
			if !hasGPU {
				for k := range p.Labels {
					if strings.HasPrefix(k, "nvidia.com/") || k == "accelerator" {
						t.Errorf("CPU-only profile has GPU label %s", k)
					}
				}
				if len(p.Taints) != 0 {
					t.Errorf("CPU-only profile has taints %v", p.Taints)
				}
				return
			}
			if gpus.Value() < 1 {
				t.Errorf("capacity %s = %s, want at least 1", ResourceGPU, gpus.String())
			}
			if alloc := p.Allocatable[ResourceGPU]; alloc.Cmp(gpus) != 0 {
				t.Errorf("allocatable %s = %s, want %s", ResourceGPU, alloc.String(), gpus.String())
			}
			if got, want := p.Labels["nvidia.com/gpu.count"], strconv.FormatInt(gpus.Value(), 10); got != want {
				t.Errorf("label nvidia.com/gpu.count = %q, want %q to match the capacity", got, want)
			}
			if got := p.Labels["nvidia.com/gpu.present"]; got != "true" {
				t.Errorf("label nvidia.com/gpu.present = %q, want \"true\"", got)
			}
			if p.Labels["nvidia.com/gpu.product"] == "" {
				t.Error("label nvidia.com/gpu.product is missing")
			}
			if mib, err := strconv.Atoi(p.Labels["nvidia.com/gpu.memory"]); err != nil || mib < 1024 {
				t.Errorf("label nvidia.com/gpu.memory = %q, want a number of MiB", p.Labels["nvidia.com/gpu.memory"])
			}
			if got := p.Labels["accelerator"]; got != p.Name {
				t.Errorf("label accelerator = %q, want the profile name %q", got, p.Name)
			}
			if diff := cmp.Diff([]corev1.Taint{gpuTaint}, p.Taints); diff != "" {
				t.Errorf("taints mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLookupProfile(t *testing.T) {
	known := strings.Join(ProfileNames(), ", ")
	tests := []struct {
		name        string
		wantGPUs    int64
		wantErr     bool
		wantErrText string
	}{
		{name: "nvidia-h100-80gb", wantGPUs: 8},
		{name: "nvidia-a100-80gb", wantGPUs: 8},
		{name: "nvidia-tesla-v100", wantGPUs: 4},
		{name: "nvidia-l4", wantGPUs: 1},
		{name: "cpu", wantGPUs: 0},
		{name: "h100", wantErr: true, wantErrText: `unknown profile "h100" (known profiles: ` + known + ")"},
		{name: "NVIDIA-H100-80GB", wantErr: true, wantErrText: `unknown profile "NVIDIA-H100-80GB"`},
		{name: "", wantErr: true, wantErrText: `unknown profile ""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := LookupProfile(tt.name)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("LookupProfile(%q) succeeded, want error", tt.name)
				}
				if !errors.Is(err, ErrUnknownProfile) {
					t.Errorf("LookupProfile(%q) error %v does not wrap ErrUnknownProfile", tt.name, err)
				}
				if !strings.Contains(err.Error(), tt.wantErrText) {
					t.Errorf("LookupProfile(%q) error %q does not contain %q", tt.name, err, tt.wantErrText)
				}
				return
			}
			if err != nil {
				t.Fatalf("LookupProfile(%q) failed: %v", tt.name, err)
			}
			if p.Name != tt.name {
				t.Errorf("LookupProfile(%q).Name = %q", tt.name, p.Name)
			}
			if got := p.GPUs(); got != tt.wantGPUs {
				t.Errorf("LookupProfile(%q).GPUs() = %d, want %d", tt.name, got, tt.wantGPUs)
			}
		})
	}
}

func TestLookupProfileReturnsCopy(t *testing.T) {
	p, err := LookupProfile("nvidia-h100-80gb")
	if err != nil {
		t.Fatal(err)
	}
	p.Labels["accelerator"] = "changed"
	p.Taints[0].Value = "changed"
	p.Capacity[ResourceGPU] = resource.MustParse("1")
	p.Allocatable[corev1.ResourceCPU] = resource.MustParse("1")

	again, err := LookupProfile("nvidia-h100-80gb")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range Profiles() {
		if want.Name != again.Name {
			continue
		}
		if diff := cmp.Diff(want, again); diff != "" {
			t.Errorf("LookupProfile mismatch with Profiles (-want +got):\n%s", diff)
		}
	}
	if again.Labels["accelerator"] != "nvidia-h100-80gb" || again.Taints[0].Value != "present" || again.GPUs() != 8 {
		t.Errorf("changing a looked-up profile changed the registry: %+v", again)
	}
	if cpu := again.Allocatable[corev1.ResourceCPU]; cpu.String() != "192" {
		t.Errorf("changing a looked-up profile changed the registry's allocatable cpu to %s", cpu.String())
	}
}

const validProfile = `
name: test
description: A test machine.
labels:
  kubernetes.io/arch: amd64
capacity:
  cpu: "8"
  memory: 32Gi
  ephemeral-storage: 100Gi
  pods: "110"
`

func TestDecodeProfile(t *testing.T) {
	p, err := DecodeProfile([]byte(validProfile))
	if err != nil {
		t.Fatalf("DecodeProfile failed: %v", err)
	}
	want := Profile{
		Name:        "test",
		Description: "A test machine.",
		Labels:      map[string]string{"kubernetes.io/arch": "amd64"},
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:              resource.MustParse("8"),
			corev1.ResourceMemory:           resource.MustParse("32Gi"),
			corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
			corev1.ResourcePods:             resource.MustParse("110"),
		},
	}
	want.Allocatable = want.Capacity.DeepCopy()
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("DecodeProfile mismatch (-want +got):\n%s", diff)
	}
}

func TestDecodeProfileErrors(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		wantErr string
	}{
		{
			name:    "unknown field",
			doc:     validProfile + "gpus: 8\n",
			wantErr: `unknown field "gpus"`,
		},
		{
			name:    "unknown field in taint",
			doc:     validProfile + "taints:\n- key: a\n  effect: NoSchedule\n  colour: red\n",
			wantErr: `unknown field "colour"`,
		},
		{
			name:    "duplicate field",
			doc:     validProfile + "name: again\n",
			wantErr: `"name" already set`,
		},
		{
			name:    "missing cpu",
			doc:     strings.Replace(validProfile, "  cpu: \"8\"\n", "", 1),
			wantErr: "capacity[cpu]: Required value",
		},
		{
			name:    "bad quantity",
			doc:     strings.Replace(validProfile, `cpu: "8"`, `cpu: eight`, 1),
			wantErr: "failed to decode profile",
		},
		{
			name:    "allocatable above capacity",
			doc:     validProfile + "allocatable:\n  cpu: \"9\"\n",
			wantErr: "allocatable[cpu]: Invalid value: \"9\": must not exceed capacity 8",
		},
		{
			name:    "allocatable without capacity",
			doc:     validProfile + "allocatable:\n  nvidia.com/gpu: \"1\"\n",
			wantErr: "allocatable[nvidia.com/gpu]: Invalid value: \"1\": resource has no capacity",
		},
		{
			name:    "bad taint effect",
			doc:     validProfile + "taints:\n- key: a\n  effect: Sometimes\n",
			wantErr: `taints[0].effect: Unsupported value: "Sometimes"`,
		},
		{
			name:    "duplicate taint",
			doc:     validProfile + "taints:\n- key: a\n  effect: NoSchedule\n- key: a\n  value: b\n  effect: NoSchedule\n",
			wantErr: "taints[1]: Duplicate value",
		},
		{
			name:    "reserved hostname label",
			doc:     strings.Replace(validProfile, "labels:\n", "labels:\n  kubernetes.io/hostname: x\n", 1),
			wantErr: "labels[kubernetes.io/hostname]: Forbidden",
		},
		{
			name:    "reserved kwok label",
			doc:     strings.Replace(validProfile, "labels:\n", "labels:\n  type: kwok\n", 1),
			wantErr: "labels[type]: Forbidden",
		},
		{
			name:    "reserved profile label",
			doc:     strings.Replace(validProfile, "labels:\n", "labels:\n  trainersim.dev/profile: test\n", 1),
			wantErr: "labels[trainersim.dev/profile]: Forbidden",
		},
		{
			name:    "invalid label value",
			doc:     strings.Replace(validProfile, "labels:\n", "labels:\n  a: not valid\n", 1),
			wantErr: `labels: Invalid value: "not valid"`,
		},
		{
			name:    "name not a DNS label",
			doc:     strings.Replace(validProfile, "name: test", "name: Test.Machine", 1),
			wantErr: `name: Invalid value: "Test.Machine"`,
		},
		{
			name:    "no description",
			doc:     strings.Replace(validProfile, "description: A test machine.\n", "", 1),
			wantErr: "description: Required value",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeProfile([]byte(tt.doc))
			if err == nil {
				t.Fatal("DecodeProfile succeeded, want error")
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("DecodeProfile error %q does not contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestLoadProfiles(t *testing.T) {
	tests := []struct {
		name      string
		files     fstest.MapFS
		wantNames []string
		wantErr   string
	}{
		{
			name: "sorted by name",
			files: fstest.MapFS{
				"p/test.yaml":  {Data: []byte(validProfile)},
				"p/other.yaml": {Data: []byte(strings.Replace(validProfile, "name: test", "name: other", 1))},
				"p/README.md":  {Data: []byte("not a profile")},
			},
			wantNames: []string{"other", "test"},
		},
		{
			name:    "name differs from file name",
			files:   fstest.MapFS{"p/h100.yaml": {Data: []byte(validProfile)}},
			wantErr: `failed to load profile p/h100.yaml: name "test" does not match the file name "h100"`,
		},
		{
			name:    "invalid profile",
			files:   fstest.MapFS{"p/test.yaml": {Data: []byte(validProfile + "extra: 1\n")}},
			wantErr: "failed to load profile p/test.yaml: failed to decode profile",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps, err := loadProfiles(tt.files, "p")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("loadProfiles error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("loadProfiles failed: %v", err)
			}
			var names []string
			for _, p := range ps {
				names = append(names, p.Name)
			}
			if diff := cmp.Diff(tt.wantNames, names); diff != "" {
				t.Errorf("loadProfiles names mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
