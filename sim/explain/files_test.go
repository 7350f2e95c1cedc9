package explain

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trainersim/trainersim/sim/scenario"
)

func TestFromFilesErrors(t *testing.T) {
	for _, tc := range []struct {
		file     string
		runtimes []string
		want     []string
	}{
		{"testdata/invalid-yaml.yaml", nil, []string{
			"testdata/invalid-yaml.yaml:6:15: invalid YAML: did not find expected ',' or '}': the flow mapping that begins here is not closed",
		}},
		{"testdata/invalid-unknown-field.yaml", nil, []string{
			"testdata/invalid-unknown-field.yaml:21:21: spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec.nodeselector: unknown field",
			"testdata/invalid-unknown-field.yaml:9:5: spec.trainer.numNode: unknown field",
		}},
		{"testdata/invalid-wrong-type.yaml", nil, []string{
			"testdata/invalid-wrong-type.yaml:9:15: spec.trainer.numNodes: expected int32, found a JSON string",
		}},
		{"testdata/invalid-kinds.yaml", nil, []string{
			`testdata/invalid-kinds.yaml:2:7: kind: kind "Pod" is not a TrainJob, TrainingRuntime or ClusterTrainingRuntime`,
			"testdata/invalid-kinds.yaml:14:1: a second TrainJob: the file holds exactly one",
		}},
		{"../../scenarios/examples/sdk-and-kueue-share-a-gpu-job.yaml", nil, []string{
			"../../scenarios/examples/sdk-and-kueue-share-a-gpu-job.yaml:3:7: kind: a scenario file: explain reads a TrainJob, so copy the TrainJob of one of its steps into a file of its own",
		}},
		{"testdata/runtimes/pytorch-distributed-gpu.yaml", nil, []string{
			"testdata/runtimes/pytorch-distributed-gpu.yaml: no TrainJob in the file",
		}},
		{"testdata/three-managers.yaml", []string{"testdata/empty-entry.yaml", "testdata/missing.yaml"}, []string{
			"testdata/empty-entry.yaml:4:7: kind: a TrainJob in a --runtime file: give it as the first argument",
			"testdata/missing.yaml: failed to read file: no such file or directory",
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			_, _, err := FromFiles(context.Background(), tc.file, tc.runtimes)
			var errs *scenario.Errors
			if !errors.As(err, &errs) {
				t.Fatalf("error %v, want *scenario.Errors", err)
			}
			var got []string
			for _, e := range *errs {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFromFilesDefaults(t *testing.T) {
	e, tj, err := FromFiles(context.Background(), "testdata/runtime-tolerations-replaced.yaml", []string{"testdata/runtimes/pytorch-distributed-gpu.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	if tj.Namespace != DefaultNamespace {
		t.Errorf("namespace %q, want %q", tj.Namespace, DefaultNamespace)
	}
	// The CRD defaults the runtime's API group, as the API server does.
	if tj.Spec.RuntimeRef.APIGroup == nil || *tj.Spec.RuntimeRef.APIGroup != "trainer.kubeflow.org" {
		t.Errorf("runtimeRef.apiGroup %v, want the CRD's default", tj.Spec.RuntimeRef.APIGroup)
	}
	// The namespaced runtime of --runtime went into the TrainJob's namespace.
	if _, err := e.Explain(context.Background(), tj); err != nil {
		t.Fatal(err)
	}
}
