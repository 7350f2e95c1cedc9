package scenario

import (
	"strings"
	"testing"
)

// TestImpliedVersions: a scenario without spec.trainer.versions gets the
// range its TrainJob fields imply, with a note at the first such field; a
// scenario whose fields have no release in common is refused as before;
// one that writes no versioned field gets no range and no note.
func TestImpliedVersions(t *testing.T) {
	// The normative example of the format, as its issue wrote it: no
	// spec.trainer, runtimePatches in its steps.
	f, err := LoadFile("testdata/valid-normative-example.yaml", Options{FixturesDir: testFixtures})
	if err != nil {
		t.Fatalf("LoadFile: %v", err)
	}
	if tr := f.Scenario.Spec.Trainer; tr == nil || tr.Versions != ">=v2.2.0" {
		t.Errorf("spec.trainer %+v, want the implied >=v2.2.0", tr)
	}
	if len(f.Notes) != 1 {
		t.Fatalf("notes %v, want one", f.Notes)
	}
	want := `testdata/valid-normative-example.yaml:42:9: spec.steps[0].create.spec.runtimePatches: spec.trainer.versions is not given: the TrainJob fields the scenario writes (spec.runtimePatches >=v2.2.0) imply ">=v2.2.0", so it runs on Trainer v2.2.0, v2.2.1, v2.3.0 and is skipped on the others; set spec.trainer.versions to say so`
	if got := f.Notes[0].Error(); got != want {
		t.Errorf("note\n got %s\nwant %s", got, want)
	}

	doc := func(spec string) []byte {
		return []byte("apiVersion: sim.trainersim.dev/v1alpha1\nkind: Scenario\nmetadata:\n  name: x\nspec:\n  actors:\n  - name: sdk\n    fieldManager: sdk\n  steps:\n" + spec)
	}
	create := func(name, fields string) string {
		return "  - name: " + name + "\n    actor: sdk\n    create:\n      apiVersion: trainer.kubeflow.org/v1alpha1\n      kind: TrainJob\n      metadata:\n        name: " + name + "\n      spec:\n        runtimeRef:\n          name: torch-distributed\n" + fields
	}
	patches := "        runtimePatches:\n        - manager: example.com/sdk\n"
	overrides := "        podTemplateOverrides:\n        - targetJobs:\n          - name: node\n"
	grace := "        runtimePatches:\n        - manager: example.com/sdk\n          trainingRuntimeSpec:\n            template:\n              spec:\n                replicatedJobs:\n                - name: node\n                  template:\n                    spec:\n                      template:\n                        spec:\n                          terminationGracePeriodSeconds: 30\n"

	f, err = Load("x.yaml", doc(create("old", overrides)), Options{FixturesDir: testFixtures})
	if err != nil || f.Scenario.Spec.Trainer == nil || f.Scenario.Spec.Trainer.Versions != "<v2.2.0" || len(f.Notes) != 1 {
		t.Errorf("podTemplateOverrides: %v, %+v: want <v2.2.0 and a note", err, f)
	}
	f, err = Load("x.yaml", doc(create("grace", grace)), Options{FixturesDir: testFixtures})
	if err != nil || f.Scenario.Spec.Trainer == nil || f.Scenario.Spec.Trainer.Versions != ">=v2.2.0 >=v2.3.0" {
		t.Errorf("terminationGracePeriodSeconds: %v, %+v: want >=v2.2.0 >=v2.3.0", err, f)
	} else if !strings.Contains(f.Notes[0].Message, "runs on Trainer v2.3.0 and") {
		t.Errorf("note %q: want v2.3.0 alone", f.Notes[0].Message)
	}
	_, err = Load("x.yaml", doc(create("old", overrides)+create("new", patches)), Options{FixturesDir: testFixtures})
	if err == nil || !strings.Contains(err.Error(), "exists in Trainer <v2.2.0 only, not in v2.2.0, v2.2.1, v2.3.0") {
		t.Errorf("both eras: %v, want the fields named", err)
	}
	f, err = Load("x.yaml", doc(create("plain", "")), Options{FixturesDir: testFixtures})
	if err != nil || f.Scenario.Spec.Trainer != nil || len(f.Notes) != 0 {
		t.Errorf("no versioned field: %v, %+v: want no range and no note", err, f)
	}
}
