package releases

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/mod/modfile"
)

// TestKubernetesVersionMatchesControlPlaneModule keeps KubernetesVersion and
// the control plane `make assets` builds in step.
func TestKubernetesVersionMatchesControlPlaneModule(t *testing.T) {
	checkRequire(t, "../../hack/controlplane/go.mod", "k8s.io/kubernetes", "v"+KubernetesVersion)
}

// TestKwokVersionMatchesKwokModule keeps KwokVersion (the image the kind
// provider runs) and the kwok `make assets` builds in step.
func TestKwokVersionMatchesKwokModule(t *testing.T) {
	checkRequire(t, "../../hack/kwok/go.mod", "sigs.k8s.io/kwok", KwokVersion)
}

// TestControllerVersionsMatchGoMod keeps the kind images' tags and go.mod in
// step.
func TestControllerVersionsMatchGoMod(t *testing.T) {
	checkRequire(t, "../../go.mod", TrainerModule, TrainerVersion)
	checkRequire(t, "../../go.mod", JobSetModule, JobSetVersion)
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
				t.Errorf("%s requires %s %s, the releases package says %s", path, module, r.Mod.Version, want)
			}
			return
		}
	}
	t.Errorf("%s does not require %s", path, module)
}

// TestTrainersMatchTheirModules keeps Trainers, the nested
// modules `make assets` builds them from, the JobSet each pins and the
// fixtures `make fixtures` copies in step.
func TestTrainersMatchTheirModules(t *testing.T) {
	var got []string
	for _, r := range Trainers {
		got = append(got, r.Version)
		if r.InProcess() {
			continue
		}
		mod := "../../hack/trainer/" + r.Version + "/go.mod"
		checkRequire(t, mod, TrainerModule, r.Version)
		checkRequire(t, mod, JobSetModule, r.JobSet)
		checkRequire(t, "../../hack/jobset/"+r.JobSet+"/go.mod", JobSetModule, r.JobSet)
		if _, err := fs.Stat(r.Fixtures(), "crds/trainer/trainer.kubeflow.org_trainjobs.yaml"); err != nil {
			t.Errorf("Trainer %s has no fixtures (make fixtures): %v", r.Version, err)
		}
	}
	dirs, err := filepath.Glob("../../hack/trainer/v*")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{}
	for _, d := range dirs {
		want = append(want, filepath.Base(d))
	}
	want = append(want, TrainerVersion)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Trainers and hack/trainer/ (plus the pinned %s) differ (-hack +Trainers):\n%s", TrainerVersion, diff)
	}
}

// TestLookupTrainer: the pinned release by default, a version with or
// without its v, and errors that list what is supported.
func TestLookupTrainer(t *testing.T) {
	for in, want := range map[string]string{"": TrainerVersion, "v2.1.0": "v2.1.0", "2.2.1": "v2.2.1"} {
		r, err := LookupTrainer(in)
		if err != nil || r.Version != want {
			t.Errorf("LookupTrainer(%q) = %s, %v; want %s", in, r.Version, err, want)
		}
	}
	for in, want := range map[string]string{
		"v2.0.1": "unsupported Trainer version v2.0.1: trainersim runs v2.1.0, v2.2.0, v2.2.1, " + TrainerVersion,
		"latest": `invalid Trainer version "latest": give one of v2.1.0, v2.2.0, v2.2.1, ` + TrainerVersion,
	} {
		if _, err := LookupTrainer(in); err == nil || err.Error() != want {
			t.Errorf("LookupTrainer(%q) error = %v; want %s", in, err, want)
		}
	}
}

// TestKueueComponentMatchesItsModule keeps the Kueue component's version,
// the nested module `make assets` builds it from and its fixtures in step.
func TestKueueComponentMatchesItsModule(t *testing.T) {
	checkRequire(t, "../../hack/kueue/"+KueueVersion+"/go.mod", "sigs.k8s.io/kueue", KueueVersion)
}
