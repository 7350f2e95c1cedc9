package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trainersim/trainersim/sim/scenario"
)

// fromJob is a TrainJob as kubectl get -o yaml prints it: 2 nodes of 8
// GPUs, a runtime of its own, what the server set.
const fromJob = `apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: llm
  namespace: team-a
  uid: 0d5c3b0e-0000-0000-0000-000000000000
  resourceVersion: "4711"
  creationTimestamp: "2026-12-01T10:00:00Z"
  labels:
    team: a
spec:
  runtimeRef:
    name: team-runtime
  trainer:
    numNodes: 2
    resourcesPerNode:
      requests:
        nvidia.com/gpu: 8
status:
  conditions: []
`

// TestNewScenarioLints: what new writes loads as simctl run loads it: the
// default job, a job from a file (nodes for its GPUs and numNodes, what the
// server set dropped, a note for a runtime of its own) and with Kueue.
func TestNewScenarioLints(t *testing.T) {
	dir := t.TempDir()
	from := filepath.Join(dir, "llm.yaml")
	if err := os.WriteFile(from, []byte(fromJob), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"plain", nil, []string{"profile: nvidia-l4", "count: 1", "platform.example.com/gpu-toleration"}},
		{"from-file", []string{"--from", from}, []string{"profile: nvidia-a100-80gb", "count: 2", "team: a", "Runtime team-runtime is not one of the default runtimes"}},
		{"queued", []string{"--with", "kueue"}, []string{"components: [kueue]", "kueue.x-k8s.io/queue-name: team-queue", "localQueue: team-queue"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := run(t, append([]string{"new", tc.name, "--dir", dir}, tc.args...)...)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			path := filepath.Join(dir, tc.name+".yaml")
			if !strings.Contains(stdout, "wrote "+path) {
				t.Errorf("stdout %q does not say it wrote %s", stdout, path)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := scenario.Load(path, data, scenario.Options{}); err != nil {
				t.Errorf("it does not lint:\n%v\n%s", err, data)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(data), w) {
					t.Errorf("it lacks %q:\n%s", w, data)
				}
			}
			for _, gone := range []string{"namespace:", "uid:", "resourceVersion:", "conditions:", "creationTimestamp"} {
				if strings.Contains(string(data), gone) {
					t.Errorf("it keeps %s:\n%s", gone, data)
				}
			}
			// A second time: the file is in the way.
			if _, stderr, code := run(t, append([]string{"new", tc.name, "--dir", dir}, tc.args...)...); code != ExitUsage || !strings.Contains(stderr, "new never overwrites a file") {
				t.Errorf("a second new: exit %d, %s", code, stderr)
			}
		})
	}
}

func TestNewUsageErrors(t *testing.T) {
	dir := t.TempDir()
	notJob := filepath.Join(dir, "pod.yaml")
	if err := os.WriteFile(notJob, []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"new"}, "new needs the scenario's NAME"},
		{[]string{"new", "My_Job"}, `invalid NAME "My_Job": a DNS label`},
		{[]string{"new", "x", "--with", "volcano"}, `unknown component "volcano"`},
		{[]string{"new", "x", "--from", filepath.Join(dir, "none.yaml")}, "no such file"},
		{[]string{"new", "x", "--from", notJob}, `want a TrainJob (kind TrainJob, apiVersion trainer.kubeflow.org/..., a metadata.name and a spec), found kind "Pod"`},
	} {
		_, stderr, code := run(t, append(tc.args, "--dir", dir)...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, ExitUsage, tc.want)
		}
	}
}
