package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	v1alpha1 "github.com/trainersim/trainersim/sim/apis/v1alpha1"
	"github.com/trainersim/trainersim/sim/scenario"
)

func TestFirstSentence(t *testing.T) {
	for in, want := range map[string]string{
		"One. Two.":                       "One.",
		"No full stop":                    "No full stop",
		"Version 2.3.0 keeps it.\nMore.":  "Version 2.3.0 keeps it.",
		"  spread\n  over lines. rest.  ": "spread over lines.",
	} {
		if got := firstSentence(in); got != want {
			t.Errorf("firstSentence(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTable(t *testing.T) {
	files := []*scenario.File{{
		Path: "scenarios/kueue/flip.yaml",
		Scenario: &v1alpha1.Scenario{
			Metadata: v1alpha1.Metadata{
				Name:        "kueue-flip",
				Labels:      map[string]string{"upstream-bug": "15161"},
				Annotations: map[string]string{"trainersim.dev/source": "kueue | #15161"},
			},
			Spec: v1alpha1.ScenarioSpec{Description: "Kueue's tolerations replace the user's. More text."},
		},
	}, {
		Path: "scenarios/legacy/selector.yaml",
		Scenario: &v1alpha1.Scenario{
			Metadata: v1alpha1.Metadata{
				Name:        "legacy-selector",
				Labels:      map[string]string{"docs-differ": "true"},
				Annotations: map[string]string{"trainersim.dev/source": "seed 004"},
			},
			Spec: v1alpha1.ScenarioSpec{Description: "Merged.", Trainer: &v1alpha1.Trainer{Versions: "<v2.2.0"}},
		},
	}}
	got := string(table(files))
	want := "2 scenarios; 1 pin today's upstream behaviour where it is a bug or a gap (label `upstream-bug`); 1 assert what a release does where its guide says otherwise (label `docs-differ`).\n\n" +
		"| folder | scenario | Trainer | what it shows | source |\n|---|---|---|---|---|\n" +
		"| `kueue` | [kueue-flip](../scenarios/kueue/flip.yaml) | all | Kueue's tolerations replace the user's. | kueue \\| #15161 (upstream-bug #15161) |\n" +
		"| `legacy` | [legacy-selector](../scenarios/legacy/selector.yaml) | `<v2.2.0` | Merged. | seed 004 (docs-differ) |\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("table mismatch (-want +got):\n%s", diff)
	}
}

func TestSpliceNeedsMarkers(t *testing.T) {
	if _, err := splice([]byte("no markers"), []byte("x")); err == nil || !strings.Contains(err.Error(), "lacks the markers") {
		t.Errorf("got %v, want a missing-markers error", err)
	}
	out, err := splice([]byte("a\n"+begin+"old\n"+end+"z\n"), []byte("new\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "a\n" + begin + "new\n" + end + "z\n"; string(out) != want {
		t.Errorf("splice = %q, want %q", out, want)
	}
}
