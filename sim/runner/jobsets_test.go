package runner

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDiffPaths(t *testing.T) {
	obj := func(nodeSelector map[string]any, image string, tolerations ...any) map[string]any {
		pod := map[string]any{"containers": []any{map[string]any{"name": "node", "image": image}}}
		if nodeSelector != nil {
			pod["nodeSelector"] = nodeSelector
		}
		if tolerations != nil {
			pod["tolerations"] = tolerations
		}
		return map[string]any{"replicatedJobs": []any{map[string]any{
			"name":     "node",
			"template": map[string]any{"spec": map[string]any{"template": map[string]any{"spec": pod}}},
		}}}
	}
	const pod = "spec.replicatedJobs[name=node].template.spec.template.spec"
	tol := func(key string) any { return map[string]any{"key": key, "operator": "Exists"} }
	for _, tc := range []struct {
		name       string
		live, want map[string]any
		paths      []string
	}{
		{name: "same", live: obj(map[string]any{"pool": "a"}, "img"), want: obj(map[string]any{"pool": "a"}, "img")},
		{name: "a map the live JobSet lacks", live: obj(nil, "img"), want: obj(map[string]any{"pool": "a"}, "img"), paths: []string{pod + ".nodeSelector"}},
		{name: "one key of two, a value in an item named by its name", live: obj(map[string]any{"pool": "a", "zone": "x"}, "old"), want: obj(map[string]any{"pool": "b", "zone": "x"}, "img"),
			paths: []string{pod + ".containers[name=node].image", pod + ".nodeSelector.pool"}},
		{name: "an item without a name by position", live: obj(nil, "img", tol("a"), tol("b")), want: obj(nil, "img", tol("a"), tol("c")), paths: []string{pod + ".tolerations[1].key"}},
		{name: "a list of another length whole", live: obj(nil, "img", tol("a")), want: obj(nil, "img", tol("a"), tol("b")), paths: []string{pod + ".tolerations"}},
		{name: "a field the built JobSet leaves out", live: obj(map[string]any{"pool": "a"}, "img"), want: obj(nil, "img"), paths: []string{pod + ".nodeSelector"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := diffPaths("spec", tc.live, tc.want)
			if diff := cmp.Diff(tc.paths, got); diff != "" {
				t.Errorf("diffPaths (-want +got):\n%s", diff)
			}
		})
	}
}
