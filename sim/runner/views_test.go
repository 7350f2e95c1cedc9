package runner

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/scenario"
)

// TestViewsFor: a run makes a component's watches viewable only when a
// scenario it will not skip declares a view of it.
func TestViewsFor(t *testing.T) {
	file := func(versions string, views ...v1alpha1.View) *scenario.File {
		return &scenario.File{Scenario: &v1alpha1.Scenario{Spec: v1alpha1.ScenarioSpec{
			Trainer: &v1alpha1.Trainer{Versions: versions}, Views: views,
		}}}
	}
	v := v1alpha1.View{Name: "v", Component: "trainer", Resource: "trainjobs"}
	k := v1alpha1.View{Name: "k", Component: "kueue", Resource: "workloads"}
	for _, tc := range []struct {
		name    string
		files   []*scenario.File
		trainer string
		want    []string
	}{
		{"no views", []*scenario.File{file(">=v2.1.0"), file(">=v2.2.0")}, "", nil},
		{"a view", []*scenario.File{file(">=v2.1.0"), file(">=v2.3.0", v)}, "", []string{"trainer"}},
		{"views of two components, each once", []*scenario.File{file(">=v2.3.0", v, k), file(">=v2.3.0", k)}, "", []string{"trainer", "kueue"}},
		{"a view in a scenario the release skips", []*scenario.File{file(">=v2.3.0", v)}, "v2.2.0", nil},
	} {
		if diff := cmp.Diff(tc.want, ViewsFor(tc.files, tc.trainer)); diff != "" {
			t.Errorf("%s: ViewsFor mismatch (-want +got):\n%s", tc.name, diff)
		}
	}
}
