package sim

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"

	"golang.org/x/mod/modfile"
)

// TestKubernetesVersionMatchesControlPlaneModule keeps KubernetesVersion and
// the control plane `make assets` builds in step.
func TestKubernetesVersionMatchesControlPlaneModule(t *testing.T) {
	checkRequire(t, "../hack/controlplane/go.mod", "k8s.io/kubernetes", "v"+KubernetesVersion)
}

// TestKwokVersionMatchesKwokModule keeps KwokVersion (the image the kind
// provider runs) and the kwok `make assets` builds in step.
func TestKwokVersionMatchesKwokModule(t *testing.T) {
	checkRequire(t, "../hack/kwok/go.mod", "sigs.k8s.io/kwok", KwokVersion)
}

// TestControllerVersionsMatchGoMod keeps the kind images' tags and go.mod in
// step.
func TestControllerVersionsMatchGoMod(t *testing.T) {
	checkRequire(t, "../go.mod", TrainerModule, TrainerVersion)
	checkRequire(t, "../go.mod", JobSetModule, JobSetVersion)
}

// checkRequire fails unless the go.mod at path requires module at want.
func checkRequire(t *testing.T, path, module, want string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("failed to read %s: %v", path, err)
	}
	f, err := modfile.ParseLax(path, data, nil)
	if err != nil {
		t.Fatalf("failed to parse %s: %v", path, err)
	}
	for _, r := range f.Require {
		if r.Mod.Path == module {
			if r.Mod.Version != want {
				t.Errorf("%s requires %s %s, the sim package says %s", path, module, r.Mod.Version, want)
			}
			return
		}
	}
	t.Errorf("%s does not require %s", path, module)
}

// TestClusterNamesAreTheScenarioFormats keeps the provider names Versions
// reports and the values spec.clusters.only accepts the same.
func TestClusterNamesAreTheScenarioFormats(t *testing.T) {
	want := []string{ClusterEnvtest, ClusterKubeconfig, ClusterKind}
	if diff := cmp.Diff(want, v1alpha1.ClusterProviders); diff != "" {
		t.Errorf("v1alpha1.ClusterProviders mismatch (-want +got):\n%s", diff)
	}
}
