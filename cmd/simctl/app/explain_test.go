package app

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// explainTestdata holds the TrainJob files and goldens of sim/explain.
const explainTestdata = "../../../sim/explain/testdata/"

func TestExplainFilePrintsTheLibrarysRendering(t *testing.T) {
	out, stderr, code := run(t, "explain", explainTestdata+"runtime-tolerations-replaced.yaml",
		"--runtime", explainTestdata+"runtimes/pytorch-distributed-gpu.yaml")
	if code != ExitOK {
		t.Fatalf("exit code %d, want 0; stderr:\n%s", code, stderr)
	}
	want, err := os.ReadFile(explainTestdata + "runtime-tolerations-replaced.text.golden")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), out); diff != "" {
		t.Errorf("explain output mismatch (-want +got):\n%s", diff)
	}
}

func TestExplainStrict(t *testing.T) {
	_, stderr, code := run(t, "explain", explainTestdata+"three-managers.yaml", "--strict", "-o", "json")
	if code != ExitFailed {
		t.Errorf("exit code %d, want %d", code, ExitFailed)
	}
	for _, want := range []string{
		`spec.replicatedJobs[name=node].template.spec.template.spec.tolerations is set by trainer.kubeflow.org/kubeflow-sdk and kueue.x-k8s.io/manager`,
		`nodeSelector["cloud.google.com/gke-accelerator"] is set by`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not contain %q:\n%s", want, stderr)
		}
	}
	if _, _, code := run(t, "explain", explainTestdata+"empty-entry.yaml", "--strict"); code != ExitOK {
		t.Errorf("--strict without overlaps: exit code %d, want 0", code)
	}
}

func TestExplainUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		wantStderr string
	}{
		{"no file", []string{"explain"}, "explain needs exactly one FILE, got 0 arguments"},
		{"no name", []string{"explain", "--kubeconfig", "k"}, "explain needs exactly one NAME, got 0 arguments"},
		{"bad output", []string{"explain", explainTestdata + "empty-entry.yaml", "-o", "xml"}, `invalid --output "xml"`},
		{"namespace of a file", []string{"explain", explainTestdata + "empty-entry.yaml", "-n", "x"}, "-n is for a TrainJob of a cluster"},
		{"runtime on a cluster", []string{"explain", "--kubeconfig", "k", "--runtime", "r.yaml", "llm"}, "--runtime is for a file's TrainJob"},
		{"missing kubeconfig", []string{"explain", "--kubeconfig", "/nonexistent/kubeconfig", "llm"}, "failed to load kubeconfig /nonexistent/kubeconfig"},
		{"file problem with its line", []string{"explain", explainTestdata + "invalid-unknown-field.yaml"},
			"invalid-unknown-field.yaml:9:5: spec.trainer.numNode: unknown field"},
		{"missing runtime", []string{"explain", explainTestdata + "runtime-tolerations-replaced.yaml"}, `failed to get TrainingRuntime pytorch-distributed-gpu: trainingruntimes.trainer.kubeflow.org "pytorch-distributed-gpu" not found (a runtime of your own goes in FILE or in a --runtime file)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := run(t, tc.args...)
			want := ExitUsage
			if tc.name == "missing runtime" {
				want = ExitFailed
			}
			if code != want {
				t.Errorf("exit code %d, want %d", code, want)
			}
			if !strings.Contains(stderr, tc.wantStderr) {
				t.Errorf("stderr %q does not contain %q", stderr, tc.wantStderr)
			}
		})
	}
}
