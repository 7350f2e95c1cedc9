package sim

import (
	"os"
	"testing"

	"golang.org/x/mod/modfile"
)

// TestKubernetesVersionMatchesControlPlaneModule keeps KubernetesVersion and
// the control plane `make assets` builds in step.
func TestKubernetesVersionMatchesControlPlaneModule(t *testing.T) {
	const path = "../hack/controlplane/go.mod"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("failed to read %s: %v", path, err)
	}
	f, err := modfile.ParseLax(path, data, nil)
	if err != nil {
		t.Fatalf("failed to parse %s: %v", path, err)
	}
	for _, r := range f.Require {
		if r.Mod.Path == "k8s.io/kubernetes" {
			if want := "v" + KubernetesVersion; r.Mod.Version != want {
				t.Errorf("hack/controlplane/go.mod requires k8s.io/kubernetes %s, sim.KubernetesVersion says %s", r.Mod.Version, want)
			}
			return
		}
	}
	t.Errorf("%s does not require k8s.io/kubernetes", path)
}
