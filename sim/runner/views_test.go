package runner

import (
	"testing"

	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/scenario"
)

// TestViewsFor: a run makes its components' watches viewable only when a
// scenario it will not skip declares a view.
func TestViewsFor(t *testing.T) {
	file := func(versions string, views ...v1alpha1.View) *scenario.File {
		return &scenario.File{Scenario: &v1alpha1.Scenario{Spec: v1alpha1.ScenarioSpec{
			Trainer: &v1alpha1.Trainer{Versions: versions}, Views: views,
		}}}
	}
	v := v1alpha1.View{Name: "v", Component: "trainer", Resource: "trainjobs"}
	for _, tc := range []struct {
		name    string
		files   []*scenario.File
		trainer string
		want    bool
	}{
		{"no views", []*scenario.File{file(">=v2.1.0"), file(">=v2.2.0")}, "", false},
		{"a view", []*scenario.File{file(">=v2.1.0"), file(">=v2.3.0", v)}, "", true},
		{"a view in a scenario the release skips", []*scenario.File{file(">=v2.3.0", v)}, "v2.2.0", false},
	} {
		if got := ViewsFor(tc.files, tc.trainer); got != tc.want {
			t.Errorf("%s: ViewsFor = %t, want %t", tc.name, got, tc.want)
		}
	}
}
