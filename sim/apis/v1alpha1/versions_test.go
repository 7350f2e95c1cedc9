package v1alpha1

import (
	"slices"
	"testing"
)

func TestVersionRange(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string // the supported releases in the range
	}{
		{">=v2.2.0", []string{"v2.2.0", "v2.2.1", "v2.3.0"}},
		{"<v2.2.0", []string{"v2.1.0"}},
		{">=v2.2.0 <v2.3.0", []string{"v2.2.0", "v2.2.1"}},
		{"v2.2.1", []string{"v2.2.1"}},
		{"=v2.2.1", []string{"v2.2.1"}},
		{"<=v2.2.0 || >v2.2.1", []string{"v2.1.0", "v2.2.0", "v2.3.0"}},
		{">v2.3.0", nil},
	} {
		r, err := ParseVersionRange(tc.in)
		if err != nil {
			t.Errorf("ParseVersionRange(%q): %v", tc.in, err)
			continue
		}
		if got := r.Supported(); !slices.Equal(got, tc.want) {
			t.Errorf("ParseVersionRange(%q).Supported() = %v, want %v", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{"", "   ", "2.2.0", ">=v2.2", "~v2.2.0", ">=v2.2.0 ||", "=>v2.2.0"} {
		if _, err := ParseVersionRange(bad); err == nil {
			t.Errorf("ParseVersionRange(%q) accepted it", bad)
		}
	}
}

// TestHasTrainJobField: a release has the fields TrainJobFields gives it,
// and every field the list does not name.
func TestHasTrainJobField(t *testing.T) {
	for _, tc := range []struct {
		version, path string
		want          bool
	}{
		{"v2.1.0", "spec.podTemplateOverrides", true},
		{"v2.1.0", "spec.runtimePatches", false},
		{"v2.2.0", "spec.podTemplateOverrides", false},
		{"v2.2.0", "spec.runtimePatches", true},
		{"v2.3.0", "spec.runtimePatches", true},
		{"v2.1.0", "spec.suspend", true},
	} {
		if got := HasTrainJobField(tc.version, tc.path); got != tc.want {
			t.Errorf("Trainer %s HasTrainJobField(%q) = %v, want %v", tc.version, tc.path, got, tc.want)
		}
	}
}
