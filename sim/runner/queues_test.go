package runner

import (
	"slices"
	"testing"

	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/scenario"
)

// TestWithComponents: a run starts the components its scenarios ask for,
// once each, but not for scenarios its Trainer release will skip.
func TestWithComponents(t *testing.T) {
	file := func(versions string, components ...string) *scenario.File {
		return &scenario.File{Scenario: &v1alpha1.Scenario{Spec: v1alpha1.ScenarioSpec{
			Trainer: &v1alpha1.Trainer{Versions: versions}, Components: components,
		}}}
	}
	files := []*scenario.File{file(">=v2.3.0", "kueue"), file(">=v2.2.0"), file(">=v2.3.0", "kueue")}
	for _, tc := range []struct {
		have    []string
		trainer string
		want    []string
	}{
		{nil, "", []string{"kueue"}},
		{nil, "v2.3.0", []string{"kueue"}},
		{nil, "v2.2.1", nil},
		{[]string{"kueue"}, "v2.2.1", []string{"kueue"}},
	} {
		if got := WithComponents(tc.have, files, tc.trainer); !slices.Equal(got, tc.want) {
			t.Errorf("WithComponents(%v, files, %q) = %v, want %v", tc.have, tc.trainer, got, tc.want)
		}
	}
}
