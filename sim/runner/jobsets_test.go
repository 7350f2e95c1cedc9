package runner

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestJobSetCompared: a JobSet is behind the Trainer's apply in the leaves
// of its spec, labels, annotations and owner references that differ (a
// field it lacks, a value the apply changes), named as sim/fieldpath
// spells them; its status and the server's metadata do not count.
func TestJobSetCompared(t *testing.T) {
	jobSet := func(rv, step string, nodeSelector map[string]any, active int64) *unstructured.Unstructured {
		pod := map[string]any{"containers": []any{map[string]any{"name": "node", "image": "img"}}}
		if nodeSelector != nil {
			pod["nodeSelector"] = nodeSelector
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"name": "llm", "resourceVersion": rv, "labels": map[string]any{"example.com/step": step}},
			"spec": map[string]any{"suspend": true, "replicatedJobs": []any{map[string]any{
				"name":     "node",
				"template": map[string]any{"spec": map[string]any{"template": map[string]any{"spec": pod}}},
			}}},
			"status": map[string]any{"replicatedJobsStatus": []any{map[string]any{"name": "node", "active": active}}},
		}}
	}
	const pod = "spec.replicatedJobs[name=node].template.spec.template.spec"
	live := jobSet("1", "a", map[string]any{"zone": "x"}, 0)
	if got := fieldDiffs(compared(live), compared(jobSet("2", "a", map[string]any{"zone": "x"}, 1))); len(got) != 0 {
		t.Errorf("the same JobSet at another resourceVersion and status: behind in %+v", got)
	}
	var paths []string
	for _, d := range fieldDiffs(compared(live), compared(jobSet("2", "b", map[string]any{"zone": "y", "pool": "a"}, 1))) {
		paths = append(paths, d.Path)
	}
	want := []string{`metadata.labels["example.com/step"]`, pod + ".nodeSelector.pool", pod + ".nodeSelector.zone"}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("behind in (-want +got):\n%s", diff)
	}
}
