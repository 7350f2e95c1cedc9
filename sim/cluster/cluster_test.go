package cluster

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
)

// TestClusterNamesAreTheScenarioFormats keeps the provider names Versions
// reports and the values spec.clusters.only accepts the same.
func TestClusterNamesAreTheScenarioFormats(t *testing.T) {
	want := []string{Envtest, Kubeconfig, Kind}
	if diff := cmp.Diff(want, v1alpha1.ClusterProviders); diff != "" {
		t.Errorf("v1alpha1.ClusterProviders mismatch (-want +got):\n%s", diff)
	}
}
