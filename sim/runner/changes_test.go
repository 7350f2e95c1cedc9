package runner

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trainersim/trainersim/results"
)

// TestFieldDiffs: the leaves two versions of a TrainJob differ in, status
// lists keyed by type and name, entries by manager, server metadata left
// out, an emptied map a leaf of its own.
func TestFieldDiffs(t *testing.T) {
	before := map[string]any{
		"metadata": map[string]any{"name": "low", "resourceVersion": "7"},
		"spec": map[string]any{"suspend": false, "runtimePatches": []any{
			map[string]any{"manager": "kueue.x-k8s.io/manager", "trainingRuntimeSpec": map[string]any{"template": map[string]any{"spec": map[string]any{"nodeSelector": map[string]any{"gpu": "h100"}}}}},
		}},
		"status": map[string]any{
			"conditions": []any{map[string]any{"type": "Suspended", "status": "False"}},
			"jobsStatus": []any{map[string]any{"name": "node", "active": 1}},
		},
	}
	after := map[string]any{
		"metadata": map[string]any{"name": "low", "resourceVersion": "9"},
		"spec": map[string]any{"suspend": true, "runtimePatches": []any{
			map[string]any{"manager": "kueue.x-k8s.io/manager", "trainingRuntimeSpec": map[string]any{"template": map[string]any{"spec": map[string]any{}}}},
		}},
		"status": map[string]any{
			"conditions": []any{map[string]any{"type": "Suspended", "status": "True"}},
			"jobsStatus": []any{map[string]any{"name": "node", "active": 0}},
		},
	}
	want := []results.FieldDiff{
		{Path: "spec.runtimePatches[manager=kueue.x-k8s.io/manager].trainingRuntimeSpec.template.spec", To: "{}"},
		{Path: "spec.suspend", From: "false", To: "true"},
		{Path: "status.conditions[type=Suspended].status", From: `"False"`, To: `"True"`},
		{Path: "status.jobsStatus[name=node].active", From: "1", To: "0"},
		{Path: "spec.runtimePatches[manager=kueue.x-k8s.io/manager].trainingRuntimeSpec.template.spec.nodeSelector.gpu", From: `"h100"`},
	}
	if diff := cmp.Diff(want, fieldDiffs(before, after)); diff != "" {
		t.Errorf("fieldDiffs (-want +got):\n%s", diff)
	}
}
